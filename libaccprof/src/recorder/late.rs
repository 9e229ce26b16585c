//! Events that arrive after the exit flush (runtimes that shut down in their own exit
//! handlers): appended straight to the file, after the footer, by whichever thread has them.

use accprof_trace::{Event, StrId, TraceWriter};
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The writer, handed back by the collector at exit, for events that arrive after it.
static LATE: Mutex<Option<LateWriter>> = Mutex::new(None);
static LATE_LOST: AtomicU64 = AtomicU64::new(0);

pub struct LateWriter {
    pub writer: TraceWriter<File>,
    pub clock: crate::clock::Converter,
}

/// Appends one event after the final flush, directly, under a lock: the program is exiting.
pub fn write_late(new_strings: &mut Vec<(StrId, Box<[u8]>)>, mut e: Event) {
    let Ok(mut late) = LATE.lock() else { return };
    match late.as_mut() {
        Some(w) => {
            e.start_ns = w.clock.to_ns(e.start_ns);
            e.end_ns = w.clock.to_ns(e.end_ns);
            let strings: Vec<(StrId, Box<[u8]>)> = std::mem::take(new_strings);
            let ok = w
                .writer
                .write_strings(strings.iter().map(|(id, b)| (*id, &b[..])))
                .is_ok()
                && w.writer.write_events(&[e]).is_ok();
            if !ok {
                LATE_LOST.fetch_add(1, Ordering::Relaxed);
            }
        }
        None => {
            LATE_LOST.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Where the collector leaves the writer at exit.
pub fn hand_over_late_writer(writer: TraceWriter<File>, clock: crate::clock::Converter) {
    if let Ok(mut late) = LATE.lock() {
        *late = Some(LateWriter { writer, clock });
    }
}
