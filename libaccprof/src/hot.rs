//! The one word every callback reads first.
//!
//! A callback on the common path (recording, no fork pending, ACCPROF_SELF_TIME off) must
//! decide that with one load from one cache line: between two callbacks a program runs
//! driver and kernel code that evicts the tool's data, and each line the tool touches then
//! comes back from memory (docs/performance/libaccprof.md). So the recorder's state, the fork
//! gate, the self-time switch, the clock's kind, content hashing and CUPTI's pending launch
//! switch share this word, each owner changing only its own bits; the strings' epoch and the
//! recorder's address share its cache line.

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// The low byte: the recorder's state (`recorder::State`).
pub const STATE_MASK: u32 = 0xff;
/// A thread is forking: callbacks return at once (the fork gate).
pub const FORK_PENDING: u32 = 1 << 8;
/// ACCPROF_SELF_TIME is on: callbacks are timed.
pub const SELF_TIME: u32 = 1 << 9;
/// Timestamps are TSC ticks (the clock module's choice).
pub const TSC: u32 = 1 << 10;
/// ACCPROF_CONTENT is on: transfers' bytes are hashed (crate::content).
pub const CONTENT: u32 = 1 << 11;
/// CUPTI records device activity and its launch callback is still on: the next launch start
/// switches it off (device::cupti::runtime_reports_launches).
pub const LAUNCH_SWITCH: u32 = 1 << 12;

#[repr(C, align(64))]
struct Line(AtomicU32, AtomicU32, AtomicPtr<u8>);

/// The word, and beside it in the same line the strings' epoch and the recorder.
static HOT: Line = Line(
    AtomicU32::new(0),
    AtomicU32::new(1),
    AtomicPtr::new(std::ptr::null_mut()),
);

/// The recorder, once installed (recorder::install publishes it here so that a callback finds
/// it in the line it reads first; null before).
#[inline(always)]
pub fn recorder() -> *const u8 {
    HOT.2.load(Ordering::Acquire)
}

/// Publishes the recorder (once, at its installation).
pub fn set_recorder(p: *const u8) {
    HOT.2.store(p as *mut u8, Ordering::Release);
}

/// Which read-only string addresses the recording threads may trust without comparing bytes:
/// bumped when a module was unloaded (see the strings module). Never 0.
#[inline(always)]
pub fn strings_epoch() -> u32 {
    HOT.1.load(Ordering::Relaxed)
}

/// A module was unloaded: read-only addresses trusted so far may hold other strings now.
pub fn bump_strings_epoch() {
    let _ = HOT
        .1
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| {
            Some(e.wrapping_add(1).max(1))
        });
}

/// The word, for the callback's first test.
#[inline(always)]
pub fn load() -> u32 {
    HOT.0.load(Ordering::Relaxed)
}

/// The word, with acquire ordering (for lifecycle decisions).
pub fn load_acquire() -> u32 {
    HOT.0.load(Ordering::Acquire)
}

/// Sets or clears `bits` (never the state byte).
pub fn set(bits: u32, on: bool) {
    debug_assert_eq!(bits & STATE_MASK, 0);
    if on {
        HOT.0.fetch_or(bits, Ordering::SeqCst);
    } else {
        HOT.0.fetch_and(!bits, Ordering::SeqCst);
    }
}

/// The state byte.
pub fn state() -> u8 {
    (load_acquire() & STATE_MASK) as u8
}

/// Stores the state byte, keeping the flags.
pub fn set_state(s: u8) {
    let _ = HOT
        .0
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            Some(w & !STATE_MASK | u32::from(s))
        });
}

/// Moves the state byte from `from` to `to`, keeping the flags; false when it was not `from`.
pub fn transition(from: u8, to: u8) -> bool {
    HOT.0
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            (w & STATE_MASK == u32::from(from)).then_some(w & !STATE_MASK | u32::from(to))
        })
        .is_ok()
}
