//! The writer thread: turns batches into chunks in the trace file.
//!
//! The file is created when recording starts, at the first event (a program that records
//! nothing leaves no file). The writer records the module map whenever an event points into a
//! module it has not written yet, reads what the threads committed to their buffers every
//! 200 ms, in place (recorder::slots), so that a following reader sees events land, writes
//! drop counts as it learns them, and at shutdown the footer. Before the events of a buffer
//! that is a live-file slot it writes which slot and generation they are, and empties the slot
//! only after (recorder::live).

use crate::recorder::late;
use crate::recorder::message::{DeviceBatch, Message, Summary};
use crate::recorder::Recorder;
use crate::sink::TraceFile;
use crate::write::create::{self, Created};
use accprof_trace::packed::{SharedBuffer, Unpack};
use accprof_trace::{Event, Field, Footer, Header, Module, PackedEvents, StrId, TraceWriter};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SWEEP_EVERY: Duration = Duration::from_millis(200);
const FIRST_SWEEP: Duration = Duration::from_millis(5);
/// How often CUPTI is asked for its partly filled activity buffers. Records CUPTI holds are in
/// the process's memory only: a run killed with SIGKILL loses at most this much device activity
/// (the host events survive in the live file).
const DEVICE_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How long the exit flush waits for the device to pass the CUDA events still pending.
const CUDA_EVENTS_EXIT_WAIT: Duration = Duration::from_secs(2);

struct Collector {
    clock: crate::clock::Converter,
    writer: Option<TraceWriter<TraceFile>>,
    path: Option<PathBuf>,
    /// Set after the first failure to create or write the file; later batches are counted only.
    failed: Option<String>,
    modules: Vec<Module>,
    events: u64,
    dropped: u64,
    /// Heap blocks, to tag events whose host pointer lies in one.
    heap: crate::heap::Namer,
    /// The code addresses of the events being written that lie outside every module known.
    module_watch: ModuleWatch,
    /// The loader's counts of modules loaded and unloaded, when last looked at.
    load_counts: (u64, u64),
}

/// The trace file as created when recording started, or why it could not be.
pub struct Opened {
    path: PathBuf,
    /// `None` for a FIFO or device to stream to: the writer thread opens it (waiting for a
    /// FIFO's reader), never the program's.
    result: Option<std::io::Result<Created>>,
    header: Header,
}

/// Set when the program is ending: the writer stops waiting for a FIFO's reader.
static ENDING: AtomicBool = AtomicBool::new(false);

/// The program is ending: nothing is to be waited for any more.
pub fn program_ending() {
    ENDING.store(true, Ordering::Release);
}

impl Opened {
    /// Creates the trace file `cfg` names (or the first free name beside it).
    pub fn create(cfg: &crate::config::Config, header: &Header) -> Self {
        let path = crate::write::output::trace_path(cfg);
        let stream = crate::write::output::named_by_user(cfg)
            && create::stream_at(&path) == create::Stream::Ours;
        let result = (!stream).then(|| create::create(&path, header));
        Self {
            path,
            result,
            header: header.clone(),
        }
    }

    /// The trace's path when it is a regular file (not a FIFO or device streamed to).
    pub fn regular_file(&self) -> Option<&std::path::Path> {
        let c = self.result.as_ref()?.as_ref().ok()?;
        let meta = std::fs::symlink_metadata(&c.path).ok()?;
        meta.file_type().is_file().then_some(c.path.as_path())
    }
}

