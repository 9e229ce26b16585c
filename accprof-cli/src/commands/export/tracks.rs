//! The export's table of tracks (Chrome "threads"), and keeping every track strictly nested.
//!
//! Which track an event goes on is the shared vocabulary's ([`TrackKind::of_event`]: host
//! threads, a thread's synchronous device work, async queues, CUDA streams). What is the
//! export's own: Perfetto drops a complete slice that overlaps a sibling without nesting inside
//! it, so on every track a slice that would still cross another one is moved to an extra lane of
//! that track (shown as a track of its own, named after the first) rather than clipped: its
//! duration stays true.

use super::slice::Slice;
pub use accprof_timeline::{TrackKey, TrackKind};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

/// Every track met so far, numbered in order of first appearance.
#[derive(Default, Debug)]
pub struct TrackTable {
    /// Looked up for most events (consecutive events alternate between a thread's host and
    /// device tracks): Fx-hashed, as SipHash's DoS resistance buys nothing on trace keys.
    index: HashMap<TrackKey, u32>,
    keys: Vec<TrackKey>,
    /// Lanes each track needed (at least 1), known after [`assign_lanes`].
    lanes: Vec<u16>,
    /// Per (trace, stream handle), the async queues the OpenACC events on that stream named.
    stream_queues: HashMap<(u16, u64), BTreeSet<i64>>,
    /// The track [`intern`](Self::intern) returned last, with its key.
    last: Option<(TrackKey, u32)>,
}

impl TrackTable {
    pub fn intern(&mut self, key: TrackKey) -> u32 {
        // Consecutive events mostly share a track: skip the map for them.
        if let Some((last, i)) = self.last {
            if last == key {
                return i;
            }
        }
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.keys.len() as u32;
                self.keys.push(key);
                self.lanes.push(1);
                self.index.insert(key, i);
                i
            }
        };
        self.last = Some((key, i));
        i
    }

    /// The track of `key`, if any slice went on it.
    pub fn get(&self, key: &TrackKey) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// Notes that an OpenACC event of `trace` ran on stream `handle` for async queue `queue`.
    pub fn note_stream_queue(&mut self, trace: u16, handle: u64, queue: i64) {
        self.stream_queues
            .entry((trace, handle))
            .or_default()
            .insert(queue);
    }

    /// The async queues known to use `stream` in `trace`.
    pub fn stream_queues(&self, trace: u16, stream: Option<u64>) -> BTreeSet<i64> {
        stream
            .and_then(|h| self.stream_queues.get(&(trace, h)))
            .cloned()
            .unwrap_or_default()
    }

    /// The name shown for `track`.
    pub fn label(&self, track: u32) -> String {
        let key = self.key(track);
        let queues = match key.kind {
            TrackKind::DeviceStream { stream } => self.stream_queues(key.trace, stream),
            _ => BTreeSet::new(),
        };
        key.kind.label(&queues)
    }

    /// Every track of `trace`, with its key.
    pub fn of_trace(&self, trace: u16) -> impl Iterator<Item = (u32, TrackKey)> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(move |(_, k)| k.trace == trace)
            .map(|(i, k)| (i as u32, *k))
    }

    pub fn key(&self, track: u32) -> TrackKey {
        self.keys[track as usize]
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Notes that a slice of `track` landed on `lane` (for an export that lays slices out as
    /// they stream by instead of through [`assign_lanes`]).
    pub fn note_lane(&mut self, track: u32, lane: u16) {
        let n = &mut self.lanes[track as usize];
        *n = (*n).max(lane.saturating_add(1));
    }

    /// The Chrome thread id of every (track, lane), dense from 1 in display order: per trace,
    /// each host thread, then its synchronous device track, then the async queues, then the
    /// device streams.
    pub fn thread_ids(&self) -> ThreadIds {
        let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
        order.sort_by_key(|&t| self.keys[t as usize].display_order());
        let mut first_tid = vec![0u32; self.keys.len()];
        let mut next = 1u32;
        for &t in &order {
            first_tid[t as usize] = next;
            next += u32::from(self.lanes[t as usize]);
        }
        ThreadIds {
            first_tid,
            order,
            lanes: self.lanes.clone(),
        }
    }
}

/// Chrome thread ids for the tracks and their lanes.
#[derive(Debug)]
pub struct ThreadIds {
    first_tid: Vec<u32>,
    /// Track indices in display order.
    pub order: Vec<u32>,
    lanes: Vec<u16>,
}

impl ThreadIds {
    pub fn tid(&self, track: u32, lane: u16) -> u32 {
        self.first_tid[track as usize] + u32::from(lane)
    }

    pub fn lanes(&self, track: u32) -> u16 {
        self.lanes[track as usize]
    }
}

/// Sorts `slices` by track, start, then longest first (so a parent precedes the children that
/// start with it), and gives each one the first lane of its track in which it nests strictly:
/// inside the innermost open slice of that lane, or after it. Instants take no part.
pub fn assign_lanes(slices: &mut [Slice], tracks: &mut TrackTable) {
    slices.sort_unstable_by(|a, b| {
        (a.track, a.start, std::cmp::Reverse(a.end)).cmp(&(
            b.track,
            b.start,
            std::cmp::Reverse(b.end),
        ))
    });
    // Per lane, the ends of the slices still open at the current start time, innermost last.
    let mut lanes: Vec<Vec<u64>> = Vec::new();
    let mut current_track = u32::MAX;
    for s in slices.iter_mut() {
        if s.track != current_track {
            current_track = s.track;
            lanes.iter_mut().for_each(Vec::clear);
        }
        if s.is_point() {
            continue;
        }
        let lane = place(&mut lanes, s.start, s.end);
        s.lane = lane;
        let n = &mut tracks.lanes[s.track as usize];
        *n = (*n).max(lane + 1);
    }
}

/// The first lane where `[start, end]` nests, opening a new lane when none does. `lanes` holds,
/// per lane, the ends of the slices still open, innermost last; slices come in start order.
pub fn place(lanes: &mut Vec<Vec<u64>>, start: u64, end: u64) -> u16 {
    for (i, open) in lanes.iter_mut().enumerate() {
        // Slices come in start order, so one that ended by `start` is closed for good.
        while open.last().is_some_and(|&e| e <= start) {
            open.pop();
        }
        if open.last().is_none_or(|&e| end <= e) {
            open.push(end);
            return i.min(u16::MAX as usize) as u16;
        }
    }
    if lanes.len() >= u16::MAX as usize {
        // Pathological input; pile the rest on the last lane rather than grow without bound.
        return u16::MAX - 1;
    }
    lanes.push(vec![end]);
    (lanes.len() - 1) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes_of(spans: &[(u64, u64)]) -> Vec<u16> {
        let mut lanes = Vec::new();
        let mut sorted: Vec<_> = spans.to_vec();
        sorted.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        sorted
            .iter()
            .map(|&(s, e)| place(&mut lanes, s, e))
            .collect()
    }

    #[test]
    fn nested_and_sequential_slices_share_a_lane() {
        assert_eq!(
            lanes_of(&[(0, 100), (10, 20), (20, 30), (30, 100), (100, 150)]),
            [0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn a_crossing_slice_moves_to_a_second_lane() {
        // (50, 150) starts inside (0, 100) and ends after it.
        assert_eq!(lanes_of(&[(0, 100), (50, 150), (160, 170)]), [0, 1, 0]);
    }

    #[test]
    fn zero_length_slices_nest_at_either_edge() {
        assert_eq!(lanes_of(&[(0, 100), (0, 0), (100, 100)]), [0, 0, 0]);
    }
}
