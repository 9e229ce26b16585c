//! Builds a trace's accprof-analysis [`Profile`] from the events the loader reads, so that the
//! trace is decoded once: the loader hands each event over after putting it in the store, and a
//! thread of its own feeds them to a [`ProfileBuilder`] while the loader goes on decoding. The
//! hand-over is bounded (a few batches, whose buffers go back and forth rather than being
//! allocated anew: a batch is a megabyte, and fresh ones cost page faults), so memory does not
//! grow with events.

use accprof_analysis::load::DEVICE_ACTIVITY_KEY;
use accprof_analysis::{Profile, ProfileBuilder, ProfileSource};
use accprof_trace::{Event, Footer, Header, StringTable};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

/// Events per hand-over.
const BATCH: usize = 4096;
/// Batches that may wait for the builder before the loader waits for it.
const QUEUED_BATCHES: usize = 4;

/// What the end of a trace tells the profile.
#[derive(Debug)]
pub struct TraceEnd {
    /// The trace's strings, as the loader resolved them.
    pub strings: StringTable,
    pub footer: Option<Footer>,
    pub dropped: u64,
}

enum Msg {
    Events(Vec<Event>),
    End(Box<TraceEnd>),
}

/// One trace's profile being built.
#[derive(Debug)]
pub struct ProfileFeed {
    tx: SyncSender<Msg>,
    /// Emptied batches coming back from the builder.
    spare: Receiver<Vec<Event>>,
    batch: Vec<Event>,
    worker: JoinHandle<Option<Profile>>,
}

/// A profile being finished; [`ProfileJob::wait`] gives it.
#[derive(Debug)]
pub struct ProfileJob(JoinHandle<Option<Profile>>);

impl ProfileJob {
    /// The profile, or `None` when the builder thread stopped early.
    pub fn wait(self) -> Option<Profile> {
        self.0.join().ok().flatten()
    }
}

impl ProfileFeed {
    /// Starts the builder for the trace at `path` with this header.
    pub fn start(path: String, header: &Header) -> Self {
        let (tx, rx) = sync_channel(QUEUED_BATCHES);
        let (spare_tx, spare) = channel();
        let builder = builder_for(header);
        let source = ProfileSource {
            path,
            exe: header.exe.clone(),
            args: header.args.clone(),
            pid: header.pid,
            hostname: header.hostname.clone(),
            mpi_rank: header.mpi_rank,
            start_monotonic_ns: header.start_monotonic_ns,
            clean_end: false,
            cwd: accprof_analysis::source::working_directory(header),
        };
        let worker = std::thread::spawn(move || build(builder, source, rx, spare_tx));
        ProfileFeed {
            tx,
            spare,
            batch: Vec::with_capacity(BATCH),
            worker,
        }
    }

    /// Hands over the next event of the trace, in file order.
    pub fn push(&mut self, ev: Event) {
        self.batch.push(ev);
        if self.batch.len() == BATCH {
            let next = self
                .spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            let full = std::mem::replace(&mut self.batch, next);
            // A builder that stopped early is seen in `ProfileJob::wait`.
            let _ = self.tx.send(Msg::Events(full));
        }
    }

    /// Ends the trace; the profile is finished in the builder's thread.
    pub fn finish(self, end: TraceEnd) -> ProfileJob {
        let _ = self.tx.send(Msg::Events(self.batch));
        let _ = self.tx.send(Msg::End(Box::new(end)));
        ProfileJob(self.worker)
    }
}

/// The builder a trace needs: with device records when the tool recorded device activity,
/// preferring CUPTI's to CUDA events' when CUPTI recorded it (as `Profile::from_path` does).
fn builder_for(h: &Header) -> ProfileBuilder {
    match h.extra.iter().find(|(k, _)| k == DEVICE_ACTIVITY_KEY) {
        Some((_, v)) if v.starts_with("cupti") => ProfileBuilder::with_cupti_records(),
        Some(_) => ProfileBuilder::with_device_records(),
        None => ProfileBuilder::new(),
    }
}

fn build(
    mut b: ProfileBuilder,
    mut source: ProfileSource,
    rx: Receiver<Msg>,
    spare: Sender<Vec<Event>>,
) -> Option<Profile> {
    for msg in rx {
        match msg {
            Msg::Events(mut batch) => {
                batch.iter().for_each(|ev| b.feed(ev));
                batch.clear();
                // The loader may be done; then the buffer is simply dropped.
                let _ = spare.send(batch);
            }
            Msg::End(end) => {
                // The run's wall time: from the header's start to the footer, when both exist.
                let wall = end
                    .footer
                    .as_ref()
                    .map(|f| f.end_monotonic_ns)
                    .filter(|&e| source.start_monotonic_ns > 0 && e > source.start_monotonic_ns);
                let mut p =
                    b.finish_with_wall(&end.strings, wall.map(|e| e - source.start_monotonic_ns));
                source.clean_end = end.footer.is_some();
                p.sources.push(source);
                p.summary.dropped_events = end.dropped;
                return Some(p);
            }
        }
    }
    None
}
