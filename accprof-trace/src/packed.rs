//! Events packed for the trip from a recording thread to the writer thread.
//!
//! An [`Event`] is about 300 bytes because it has a slot for every field, but a runtime fills
//! a dozen of them. Copying the whole event into a thread's buffer was the largest single cost
//! of a callback when the caches are cold (the usual case: between two callbacks the program
//! streams its arrays or runs driver code), so the buffer keeps only the fields that are set:
//! `kind, start_ns, end_ns, present mask`, then one word per set field in field order.
//! Typical events take 12-16 words (96-128 bytes) instead of 38.
//!
//! The buffer never grows: [`PackedEvents::push`] refuses an event when fewer than
//! [`MAX_EVENT_WORDS`] words are left, so pushing never allocates.

use crate::model::{Event, Field, FIELD_COUNT};
use accprof_abi::acc_event_t;
use std::sync::atomic::Ordering;

/// Words of the fixed part of a packed event: kind, start, end, present mask.
const HEADER_WORDS: usize = 4;
/// The most words one event can take (every field set).
pub const MAX_EVENT_WORDS: usize = HEADER_WORDS + FIELD_COUNT;

/// A bounded buffer of packed events.
///
/// The words live either on the heap or in a slot of the live file (crate::live), a shared
/// file mapping that the kernel keeps when the process is killed: there, every push also
/// publishes the committed length in the slot's header, so a reader recovering a killed run
/// trusts exactly the events that were complete.
#[derive(Debug)]
pub struct PackedEvents {
    /// The first word: of `heap`'s allocation, or of a mapped slot.
    ptr: std::ptr::NonNull<u64>,
    /// Words written.
    used: usize,
    cap: usize,
    events: usize,
    /// Owns the words when they are on the heap (its own length stays 0: `used` counts).
    _heap: Vec<u64>,
    /// The slot header of mapped words.
    slot: Option<MappedSlot>,
}

// SAFETY: the words are owned by this value alone: its heap allocation, or a mapped slot
// that the tool's pool hands to one owner at a time.
unsafe impl Send for PackedEvents {}

impl Default for PackedEvents {
    fn default() -> Self {
        Self {
            ptr: std::ptr::NonNull::dangling(),
            used: 0,
            cap: 0,
            events: 0,
            _heap: Vec::new(),
            slot: None,
        }
    }
}

/// Where a mapped buffer publishes what it holds (crate::live's slot header).
#[derive(Clone, Copy, Debug)]
pub struct MappedSlot {
    header: std::ptr::NonNull<crate::live::SlotHeader>,
    index: u32,
}

impl PackedEvents {
    /// An empty buffer of `words` words (at least room for one event of every field).
    pub fn with_capacity_words(words: usize) -> Self {
        let mut heap = Vec::with_capacity(words.max(MAX_EVENT_WORDS));
        Self {
            // SAFETY: a Vec's pointer is never null.
            ptr: unsafe { std::ptr::NonNull::new_unchecked(heap.as_mut_ptr()) },
            used: 0,
            cap: heap.capacity(),
            events: 0,
            _heap: heap,
            slot: None,
        }
    }

    /// An empty buffer over slot `index` of a live file: `words` words at `data`, published
    /// through `header` (its committed length is set to 0 here).
    ///
    /// # Safety
    /// `data` points at `words` writable words and `header` at a slot header, both in a
    /// mapping that outlives the buffer and that nothing else writes while the buffer lives.
    pub unsafe fn in_slot(
        data: std::ptr::NonNull<u64>,
        words: usize,
        header: std::ptr::NonNull<crate::live::SlotHeader>,
        index: u32,
    ) -> Self {
        // SAFETY: the caller's contract.
        unsafe { header.as_ref() }
            .committed_words
            .store(0, Ordering::Release);
        Self {
            ptr: data,
            used: 0,
            cap: words,
            events: 0,
            _heap: Vec::new(),
            slot: Some(MappedSlot { header, index }),
        }
    }

    /// The live-file slot the words are in and its generation (which the next
    /// [`clear`](Self::clear) bumps), for the writer's slot-written record; `None` on the heap.
    pub fn slot(&self) -> Option<(u32, u64)> {
        let s = self.slot?;
        // SAFETY: `in_slot`'s contract keeps the header mapped while we live.
        let h = unsafe { s.header.as_ref() };
        Some((s.index, h.generation.load(Ordering::Acquire)))
    }

