//! Recovering what a killed run's live file ([`crate::live`]) holds that its trace does not.
//!
//! The writer thread records each slot's contents it writes into the trace with a
//! slot-written chunk (slot, generation, events) just before the events: the reader skips
//! that many events of the slot when the slot still has that generation (a slot is cleared
//! and its generation bumped once its contents are in the trace).
//!
//! The tool library names a transfer's heap block (`alloc_site`, `alloc_base`, `alloc_bytes`)
//! when it writes the event into the trace; the live file holds events as recorded, unnamed.
//! [`HeapBlocks`] gives recovered events the block that the trace's own events were named by.

use crate::live::{
    slot_stride, word, HEADER_BYTES, LIVE_MAGIC, LIVE_VERSION, MAX_SLOTS, MAX_SLOT_WORDS,
    SLOT_HEADER_BYTES, STRINGS_BYTES, STRING_COMMITTED,
};
use crate::model::{Event, Field};
use crate::packed::{Unpack, MAX_EVENT_WORDS};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Which slot contents the trace already holds, from its slot-written chunks: per slot, the
/// latest generation recorded and how many of its events the events chunks after the record
/// brought (all of them unless the trace was cut between the two).
#[derive(Clone, Debug, Default)]
pub struct SlotsWritten {
    written: HashMap<u32, (u64, u64)>,
    /// The record whose events are still to come: (slot, events not yet seen).
    awaiting: Option<(u32, u64)>,
}

impl SlotsWritten {
    /// A slot-written record: `events` events of `slot` at `generation` follow.
    pub fn record(&mut self, slot: u32, generation: u64, events: u64) {
        // The same slot and generation again: the rest of its events, folded in after a kill
        // (`fold_into_trace`) behind those the writer had written.
        let w = self.written.entry(slot).or_insert((generation, 0));
        if w.0 != generation {
            *w = (generation, 0);
        }
        self.awaiting = (events > 0).then_some((slot, events));
    }

    /// An events chunk of `count` events was read.
    pub fn events_read(&mut self, count: u64) {
        let Some((slot, left)) = self.awaiting else {
            return;
        };
        let took = count.min(left);
        if let Some(w) = self.written.get_mut(&slot) {
            w.1 = w.1.saturating_add(took);
        }
        self.awaiting = (left > took).then_some((slot, left - took));
    }

    /// Events of `slot` at `generation` that the trace already holds.
    fn in_trace(&self, slot: u32, generation: u64) -> u64 {
        match self.written.get(&slot) {
            Some(&(g, n)) if g == generation => n,
            // A later generation written: everything this one held is in the trace.
            Some(&(g, _)) if g > generation => u64::MAX,
            _ => 0,
        }
    }
}

/// What a live file adds to its trace.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Strings interned by the recording threads (those the trace defines come again).
    pub strings: Vec<(u32, Vec<u8>)>,
    /// Events the trace does not hold, timestamps on the trace's clock, by slot.
    pub slots: Vec<RecoveredSlot>,
}

/// The events of one live-file slot that its trace does not hold, in the order they were
/// recorded.
#[derive(Debug, Default)]
pub struct RecoveredSlot {
    pub slot: u32,
    pub generation: u64,
    pub events: Vec<Event>,
}

