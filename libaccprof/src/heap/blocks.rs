//! The collector's view of the recorded heap blocks: which block held an address at a time.
//!
//! Addresses are reused after free, and some events reach the collector long after they
//! happened (CUPTI delivers its buffers late), so a block is looked up *as of the event's time*
//! and freed blocks are kept, with their free time, for a while: the newest `max_freed` of
//! them. A block evicted from that list can no longer name anything; an event from its lifetime
//! then gets no name, never another block's.

use accprof_trace::{Event, Field};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Block {
    pub base: u64,
    pub size: u64,
    /// The allocation's return address in the application.
    pub site: u64,
    pub alloc_ns: u64,
    /// `u64::MAX` while live.
    pub free_ns: u64,
}

impl Block {
    fn holds(&self, ptr: u64, t: u64) -> bool {
        self.base <= ptr && ptr - self.base < self.size && self.alloc_ns <= t && t < self.free_ns
    }
}

#[derive(Debug)]
pub struct BlockMap {
    live: BTreeMap<u64, Block>,
    /// Freed blocks by (base, alloc time).
    freed: BTreeMap<(u64, u64), Block>,
    /// Keys of `freed`, oldest free first, for eviction.
    freed_order: VecDeque<(u64, u64)>,
    max_freed: usize,
    /// The largest freed block kept: how far below an address a freed block's base can be.
    max_freed_size: u64,
}

impl BlockMap {
    pub fn new(max_freed: usize) -> Self {
        Self {
            live: BTreeMap::new(),
            freed: BTreeMap::new(),
            freed_order: VecDeque::new(),
            max_freed,
            max_freed_size: 0,
        }
    }

    pub fn alloc(&mut self, base: u64, size: u64, site: u64, ns: u64) {
        if size == 0 {
            return;
        }
        // A live block at the same base means we missed its free (it cannot happen with the
        // hooks; be safe): it ended no later than this allocation.
        if let Some(old) = self.live.remove(&base) {
            self.retire(old, ns);
        }
        self.live.insert(
            base,
            Block {
                base,
                size,
                site,
                alloc_ns: ns,
                free_ns: u64::MAX,
            },
        );
    }

    /// Applies a free; false when `base` was no live recorded block (a queued free of a pointer
    /// that only shared the filter's bucket).
    pub fn free(&mut self, base: u64, ns: u64) -> bool {
        match self.live.remove(&base) {
            Some(b) => {
                self.retire(b, ns);
                true
            }
            None => false,
        }
    }

    fn retire(&mut self, mut b: Block, ns: u64) {
        b.free_ns = ns.max(b.alloc_ns);
        let key = (b.base, b.alloc_ns);
        self.max_freed_size = self.max_freed_size.max(b.size);
        self.freed.insert(key, b);
        self.freed_order.push_back(key);
        while self.freed_order.len() > self.max_freed {
            if let Some(old) = self.freed_order.pop_front() {
                self.freed.remove(&old);
            }
        }
    }

    /// The block that held `ptr` at time `t`.
    pub fn find(&self, ptr: u64, t: u64) -> Option<&Block> {
        if let Some((_, b)) = self.live.range(..=ptr).next_back() {
            if b.holds(ptr, t) {
                return Some(b);
            }
        }
        let lo = ptr.saturating_sub(self.max_freed_size);
        self.freed
            .range((lo, 0)..=(ptr, u64::MAX))
            .rev()
            .map(|(_, b)| b)
            .find(|b| b.holds(ptr, t))
    }

    /// Sets `alloc_site`, `alloc_base` and `alloc_bytes` of an event whose `host_ptr` lay in a
    /// recorded block when it happened and which has no name yet. Device records are looked up
    /// at the host call that issued them. Returns whether it did.
    pub fn annotate(&self, ev: &mut Event) -> bool {
        let Some(fields) = self.name_of(ev) else {
            return false;
        };
        for (f, v) in fields {
            ev.set(f, v);
        }
        true
    }