    /// Records the thread that fills a mapped buffer (for a reader of the live file).
    pub fn set_owner(&self, thread: i64) {
        if let Some(s) = self.slot {
            // SAFETY: as in `slot`.
            unsafe { s.header.as_ref() }
                .thread
                .store(thread as u64, Ordering::Relaxed);
        }
    }

    /// Whether any event fits: a buffer without capacity (taken away, not yet replaced) has none.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.cap - self.used >= MAX_EVENT_WORDS
    }

    /// Appends `e`, returning false (and leaving the buffer as it was) when there is no room.
    #[inline]
    pub fn push(&mut self, e: &Event) -> bool {
        if !self.has_room() {
            return false;
        }
        let mask = e.present_mask();
        let values = e.values();
        let len = self.used;
        // SAFETY: `has_room` guarantees MAX_EVENT_WORDS free words of capacity, and an event
        // takes HEADER_WORDS plus one word per set field, at most MAX_EVENT_WORDS.
        unsafe {
            let p = self.ptr.as_ptr().add(len);
            p.write(u64::from(e.kind.0 as u32));
            p.add(1).write(e.start_ns);
            p.add(2).write(e.end_ns);
            p.add(3).write(mask);
            // Only the set fields are read and written: an event reused from an earlier one
            // (the recording threads reuse theirs) has its other slots' cache lines cold.
            let mut k = HEADER_WORDS;
            let mut bits = mask;
            while bits != 0 {
                p.add(k).write(values[bits.trailing_zeros() as usize]);
                k += 1;
                bits &= bits - 1;
            }
            self.used = len + k;
        }
        self.events += 1;
        if let Some(s) = self.slot {
            // The event's words are written: from now on a reader of the live file may
            // take it. SAFETY: as in `slot`.
            unsafe { s.header.as_ref() }
                .committed_words
                .store(self.used as u64, Ordering::Release);
        }
        true
    }

    /// Asks the CPU to fetch the next `lines` cache lines this buffer will be written at, so
    /// that the next event's copy does not wait for them.
    #[inline]
    pub fn prefetch_next(&self, lines: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.ptr.as_ptr().wrapping_add(self.used) as *const i8;
            for l in 0..lines {
                // SAFETY: a prefetch never faults and has no effect on program semantics.
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                        p.wrapping_add(64 * l),
                    )
                };
            }
        }
    }

    /// Events in the buffer.
    pub fn len(&self) -> usize {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Words allocated (for memory accounting).
    pub fn capacity_words(&self) -> usize {
        self.cap
    }

    /// Empties the buffer, keeping its allocation. A mapped buffer's slot says it holds
    /// nothing, then takes its next generation: what it held before is in the trace.
    pub fn clear(&mut self) {
        self.used = 0;
        self.events = 0;
        if let Some(s) = self.slot {
            // SAFETY: as in `slot`.
            let h = unsafe { s.header.as_ref() };
            h.committed_words.store(0, Ordering::Release);
            h.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The packed words.
    fn words(&self) -> &[u64] {
        // SAFETY: `used` words from `ptr` were written by `push` (or `ptr` is dangling and
        // `used` is 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.used) }
    }

    /// The events, unpacked, in the order they were pushed.
    pub fn iter(&self) -> Unpack<'_> {
        Unpack {
            words: self.words(),
        }
    }

    /// Unpacks every event into `out` (replacing its contents), reusing the events already
    /// there. The writer thread unpacks every batch this way: building each event afresh
    /// (zeroing and copying 300 bytes) cost it more time and memory bandwidth, which the
    /// recording threads share.
    pub fn unpack_into(&self, out: &mut Vec<Event>) {
        let mut u = self.iter();
        let mut n = 0;
        while let Some(p) = u.next_parts() {
            if n == out.len() {
                out.push(Event::default());
            }
            p.write_to(&mut out[n]);
            n += 1;
        }
        out.truncate(n);
    }
}

/// Iterator over the events of a [`PackedEvents`].
pub struct Unpack<'a> {
    words: &'a [u64],
}

/// One packed event, not yet unpacked.
struct Parts<'a> {
    kind: u64,
    start: u64,
    end: u64,
    mask: u64,
    values: &'a [u64],
}

