//! The buffers between a recording thread and the writer thread, and packed events.
//!
//! The tool library's recording threads fill them with raw records (crate::raw); events
//! packed as below are what earlier versions wrote, still read from their live files.
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
// A buffer with room for a packed event has room for a raw record.
const _: () = assert!(crate::raw::MAX_WORDS <= MAX_EVENT_WORDS);

/// A bounded buffer of packed events.
///
/// Every buffer has a 64-byte header of the live file's slot layout (crate::live::SlotHeader)
/// before its words: in a slot of the live file, a shared file mapping that the kernel keeps
/// when the process is killed, or on the heap when there is no live file. Every push
/// publishes the committed length in the header (a release store), so that a reader (the
/// writer thread while the owner goes on filling the buffer, or a reader recovering a killed
/// run) trusts exactly the events that were complete.
// repr(C): what a push reads comes first, in one cache line with whatever precedes it.
#[repr(C)]
#[derive(Debug)]
pub struct PackedEvents {
    /// The first word, just after the header.
    ptr: std::ptr::NonNull<u64>,
    /// Words written.
    used: usize,
    cap: usize,
    header: std::ptr::NonNull<crate::live::SlotHeader>,
    events: usize,
    /// The live-file slot the words are in; `None` on the heap.
    slot: Option<u32>,
    /// Owns the header and the words when they are on the heap (its own length stays 0).
    _heap: Vec<u64>,
}

// SAFETY: the words are owned by this value alone: its heap allocation, or a mapped slot
// that the tool's pool hands to one owner at a time.
unsafe impl Send for PackedEvents {}

/// The header of a buffer without words (`PackedEvents::default`): nothing committed, ever.
static NO_WORDS: crate::live::SlotHeader = crate::live::SlotHeader::empty();

impl Default for PackedEvents {
    fn default() -> Self {
        Self {
            ptr: std::ptr::NonNull::dangling(),
            used: 0,
            cap: 0,
            events: 0,
            _heap: Vec::new(),
            header: std::ptr::NonNull::from(&NO_WORDS),
            slot: None,
        }
    }
}

/// Words of a buffer's header.
const HEADER_WORDS_OF_BUFFER: usize = crate::live::SLOT_HEADER_BYTES / 8;

