//! The one word every callback reads first.
//!
//! A callback on the common path (recording, no fork pending, ACCPROF_SELF_TIME off) must
//! decide that with one load from one cache line: between two callbacks a program runs
//! driver and kernel code that evicts the tool's data, and each line the tool touches then
//! comes back from memory (docs/performance/libaccprof.md). So the recorder's state, the fork
//! gate, the self-time switch, the clock's kind, content hashing and CUPTI's pending launch
//! switch share this word, each owner changing only its own bits; the strings' epoch and the
//! recorder's address share its cache line.
//!
//! The rest of the line's page holds the first table of recording threads (see
//! record::callback), which every callback reads next: after driver code has run, each page a
//! callback touches costs an address translation too, and this way the word and the thread's
//! entry cost one.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

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

/// One recording thread's entry: its thread pointer, state and slot, as record::callback
/// claims and reads them (the types are that module's; here they are addresses). 32 bytes: an
/// entry never straddles two cache lines.
#[repr(C, align(32))]
pub struct ThreadEntry {
    pub thread: AtomicUsize,
    pub state: AtomicPtr<u8>,
    pub slot: AtomicPtr<u8>,
}

/// How many thread entries share the page with the hot line.
pub const THREAD_ENTRIES: usize = (4096 - std::mem::size_of::<Line>()) / 32;

#[repr(C, align(4096))]
struct Page {
    line: Line,
    threads: [ThreadEntry; THREAD_ENTRIES],
}

/// The word, and beside it in the same line the strings' epoch and the recorder; then the
/// thread entries.
static HOT_PAGE: Page = Page {
    line: Line(
        AtomicU32::new(0),
        AtomicU32::new(1),
        AtomicPtr::new(std::ptr::null_mut()),
    ),
    threads: [const {
        ThreadEntry {
            thread: AtomicUsize::new(0),
            state: AtomicPtr::new(std::ptr::null_mut()),
            slot: AtomicPtr::new(std::ptr::null_mut()),
        }
    }; THREAD_ENTRIES],
};

/// The thread entry for `hash` (a hash of the thread pointer: its high 32 bits pick the entry).
#[inline(always)]
pub fn thread_entry(hash: u64) -> &'static ThreadEntry {
    &HOT_PAGE.threads[(((hash >> 32) * THREAD_ENTRIES as u64) >> 32) as usize]
}

/// The recorder, once installed (recorder::install publishes it here so that a callback finds
/// it in the line it reads first; null before).
#[inline(always)]
pub fn recorder() -> *const u8 {
    HOT_PAGE.line.2.load(Ordering::Acquire)
}

/// Publishes the recorder (once, at its installation).
pub fn set_recorder(p: *const u8) {
    HOT_PAGE.line.2.store(p as *mut u8, Ordering::Release);
}

/// Which read-only string addresses the recording threads may trust without comparing bytes:
/// bumped when a module was unloaded (see the strings module). Never 0.
#[inline(always)]
pub fn strings_epoch() -> u32 {
    HOT_PAGE.line.1.load(Ordering::Relaxed)
}

/// A module was unloaded: read-only addresses trusted so far may hold other strings now.
pub fn bump_strings_epoch() {
    let _ = HOT_PAGE
        .line
        .1
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| {
            Some(e.wrapping_add(1).max(1))
        });
}

/// The word, for the callback's first test.
#[inline(always)]
pub fn load() -> u32 {
    HOT_PAGE.line.0.load(Ordering::Relaxed)
}

/// The word, with acquire ordering (for lifecycle decisions).
pub fn load_acquire() -> u32 {
    HOT_PAGE.line.0.load(Ordering::Acquire)
}

/// Sets or clears `bits` (never the state byte).
pub fn set(bits: u32, on: bool) {
    debug_assert_eq!(bits & STATE_MASK, 0);
    if on {
        HOT_PAGE.line.0.fetch_or(bits, Ordering::SeqCst);
    } else {
        HOT_PAGE.line.0.fetch_and(!bits, Ordering::SeqCst);
    }
}

/// The state byte.
pub fn state() -> u8 {
    (load_acquire() & STATE_MASK) as u8
}

/// Stores the state byte, keeping the flags.
pub fn set_state(s: u8) {
    let _ = HOT_PAGE
        .line
        .0
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            Some(w & !STATE_MASK | u32::from(s))
        });
}

/// Moves the state byte from `from` to `to`, keeping the flags; false when it was not `from`.
pub fn transition(from: u8, to: u8) -> bool {
    HOT_PAGE
        .line
        .0
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            (w & STATE_MASK == u32::from(from)).then_some(w & !STATE_MASK | u32::from(to))
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word's line and every thread entry are in one page, whatever the hash.
    #[test]
    fn the_hot_line_and_the_thread_entries_share_one_page() {
        let page = &HOT_PAGE.line as *const Line as usize / 4096;
        for h in [
            0,
            1,
            u64::MAX,
            0x9E37_79B9_7F4A_7C15,
            1 << 63,
            u64::MAX >> 1,
        ] {
            let e = thread_entry(h) as *const ThreadEntry as usize;
            assert_eq!(e / 4096, page);
            assert_eq!((e + 31) / 4096, page);
        }
        let last = &HOT_PAGE.threads[THREAD_ENTRIES - 1] as *const ThreadEntry as usize;
        assert_eq!((last + std::mem::size_of::<ThreadEntry>() - 1) / 4096, page);
    }
}