impl Parts<'_> {
    /// Makes `e` this event, clearing whatever it held before.
    fn write_to(&self, e: &mut Event) {
        e.reset(acc_event_t(self.kind as u32 as i32), self.start, self.end);
        let mut bits = self.mask;
        for &v in self.values {
            e.set(Field::ALL[bits.trailing_zeros() as usize], v);
            bits &= bits - 1;
        }
    }
}

impl<'a> Unpack<'a> {
    /// The events packed in `words` (as [`PackedEvents`] lays them out), for a reader of a
    /// live file's slot. Stops at the first event that does not decode.
    pub fn from_words(words: &'a [u64]) -> Self {
        Self { words }
    }

    /// Words not consumed: non-zero after the iterator ended means the words did not decode.
    pub fn words_left(&self) -> usize {
        self.words.len()
    }

    fn next_parts(&mut self) -> Option<Parts<'a>> {
        let [kind, start, end, mask, rest @ ..] = self.words else {
            return None;
        };
        // Only `push` writes these words, so the mask never has bits beyond the fields; the
        // check keeps a bug from becoming an out-of-bounds read.
        let n = mask.count_ones() as usize;
        if *mask >> FIELD_COUNT != 0 || rest.len() < n {
            // Left in place: `words_left` tells the caller the words did not decode.
            return None;
        }
        self.words = &rest[n..];
        Some(Parts {
            kind: *kind,
            start: *start,
            end: *end,
            mask: *mask,
            values: &rest[..n],
        })
    }
}

impl Iterator for Unpack<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let mut e = Event::default();
        self.next_parts()?.write_to(&mut e);
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventFlags;

    fn sample(i: u64) -> Event {
        let mut e = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 1000 + i);
        e.end_ns = 2000 + i;
        e.set(Field::Bytes, 1 << 20);
        e.set_i64(Field::LineNo, 59);
        e.set(Field::HostPtr, 0x7f00_0000_0000 + i);
        e.add_flags(EventFlags::NO_END);
        e
    }

    #[test]
    fn events_come_back_exactly_in_order() {
        let mut b = PackedEvents::with_capacity_words(1024);
        let mut full = Event::new(acc_event_t(-7), u64::MAX);
        for f in Field::ALL {
            full.set(f, u64::MAX - f as u64);
        }
        let point = Event::new(acc_event_t::RUNTIME_SHUTDOWN, 5);
        let want = [sample(0), full, point, sample(1)];
        for e in &want {
            assert!(b.push(e));
        }
        assert_eq!(b.len(), 4);
        assert_eq!(b.iter().collect::<Vec<_>>(), want);
        // The point event took the header only; the sample 4 + its 4 fields.
        assert_eq!(b.words().len(), 8 + MAX_EVENT_WORDS + HEADER_WORDS + 8);
    }

    #[test]
    fn unpacking_into_used_events_leaves_nothing_of_them() {
        let mut b = PackedEvents::with_capacity_words(1024);
        let point = Event::new(acc_event_t::RUNTIME_SHUTDOWN, 5);
        for e in [point, sample(1)] {
            assert!(b.push(&e));
        }
        let mut full = Event::new(acc_event_t(3), 9);
        for f in Field::ALL {
            full.set(f, 77);
        }
        let mut out = vec![full, full, full];
        b.unpack_into(&mut out);
        assert_eq!(
            out,
            [point, sample(1)],
            "old fields cleared, extra events dropped"
        );
        assert!(
            Field::ALL.iter().all(|&f| out[0].get(f).is_none()),
            "no stale field reads as set"
        );
        b.push(&sample(2));
        b.unpack_into(&mut out);
        assert_eq!(out, [point, sample(1), sample(2)], "grows when needed");
    }

    #[test]
    fn a_full_buffer_refuses_without_growing_and_clear_keeps_the_allocation() {
        let mut b = PackedEvents::with_capacity_words(MAX_EVENT_WORDS + 8);
        let cap = b.capacity_words();
        let mut pushed = 0;
        while b.push(&sample(pushed)) {
            pushed += 1;
        }
        assert!(pushed >= 1);
        assert_eq!(b.capacity_words(), cap, "push never reallocates");
        assert_eq!(b.iter().count() as u64, pushed);
        b.clear();
        assert!(b.is_empty() && b.has_room());
        assert_eq!(b.capacity_words(), cap);
        assert!(
            !PackedEvents::default().has_room(),
            "a taken buffer has no room"
        );
    }
}
