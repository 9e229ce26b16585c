//! Device memory in use over time, per device: its high-water mark and the arrays holding the
//! memory at that moment (Score-P's acc_mem_usage, with names).
//!
//! Fed from the runtime's allocation events in file order, which is not time order: each
//! thread's buffers reach the trace on their own, so one thread's allocations can follow
//! another's later ones. The events are therefore replayed in time order through a bounded
//! window ([`REORDER_WINDOW`] operations, far more than the threads' buffers hold between two
//! writes); an operation that would still be out of order past it is counted at the latest time
//! already replayed, so the series never runs backwards. An allocation is tracked by its
//! device pointer, because a free need not repeat its size or host address (GCC's
//! `acc_ev_free` has bytes = SIZE_MAX and host_ptr NULL). Alloc/free events are used when the
//! trace has any; else create/delete (both describe one allocation, so the pair would count it
//! twice). Memory stays bounded: the window, the live allocations, a downsampled series and a
//! snapshot of the largest arrays at the peak.

use crate::model::{DeviceMemory, EventRef, HeldArray};
use accprof_abi::acc_event_t;
use accprof_trace::{Event, EventFlags, Field, StrId, StringTable};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
// Keyed by device pointers and device numbers, which no one picks to collide: the Fx hash,
// as the rest of the builder.
use rustc_hash::FxHashMap as HashMap;

/// Points kept of the in-use series per device; past this the series is halved, keeping each
/// pair's larger value, so the peak is never smoothed away.
const SERIES_POINTS: usize = 512;
/// Arrays named at the peak, largest first.
const ARRAYS_AT_PEAK: usize = 10;
/// Allocation operations held back to be replayed in time order. A thread's events reach the
/// trace at the latest when its buffer (4096 events by default) fills or the tool's next sweep
/// takes it; this covers that many allocations from each of a few dozen threads.
const REORDER_WINDOW: usize = 1 << 16;

/// What an allocation event says, kept while it waits in the reorder window.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: acc_event_t,
    /// None for an allocation of unknown size (not counted).
    bytes: Option<u64>,
    ptr: Option<u64>,
    device: Option<i64>,
    var: Option<StrId>,
    host_ptr: Option<u64>,
    file: Option<StrId>,
    line: Option<i64>,
    at: EventRef,
}

impl Op {
    fn of(ev: &Event, at: EventRef) -> Self {
        Op {
            kind: ev.kind,
            bytes: ev
                .bytes()
                .filter(|_| !ev.flags().contains(EventFlags::BYTES_UNKNOWN)),
            ptr: ev.get(Field::DevicePtr),
            device: ev.get_i64(Field::DeviceNumber),
            var: ev.var_name(),
            host_ptr: ev.get(Field::HostPtr),
            file: ev.get_str(Field::SrcFile),
            line: ev.line_no(),
            at,
        }
    }

    /// Time order; file order among operations at the same time.
    fn order(&self) -> (u64, u64) {
        (self.at.start_ns, self.at.index)
    }
}

/// An operation in the window, ordered by [`Op::order`].
#[derive(Debug)]
struct Waiting(Op);

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.0.order() == other.0.order()
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.order().cmp(&other.0.order())
    }
}

#[derive(Clone, Copy, Debug)]
struct Live {
    ptr: u64,
    device: Option<i64>,
    bytes: u64,
    var: Option<StrId>,
    host_ptr: Option<u64>,
    file: Option<StrId>,
    line: Option<i64>,
    at: EventRef,
}

#[derive(Debug, Default)]
struct PerDevice {
    in_use: u64,
    peak: u64,
    peak_ns: u64,
    /// A new peak was reached and not yet snapshot (done at the next decrease, or the end).
    peak_pending: bool,
    snapshot: Vec<Live>,
    live_at_peak: u64,
    series: Vec<(u64, u64)>,
    allocations: u64,
    frees: u64,
}

/// One source of allocations (alloc/free, or create/delete).
#[derive(Debug, Default)]
struct Tracker {
    live: HashMap<u64, Live>,
    devices: HashMap<Option<i64>, PerDevice>,
    unmatched: HashMap<Option<i64>, u64>,
}