impl PackedEvents {
    /// An empty buffer of `words` words on the heap (at least room for one event of every
    /// field).
    pub fn with_capacity_words(words: usize) -> Self {
        let words = words.max(MAX_EVENT_WORDS);
        let mut heap: Vec<u64> = vec![0; HEADER_WORDS_OF_BUFFER + words];
        // SAFETY: a Vec's pointer is never null, and it holds the header's words first.
        let base = unsafe { std::ptr::NonNull::new_unchecked(heap.as_mut_ptr()) };
        // SAFETY: the header's 8 words are in the allocation, 8-byte aligned, zeroed (a valid
        // SlotHeader: its atomics are plain u64s).
        let header = base.cast::<crate::live::SlotHeader>();
        // SAFETY: as above; generation 1 marks a buffer in use.
        unsafe { header.as_ref() }
            .generation
            .store(1, Ordering::Relaxed);
        Self {
            // SAFETY: the words follow the header inside the allocation.
            ptr: unsafe { base.add(HEADER_WORDS_OF_BUFFER) },
            used: 0,
            cap: words,
            events: 0,
            _heap: heap,
            header,
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
        let h = unsafe { header.as_ref() };
        h.committed_words.store(0, Ordering::Release);
        h.reserved[CONSUMED].store(0, Ordering::Relaxed);
        Self {
            ptr: data,
            used: 0,
            cap: words,
            events: 0,
            _heap: Vec::new(),
            header,
            slot: Some(index),
        }
    }

    fn header(&self) -> &crate::live::SlotHeader {
        // SAFETY: the header lives as long as the buffer (its heap allocation, or the
        // mapping `in_slot`'s contract keeps), or it is the static empty one.
        unsafe { self.header.as_ref() }
    }

    /// The live-file slot the words are in and its generation (which the next
    /// [`clear`](Self::clear) bumps), for the writer's slot-written record; `None` on the heap.
    pub fn slot(&self) -> Option<(u32, u64)> {
        let s = self.slot?;
        Some((s, self.header().generation.load(Ordering::Acquire)))
    }

    /// The header, for an owner publishing which buffer it fills (SharedBuffer::from_raw).
    pub fn header_ptr(&self) -> *mut crate::live::SlotHeader {
        self.header.as_ptr()
    }

    /// Writes every page of the words once, so that whoever fills the buffer takes no page
    /// faults (a live-file slot's pages are new pages of a shared file mapping).
    pub fn touch_pages(&mut self) {
        let mut i = 0;
        while i < self.cap {
            // SAFETY: `i` is inside the words; nothing is committed yet, so nobody reads them.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(i), 0) };
            i += 512;
        }
    }

    /// What another thread may read while the owner goes on filling the buffer.
    pub fn shared(&self) -> SharedBuffer {
        SharedBuffer {
            header: self.header,
            words: self.ptr,
            cap: self.cap,
            slot: self.slot,
        }
    }

    /// Records the thread that fills a mapped buffer (for a reader of the live file).
    pub fn set_owner(&self, thread: i64) {
        if self.cap > 0 {
            self.header().thread.store(thread as u64, Ordering::Relaxed);
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
        self.publish();
        true
    }

    /// Appends a raw record (crate::raw) of `len` words, copied from the first `len` of
    /// `words`. Returns false (and leaves the buffer as it was) when there is no room.
    #[inline]
    pub fn push_raw(&mut self, words: &[u64; crate::raw::MAX_WORDS], len: usize) -> bool {
        if !self.has_room() {
            return false;
        }
        let len = len.min(crate::raw::MAX_WORDS);
        // SAFETY: `has_room` guarantees MAX_EVENT_WORDS >= raw::MAX_WORDS free words. Only
        // `len` words are copied: a record of every part is 28 words (224 bytes), which the C
        // library copies with eight wide moves, where the whole array (288 bytes) takes its
        // loop for larger copies (twice the instructions).
        unsafe {
            std::ptr::copy_nonoverlapping(words.as_ptr(), self.ptr.as_ptr().add(self.used), len)
        };
        self.used += len;
        self.publish();
        true
    }

    /// Appends an event from its parts: `values` are its set fields' values in field order,
    /// one per bit of `mask`. Returns false (and leaves the buffer as it was) when there is
    /// no room.
    #[inline]
    pub fn push_parts(
        &mut self,
        kind: acc_event_t,
        start: u64,
        end: u64,
        mask: u64,
        values: &[u64],
    ) -> bool {
        debug_assert_eq!(values.len(), mask.count_ones() as usize);
        if !self.has_room() || values.len() > FIELD_COUNT {
            return false;
        }
        // SAFETY: `has_room` guarantees MAX_EVENT_WORDS free words, and HEADER_WORDS plus at
        // most FIELD_COUNT values fit them.
        unsafe {
            let p = self.ptr.as_ptr().add(self.used);
            p.write(u64::from(kind.0 as u32));
            p.add(1).write(start);
            p.add(2).write(end);
            p.add(3).write(mask);
            // A loop rather than memcpy: a dozen words, and no call.
            let to = p.add(HEADER_WORDS);
            for (i, &v) in values.iter().enumerate() {
                to.add(i).write(v);
            }
        }
        self.used += HEADER_WORDS + values.len();
        self.publish();
        true
    }

    /// The free words after the committed ones, at least [`MAX_EVENT_WORDS`] of them, for an
    /// event built in place; `None` when the buffer has no room. Finish with
    /// [`commit_in_place`](Self::commit_in_place).
    #[inline]
    pub fn spare(&mut self) -> Option<&mut [u64; MAX_EVENT_WORDS]> {
        if !self.has_room() {
            return None;
        }
        // SAFETY: `has_room` guarantees MAX_EVENT_WORDS free words from `used`, which no
        // reader looks at before they are committed.
        Some(unsafe { &mut *(self.ptr.as_ptr().add(self.used) as *mut [u64; MAX_EVENT_WORDS]) })
    }

    /// The free words after the committed ones, at least a raw record's worth, for a raw
    /// record built in place; `None` when the buffer has no room. Finish with
    /// [`commit_in_place`](Self::commit_in_place).
    #[inline(always)]
    pub fn spare_raw(&mut self) -> Option<&mut [u64; crate::raw::MAX_WORDS]> {
        const { assert!(crate::raw::MAX_WORDS <= MAX_EVENT_WORDS) };
        if !self.has_room() {
            return None;
        }
        // SAFETY: as in `spare`.
        Some(unsafe {
            &mut *(self.ptr.as_ptr().add(self.used) as *mut [u64; crate::raw::MAX_WORDS])
        })
    }

    /// Commits the event written into [`spare`](Self::spare): a packed event (kind, start,
    /// end, mask, then one word per bit of the mask) of `words` words.
    #[inline]
    pub fn commit_in_place(&mut self, words: usize) {
        debug_assert!(words <= MAX_EVENT_WORDS && self.used + words <= self.cap);
        self.used += words;
        self.publish();
    }

    /// One more event is complete: from now on a reader may take it.
    #[inline]
    fn publish(&mut self) {
        self.events += 1;
        self.header()
            .committed_words
            .store(self.used as u64, Ordering::Release);
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
        if self.cap > 0 {
            let h = self.header();
            h.committed_words.store(0, Ordering::Release);
            h.reserved[CONSUMED].store(0, Ordering::Relaxed);
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
        self.iter().unpack_into(out);
    }
}

impl Unpack<'_> {
    /// Unpacks every event left into `out` (replacing its contents), reusing the events
    /// already there (see [`PackedEvents::unpack_into`]).
    pub fn unpack_into(mut self, out: &mut Vec<Event>) {
        let mut n = 0;
        loop {
            if n == out.len() {
                out.push(Event::default());
            }
            if !self.next_into(&mut out[n]) {
                break;
            }
            n += 1;
        }
        out.truncate(n);
    }

    /// The next event into `e`: a raw record (crate::raw) or a packed event. False at the end
    /// or at words that do not decode.
    fn next_into(&mut self, e: &mut Event) -> bool {
        match read_next(self.words, e, &mut crate::raw::Memo::default()) {
            Some(n) => {
                self.words = &self.words[n..];
                true
            }
            None => false,
        }
    }
}

/// Reads the event at the start of `words` (a raw record or a packed event) into `sink`;
/// returns the words it took, `None` at the end or at words that do not decode. `memo` is the
/// sink's (crate::raw::Memo).
#[inline(always)]
pub(crate) fn read_next<S: crate::raw::Sink>(
    words: &[u64],
    sink: &mut S,
    memo: &mut crate::raw::Memo,
) -> Option<usize> {
    let head = *words.first()?;
    if crate::raw::is_raw(head) {
        return crate::raw::decode_into(words, sink, memo);
    }
    let mut rest = Unpack { words };
    let p = rest.next_parts()?;
    // A packed event sets fields the memo does not know of.
    memo.forget();
    p.write_to(sink);
    Some(words.len() - rest.words.len())
}

/// The header word, among a slot header's reserved ones, where the writer keeps how many
/// committed words it has written into the trace already (crate::live::SlotHeader::reserved).
const CONSUMED: usize = 0;

/// A buffer as the writer thread sees it while its owner goes on filling it: the words
/// committed so far, and how many of them the writer has taken already. Valid as long as the
/// buffer is not given back for reuse, which only the writer does.
#[derive(Clone, Copy, Debug)]
pub struct SharedBuffer {
    header: std::ptr::NonNull<crate::live::SlotHeader>,
    words: std::ptr::NonNull<u64>,
    cap: usize,
    slot: Option<u32>,
}

// SAFETY: only committed words (published with a release store, never written again until
// the buffer is cleared) are read through it, and the writer's own counter is an atomic.
unsafe impl Send for SharedBuffer {}
// SAFETY: as above.
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    /// The buffer whose header is at `header`, with `cap` words just after it.
    ///
    /// # Safety
    /// `header` is a buffer's header (PackedEvents::header_ptr) of a buffer of `cap` words,
    /// and the buffer is not cleared or freed while the value is used.
    pub unsafe fn from_raw(
        header: *mut crate::live::SlotHeader,
        cap: usize,
        slot: Option<u32>,
    ) -> Self {
        // SAFETY: the caller's contract; the words follow the 64-byte header.
        unsafe {
            Self {
                header: std::ptr::NonNull::new_unchecked(header),
                words: std::ptr::NonNull::new_unchecked(header.add(1) as *mut u64),
                cap,
                slot,
            }
        }
    }

    fn header(&self) -> &crate::live::SlotHeader {
        // SAFETY: the buffer is not given back while this value is used (its contract).
        unsafe { self.header.as_ref() }
    }

    /// The committed words the writer has not taken yet, and where they end (for
    /// [`taken_to`](Self::taken_to)).
    pub fn untaken(&self) -> (&[u64], usize) {
        let committed =
            (self.header().committed_words.load(Ordering::Acquire) as usize).min(self.cap);
        let taken =
            (self.header().reserved[CONSUMED].load(Ordering::Relaxed) as usize).min(committed);
        // SAFETY: words up to `committed` were written and published by the owner, and are
        // not written again until the buffer is cleared, which only follows this use.
        let words = unsafe {
            std::slice::from_raw_parts(self.words.as_ptr().add(taken), committed - taken)
        };
        (words, committed)
    }

    /// The writer has taken the words up to `end`.
    pub fn taken_to(&self, end: usize) {
        self.header().reserved[CONSUMED].store(end as u64, Ordering::Relaxed);
    }

    /// The live-file slot and its generation; `None` on the heap.
    pub fn slot(&self) -> Option<(u32, u64)> {
        let s = self.slot?;
        Some((s, self.header().generation.load(Ordering::Acquire)))
    }

    /// The same buffer (by its header).
    pub fn same_as(&self, other: &PackedEvents) -> bool {
        self.header == other.header
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
    fn write_to<S: crate::raw::Sink>(&self, e: &mut S) {
        e.begin(acc_event_t(self.kind as u32 as i32), self.start, self.end);
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
        self.next_into(&mut e).then_some(e)
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