impl Recovered {
    /// Events recovered, all slots.
    pub fn len(&self) -> usize {
        self.slots.iter().map(|s| s.events.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every recovered event, in start order (as a reader hands them out after the trace's).
    pub fn into_sorted_events(self) -> Vec<Event> {
        let mut events: Vec<Event> = self.slots.into_iter().flat_map(|s| s.events).collect();
        events.sort_by_key(|e| e.start_ns);
        events
    }
}

/// The heap blocks a trace's events were named by, to name the events recovered from its
/// live file the same way. A block is known by the latest event the trace names with it; a
/// block freed and another allocated at its address only in the part of the run that the
/// live file alone holds would keep the earlier block's name, so a recovered event is named
/// only when it lies wholly inside the block.
#[derive(Debug, Default)]
pub struct HeapBlocks {
    /// base -> (bytes, allocation site, start of the latest event named by it)
    by_base: BTreeMap<u64, (u64, u64, u64)>,
}

impl HeapBlocks {
    /// Takes the block `e` is named by, if any.
    pub fn see(&mut self, e: &Event) {
        let (Some(base), Some(bytes), Some(site)) = (
            e.get(Field::AllocBase),
            e.get(Field::AllocBytes),
            e.get(Field::AllocSite),
        ) else {
            return;
        };
        let b = self
            .by_base
            .entry(base)
            .or_insert((bytes, site, e.start_ns));
        if e.start_ns >= b.2 {
            *b = (bytes, site, e.start_ns);
        }
    }

    /// Names an unnamed event whose host bytes lie wholly inside a known block.
    pub fn name(&self, e: &mut Event) {
        if e.get(Field::VarName).is_some() || e.get(Field::AllocSite).is_some() {
            return;
        }
        let Some(p) = e.get(Field::HostPtr) else {
            return;
        };
        let Some((&base, &(bytes, site, _))) = self.by_base.range(..=p).next_back() else {
            return;
        };
        let end = p.saturating_add(e.get(Field::Bytes).unwrap_or(1).max(1));
        if end > base.saturating_add(bytes) {
            return;
        }
        e.set(Field::AllocSite, site);
        e.set(Field::AllocBase, base);
        e.set(Field::AllocBytes, bytes);
    }
}

impl Recovered {
    /// Names the recovered events' heap blocks as the trace's events were ([`HeapBlocks`]).
    pub fn name_heap_blocks(&mut self, blocks: &HeapBlocks) {
        if blocks.by_base.is_empty() {
            return;
        }
        for e in self.slots.iter_mut().flat_map(|s| s.events.iter_mut()) {
            blocks.name(e);
        }
    }
}

/// Reads the live file at `path` of the process `pid`, leaving out what `written` says the
/// trace holds. Every size and count is checked against the file: a damaged, foreign or
/// truncated file is an `Err` with one line saying why, never a panic or an allocation
/// beyond the file's size.
pub fn recover(path: &Path, pid: u32, written: &SlotsWritten) -> Result<Recovered, String> {
    let f = crate::files::open_regular(path).map_err(|e| format!("cannot read it: {e}"))?;
    let size = f
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    let mut raw = [0u8; word::COUNT * 8];
    read_at(&f, &mut raw, 0, size).map_err(|_| "it is shorter than its header".to_string())?;
    let h = |i: usize| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    if raw[..8] != LIVE_MAGIC {
        return Err("it is not an accprof live file".into());
    }
    if !(1..=LIVE_VERSION).contains(&h(word::VERSION)) {
        return Err(format!(
            "its version {} is not one this reader knows",
            h(word::VERSION)
        ));
    }
    if h(word::PID) != u64::from(pid) {
        return Err(format!(
            "it belongs to process {}, the trace to process {pid}",
            h(word::PID)
        ));
    }
    let (slot_count, slot_words) = (h(word::SLOT_COUNT), h(word::SLOT_WORDS));
    let (slots_offset, strings_offset) = (h(word::SLOTS_OFFSET), h(word::STRINGS_OFFSET));
    let strings_capacity = h(word::STRINGS_CAPACITY);
    let slots_end = slot_count
        .saturating_mul(slot_stride(slot_words.min(MAX_SLOT_WORDS) as usize) as u64)
        .saturating_add(slots_offset);
    let layout_ok = slot_count <= MAX_SLOTS
        && (MAX_EVENT_WORDS as u64..=MAX_SLOT_WORDS).contains(&slot_words)
        && strings_offset >= (HEADER_BYTES as u64)
        && strings_capacity <= STRINGS_BYTES as u64
        && strings_offset.saturating_add(strings_capacity) <= slots_offset
        && slots_offset % 8 == 0
        && slots_end <= h(word::FILE_LEN)
        && h(word::FILE_LEN) <= size;
    if !layout_ok {
        return Err("its layout does not fit the file (damaged or cut short)".into());
    }
    let clock = Clock::from_header(&h)?;
    let mut out = Recovered {
        strings: read_strings(
            &f,
            strings_offset,
            h(word::STRINGS_RESERVED).min(strings_capacity),
            size,
        )?,
        slots: Vec::new(),
    };
    let stride = slot_stride(slot_words as usize) as u64;
    let mut header = [0u8; SLOT_HEADER_BYTES];
    for i in 0..slot_count {
        let at = slots_offset + i * stride;
        read_at(&f, &mut header, at, size).map_err(|_| "a slot lies beyond the file's end")?;
        let hw =
            |k: usize| u64::from_le_bytes(header[k * 8..k * 8 + 8].try_into().unwrap_or([0; 8]));
        let (generation, committed) = (hw(0), hw(2));
        if generation == 0 || committed == 0 {
            continue;
        }
        if committed > slot_words {
            return Err(format!("slot {i} claims more words than it has"));
        }
        let mut bytes = vec![0u8; committed as usize * 8];
        read_at(&f, &mut bytes, at + SLOT_HEADER_BYTES as u64, size)
            .map_err(|_| format!("slot {i} is cut short"))?;
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let skip = written.in_trace(i as u32, generation);
        let mut events = Unpack::from_words(&words);
        let mut kept = Vec::new();
        for (n, mut e) in events.by_ref().enumerate() {
            if (n as u64) < skip {
                continue;
            }
            e.start_ns = clock.to_ns(e.start_ns);
            e.end_ns = clock.to_ns(e.end_ns);
            kept.push(e);
        }
        if events.words_left() != 0 {
            return Err(format!("slot {i} holds words that are not events"));
        }
        if !kept.is_empty() {
            out.slots.push(RecoveredSlot {
                slot: i as u32,
                generation,
                events: kept,
            });
        }
    }
    Ok(out)
}

/// Reads `buf.len()` bytes at `at`, refusing to read beyond `size`.
fn read_at(f: &File, buf: &mut [u8], at: u64, size: u64) -> Result<(), ()> {
    if at
        .checked_add(buf.len() as u64)
        .is_none_or(|end| end > size)
    {
        return Err(());
    }
    f.read_exact_at(buf, at).map_err(|_| ())
}

/// The committed string records: a record whose length was never written ends the area (a
/// thread was killed as it reserved it), one whose bytes were not all written is skipped.
fn read_strings(
    f: &File,
    offset: u64,
    reserved: u64,
    size: u64,
) -> Result<Vec<(u32, Vec<u8>)>, String> {
    let mut area = vec![0u8; reserved as usize];
    read_at(f, &mut area, offset, size).map_err(|_| "its strings lie beyond the file's end")?;
    let word = |at: usize| {
        area.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let mut out = Vec::new();
    let mut at = 0usize;
    while let (Some(len), Some(id)) = (word(at), word(at + 8)) {
        if len == 0 {
            break;
        }
        let len = (len - 1) as usize;
        let end = (at + 16).checked_add(len).filter(|&e| e <= area.len());
        let Some(end) = end else {
            return Err("a string runs beyond the strings area".into());
        };
        if id & STRING_COMMITTED != 0 {
            let id = u32::try_from(id & !STRING_COMMITTED)
                .map_err(|_| "a string id is out of range".to_string())?;
            out.push((id, area[at + 16..end].to_vec()));
        }
        at = end.next_multiple_of(8);
    }
    Ok(out)
}

/// Turns the recording threads' timestamps into CLOCK_MONOTONIC ns, from the anchors the
/// writer published: a line through the first anchor and the latest one.
struct Clock {
    ticks: bool,
    t0: f64,
    n0: f64,
    rate: f64,
}

impl Clock {
    fn from_header(h: &impl Fn(usize) -> u64) -> Result<Self, String> {
        let ticks = match h(word::CLOCK) {
            0 => false,
            1 => true,
            _ => return Err("its clock kind is unknown".into()),
        };
        let (t0, n0) = (h(word::FIRST_TICKS), h(word::FIRST_NS));
        let i = (h(word::ANCHOR_INDEX) & 1) as usize;
        let (mut t1, mut n1) = (h(word::ANCHORS + 2 * i), h(word::ANCHORS + 2 * i + 1));
        if ticks && (t1 <= t0 || n1 <= n0) {
            // Killed before its writer thread published a second anchor (a short run on a
            // busy machine): read on the machine and boot that wrote it, this reader's own
            // clocks make one, much farther from the first.
            (t1, n1) = reader_anchor()
                .filter(|&(t, n)| {
                    t > t0 && n > n0 && {
                        let rate = (n - n0) as f64 / (t - t0) as f64;
                        (0.05..=20.0).contains(&rate)
                    }
                })
                .ok_or("its clock anchors are not in order")?;
        }
        Ok(Clock {
            ticks,
            t0: t0 as f64,
            n0: n0 as f64,
            rate: if ticks {
                (n1 - n0) as f64 / (t1 - t0) as f64
            } else {
                1.0
            },
        })
    }

    fn to_ns(&self, t: u64) -> u64 {
        if !self.ticks {
            return t;
        }
        (self.n0 + (t as f64 - self.t0) * self.rate).max(0.0) as u64
    }
}

/// A (TSC ticks, CLOCK_MONOTONIC ns) pair read now, back to back (x86-64 only).
fn reader_anchor() -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: rdtsc has no preconditions on x86-64.
        let a = unsafe { core::arch::x86_64::_rdtsc() };
        // SAFETY: clock_gettime writes the timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        // SAFETY: as above.
        let b = unsafe { core::arch::x86_64::_rdtsc() };
        let ns = (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64);
        Some((a / 2 + b / 2, ns))
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(t: u64, ptr: u64, bytes: u64) -> Event {
        let mut e = Event::new(accprof_abi::acc_event_t::ENQUEUE_UPLOAD_START, t);
        e.set(Field::HostPtr, ptr);
        e.set(Field::Bytes, bytes);
        e
    }

    fn named(t: u64, ptr: u64, bytes: u64, base: u64, size: u64, site: u64) -> Event {
        let mut e = upload(t, ptr, bytes);
        e.set(Field::AllocBase, base);
        e.set(Field::AllocBytes, size);
        e.set(Field::AllocSite, site);
        e
    }

    #[test]
    fn a_recovered_transfer_takes_the_latest_block_that_wholly_holds_it() {
        let mut blocks = HeapBlocks::default();
        blocks.see(&named(10, 0x1000, 0x100, 0x1000, 0x100, 0xa1));
        // Freed and allocated again at the same address, from another line.
        blocks.see(&named(30, 0x1000, 0x80, 0x1000, 0x80, 0xb2));
        blocks.see(&named(20, 0x1000, 0x100, 0x1000, 0x100, 0xa1));
        let mut inside = upload(40, 0x1040, 0x40);
        blocks.name(&mut inside);
        assert_eq!(inside.get(Field::AllocSite), Some(0xb2));
        assert_eq!(inside.get(Field::AllocBase), Some(0x1000));
        assert_eq!(inside.get(Field::AllocBytes), Some(0x80));
        // Past the latest block's end: no name rather than the earlier block's.
        let mut across = upload(40, 0x1040, 0x80);
        blocks.name(&mut across);
        assert_eq!(across.get(Field::AllocSite), None);
        let mut outside = upload(40, 0x2000, 8);
        blocks.name(&mut outside);
        assert_eq!(outside.get(Field::AllocSite), None);
        // A variable the runtime named keeps its name.
        let mut by_name = upload(40, 0x1000, 8);
        by_name.set(Field::VarName, 3);
        blocks.name(&mut by_name);
        assert_eq!(by_name.get(Field::AllocSite), None);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn ticks_of_a_run_killed_before_its_second_anchor_still_convert() {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t0, n0) = reader_anchor().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        // Only the first anchor was published: the pairs are still zero.
        let h = |i: usize| match i {
            word::CLOCK => 1,
            word::FIRST_TICKS => t0,
            word::FIRST_NS => n0,
            _ => 0,
        };
        let Ok(clock) = Clock::from_header(&h) else {
            // Not a constant-rate TSC here (the tool would not have used ticks).
            return;
        };
        let (t1, n1) = reader_anchor().unwrap();
        let err = clock.to_ns(t1).abs_diff(n1);
        assert!(err < (n1 - n0) / 10, "{err} ns off over {} ns", n1 - n0);
        assert_eq!(clock.to_ns(t0), n0);
    }

    #[test]
    fn a_slot_written_record_counts_the_events_that_follow_it() {
        let mut w = SlotsWritten::default();
        w.record(3, 7, 100);
        w.events_read(60);
        assert_eq!(w.in_trace(3, 7), 60, "cut between two events chunks");
        w.events_read(60);
        assert_eq!(w.in_trace(3, 7), 100);
        w.events_read(5);
        assert_eq!(w.in_trace(3, 7), 100, "later events belong to no slot");
        assert_eq!(
            w.in_trace(3, 8),
            0,
            "the next generation is not in the trace"
        );
        assert_eq!(w.in_trace(3, 6), u64::MAX);
        assert_eq!(w.in_trace(4, 1), 0);
    }
}