impl Tracker {
    fn alloc(&mut self, op: &Op) {
        let (Some(bytes), Some(ptr)) = (op.bytes, op.ptr) else {
            return;
        };
        let (device, r) = (op.device, op.at);
        let live = Live {
            ptr,
            device,
            bytes,
            var: op.var,
            host_ptr: op.host_ptr,
            file: op.file,
            line: op.line,
            at: r,
        };
        // The same pointer again without a free between: the runtime reused it; replace.
        if let Some(old) = self.live.insert(ptr, live) {
            self.release(old, r.start_ns);
        }
        let d = self.devices.entry(device).or_default();
        d.allocations += 1;
        d.in_use += bytes;
        if d.in_use > d.peak {
            d.peak = d.in_use;
            d.peak_ns = r.start_ns;
            d.peak_pending = true;
        }
        push_point(&mut d.series, r.start_ns, d.in_use);
    }

    fn free(&mut self, op: &Op) {
        let found = op.ptr.and_then(|p| self.live.remove(&p));
        let Some(old) = found else {
            *self.unmatched.entry(op.device).or_default() += 1;
            return;
        };
        self.release(old, op.at.start_ns);
        if let Some(d) = self.devices.get_mut(&old.device) {
            d.frees += 1;
        }
    }

    fn release(&mut self, old: Live, t: u64) {
        let d = self.devices.entry(old.device).or_default();
        if d.peak_pending {
            // The peak is over: name what held it, before this free changes the set.
            d.peak_pending = false;
            let (snapshot, count) = largest(&self.live, old.device, Some(old));
            d.snapshot = snapshot;
            d.live_at_peak = count;
        }
        d.in_use = d.in_use.saturating_sub(old.bytes);
        push_point(&mut d.series, t, d.in_use);
    }

    fn finish(mut self, events: &'static str, strings: &StringTable) -> Vec<DeviceMemory> {
        let mut out = Vec::new();
        let mut devices: Vec<Option<i64>> = self.devices.keys().copied().collect();
        devices.sort_unstable();
        for dev in devices {
            let mut d = self.devices.remove(&dev).unwrap_or_default();
            if d.peak_pending {
                let (snapshot, count) = largest(&self.live, dev, None);
                d.snapshot = snapshot;
                d.live_at_peak = count;
            }
            out.push(DeviceMemory {
                device: dev,
                events,
                peak_bytes: d.peak,
                peak_ns: d.peak_ns,
                arrays_at_peak: d.live_at_peak,
                largest_at_peak: d.snapshot.iter().map(|l| held(l, strings)).collect(),
                series: d.series,
                allocations: d.allocations,
                frees: d.frees,
                unmatched_frees: self.unmatched.get(&dev).copied().unwrap_or(0),
                in_use_at_end: d.in_use,
            });
        }
        out
    }
}

/// The largest live allocations of `device` (with `extra`, one just removed), and how many
/// there are.
fn largest(
    live: &HashMap<u64, Live>,
    device: Option<i64>,
    extra: Option<Live>,
) -> (Vec<Live>, u64) {
    let mut all: Vec<Live> = live
        .values()
        .copied()
        .filter(|l| l.device == device)
        .chain(extra)
        .collect();
    let count = all.len() as u64;
    all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.at.index.cmp(&b.at.index)));
    all.truncate(ARRAYS_AT_PEAK);
    (all, count)
}

fn held(l: &Live, strings: &StringTable) -> HeldArray {
    let name = match (strings.resolve(l.var), l.host_ptr) {
        (Some(n), _) => n.to_string(),
        // An unnamed block this small is the runtime's own (an argument block or a reduction
        // cell at a stack address), named as the transfer tables name it.
        (None, _) if l.bytes <= crate::runtime_internal::MAX_BYTES => {
            crate::runtime_internal::NAME.to_string()
        }
        (None, Some(p)) if p != 0 => format!("host {p:#x}"),
        // GCC names neither the variable nor the host address of an allocation.
        _ => format!("device {:#x}", l.ptr),
    };
    HeldArray {
        name,
        bytes: l.bytes,
        file: strings.resolve(l.file).map(str::to_string),
        line: l.line,
        allocated: l.at,
    }
}

fn push_point(series: &mut Vec<(u64, u64)>, t: u64, bytes: u64) {
    if let Some(last) = series.last_mut() {
        // Never backwards: an operation that came too late for the reorder window is counted
        // at the latest time replayed.
        let t = t.max(last.0);
        if last.0 == t {
            last.1 = last.1.max(bytes);
            return;
        }
    }
    if series.len() >= SERIES_POINTS {
        let halved: Vec<(u64, u64)> = series
            .chunks(2)
            .map(|c| (c[0].0, c.iter().map(|p| p.1).max().unwrap_or(0)))
            .collect();
        *series = halved;
    }
    series.push((t, bytes));
}

