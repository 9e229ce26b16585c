//! Events that arrive after the exit flush took a thread's buffer: other threads still
//! finishing constructs while one thread exits, runtimes that shut down in their own exit
//! handlers. Until the writer thread has written the footer they wait here (bounded); then
//! they are appended straight to the file, after the footer, by whichever thread has them.
//! What cannot be kept is counted and written into the trace as a lost-events record.

use accprof_trace::{Event, LostReason, TraceWriter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Events written after the footer, for the exit line.
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Events written after the footer so far (threads still running at exit go on adding).
pub fn written() -> u64 {
    WRITTEN.load(Ordering::Relaxed)
}

/// Events kept while the writer finishes: about 20 MB at most.
const MAX_WAITING: usize = 1 << 16;

struct Late {
    writer: Option<LateWriter>,
    /// Events that arrived before the writer was handed over.
    waiting: Vec<Event>,
    /// Events that could not be kept, not yet written as a lost-events record.
    lost: u64,
    /// The writer is gone for good (the final flush failed or timed out).
    closed: bool,
}

static LATE: Mutex<Late> = Mutex::new(Late {
    writer: None,
    waiting: Vec::new(),
    lost: 0,
    closed: false,
});

struct LateWriter {
    writer: TraceWriter<crate::sink::TraceFile>,
    clock: crate::clock::Converter,
}

impl LateWriter {
    /// Writes one event (times still in the hot path's unit), after the names the recording
    /// threads defined since the writer thread last took them; false when the file refuses.
    fn write(&mut self, mut e: Event) -> bool {
        e.start_ns = self.clock.to_ns(e.start_ns);
        e.end_ns = self.clock.to_ns(e.end_ns);
        let strings = crate::strings::take_new();
        let ok = self
            .writer
            .write_strings(strings.iter().map(|(id, b)| (*id, &b[..])))
            .is_ok()
            && self.writer.write_events(&[e]).is_ok();
        if ok {
            WRITTEN.fetch_add(1, Ordering::Relaxed);
        } else {
            crate::sink::cut_partial_chunk(&self.writer);
        }
        ok
    }
}

/// Appends one event after the final flush (under a lock: the program is exiting). Its names
/// are taken when it is written: by then the writer thread has taken those of the events it
/// wrote.
pub fn write_late(e: Event) {
    let Ok(mut late) = LATE.lock() else { return };
    let late = &mut *late;
    match late.writer.as_mut() {
        Some(w) => {
            if !w.write(e) {
                // The file refuses: nothing more can be written, this count included.
                late.lost += 1;
                late.writer = None;
                late.closed = true;
            }
        }
        None if !late.closed && late.waiting.len() < MAX_WAITING => late.waiting.push(e),
        None => late.lost += 1,
    }
}

/// Where the collector leaves the writer after the footer: the events that waited are written,
/// and the count of those that could not wait.
pub fn hand_over_late_writer(
    writer: TraceWriter<crate::sink::TraceFile>,
    clock: crate::clock::Converter,
) {
    let Ok(mut late) = LATE.lock() else { return };
    let late = &mut *late;
    let mut w = LateWriter { writer, clock };
    for e in std::mem::take(&mut late.waiting) {
        if !w.write(e) {
            late.lost += 1;
        }
    }
    if late.lost > 0 {
        if w.writer
            .write_lost(&[(LostReason::Late, late.lost)])
            .is_ok()
        {
            late.lost = 0;
        } else {
            crate::sink::cut_partial_chunk(&w.writer);
        }
    }
    late.writer = Some(w);
}

/// Runs `f` on the trace's writer once the footer is written, as late events are: under their
/// lock, so that chunks never interleave and sequence numbers go on. `None` when there is no
/// writer (the final flush failed).
pub fn with_writer<T>(f: impl FnOnce(&mut TraceWriter<crate::sink::TraceFile>) -> T) -> Option<T> {
    let mut late = LATE.lock().ok()?;
    late.writer.as_mut().map(|w| {
        let r = f(&mut w.writer);
        // Whatever `f` wrote in whole chunks stays; a chunk a failed write left in part goes.
        crate::sink::cut_partial_chunk(&w.writer);
        r
    })
}

/// The writer will not be handed over (the final flush failed): waiting events are lost.
pub fn close() {
    if let Ok(mut late) = LATE.lock() {
        late.lost += late.waiting.len() as u64;
        late.waiting = Vec::new();
        late.closed = true;
    }
}
