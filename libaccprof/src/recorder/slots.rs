//! Per-thread event buffers, and the pool they are recycled through.
//!
//! Each recording thread owns one [`Slot`] and fills its buffer without any lock or atomic
//! read-modify-write: every event publishes the buffer's committed length with a release store
//! (accprof_trace::packed), and the writer thread reads what is committed in place, while the
//! owner goes on filling the rest ([`Slot::current`]): every few hundred milliseconds (so that
//! `--follow` sees events land), at exit, and when a process dies. A full buffer is handed to
//! the writer over a channel and replaced from the pool; memory is bounded by the pool's size.
//! Only the writer gives buffers back, so a buffer it reads in place cannot be reused under
//! it. The pool's buffers are slots of the live file when there is one (super::live), so a
//! killed program loses nothing committed.

use super::message::Message;
use accprof_trace::live::SlotHeader;
use accprof_trace::packed::SharedBuffer;
use accprof_trace::PackedEvents;
use crossbeam_channel::{Receiver, Sender};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
        if let Some(v) = self.allocate() {
            return Some(v);
        }
        if self.starved.load(Ordering::Relaxed) {
            return None;
        }
        let got = self.free_rx.recv_timeout(self.max_wait).ok();
        if got.is_none() {
            self.starved.store(true, Ordering::Relaxed);
        }
        got
    }

    /// How many buffers the pool may have.
    pub fn max_buffers(&self) -> usize {
        self.max_buffers
    }

    /// A new buffer while under the limit.
    fn allocate(&self) -> Option<PackedEvents> {
        let n = self.allocated.fetch_add(1, Ordering::Relaxed);
        if n < self.max_buffers {
            return Some(self.new_buffer());
        }
        self.allocated.fetch_sub(1, Ordering::Relaxed);
        None
    }

    /// A new buffer: the live file's next slot, else (no live file, no slot left, or the
    /// disk refuses the slot's space) one on the heap, which a killed run loses.
    #[cold]
    fn new_buffer(&self) -> PackedEvents {
        self.live
            .and_then(|l| l.slot(self.next_slot.fetch_add(1, Ordering::Relaxed)))
            .unwrap_or_else(|| PackedEvents::with_capacity_words(self.buffer_words))
    }

    /// Writer thread: keeps one new buffer ready, given its disk space and its pages, so that
    /// a recording thread whose buffer fills up never waits for the file system or takes
    /// page faults on fresh pages of the live file (about 2 us each on a virtual machine).
    pub fn prime(&self) {
        if !self.free_rx.is_empty() {
            return;
        }
        let Some(mut v) = self.allocate() else { return };
        v.touch_pages();
        if self.free_tx.try_send(v).is_err() {
            self.allocated.fetch_sub(1, Ordering::Relaxed);
        }
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

    /// The buffer whose header is `header`, as the writer reads it in place.
    fn shared(&self, header: *mut SlotHeader) -> SharedBuffer {
        let slot = self.live.and_then(|l| l.slot_index_of(header));
        // SAFETY: `header` is the header of one of this pool's buffers (all of
        // `buffer_words` words), published by its owner and not given back yet (only the
        // writer, the caller, gives buffers back).
        unsafe { SharedBuffer::from_raw(header, self.buffer_words, slot) }
    }
}

/// One recording thread's buffer and what other threads need to know of it.
// The flag and the buffer's fields that every callback reads and writes share one cache line
// (aligned: an Arc puts its counts before the value).
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Slot {
    /// The owner is inside a callback (read by a thread about to fork or exit).
    pub in_callback: AtomicBool,
    /// The owner's buffer: only the owner touches it ([`Slot::buffer`]).
    buf: UnsafeCell<PackedEvents>,
    /// The header of the owner's buffer, for the writer's in-place reads; null while the owner
    /// changes buffers and after it shipped its last.
    current: AtomicPtr<SlotHeader>,
    /// Events this thread could not buffer, not yet reported to the collector.
    pub dropped: AtomicU64,
    /// The owner thread has ended; the collector removes the slot after its last sweep.
    pub dead: AtomicBool,
    pub thread: i64,
}

// SAFETY: `buf` is touched by its owner thread only (`buffer`'s contract); everything else is
// atomic or immutable.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Slot {}

impl Slot {
    pub fn new(thread: i64) -> Self {
        Self {
            in_callback: AtomicBool::new(false),
            buf: UnsafeCell::new(PackedEvents::default()),
            current: AtomicPtr::new(std::ptr::null_mut()),
            dropped: AtomicU64::new(0),
            dead: AtomicBool::new(false),
            thread,
        }
    }

