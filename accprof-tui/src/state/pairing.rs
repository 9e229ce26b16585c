//! Pairs device records with the host events that issued their work, by the shared matching
//! rule (accprof-timeline's `device` module): a record belongs to what was open on its issuing
//! thread when the driver call was made ([`accprof_timeline::device::innermost_open`]); a record
//! issued by a runtime's helper thread (one with no OpenACC events) belongs to the runtime's
//! enqueue of the same kind open then on any thread
//! ([`accprof_timeline::DeviceRecord::issued_within`]).
//!
//! The TUI asks per selected event, over its rows (the details pane), instead of matching every
//! record up front as the export does: a lane's rows hold disjoint events, so the spans open at
//! a time are at most one per row, and the shared sweep runs over those few. Asynchronous
//! enqueues sit on their queue's lane, so a device record's enqueue is looked for on thread
//! lanes only.

use crate::state::device::DeviceRec;
use crate::state::kind::kind_of_code;
use crate::state::store::{EventRef, Store, NO_STR};
use accprof_timeline::device::{innermost_open, Query, Span};
use accprof_timeline::{is_enqueue, TrackKind};

/// The device records that executed the work of host event `host` (a launch, upload or
/// download) recorded by `thread`: issued by that thread, or by a helper thread with no OpenACC
/// events of its own (runtimes stage copies there), while the event was open. Empty for other
/// events. The thread is the event's own (an async enqueue sits on its queue's lane).
pub fn device_work_of(store: &Store, host: EventRef, thread: i64) -> Vec<DeviceRec> {
    let source = store.lanes[host.lane].source;
    let kind = kind_of_code(store.records.kind[store.rec_of(host) as usize]);
    let (a, b) = store.span_of(host);
    let reports_events = |t: i64| store.has_thread_lane(source, t);
    store
        .device
        .called_between(a, b)
        .filter(|r| usize::from(store.records.source[r.rec as usize]) == source)
        .filter(|r| {
            r.record()
                .issued_within(kind, thread, (a, b), reports_events)
        })
        .collect()
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
        let open = open_at(store, lane, t);
        let innermost = |accept: &dyn Fn(u32) -> bool| {
            let query = vec![Query {
                group: 0,
                t,
                tag: (),
            }];
            innermost_open(&open, |_| 0, |_| 0, query, |_, s| accept(s.rec))
                .first()
                .map(|&(_, i)| open[i].at)
        };
        let kind = |rec: u32| kind_of_code(store.records.kind[rec as usize]);
        side.enqueue = innermost(&|rec| want == Some(kind(rec)));
        // The innermost with a location, short of the enqueue itself (its construct is what
        // the user edits).
        side.construct =
            innermost(&|rec| store.records.file[rec as usize] != NO_STR && !is_enqueue(kind(rec)));
        if side.construct.is_some() || side.enqueue.is_some() {
            break;
        }
    }
    side
}

/// A host event open at the time asked about.
struct Open {
    start: u64,
    end: u64,
    rec: u32,
    at: EventRef,
}

impl Span for Open {
    fn start(&self) -> u64 {
        self.start
    }
    fn end(&self) -> u64 {
        self.end
    }
}

/// The events of `lane` open at `t`, sorted by start (outermost first): rows hold disjoint
/// events sorted by start, so per row it is the one starting last at or before `t`, if it has
/// not ended.
fn open_at(store: &Store, lane: usize, t: u64) -> Vec<Open> {
    let mut open = Vec::new();
    for (ti, track) in store.lanes[lane].tracks.iter().enumerate() {
        let Some(i) = track.first_starting_at(t.saturating_add(1)).checked_sub(1) else {
            continue;
        };
        if track.end[i] < t {
            continue;
        }
        open.push(Open {
            start: track.start[i],
            end: track.end[i],
            rec: track.rec[i],
            at: EventRef {
                lane,
                track: ti,
                idx: i,
            },
        });
    }
    open.sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
    open
}
