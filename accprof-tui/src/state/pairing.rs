//! Pairs device records with the host events that issued their work, by the shared matching
//! rule (accprof-timeline's `device` module): a record belongs to what was open on its issuing
//! thread when the driver call was made; a record issued by a runtime's helper thread (one with
//! no OpenACC events) belongs to the runtime's enqueue of the same kind open then on any thread.
//! What enqueues which operation is the shared `DeviceOp::enqueue_event`.
//!
//! The TUI asks per selected event, over its rows (the details pane), instead of matching every
//! record up front as the export does; asynchronous enqueues sit on their queue's lane, so a
//! device record's enqueue is looked for on thread lanes only.

use crate::state::device::DeviceRec;
use crate::state::kind::kind_of_code;
use crate::state::store::{EventRef, Store, NO_STR};
use accprof_timeline::{is_enqueue, TrackKind};

/// The device records that executed the work of host event `host` (a launch, upload or
/// download) recorded by `thread`: issued by that thread, or by a helper thread with no OpenACC
/// events of its own (runtimes stage copies there), while the event was open. Empty for other
/// events. The thread is the event's own (an async enqueue sits on its queue's lane).
pub fn device_work_of(store: &Store, host: EventRef, thread: i64) -> Vec<DeviceRec> {
    let lane = &store.lanes[host.lane];
    let kind = kind_of_code(store.records.kind[store.rec_of(host) as usize]);
    let (a, b) = store.span_of(host);
    let mut out = Vec::new();
    for r in store.device.called_between(a, b) {
        if r.op.enqueue_event() != Some(kind)
            || usize::from(store.records.source[r.rec as usize]) != lane.source
        {
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
    let (Some(thread), Some(t)) = (dev.thread, dev.host_call) else {
        return HostSide::default();
    };
    let source = usize::from(store.records.source[dev.rec as usize]);
    let lanes: Vec<usize> = match store.lane_of(
        source,
        TrackKind::Host {
            thread: Some(thread),
        },
    ) {
        Some(l) => vec![l],
        None => (0..store.lanes.len())
            .filter(|&l| {
                store.lanes[l].source == source
                    && matches!(store.lanes[l].kind, TrackKind::Host { .. })
            })
            .collect(),
    };
    let want = dev.op.enqueue_event();
    let mut side = HostSide::default();
    for lane in lanes {
        for (ti, track) in store.lanes[lane].tracks.iter().enumerate() {
            // Rows hold disjoint events sorted by start: the one starting last at or before `t`.
            let Some(i) = track.first_starting_at(t.saturating_add(1)).checked_sub(1) else {
                continue;
            };
            if track.end[i] < t {
                continue;
            }
            let r = EventRef {
                lane,
                track: ti,
                idx: i,
            };
            let rec = track.rec[i] as usize;
            let kind = kind_of_code(store.records.kind[rec]);
            if want == Some(kind) {
                side.enqueue.get_or_insert(r);
            }
            // Deeper rows are inner events: the last one with a location wins, short of the
            // enqueue itself (its construct is what the user edits).
            if store.records.file[rec] != NO_STR && !is_enqueue(kind) {
                side.construct = Some(r);
            }
        }
        if side.construct.is_some() || side.enqueue.is_some() {
            break;
        }
    }
    side
}
