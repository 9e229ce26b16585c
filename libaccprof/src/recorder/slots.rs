//! Per-thread event buffers, and the pool they are recycled through.
//!
//! Each recording thread owns one [`Slot`]. The owner fills its buffer without any lock shared
//! with other threads: the slot's `busy` flag is only ever contended by the collector, which
//! takes partly filled buffers every few hundred milliseconds (so that `--follow` sees events
//! land) and at exit. A full buffer is handed to the collector over a channel and replaced from
//! the pool; memory is bounded by the pool's size. The pool's buffers are slots of the live
//! file when there is one (super::live), so a killed program loses nothing buffered.

use accprof_trace::{PackedEvents, StrId};
use crossbeam_channel::{Receiver, Sender};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one thread hands the collector: events (packed: only their set fields), and the
/// strings first used by them.
#[derive(Debug, Default)]
pub struct Batch {
    pub events: PackedEvents,
    pub strings: Vec<(StrId, Box<[u8]>)>,
}

/// The buffers not in use, and how many exist.
#[derive(Debug)]
pub struct Pool {
    free_tx: Sender<PackedEvents>,
    free_rx: Receiver<PackedEvents>,
    allocated: AtomicUsize,
    max_buffers: usize,
    buffer_words: usize,
    max_wait: Duration,
    /// The live file whose slots new buffers are, when there is one.
    live: Option<&'static super::live::LiveFile>,
    /// The next live-file slot to hand out: each index once.
    next_slot: AtomicUsize,
    /// Set when a wait for a free buffer timed out, cleared when the writer returns one. While
    /// set, nobody waits again: a stalled writer costs the program one wait, not one per event.
    starved: AtomicBool,
}

impl Pool {
    pub fn new(
        buffer_words: usize,
        max_buffers: usize,
        max_wait: Duration,
        live: Option<&'static super::live::LiveFile>,
    ) -> Self {
        let (free_tx, free_rx) = crossbeam_channel::bounded(max_buffers);
        Self {
            free_tx,
            free_rx,
            allocated: AtomicUsize::new(0),
            max_buffers,
            buffer_words,
            max_wait,
            live,
            next_slot: AtomicUsize::new(0),
            starved: AtomicBool::new(false),
        }
    }

    /// An empty buffer: a recycled one, a new one while under the limit, or one freed by the
    /// collector within `max_wait` (unless an earlier wait already timed out and the writer has
    /// not caught up since). `None` means the collector is too far behind: drop.
    pub fn take(&self) -> Option<PackedEvents> {
        if let Ok(v) = self.free_rx.try_recv() {
            return Some(v);
        }
        let n = self.allocated.fetch_add(1, Ordering::Relaxed);
        if n < self.max_buffers {
            return Some(self.new_buffer());
        }
        self.allocated.fetch_sub(1, Ordering::Relaxed);
        if self.starved.load(Ordering::Relaxed) {
            return None;
        }
        let got = self.free_rx.recv_timeout(self.max_wait).ok();
        if got.is_none() {
            self.starved.store(true, Ordering::Relaxed);
        }
        got
    }

    /// A new buffer: the live file's next slot, else (no live file, no slot left, or the
    /// disk refuses the slot's space) one on the heap, which a killed run loses.
    #[cold]
    fn new_buffer(&self) -> PackedEvents {
        self.live
            .and_then(|l| l.slot(self.next_slot.fetch_add(1, Ordering::Relaxed)))
            .unwrap_or_else(|| PackedEvents::with_capacity_words(self.buffer_words))
    }

    /// Returns a written buffer for reuse.
    pub fn give_back(&self, mut v: PackedEvents) {
        self.starved.store(false, Ordering::Relaxed);
        v.clear();
        if v.capacity_words() == 0 {
            return;
        }
        if self.free_tx.try_send(v).is_err() {
            // More buffers than the pool holds can only come from a shrink; let it go.
            self.allocated.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// One thread's buffer. Written by its owner; taken by the collector under `busy`.
#[derive(Debug)]
pub struct Slot {
    busy: AtomicBool,
    batch: UnsafeCell<Batch>,
    /// Events this thread could not buffer, not yet reported to the collector.
    pub dropped: AtomicU64,
    /// The owner thread has ended; the collector removes the slot after its last sweep.
    pub dead: AtomicBool,
    /// Set at exit after the final sweep: later events take the late path.
    pub closed: AtomicBool,
    /// The owner is inside a callback (read by a thread about to fork, `fork_gate`).
    pub in_callback: AtomicBool,
    pub thread: i64,
}

// SAFETY: `batch` is only touched while `busy` is held (see `with_batch`).
unsafe impl Sync for Slot {}

impl Slot {
    pub fn new(thread: i64) -> Self {
        Self {
            busy: AtomicBool::new(false),
            batch: UnsafeCell::new(Batch::default()),
            dropped: AtomicU64::new(0),
            dead: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            in_callback: AtomicBool::new(false),
            thread,
        }
    }

    /// Runs `f` on the batch with `busy` held. Spins while the collector holds it, which it
    /// does only for the time of a pointer swap.
    #[inline]
    pub fn with_batch<R>(&self, f: impl FnOnce(&mut Batch, bool) -> R) -> R {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: `busy` gives us exclusive access until we release it below.
        let r = f(
            unsafe { &mut *self.batch.get() },
            self.closed.load(Ordering::Relaxed),
        );
        self.busy.store(false, Ordering::Release);
        r
    }

    /// The collector's side: takes the batch if the owner is not writing right now.
    pub fn try_with_batch<R>(&self, f: impl FnOnce(&mut Batch) -> R) -> Option<R> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: as in `with_batch`.
        let r = f(unsafe { &mut *self.batch.get() });
        self.busy.store(false, Ordering::Release);
        Some(r)
    }
}

/// Every live slot, for the collector's sweeps and the exit flush. Locked when a thread records
/// its first event and by the collector; never on the per-event path.
#[derive(Debug, Default)]
pub struct Registry {
    slots: Mutex<Vec<Arc<Slot>>>,
}

impl Registry {
    pub fn add(&self, slot: Arc<Slot>) {
        if let Ok(mut v) = self.slots.lock() {
            v.push(slot);
        }
    }

    /// Whether any slot's owner is inside a callback; `None` when the list is busy (taken by
    /// a thread starting or by the writer).
    pub fn any_in_callback(&self) -> Option<bool> {
        let v = self.slots.try_lock().ok()?;
        Some(v.iter().any(|s| s.in_callback.load(Ordering::SeqCst)))
    }

    /// A snapshot of the slots, pruning those whose thread ended and that hold nothing more:
    /// no buffered events and no drops still to be reported (a thread that dropped events and
    /// then ended must still have them counted).
    pub fn snapshot(&self) -> Vec<Arc<Slot>> {
        match self.slots.lock() {
            Ok(mut v) => {
                v.retain(|s| {
                    let finished = s.dead.load(Ordering::Acquire)
                        && s.dropped.load(Ordering::Acquire) == 0
                        && s.try_with_batch(|b| b.events.is_empty() && b.strings.is_empty())
                            .unwrap_or(false);
                    !finished
                });
                v.clone()
            }
            Err(_) => Vec::new(),
        }
    }
}
