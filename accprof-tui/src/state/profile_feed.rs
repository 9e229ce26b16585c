//! Builds a trace's accprof-analysis [`Profile`] from the events the loader reads, so that the
//! trace is decoded once: the loader hands each event over after putting it in the store, and a
//! thread of its own feeds them to a [`ProfileBuilder`] while the loader goes on decoding. The
//! hand-over is bounded (a few batches, whose buffers go back and forth rather than being
//! allocated anew: a batch is a megabyte, and fresh ones cost page faults), so memory does not
//! grow with events.
//!
//! The loader never waits for the builder: the timeline matters more than the findings. The
//! feed is only started when a core is free for the builder ([`spare_core`]); when the builder
//! falls behind all the same and the hand-over is full, the feed is given up, the builder
//! stops, and the analysis reads the trace again once the timeline is up ([`ProfileJob::wait`]
//! says `None`).

use accprof_analysis::{KernelNameNotes, Profile, ProfileBuilder, ProfileSource};
use accprof_trace::{Event, Footer, Header, StrId, StringTable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Events per hand-over.
const BATCH: usize = 4096;
/// Batches that may wait for the builder; one more and the feed is given up.
const QUEUED_BATCHES: usize = 8;

/// Whether a core is free for the builder beside the loader: the machine's cores less its
/// load (the last minute's average of runnable threads) leave room for both threads (more
/// than one and a half cores: an idle 2-core machine has room). On a busy machine the builder
/// would take the loader's core, and the timeline would come up later than decoding the trace
/// a second time after it costs.
pub fn spare_core() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(cores);
    cores - load > 1.5
}

/// What the end of a trace tells the profile.
#[derive(Debug)]
pub struct TraceEnd {
    /// The trace's strings, as the loader resolved them.
    pub strings: StringTable,
    pub footer: Option<Footer>,
    pub dropped: u64,
}

enum Msg {
    /// A batch, and the kernel names its events use first (for the builder's matching of
    /// kernel records by name while reading).
    Events(Vec<Event>, Vec<(StrId, Box<str>)>),
    End(Box<TraceEnd>),
}

/// One trace's profile being built.
#[derive(Debug)]
pub struct ProfileFeed {
    /// `None` once the feed was given up.
    tx: Option<SyncSender<Msg>>,
    /// Tells the builder to stop at its next batch (the feed was given up).
    stop: Arc<AtomicBool>,
    /// Emptied batches coming back from the builder.
    spare: Receiver<Vec<Event>>,
    batch: Vec<Event>,
    /// Kernel names the batch uses first, and those given before.
    names: Vec<(StrId, Box<str>)>,
    named: KernelNameNotes,
    worker: JoinHandle<Option<Profile>>,
}

/// A profile being finished; [`ProfileJob::wait`] gives it.
#[derive(Debug)]
pub struct ProfileJob(Option<JoinHandle<Option<Profile>>>);

impl ProfileJob {
    /// The profile, or `None` when the feed was given up or the builder thread stopped early:
    /// then the trace must be read again.
    pub fn wait(self) -> Option<Profile> {
        self.0?.join().ok().flatten()
    }
}

impl ProfileFeed {
    /// Starts the builder for the trace at `path` with this header.
    pub fn start(path: String, header: &Header) -> Self {
        let (tx, rx) = sync_channel(QUEUED_BATCHES);
        let (spare_tx, spare) = channel();
        let builder = ProfileBuilder::for_header(header);
        let source = ProfileSource::of_header(path, header, false);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let worker = std::thread::spawn(move || build(builder, source, rx, spare_tx, &stopped));
        ProfileFeed {
            tx: Some(tx),
            stop,
            spare,
            batch: Vec::with_capacity(BATCH),
            names: Vec::new(),
            named: KernelNameNotes::default(),
            worker,
        }
    }

    /// Hands over the next event of the trace, in file order, with the strings read so far;
    /// never waits for the builder.
    pub fn push(&mut self, ev: Event, strings: &StringTable) {
        let Some(tx) = &self.tx else { return };
        self.names.extend(self.named.note(&ev, strings));
        self.batch.push(ev);
        if self.batch.len() == BATCH {
            let next = self
                .spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            let full = std::mem::replace(&mut self.batch, next);
            // A builder that stopped early is seen in `ProfileJob::wait`.
            let names = std::mem::take(&mut self.names);
            if let Err(TrySendError::Full(_)) = tx.try_send(Msg::Events(full, names)) {
                self.give_up();
            }
        }
    }

    /// Whether the feed was given up (the builder fell behind).
    pub fn given_up(&self) -> bool {
        self.tx.is_none()
    }

    fn give_up(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.tx = None;
        self.batch = Vec::new();
    }

    /// Ends the trace; the profile is finished in the builder's thread. Waits at most for the
    /// few batches still queued to be taken.
    pub fn finish(self, end: TraceEnd) -> ProfileJob {
        let Some(tx) = self.tx else {
            // The builder stops at its next batch; nobody waits for it.
            return ProfileJob(None);
        };
        let _ = tx.send(Msg::Events(self.batch, self.names));
        let _ = tx.send(Msg::End(Box::new(end)));
        ProfileJob(Some(self.worker))
    }
}

fn build(
    mut b: ProfileBuilder,
    mut source: ProfileSource,
    rx: Receiver<Msg>,
    spare: Sender<Vec<Event>>,
    stop: &AtomicBool,
) -> Option<Profile> {
    for msg in rx {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        match msg {
            Msg::Events(mut batch, names) => {
                for (id, text) in &names {
                    b.name_kernel(*id, text);
                }
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
                source.clean_end = end.footer.is_some();
                let wall = wall.map(|e| e - source.start_monotonic_ns);
                let mut p = b.finish_for(&end.strings, wall, source);
                p.summary.dropped_events = end.dropped;
                return Some(p);
            }
        }
    }
    None
}
