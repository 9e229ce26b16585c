//! Pairs device records with the host events that issued their work.
//!
//! A device record (CUPTI kernel, copy or memset) carries the host thread that made the driver
//! call and when (`thread_id`, `host_call_ns`); the runtime's enqueue event for the same work
//! (enqueue_launch / upload / download) is the one on that thread whose start and end enclose
//! that time. Only device records are indexed here (about 40 bytes each, on top of the ~35 every
//! record costs), so traces without them pay nothing.

use crate::state::kind::Category;
use crate::state::store::{EventRef, LaneKind, Store, NO_STR};

/// The device records' pairing columns, in record order.
#[derive(Clone, Debug, Default)]
pub struct DeviceIndex {
    pub rec: Vec<u32>,
    /// The issuing host thread, when the tool saw the driver call.
    pub thread: Vec<Option<i64>>,
    /// When the host thread made the driver call (store clock), 0 when unknown.
    pub host_call: Vec<u64>,
    /// Device start and end (store clock).
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    pub cat: Vec<Category>,
    /// Indices of records with a host call time, sorted by it.
    by_call: Vec<u32>,
}

/// One device record as the pairing sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRec {
    pub rec: u32,
    pub thread: Option<i64>,
    pub host_call: Option<u64>,
    pub start: u64,
    pub end: u64,
    pub cat: Category,
}

impl DeviceRec {
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

impl DeviceIndex {
    pub fn push(&mut self, rec: u32, thread: Option<i64>, host_call: Option<u64>, start: u64, end: u64, cat: Category) {
        self.rec.push(rec);
        self.thread.push(thread);
        self.host_call.push(host_call.unwrap_or(0));
        self.start.push(start);
        self.end.push(end);
        self.cat.push(cat);
    }

    pub fn len(&self) -> usize {
        self.rec.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rec.is_empty()
    }

    /// Sorts the call-time index; called after every load or poll.
    pub fn finish(&mut self) {
        if self.by_call.len() == self.len() {
            return;
        }
        let calls = &self.host_call;
        self.by_call = (0..self.len() as u32).filter(|&i| calls[i as usize] != 0).collect();
        self.by_call.sort_by_key(|&i| calls[i as usize]);
    }

    fn get(&self, i: usize) -> DeviceRec {
        DeviceRec {
            rec: self.rec[i],
            thread: self.thread[i],
            host_call: (self.host_call[i] != 0).then_some(self.host_call[i]),
            start: self.start[i],
            end: self.end[i],
            cat: self.cat[i],
        }
    }

    /// The device record behind record id `rec`, if it is one.
    pub fn find(&self, rec: u32) -> Option<DeviceRec> {
        self.rec.binary_search(&rec).ok().map(|i| self.get(i))
    }
}

/// The device records that executed the work of host event `host` (a launch, upload or
/// download) recorded by `thread`: issued by that thread, or by a helper thread with no OpenACC
/// events of its own (runtimes stage copies there), while the event was open. Empty for other
/// events. The thread is the event's own (an async enqueue sits on its queue's lane).
pub fn device_work_of(store: &Store, host: EventRef, thread: i64) -> Vec<DeviceRec> {
    let lane = &store.lanes[host.lane];
    let cat = Category::from_u8(lane.tracks[host.track].cat[host.idx]);
    let (a, b) = store.span_of(host);
    let d = &store.device;
    let from = d.by_call.partition_point(|&i| d.host_call[i as usize] < a);
    let mut out = Vec::new();
    for &i in &d.by_call[from..] {
        let i = i as usize;
        if d.host_call[i] > b {
            break;
        }
        let r = d.get(i);
        if r.cat.host_counterpart() != Some(cat) || usize::from(store.records.source[r.rec as usize]) != lane.source {
            continue;
        }
        let issued_here = match r.thread {
            Some(t) => t == thread || !store.has_thread_lane(lane.source, t),
            None => false,
        };
        if issued_here {
            out.push(r);
        }
    }
    out
}

/// What a device record belongs to on the host side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostSide {
    /// The runtime's enqueue event for the same work (launch, upload, download), if it reported
    /// one.
    pub enqueue: Option<EventRef>,
    /// The innermost event with a source location that was open on the issuing thread at the
    /// call: the construct the work belongs to.
    pub construct: Option<EventRef>,
}

/// Finds the host events open on the issuing thread when `dev` was issued (on any thread of
/// its trace when that thread recorded no OpenACC events: a runtime's helper thread).
pub fn host_side_of(store: &Store, dev: &DeviceRec) -> HostSide {
    let (Some(thread), Some(t)) = (dev.thread, dev.host_call) else { return HostSide::default() };
    let source = usize::from(store.records.source[dev.rec as usize]);
    let lanes: Vec<usize> = match store.lane_of(source, LaneKind::Thread(thread)) {
        Some(l) => vec![l],
        None => (0..store.lanes.len()).filter(|&l| store.lanes[l].source == source && matches!(store.lanes[l].kind, LaneKind::Thread(_))).collect(),
    };
    let want = dev.cat.host_counterpart();
    let mut side = HostSide::default();
    for lane in lanes {
        for (ti, track) in store.lanes[lane].tracks.iter().enumerate() {
            // Rows hold disjoint events sorted by start: the one starting last at or before `t`.
            let Some(i) = track.first_starting_at(t.saturating_add(1)).checked_sub(1) else { continue };
            if track.end[i] < t {
                continue;
            }
            let r = EventRef { lane, track: ti, idx: i };
            let rec = track.rec[i] as usize;
            if want.is_some_and(|c| c as u8 == track.cat[i]) {
                side.enqueue.get_or_insert(r);
            }
            // Deeper rows are inner events: the last one with a location wins, short of the
            // enqueue itself (its construct is what the user edits).
            let is_enqueue = matches!(Category::from_u8(track.cat[i]), Category::Launch | Category::Upload | Category::Download);
            if store.records.file[rec] != NO_STR && !is_enqueue {
                side.construct = Some(r);
            }
        }
        if side.construct.is_some() || side.enqueue.is_some() {
            break;
        }
    }
    side
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_index_skips_records_without_a_call_time_and_sorts_the_rest() {
        let mut d = DeviceIndex::default();
        d.push(3, Some(1), Some(50), 60, 70, Category::DeviceKernel);
        d.push(5, None, None, 10, 20, Category::DeviceMemset);
        d.push(8, Some(1), Some(20), 25, 30, Category::DeviceUpload);
        d.finish();
        assert_eq!(d.by_call, [2, 0]);
        assert_eq!(d.find(5).map(|r| r.host_call), Some(None));
        assert_eq!(d.find(8).map(|r| r.duration()), Some(5));
        assert_eq!(d.find(4), None);
    }
}