/// Device memory in use, from the allocation events of one trace.
#[derive(Debug, Default)]
pub(crate) struct DeviceMemoryTracker {
    by_alloc: Tracker,
    by_create: Tracker,
    /// Operations not replayed yet that came in order (each no earlier than the one before):
    /// nearly all of them, so the window costs a queue's push and pop per operation.
    in_order: VecDeque<Op>,
    /// Operations not replayed yet that came earlier than the last one in `in_order` (another
    /// thread's buffer reaching the trace late), earliest first.
    late: BinaryHeap<Reverse<Waiting>>,
}

impl DeviceMemoryTracker {
    /// Takes `ev` if it allocates or frees device memory.
    pub(crate) fn feed(&mut self, ev: &Event, r: EventRef) {
        if !matches!(
            ev.kind,
            acc_event_t::ALLOC | acc_event_t::FREE | acc_event_t::CREATE | acc_event_t::DELETE
        ) {
            return;
        }
        let op = Op::of(ev, r);
        if self
            .in_order
            .back()
            .is_none_or(|last| last.order() <= op.order())
        {
            let (len, cap) = (self.in_order.len(), self.in_order.capacity());
            if len == cap {
                // Doubling, but never past the window (plus the one pushed before a replay):
                // a plain doubling would hold twice the window's memory on long traces.
                let want = (cap * 2).clamp(16, REORDER_WINDOW + 1);
                self.in_order.reserve_exact(want.saturating_sub(len).max(1));
            }
            self.in_order.push_back(op);
        } else {
            self.late.push(Reverse(Waiting(op)));
        }
        if self.in_order.len() + self.late.len() > REORDER_WINDOW {
            self.replay_earliest();
        }
    }

    fn replay_earliest(&mut self) {
        let late_first = match (self.late.peek(), self.in_order.front()) {
            (Some(Reverse(Waiting(l))), Some(o)) => l.order() < o.order(),
            (Some(_), None) => true,
            _ => false,
        };
        let op = if late_first {
            self.late.pop().map(|Reverse(Waiting(op))| op)
        } else {
            self.in_order.pop_front()
        };
        let Some(op) = op else {
            return;
        };
        match op.kind {
            acc_event_t::ALLOC => self.by_alloc.alloc(&op),
            acc_event_t::FREE => self.by_alloc.free(&op),
            acc_event_t::CREATE => self.by_create.alloc(&op),
            acc_event_t::DELETE => self.by_create.free(&op),
            _ => {}
        }
    }

