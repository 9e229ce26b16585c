//! Which pointers may be recorded blocks, so that `free` of any other pointer costs one load.
//!
//! A counting filter rather than an exact set: one counter per hash bucket, raised by the hook
//! that records a block and lowered by the collector when it has applied that block's free. A
//! free whose bucket is zero certainly frees no recorded block and is not queued. A free whose
//! bucket is non-zero is queued; when it frees an unrecorded pointer that shares the bucket, the
//! collector finds no live block under it and ignores it. Compared with an open-addressed set
//! of pointers this needs no tombstones (which would make probes of absent pointers grow over a
//! long run) and no compare-and-swap in the hooks; the price is an occasional useless queued
//! free, rare while few big blocks are live.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

pub struct LiveFilter<const N: usize> {
    counts: [AtomicU32; N],
    /// Blocks recorded and not yet seen freed: lets a program with none skip the hash.
    live: AtomicUsize,
}

impl<const N: usize> LiveFilter<N> {
    pub const fn new() -> Self {
        assert!(N.is_power_of_two() && N > 1);
        LiveFilter {
            counts: [const { AtomicU32::new(0) }; N],
            live: AtomicUsize::new(0),
        }
    }

    #[inline]
    fn bucket(ptr: u64) -> usize {
        // Fibonacci hashing of the address without its always-zero alignment bits.
        ((ptr >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - N.trailing_zeros())) as usize
    }

    /// A block at `ptr` was recorded (hook side).
    #[inline]
    pub fn add(&self, ptr: u64) {
        self.counts[Self::bucket(ptr)].fetch_add(1, Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Release);
    }

    /// Whether `ptr` may be a recorded block: false means certainly not (hook side, on free).
    #[inline]
    pub fn may_hold(&self, ptr: u64) -> bool {
        self.live.load(Ordering::Relaxed) != 0
            && self.counts[Self::bucket(ptr)].load(Ordering::Relaxed) != 0
    }

    /// The recorded block at `ptr` has been freed and that free applied (collector side).
    pub fn remove(&self, ptr: u64) {
        let c = &self.counts[Self::bucket(ptr)];
        // Never below zero, even if called for a block the filter never saw.
        let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        let _ = self
            .live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
    }
}

impl<const N: usize> Default for LiveFilter<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_pointers_are_held_until_removed_and_others_mostly_not() {
        let f: LiveFilter<1024> = LiveFilter::new();
        assert!(!f.may_hold(0x7f00_0000_1010), "empty filter holds nothing");
        let recorded: Vec<u64> = (0..16).map(|i| 0x7f00_0000_0010 + i * 0x11000).collect();
        for &p in &recorded {
            f.add(p);
        }
        for &p in &recorded {
            assert!(f.may_hold(p));
        }
        // Small heap pointers (16-byte steps) rarely share a bucket with 16 recorded blocks.
        let false_hits = (0..10_000u64)
            .filter(|i| f.may_hold(0x5555_0000_0000 + i * 16))
            .count();
        assert!(
            false_hits < 500,
            "{false_hits} of 10000 unrelated pointers looked recorded"
        );
        for &p in &recorded {
            f.remove(p);
        }
        for &p in &recorded {
            assert!(!f.may_hold(p));
        }
        f.remove(0x1234); // not recorded: no underflow
        f.add(0x2000);
        assert!(f.may_hold(0x2000));
    }
}
