//! Keeps accprof's callbacks short while a thread forks.
//!
//! GCC's libgomp runs callbacks under its own global lock and does not reset that lock in a
//! forked child: a child forked while another thread is inside a callback waits on it forever
//! (docs/performance/libaccprof.md). accprof cannot close libgomp's window, but it need not
//! widen it: while a fork is pending, callbacks return at once (the events they skip are
//! counted and written as lost), and the forking thread waits, briefly, for the callbacks
//! already running to end.

use std::sync::atomic::{AtomicU64, Ordering};

static SKIPPED: AtomicU64 = AtomicU64::new(0);

/// Whether a fork is pending: the callback should skip this event.
#[inline]
pub fn pending() -> bool {
    crate::hot::load() & crate::hot::FORK_PENDING != 0
}

/// Counts an event skipped because a fork was pending.
#[cold]
pub fn skip() {
    SKIPPED.fetch_add(1, Ordering::Relaxed);
}

/// Events skipped since the last call, for the writer to record.
pub fn take_skipped() -> u64 {
    SKIPPED.swap(0, Ordering::Relaxed)
}

pub fn set_pending(on: bool) {
    crate::hot::set(crate::hot::FORK_PENDING, on);
}