    /// The fields [`annotate`](Self::annotate) sets on `ev`, if any.
    pub fn name_of(&self, ev: &Event) -> Option<[(Field, u64); 3]> {
        if ev.get(Field::VarName).is_some() || ev.get(Field::AllocSite).is_some() {
            return None;
        }
        let p = ev.get(Field::HostPtr)?;
        let t = if accprof_trace::device::is_device_record(ev.kind) {
            ev.get(Field::HostCallNs).unwrap_or(ev.start_ns)
        } else {
            ev.start_ns
        };
        let b = self.find(p, t)?;
        Some([
            (Field::AllocSite, b.site),
            (Field::AllocBase, b.base),
            (Field::AllocBytes, b.size),
        ])
    }

    #[cfg(test)]
    pub fn live_count(&self) -> usize {
        self.live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;

    #[test]
    fn an_address_names_the_block_that_held_it_at_that_time() {
        let mut m = BlockMap::new(100);
        m.alloc(0x1000, 0x100, 0xa1, 10);
        assert_eq!(m.find(0x1000, 10).map(|b| b.site), Some(0xa1));
        assert_eq!(m.find(0x10ff, 15).map(|b| b.site), Some(0xa1));
        assert!(m.find(0x1100, 15).is_none(), "one past the end");
        assert!(m.find(0x0fff, 15).is_none());
        assert!(m.find(0x1000, 9).is_none(), "before it was allocated");
        // Freed, then the same address allocated again from another line.
        assert!(m.free(0x1000, 20));
        m.alloc(0x1000, 0x80, 0xb2, 30);
        assert_eq!(
            m.find(0x1010, 15).map(|b| b.site),
            Some(0xa1),
            "a late event of the first block"
        );
        assert!(
            m.find(0x1010, 25).is_none(),
            "between the free and the reuse"
        );
        assert_eq!(m.find(0x1010, 35).map(|b| b.site), Some(0xb2));
        assert!(
            m.find(0x1090, 35).is_none(),
            "inside the old, larger block but past the new one"
        );
        assert!(!m.free(0x5000, 40), "not a recorded block");
    }

    #[test]
    fn freed_blocks_are_kept_up_to_the_bound_and_then_name_nothing() {
        let mut m = BlockMap::new(2);
        for i in 0..4u64 {
            m.alloc(0x1000, 0x100, i, i * 10);
            m.free(0x1000, i * 10 + 5);
        }
        assert!(
            m.find(0x1000, 1).is_none(),
            "evicted: no name rather than a wrong one"
        );
        assert!(m.find(0x1000, 11).is_none());
        assert_eq!(m.find(0x1000, 21).map(|b| b.site), Some(2));
        assert_eq!(m.find(0x1000, 31).map(|b| b.site), Some(3));
        assert_eq!(m.live_count(), 0);
    }

    #[test]
    fn a_freed_big_block_below_a_small_live_one_is_found() {
        let mut m = BlockMap::new(10);
        m.alloc(0x10000, 0x10000, 1, 0);
        m.free(0x10000, 10);
        m.alloc(0x18000, 0x100, 2, 20);
        assert_eq!(m.find(0x18010, 5).map(|b| b.site), Some(1));
        assert_eq!(m.find(0x18010, 25).map(|b| b.site), Some(2));
        assert!(m.find(0x19000, 25).is_none());
    }

    #[test]
    fn annotate_uses_the_host_call_time_of_device_records_and_leaves_named_events() {
        let mut m = BlockMap::new(10);
        m.alloc(0x1000, 0x100, 0xa1, 10);
        m.free(0x1000, 20);
        m.alloc(0x1000, 0x100, 0xb2, 30);
        let mut dev = Event::new(accprof_trace::device::MEMCPY, 40);
        dev.set(Field::HostPtr, 0x1040);
        dev.set(Field::HostCallNs, 15);
        assert!(m.annotate(&mut dev));
        assert_eq!(dev.get(Field::AllocSite), Some(0xa1));
        assert_eq!(dev.get(Field::AllocBase), Some(0x1000));
        assert_eq!(dev.get(Field::AllocBytes), Some(0x100));
        let mut up = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 35);
        up.set(Field::HostPtr, 0x1000);
        assert!(m.annotate(&mut up));
        assert_eq!(up.get(Field::AllocSite), Some(0xb2));
        let mut named = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 35);
        named.set(Field::HostPtr, 0x1000);
        named.set(Field::VarName, 3);
        assert!(!m.annotate(&mut named));
        assert_eq!(named.get(Field::AllocSite), None);
    }
}
