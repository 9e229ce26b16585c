//! Flow arrows from the host slice that issued a device record to the device record's slice, so
//! that a viewer shows which construct (or runtime call) put that kernel or copy on the device.
//!
//! A record names its issuing thread and the time of the driver call. The arrow starts at the
//! innermost slice open at that time on that thread's tracks (its constructs, and its
//! synchronous enqueue calls), on the lane that slice landed on. Runtimes that stage copies on
//! helper threads of their own (the shim's pinned uploads) report no OpenACC events there; for
//! those the arrow starts at the transfer or launch of the same kind open at that time on any
//! thread of the process, as accprof-analysis attributes them.

use super::device::DeviceInfo;
use super::slice::Slice;
use super::tracks::{ThreadIds, TrackKey, TrackKind, TrackTable};
use accprof_abi::acc_event_t;
use accprof_timeline::device::{innermost_open, Query as SpanQuery};
use accprof_timeline::DeviceOp;
use std::collections::HashMap;

/// One arrow: from `(src_tid, src_ts)` to `(dst_tid, dst_ts)` in the process of trace `trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub id: u64,
    pub trace: u16,
    pub src_tid: u32,
    pub src_ts: u64,
    pub dst_tid: u32,
    pub dst_ts: u64,
}

/// A search for the innermost slice of one track that contains time `t`.
struct Query {
    track: u32,
    t: u64,
    /// The device slice asking.
    slice: usize,
    /// Only a runtime enqueue of this kind will do (the helper-thread fallback).
    want: Option<acc_event_t>,
}

/// Links every device record with a known host call to the slice that issued it; sets
/// `issued_by` in `device` and returns the arrows. `slices` must be sorted and laned by
/// [`super::tracks::assign_lanes`].
pub fn link(
    slices: &[Slice],
    tracks: &TrackTable,
    tids: &ThreadIds,
    device: &mut [DeviceInfo],
) -> Vec<Flow> {
    let mut queries = Vec::new();
    for (i, s) in slices.iter().enumerate() {
        let Some(d) = s.device_index().map(|k| &device[k]) else {
            continue;
        };
        let Some(t) = d.host_call else { continue };
        let own = [
            TrackKind::Host { thread: d.thread },
            TrackKind::DeviceSync { thread: d.thread },
        ]
        .map(|kind| {
            tracks.get(&TrackKey {
                trace: s.trace,
                kind,
            })
        });
        if d.thread.is_some() && own.iter().any(Option::is_some) {
            queries.extend(own.into_iter().flatten().map(|track| Query {
                track,
                t,
                slice: i,
                want: None,
            }));
            continue;
        }
        let Some(want) = d.op.and_then(DeviceOp::enqueue_event) else {
            continue;
        };
        for (track, key) in tracks.of_trace(s.trace) {
            if matches!(
                key.kind,
                TrackKind::DeviceSync { .. } | TrackKind::DeviceQueue { .. }
            ) {
                queries.push(Query {
                    track,
                    t,
                    slice: i,
                    want: Some(want),
                });
            }
        }
    }
    // Per device slice, the best container found so far: (slice index, lane).
    let mut best: HashMap<usize, usize> = HashMap::new();
    for (q, found) in find_innermost(slices, queries) {
        let better = match best.get(&q.slice) {
            None => true,
            Some(&b) => {
                (slices[found].start, std::cmp::Reverse(slices[found].end))
                    > (slices[b].start, std::cmp::Reverse(slices[b].end))
            }
        };
        if better {
            best.insert(q.slice, found);
        }
    }
    let mut pairs: Vec<(usize, usize)> = best.into_iter().collect();
    pairs.sort_unstable();
    let mut flows = Vec::with_capacity(pairs.len());
    for (dev, host) in pairs {
        let (d, h) = (&slices[dev], &slices[host]);
        let info = &mut device[d.device as usize];
        let Some(call) = info.host_call else { continue };
        let src_ts = inside(h, call);
        // The arrow's end lies inside the device slice and not before its start: a viewer drops
        // a flow whose end comes before its beginning (clocks of host and device can disagree
        // by a little).
        let (lo, hi) = interior(d);
        let dst_ts = src_ts.max(lo);
        if dst_ts > hi {
            continue;
        }
        info.issued_by = Some(host as u32);
        flows.push(Flow {
            id: flows.len() as u64 + 1,
            trace: d.trace,
            src_tid: tids.tid(h.track, h.lane),
            src_ts,
            dst_tid: tids.tid(d.track, d.lane),
            dst_ts,
        });
    }
    flows
}

/// The part of `s` strictly inside its edges (when it is long enough to have one): a viewer
/// binds a flow to the slice open at the flow's time, and at an edge that may be a neighbour.
pub(super) fn interior(s: &Slice) -> (u64, u64) {
    if s.duration() >= 2 {
        (s.start + 1, s.end - 1)
    } else {
        (s.start, s.start)
    }
}

pub(super) fn inside(s: &Slice, t: u64) -> u64 {
    let (lo, hi) = interior(s);
    t.clamp(lo, hi)
}

/// The innermost slice of each query's track containing its time: the shared matching sweep,
/// over the export's tracks and lanes.
fn find_innermost(slices: &[Slice], queries: Vec<Query>) -> Vec<(Query, usize)> {
    let queries = queries
        .into_iter()
        .map(|q| SpanQuery {
            group: q.track,
            t: q.t,
            tag: q,
        })
        .collect();
    innermost_open(
        slices,
        |s| s.track,
        |s| usize::from(s.lane),
        queries,
        |q, s| q.tag.want.is_none_or(|w| s.event() == w),
    )
    .into_iter()
    .map(|(q, f)| (q.tag, f))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::export::slice::NONE_U32;

    fn slice(track: u32, lane: u16, start: u64, end: u64, kind: acc_event_t) -> Slice {
        let mut s = Slice::from_event(&accprof_trace::Event::new(kind, start), 0, track, |t| t);
        s.end = end;
        s.lane = lane;
        s.device = NONE_U32;
        s
    }

    #[test]
    fn the_innermost_open_slice_contains_the_call() {
        let c = acc_event_t::COMPUTE_CONSTRUCT_START;
        let slices = vec![
            slice(0, 0, 0, 100, c),
            slice(0, 0, 10, 20, c),
            slice(0, 0, 30, 60, c),
            slice(0, 1, 40, 120, c),
        ];
        let q = |t| Query {
            track: 0,
            t,
            slice: 9,
            want: None,
        };
        let found: Vec<(u64, usize)> =
            find_innermost(&slices, vec![q(15), q(25), q(35), q(50), q(110), q(130)])
                .into_iter()
                .map(|(q, f)| (q.t, f))
                .collect();
        // 25 lies between the children: the parent; 50 lies in lane 2's later-starting slice.
        assert_eq!(found, [(15, 1), (25, 0), (35, 2), (50, 3), (110, 3)]);
    }
}