    /// Per device, ordered by device number.
    pub(crate) fn finish(mut self, strings: &StringTable) -> Vec<DeviceMemory> {
        while !self.in_order.is_empty() || !self.late.is_empty() {
            self.replay_earliest();
        }
        if self.by_alloc.devices.is_empty() {
            self.by_create.finish("create/delete", strings)
        } else {
            self.by_alloc.finish("alloc/free", strings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(
        kind: acc_event_t,
        t: u64,
        ptr: u64,
        bytes: Option<u64>,
        var: Option<u32>,
    ) -> (Event, EventRef) {
        let mut e = Event::new(kind, t);
        e.set(Field::DevicePtr, ptr);
        match bytes {
            Some(b) => e.set(Field::Bytes, b),
            // GCC's free: SIZE_MAX, no host pointer.
            None => e.set(Field::Bytes, u64::MAX),
        }
        if bytes.is_none() {
            e.add_flags(EventFlags::BYTES_UNKNOWN);
        }
        if let Some(v) = var {
            e.set(Field::VarName, u64::from(v));
        }
        (
            e,
            EventRef {
                index: t,
                start_ns: t,
                end_ns: t,
            },
        )
    }

    #[test]
    fn the_peak_names_the_arrays_holding_it_and_frees_match_by_device_pointer() {
        let mut strings = StringTable::default();
        let a = strings.intern("A").0;
        let b = strings.intern("B").0;
        let c = strings.intern("tmp").0;
        let mut t = DeviceMemoryTracker::default();
        for (kind, time, ptr, bytes, var) in [
            (acc_event_t::ALLOC, 10, 0xa, Some(1000), Some(a)),
            (acc_event_t::ALLOC, 20, 0xb, Some(500), Some(b)),
            (acc_event_t::ALLOC, 30, 0xc, Some(200), Some(c)),
            (acc_event_t::FREE, 40, 0xc, None, None),
            (acc_event_t::ALLOC, 50, 0xd, Some(100), Some(c)),
            (acc_event_t::FREE, 60, 0xd, None, None),
            (acc_event_t::FREE, 70, 0xb, None, None),
            (acc_event_t::FREE, 80, 0xeeee, None, None),
            // Create/delete describe the same allocations again: not counted twice.
            (acc_event_t::CREATE, 10, 0xa, Some(1000), Some(a)),
        ] {
            let (e, r) = ev(kind, time, ptr, bytes, var);
            t.feed(&e, r);
        }
        let m = t.finish(&strings);
        assert_eq!(m.len(), 1);
        let d = &m[0];
        assert_eq!((d.peak_bytes, d.peak_ns, d.arrays_at_peak), (1700, 30, 3));
        let names: Vec<(&str, u64)> = d
            .largest_at_peak
            .iter()
            .map(|h| (h.name.as_str(), h.bytes))
            .collect();
        assert_eq!(names, [("A", 1000), ("B", 500), ("tmp", 200)]);
        assert_eq!(
            (d.allocations, d.frees, d.unmatched_frees, d.in_use_at_end),
            (4, 3, 1, 1000)
        );
        assert_eq!(d.events, "alloc/free");
        assert_eq!(
            d.series,
            [
                (10, 1000),
                (20, 1500),
                (30, 1700),
                (40, 1500),
                (50, 1600),
                (60, 1500),
                (70, 1000)
            ]
        );
    }

    #[test]
    fn create_and_delete_count_when_the_runtime_sends_no_alloc_events() {
        let strings = StringTable::default();
        let mut t = DeviceMemoryTracker::default();
        for (kind, time, ptr) in [
            (acc_event_t::CREATE, 1, 0x1),
            (acc_event_t::CREATE, 2, 0x2),
            (acc_event_t::DELETE, 3, 0x1),
        ] {
            let (e, r) = ev(kind, time, ptr, Some(64), None);
            t.feed(&e, r);
        }
        let m = t.finish(&strings);
        assert_eq!(
            (m[0].events, m[0].peak_bytes, m[0].in_use_at_end),
            ("create/delete", 128, 64)
        );
    }

    #[test]
    fn operations_are_replayed_in_time_order_whatever_the_file_order() {
        // Two threads: the second one's buffer reaches the file after the first one's, though
        // its allocation came first and overlapped the first one's.
        let strings = StringTable::default();
        let mut t = DeviceMemoryTracker::default();
        for (index, (kind, time, ptr, bytes)) in [
            (acc_event_t::ALLOC, 20, 0xa, Some(100)),
            (acc_event_t::FREE, 40, 0xa, None),
            (acc_event_t::ALLOC, 10, 0xb, Some(50)),
            (acc_event_t::FREE, 30, 0xb, None),
            // The first thread's pointer again, reused by the runtime after its free.
            (acc_event_t::ALLOC, 50, 0xa, Some(10)),
            (acc_event_t::FREE, 60, 0xa, None),
        ]
        .into_iter()
        .enumerate()
        {
            let (e, mut r) = ev(kind, time, ptr, bytes, None);
            r.index = index as u64;
            t.feed(&e, r);
        }
        let d = &t.finish(&strings)[0];
        assert_eq!((d.peak_bytes, d.peak_ns), (150, 20));
        assert_eq!((d.unmatched_frees, d.in_use_at_end), (0, 0));
        assert_eq!(
            d.series,
            [(10, 50), (20, 150), (30, 100), (40, 0), (50, 10), (60, 0)]
        );
    }

    #[test]
    fn an_operation_later_than_the_window_never_takes_the_series_back() {
        let mut series = vec![(100, 5)];
        push_point(&mut series, 90, 7);
        assert_eq!(series, [(100, 7)]);
    }

    #[test]
    fn a_long_series_stays_bounded_and_keeps_its_peak() {
        let mut series = Vec::new();
        for i in 0..10_000u64 {
            push_point(&mut series, i, if i == 7777 { 1 << 40 } else { i % 100 });
        }
        assert!(series.len() <= SERIES_POINTS);
        assert_eq!(series.iter().map(|p| p.1).max(), Some(1 << 40));
    }
}
