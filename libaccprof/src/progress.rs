//! How far the writing has got: a count bumped by every step of the final flush (a thread's
//! buffer taken) and every write that moved bytes into the trace. A dying thread waiting for
//! the flush gives up when it stops moving (lifecycle::death): a flush that does not move is
//! waiting on something the dying thread holds, or on a reader that reads nothing.

use std::sync::atomic::{AtomicU64, Ordering};

static STEPS: AtomicU64 = AtomicU64::new(0);

/// A step was taken. Async-signal-safe.
pub fn note() {
    STEPS.fetch_add(1, Ordering::Relaxed);
}

/// Steps taken so far. Async-signal-safe.
pub fn steps() -> u64 {
    STEPS.load(Ordering::Relaxed)
}