pub fn run(rec: &'static Recorder, rx: Receiver<Message>, opened: Opened) {
    // Our own buffers are no application arrays.
    crate::heap::ignore_this_thread();
    crate::recorder::set_writer_tid();
    let mut c = Collector {
        clock: crate::clock::Converter::new(),
        writer: None,
        path: None,
        failed: None,
        modules: Vec::new(),
        events: 0,
        dropped: 0,
        heap: crate::heap::Namer::new(),
        module_watch: ModuleWatch::default(),
        load_counts: crate::modules::load_counts(),
    };
    // The file was created with the first event (so that a process that records holds it from
    // then on, and its live file exists before any buffer is taken); said from here.
    c.adopt(opened);
    if let Some(live) = crate::recorder::live::get() {
        live.publish_anchor();
    }
    // The live file's next clock anchor, and a sweep, soon after the start: a run killed in
    // its first 200 ms still has its ticks converted from anchors some distance apart.
    let mut wait = FIRST_SWEEP;
    let mut device_flushed = std::time::Instant::now();
    rec.pool.prime();
    loop {
        let got = rx.recv_timeout(wait);
        wait = SWEEP_EVERY;
        if device_flushed.elapsed() >= DEVICE_FLUSH_EVERY {
            // CUPTI delivers them on this thread or its own; either way they arrive as
            // Device messages on the unbounded channel, never blocking here.
            crate::device::cupti::flush();
            device_flushed = std::time::Instant::now();
        }
        match got {
            Ok(Message::Batch(b)) => c.write_batch(rec, b),
            Ok(Message::Device(b)) => c.write_device_batch(b),
            Ok(Message::CudaEvents(ev)) => c.write_cuda_events(ev),
            Ok(Message::Flush) | Err(RecvTimeoutError::Timeout) => {
                c.clock.anchor();
                if let Some(live) = crate::recorder::live::get() {
                    live.publish_anchor();
                }
                // Pairs are taken before the sweep and their records sent to ourselves after
                // it, so that they queue behind the batches defining their names.
                let cuda = crate::device::cuda_events::collect();
                c.heap.drain(&mut c.clock);
                c.sweep(rec);
                c.write_cuda_events(cuda);
                c.write_names();
                c.write_drops(rec);
                c.watch_modules();
                rec.pool.prime();
            }
            Ok(Message::Shutdown(reply)) => {
                // Everything shipped before the shutdown message is already queued behind it.
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Message::Batch(b) => c.write_batch(rec, b),
                        Message::Device(b) => c.write_device_batch(b),
                        Message::CudaEvents(ev) => c.write_cuda_events(ev),
                        _ => {}
                    }
                }
                // What the threads committed since: every buffer read in place.
                c.sweep(rec);
                c.write_names();
                crate::progress::note();
                // What the device has not finished yet: bounded, the program is exiting.
                let cuda = crate::device::cuda_events::collect_all(CUDA_EVENTS_EXIT_WAIT);
                c.write_cuda_events(cuda);
                c.write_drops(rec);
                let summary = c.finish();
                let _ = reply.send(summary);
                return;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

impl Collector {
    /// A thread's buffer handed over: what it holds that is not in the trace yet, then the
    /// buffer goes back to the pool (its live-file slot emptied only once its events are in
    /// the trace).
    fn write_batch(&mut self, rec: &Recorder, b: PackedEvents) {
        self.write_untaken(b.shared());
        rec.pool.give_back(b);
    }

    /// Writes the events committed to `buf` since the writer last took from it: encoded
    /// straight from the buffer's words, each event's times converted and its heap block
    /// named on the way, then the strings and modules they refer to, then the events.
    fn write_untaken(&mut self, buf: SharedBuffer) {
        let (words, end) = buf.untaken();
        if words.is_empty() {
            return;
        }
        let Some(w) = self.writer.as_mut() else {
            self.dropped += Unpack::from_words(words).count() as u64;
            buf.taken_to(end);
            return;
        };
        // Blocks allocated before the events that name them: taken first.
        self.heap.drain(&mut self.clock);
        let naming = self.heap.naming();
        let (clock, heap) = (&mut self.clock, &self.heap);
        let (watch, known) = (&mut self.module_watch, &self.modules);
        let n = w.stage_events(words, |ev| {
            let e = ev.event();
            ev.set_times(clock.to_ns(e.start_ns), clock.to_ns(e.end_ns));
            if naming && ev.event().get(Field::HostPtr).is_some() {
                if let Some(fields) = heap.name_of(ev.event()) {
                    for (f, v) in fields {
                        ev.set(f, v);
                    }
                }
            }
            watch.note(ev.event(), known);
        });
        // Names the recording threads defined before the events that use them: taken first.
        let thread_strings = crate::strings::take_new();
        let new_modules = self.module_watch.take_new(&mut self.modules);
        let r = w
            .write_strings(thread_strings.iter().map(|(id, s)| (*id, &s[..])))
            .and_then(|_| w.write_modules(&new_modules))
            .and_then(|_| match buf.slot() {
                Some((index, generation)) => w.write_slot_written(index, generation, n),
                None => Ok(()),
            })
            .and_then(|_| w.write_staged());
        crate::progress::note();
        match r {
            Ok(()) => self.events += n,
            Err(e) => self.fail(format!("cannot write the trace: {e}; recording stopped"), n),
        }
        buf.taken_to(end);
    }

    /// Device records: already on CLOCK_MONOTONIC, and their buffers are not the pool's.
    fn write_device_batch(&mut self, mut b: DeviceBatch) {
        self.write_events(&mut b.events, &b.strings, None);
    }

    /// Names heap blocks, then writes the batch's strings, the modules its addresses need, and
    /// its events (times already on the trace's clock); counts them written or lost. Events
    /// from a live-file slot (`slot`: index and generation) are preceded by the record that
    /// says so, which a reader recovering a killed run needs to count them once.
    fn write_events(
        &mut self,
        events: &mut [Event],
        strings: &[(StrId, Box<[u8]>)],
        slot: Option<(u32, u64)>,
    ) {
        let n = events.len() as u64;
        self.name_heap_blocks(events);
        // Names the recording threads defined before the events that use them: taken first.
        let thread_strings = crate::strings::take_new();
        if let Some(w) = self.writer.as_mut() {
            for e in events.iter() {
                self.module_watch.note(e, &self.modules);
            }
            let new_modules = self.module_watch.take_new(&mut self.modules);
            let r = w
                .write_strings(
                    thread_strings
                        .iter()
                        .chain(strings)
                        .map(|(id, s)| (*id, &s[..])),
                )
                .and_then(|_| w.write_modules(&new_modules))
                .and_then(|_| match slot {
                    Some((index, generation)) => w.write_slot_written(index, generation, n),
                    None => Ok(()),
                })
                .and_then(|_| w.write_events(events));
            crate::progress::note();
            match r {
                Ok(()) => self.events += n,
                Err(e) => self.fail(format!("cannot write the trace: {e}; recording stopped"), n),
            }
        } else {
            self.dropped += n;
        }
    }

    /// The names the program gave NVTX categories and threads (on CLOCK_MONOTONIC already).
    fn write_names(&mut self) {
        let events = crate::nvtx::take_names();
        if !events.is_empty() {
            self.write_device_batch(DeviceBatch {
                events,
                strings: Vec::new(),
            });
        }
    }

    fn write_cuda_events(&mut self, mut events: Vec<accprof_trace::Event>) {
        if events.is_empty() {
            return;
        }
        for e in &mut events {
            if let Some(t) = e.get(Field::HostCallNs) {
                e.set(Field::HostCallNs, self.clock.to_ns(t));
            }
        }
        self.write_device_batch(DeviceBatch {
            events,
            strings: Vec::new(),
        });
    }

    /// Tags events whose host pointer lay in a recorded heap block (one place for every
    /// source: OpenACC batches, CUPTI records, CUDA-event records). Times are CLOCK_MONOTONIC.
    fn name_heap_blocks(&mut self, events: &mut [accprof_trace::Event]) {
        if !events.iter().any(|e| e.get(Field::HostPtr).is_some()) {
            return;
        }
        self.heap.drain(&mut self.clock);
        for e in events {
            self.heap.annotate(e);
        }
    }

    fn adopt(&mut self, opened: Opened) {
        let Opened {
            path,
            result,
            header,
        } = opened;
        let result = result.unwrap_or_else(|| {
            create::open_stream(&path, &header, || ENDING.load(Ordering::Acquire))
        });
        match result {
            Ok(c) => {
                if let Some(note) = c.note {
                    eprintln!("accprof: {note}");
                }
                self.modules = c.modules;
                create::hold(c.writer.get_ref());
                self.writer = Some(c.writer);
                self.path = Some(c.path);
            }
            Err(e) => self.fail(
                format!(
                    "cannot write the trace to {}: {e}; this run is not recorded",
                    path.display()
                ),
                0,
            ),
        }
    }

    fn fail(&mut self, message: String, lost: u64) {
        // Said once, now, while the user can still connect it with what the program prints.
        eprintln!("accprof: {message}");
        self.failed = Some(message);
        if let Some(w) = self.writer.take() {
            crate::sink::cut_partial_chunk(&w);
        }
        self.dropped += lost;
    }

    /// Writes what each thread committed to its buffer since the last sweep, in place: the
    /// thread keeps its buffer (buffers it handed over earlier are already written: the
    /// channel delivered them before this sweep).
    fn sweep(&mut self, rec: &Recorder) {
        for slot in rec.registry.snapshot() {
            if let Some(buf) = slot.current(&rec.pool) {
                self.write_untaken(buf);
            }
        }
    }

    /// When a module was unloaded, read-only strings the threads trust without comparing may
    /// have been replaced: they compare again (crate::strings). New modules' read-only
    /// segments are published so that their strings are trusted.
    fn watch_modules(&mut self) {
        let counts = crate::modules::load_counts();
        if counts == self.load_counts {
            return;
        }
        if counts.1 != self.load_counts.1 {
            crate::hot::bump_strings_epoch();
        }
        self.load_counts = counts;
        crate::strings::publish_read_only(crate::modules::read_only_segments().0);
    }

    fn write_drops(&mut self, rec: &Recorder) {
        if let Some(ev) = self.heap.loss_event() {
            if let Some(w) = self.writer.as_mut() {
                if w.write_events(&[ev]).is_ok() {
                    self.events += 1;
                }
            }
        }
        let skipped = crate::recorder::fork_gate::take_skipped();
        if skipped > 0 {
            if let Some(w) = self.writer.as_mut() {
                let _ = w.write_lost(&[(accprof_trace::LostReason::Fork, skipped)]);
            }
        }
        let mut drops = Vec::new();
        for slot in rec.registry.snapshot() {
            let n = slot.dropped.swap(0, Ordering::Relaxed);
            if n > 0 {
                drops.push((slot.thread, n));
                self.dropped += n;
            }
        }
        if drops.is_empty() {
            return;
        }
        if let Some(w) = self.writer.as_mut() {
            if w.write_drops(&drops).is_err() {
                crate::sink::cut_partial_chunk(w);
            }
        }
    }

    fn finish(mut self) -> Summary {
        let mut unsaid = None;
        let mut handed_over = false;
        if let Some(mut w) = self.writer.take() {
            let footer = Footer {
                events_recorded: self.events,
                events_dropped: self.dropped,
                end_monotonic_ns: crate::clock::monotonic_ns(),
            };
            if let Err(e) = w.write_footer(&footer).and_then(|_| w.flush()) {
                crate::sink::cut_partial_chunk(&w);
                // Not said yet: the caller prints it.
                unsaid = Some(format!("cannot finish the trace: {e}"));
            } else {
                // Everything the live file held is in the trace now.
                if let Some(live) = crate::recorder::live::get() {
                    live.remove();
                }
                late::hand_over_late_writer(w, self.clock);
                handed_over = true;
            }
        }
        if !handed_over {
            late::close();
        }
        Summary {
            path: self.path,
            events: self.events,
            dropped: self.dropped,
            failed: self.failed.is_some() || unsaid.is_some(),
            error: unsaid,
        }
    }
}

/// The code addresses (calls into the runtime, heap allocation sites) of the events being
/// written that lie outside every module written so far.
#[derive(Default)]
struct ModuleWatch {
    /// The module the last address lay in: consecutive events nearly always call from the
    /// same one.
    last: std::ops::Range<u64>,
    unknown: Vec<u64>,
}

impl ModuleWatch {
    #[inline]
    fn note(&mut self, e: &Event, known: &[Module]) {
        const CODE: u64 = 1 << Field::ReturnAddress as u64 | 1 << Field::AllocSite as u64;
        if e.present_mask() & CODE == 0 {
            return;
        }
        for a in [e.get(Field::ReturnAddress), e.get(Field::AllocSite)]
            .into_iter()
            .flatten()
        {
            if self.last.contains(&a) {
                continue;
            }
            match known.iter().find(|m| m.contains(a)) {
                Some(m) => self.last = m.start..m.end,
                None if self.unknown.last() != Some(&a) => self.unknown.push(a),
                None => {}
            }
        }
    }

    /// The modules holding the addresses noted outside `known`, added to it. Reads the
    /// process's module map again only when there are such addresses.
    fn take_new(&mut self, known: &mut Vec<Module>) -> Vec<Module> {
        let mut fresh = Vec::new();
        for a in self.unknown.drain(..) {
            if known.iter().any(|m| m.contains(a)) {
                continue;
            }
            for m in crate::modules::loaded_modules() {
                if !known.iter().any(|k| k.start == m.start && k.path == m.path) {
                    fresh.push(m.clone());
                    known.push(m);
                }
            }
        }
        fresh
    }
}