    /// The owner's buffer.
    ///
    /// # Safety
    /// Called by the slot's owner only (the thread that records into it, or whoever holds
    /// the orphan state's lock), with no other reference from this call alive.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn buffer(&self) -> &mut PackedEvents {
        // SAFETY: the caller's contract: one owner, one reference at a time.
        unsafe { &mut *self.buf.get() }
    }

    /// Owner: hands the buffer (full, or at the thread's end) to the writer and takes a fresh
    /// one; false when none could be had (the caller counts the event dropped).
    ///
    /// # Safety
    /// As for [`buffer`](Self::buffer).
    #[cold]
    pub unsafe fn next_buffer(&self, pool: &Pool, tx: &Sender<Message>) -> bool {
        // SAFETY: forwarded.
        unsafe { self.ship(tx) };
        let Some(fresh) = pool.take() else {
            return false;
        };
        fresh.set_owner(self.thread);
        let header = fresh.header_ptr();
        // SAFETY: forwarded.
        *unsafe { self.buffer() } = fresh;
        self.current.store(header, Ordering::Release);
        true
    }

    /// Owner: hands the buffer to the writer (if it holds anything), leaving none.
    ///
    /// # Safety
    /// As for [`buffer`](Self::buffer).
    pub unsafe fn ship(&self, tx: &Sender<Message>) {
        // Unpublished first: once the writer has the buffer through the channel it may give
        // it back, and its sweeps must not find it here then.
        self.current.store(std::ptr::null_mut(), Ordering::Release);
        // SAFETY: forwarded.
        let b = std::mem::take(unsafe { self.buffer() });
        if b.capacity_words() > 0 {
            // The collector lives until exit; if it is gone, the events go with the process.
            let _ = tx.send(Message::Batch(b));
        }
    }

    /// Writer: the owner's buffer, to read what is committed in place.
    pub fn current(&self, pool: &Pool) -> Option<SharedBuffer> {
        let h = self.current.load(Ordering::Acquire);
        (!h.is_null()).then(|| pool.shared(h))
    }

    /// Whether the owner shipped its last buffer.
    fn shipped_all(&self) -> bool {
        self.current.load(Ordering::Acquire).is_null()
    }
}

/// What holds a slot: the slot alone, or the recording thread's own memory, so that the slot
/// shares a page with what the thread's callbacks touch (record::thread_state). The registry
/// keeps it alive until the writer is done with the slot, after its thread ended.
pub trait SlotHome: Send + Sync {
    fn slot(&self) -> &Slot;
}

impl SlotHome for Slot {
    fn slot(&self) -> &Slot {
        self
    }
}

impl std::ops::Deref for dyn SlotHome {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        self.slot()
    }
}

impl std::fmt::Debug for dyn SlotHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.slot().fmt(f)
    }
}

/// Every live slot, for the collector's sweeps and the exit flush. Locked when a thread records
/// its first event and by the collector; never on the per-event path.
#[derive(Debug, Default)]
pub struct Registry {
    slots: Mutex<Vec<Arc<dyn SlotHome>>>,
    /// The most threads that were recording at once (each holds a buffer of the pool).
    peak_threads: AtomicUsize,
}

impl Registry {
    pub fn add(&self, slot: Arc<dyn SlotHome>) {
        if let Ok(mut v) = self.slots.lock() {
            v.push(slot);
            let live = v.iter().filter(|s| !s.dead.load(Ordering::Relaxed)).count();
            self.peak_threads.fetch_max(live, Ordering::Relaxed);
        }
    }

    /// The most threads that were recording at once.
    pub fn peak_threads(&self) -> usize {
        self.peak_threads.load(Ordering::Relaxed)
    }

    /// Whether any slot's owner is inside a callback; `None` when the list is busy (taken by
    /// a thread starting or by the writer).
    pub fn any_in_callback(&self) -> Option<bool> {
        let v = self.slots.try_lock().ok()?;
        Some(v.iter().any(|s| s.in_callback.load(Ordering::SeqCst)))
    }

    /// A snapshot of the slots, pruning those whose thread ended and that hold nothing more:
    /// their last buffer shipped and no drops still to be reported (a thread that dropped
    /// events and then ended must still have them counted).
    pub fn snapshot(&self) -> Vec<Arc<dyn SlotHome>> {
        match self.slots.lock() {
            Ok(mut v) => {
                v.retain(|s| {
                    let finished = s.dead.load(Ordering::Acquire)
                        && s.dropped.load(Ordering::Acquire) == 0
                        && s.shipped_all();
                    !finished
                });
                v.clone()
            }
            Err(_) => Vec::new(),
        }
    }
}
