//! The queue from the allocation hooks to the collector: a fixed-size, lock-free ring that many
//! threads write and one reads (Vyukov's bounded MPMC queue, used with one consumer).
//!
//! It lives in static memory and never allocates: the hooks run inside malloc. A writer that
//! finds it full gives up at once (the caller counts the loss); it never waits for the reader.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What happened to a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Alloc,
    Free,
}

/// One allocation or free, as the hooks saw it. `time` is in the hot path's clock unit
/// (crate::clock::now), converted by the reader.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Record {
    pub op: Op,
    pub ptr: u64,
    pub size: u64,
    /// The allocation's return address in the application (0 for frees).
    pub site: u64,
    pub time: u64,
}

struct Slot {
    /// `position` when free for the writer of that position, `position + 1` once written.
    seq: AtomicUsize,
    op: AtomicU64,
    ptr: AtomicU64,
    size: AtomicU64,
    site: AtomicU64,
    time: AtomicU64,
}

impl Slot {
    const fn new(seq: usize) -> Self {
        Slot {
            seq: AtomicUsize::new(seq),
            op: AtomicU64::new(0),
            ptr: AtomicU64::new(0),
            size: AtomicU64::new(0),
            site: AtomicU64::new(0),
            time: AtomicU64::new(0),
        }
    }
}

/// A ring of `N` records (`N` a power of two).
pub struct Ring<const N: usize> {
    slots: [Slot; N],
    tail: AtomicUsize,
    /// Only the reader moves it.
    head: AtomicUsize,
}

/// Whether [`Ring::pop`] found a record, nothing, or a record a writer is still filling in.
#[derive(Debug, PartialEq, Eq)]
pub enum Pop {
    Record(Record),
    Empty,
    /// A writer has claimed the next slot but not finished writing it.
    Busy,
}

impl<const N: usize> Ring<N> {
    pub const fn new() -> Self {
        assert!(N.is_power_of_two());
        let mut slots = [const { Slot::new(0) }; N];
        let mut i = 0;
        while i < N {
            slots[i] = Slot::new(i);
            i += 1;
        }
        Ring {
            slots,
            tail: AtomicUsize::new(0),
            head: AtomicUsize::new(0),
        }
    }

    /// Appends `r`; false when the ring is full. Lock-free, no allocation, cannot panic.
    #[inline]
    pub fn push(&self, r: Record) -> bool {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos & (N - 1)];
            let seq = slot.seq.load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos) as isize;
            if dif == 0 {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        slot.op.store(r.op as u64, Ordering::Relaxed);
                        slot.ptr.store(r.ptr, Ordering::Relaxed);
                        slot.size.store(r.size, Ordering::Relaxed);
                        slot.site.store(r.site, Ordering::Relaxed);
                        slot.time.store(r.time, Ordering::Relaxed);
                        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
                        return true;
                    }
                    Err(now) => pos = now,
                }
            } else if dif < 0 {
                return false;
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Takes the oldest record. Only one thread may call this (the collector).
    pub fn pop(&self) -> Pop {
        let pos = self.head.load(Ordering::Relaxed);
        let slot = &self.slots[pos & (N - 1)];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq != pos.wrapping_add(1) {
            // Claimed by a writer that has not finished, or nothing written yet.
            return if self.tail.load(Ordering::Acquire) != pos {
                Pop::Busy
            } else {
                Pop::Empty
            };
        }
        let op = if slot.op.load(Ordering::Relaxed) == Op::Free as u64 {
            Op::Free
        } else {
            Op::Alloc
        };
        let r = Record {
            op,
            ptr: slot.ptr.load(Ordering::Relaxed),
            size: slot.size.load(Ordering::Relaxed),
            site: slot.site.load(Ordering::Relaxed),
            time: slot.time.load(Ordering::Relaxed),
        };
        slot.seq.store(pos.wrapping_add(N), Ordering::Release);
        self.head.store(pos.wrapping_add(1), Ordering::Relaxed);
        Pop::Record(r)
    }
}

impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u64) -> Record {
        Record {
            op: if i.is_multiple_of(2) {
                Op::Alloc
            } else {
                Op::Free
            },
            ptr: i,
            size: i * 10,
            site: i + 1,
            time: i * 100,
        }
    }

    #[test]
    fn keeps_order_and_reports_full_and_empty() {
        let r: Ring<8> = Ring::new();
        assert_eq!(r.pop(), Pop::Empty);
        for i in 0..8 {
            assert!(r.push(rec(i)));
        }
        assert!(!r.push(rec(99)), "a full ring refuses");
        for i in 0..8 {
            assert_eq!(r.pop(), Pop::Record(rec(i)));
        }
        assert_eq!(r.pop(), Pop::Empty);
        // Wraps around.
        for round in 0..5 {
            for i in 0..6 {
                assert!(r.push(rec(round * 10 + i)));
            }
            for i in 0..6 {
                assert_eq!(r.pop(), Pop::Record(rec(round * 10 + i)));
            }
        }
    }

    #[test]
    fn many_writers_one_reader_lose_nothing_they_were_told_was_queued() {
        static RING: Ring<1024> = Ring::new();
        let writers = 4u64;
        let per = 20_000u64;
        let accepted = std::sync::atomic::AtomicU64::new(0);
        let mut seen = vec![Vec::new(); writers as usize];
        std::thread::scope(|s| {
            for w in 0..writers {
                let accepted = &accepted;
                s.spawn(move || {
                    for i in 0..per {
                        // Retry until accepted, so that every record is read exactly once.
                        while !RING.push(Record {
                            op: Op::Alloc,
                            ptr: w,
                            size: i,
                            site: 0,
                            time: 0,
                        }) {
                            std::thread::yield_now();
                        }
                        accepted.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            let mut got = 0;
            while got < writers * per {
                match RING.pop() {
                    Pop::Record(r) => {
                        seen[r.ptr as usize].push(r.size);
                        got += 1;
                    }
                    _ => std::thread::yield_now(),
                }
            }
        });
        assert_eq!(accepted.load(Ordering::Relaxed), writers * per);
        for s in &seen {
            // Each writer's records arrive in its order.
            assert_eq!(s, &(0..per).collect::<Vec<_>>());
        }
        assert_eq!(RING.pop(), Pop::Empty);
    }
}
