//! The CUDA contexts seen in acc_api_info, each with its pool of CUevents.
//!
//! A CUevent can only be recorded on streams of the context it was created in, so events are
//! pooled per context. The pool is a bounded lock-free queue shared by the threads that use
//! the context (they take, the collector gives back once it has read a pair): taking an event
//! is one atomic operation, never a lock and never a wait. Events are created in steps of
//! [`GROW`] when the pool runs dry (warm-up: the first launches and copies of a run), up to
//! [`MAX_EVENTS`]; after that an empty pool means the collector is behind, and the caller skips
//! device timing for that operation and counts it.

use super::driver::{with_context, Driver, Handle};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Events per context at most: 2 per operation in flight between two sweeps of the collector
/// (200 ms). The shim's naive Laplace issues about 3000 operations a second.
pub const MAX_EVENTS: usize = 4096;
/// Events created at once when the pool is empty.
pub const GROW: usize = 64;

/// One CUDA context and its events.
#[derive(Debug)]
pub struct Context {
    pub ctx: Handle,
    free_tx: Sender<Handle>,
    free_rx: Receiver<Handle>,
    created: AtomicUsize,
    max: usize,
    /// Set when the runtime shuts the device down: the context may be destroyed after that, so
    /// its events are not used again (a thread holding it looks the context up afresh).
    closed: AtomicBool,
}

impl Context {
    pub fn new(ctx: Handle, max: usize) -> Self {
        let (free_tx, free_rx) = crossbeam_channel::bounded(max);
        Self {
            ctx,
            free_tx,
            free_rx,
            created: AtomicUsize::new(0),
            max,
            closed: AtomicBool::new(false),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// An event to record: a pooled one, else new ones while under the limit. `None`: none to
    /// spare (or the driver would not create one); the caller skips this operation.
    pub fn take(&self, d: &dyn Driver) -> Option<Handle> {
        if let Ok(e) = self.free_rx.try_recv() {
            return Some(e);
        }
        self.grow(d)
    }

    fn grow(&self, d: &dyn Driver) -> Option<Handle> {
        let n = self.created.fetch_add(GROW, Ordering::AcqRel);
        if n >= self.max || self.is_closed() {
            self.created.fetch_sub(GROW, Ordering::AcqRel);
            return None;
        }
        let want = GROW.min(self.max - n);
        // Events belong to the context current when they are created.
        let made = with_context(d, self.ctx, || {
            let mut first = None;
            let mut made = 0;
            for _ in 0..want {
                let Ok(e) = d.event_create() else { break };
                made += 1;
                if first.is_none() {
                    first = Some(e);
                } else if self.free_tx.try_send(e).is_err() {
                    d.event_destroy(e);
                    made -= 1;
                }
            }
            (first, made)
        });
        let (first, made) = made.unwrap_or((None, 0));
        self.created.fetch_sub(GROW - made, Ordering::AcqRel);
        first
    }

    /// Returns an event for reuse.
    pub fn give_back(&self, d: &dyn Driver, e: Handle) {
        if self.is_closed() {
            // Its context may be gone: leaking the handle is harmless, destroying it is not.
            return;
        }
        if self.free_tx.try_send(e).is_err() {
            d.event_destroy(e);
            self.created.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Events created and not destroyed (in the pool or in use).
    #[cfg(test)]
    pub fn created(&self) -> usize {
        self.created.load(Ordering::Acquire)
    }

    /// Destroys the pooled events and stops using the context. Call with the context current
    /// and before the runtime destroys it.
    pub fn close(&self, d: &dyn Driver) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        while let Ok(e) = self.free_rx.try_recv() {
            d.event_destroy(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::Fake;
    use super::*;

    #[test]
    fn events_are_created_in_steps_reused_and_bounded() {
        let d = Fake::default();
        let c = Context::new(7, 2 * GROW);
        let a = c.take(&d).unwrap();
        assert_eq!(c.created(), GROW, "one step created at once");
        assert_eq!(
            d.created_in_context(),
            vec![7; GROW],
            "created with the runtime's context current"
        );
        let mut held = vec![a];
        for _ in 1..2 * GROW {
            held.push(c.take(&d).unwrap());
        }
        assert_eq!(c.created(), 2 * GROW);
        assert_eq!(
            c.take(&d),
            None,
            "the pool is exhausted: no wait, no new event"
        );
        c.give_back(&d, held.pop().unwrap());
        assert!(c.take(&d).is_some(), "a returned event is reused");
        assert_eq!(d.live_events(), 2 * GROW);
    }

    #[test]
    fn a_closed_context_hands_out_nothing_and_destroys_its_pool() {
        let d = Fake::default();
        let c = Context::new(7, GROW);
        let a = c.take(&d).unwrap();
        c.close(&d);
        assert_eq!(
            d.live_events(),
            1,
            "pooled events destroyed, the one in use kept"
        );
        assert_eq!(c.take(&d), None);
        c.give_back(&d, a);
        assert_eq!(
            d.live_events(),
            1,
            "not destroyed after close: its context may be gone"
        );
    }
}
