//! Ties device records to the host events that issued their work, by the shared issuer rule
//! (accprof-timeline's `device`): a record was issued by the innermost event open at its call
//! on its issuing thread's lanes (the thread's own and its synchronous device work); a record
//! issued by a runtime's helper thread (one with no OpenACC events) by the runtime's enqueue of
//! the same kind open then on any thread ([`accprof_timeline::device::IssuerSearch`]); a kernel
//! record that names no call by the launch of its kernel the by-name rule gives it
//! ([`tie_by_name`], accprof-timeline's `by_name`).
//!
//! The TUI asks per selected event (the details pane) instead of tying every record up front
//! as the export does: a lane's rows hold disjoint events, so the events open at a time are at
//! most one per row, and the rule's order picks among those few.

use crate::state::device::{DeviceBar, LaunchAt};
use crate::state::kind::kind_of_code;
use crate::state::store::{BarRef, Store, NO_STR};
use accprof_abi::acc_event_t;
use accprof_timeline::by_name::{call_of, ByName, KernelLaunches, Unissued};
use accprof_timeline::device::{inner_key, IssuerSearch};
use accprof_timeline::{is_enqueue, DeviceOp, TrackKind};
use accprof_trace::StrId;

/// The event that issued device record `dev`, by the issuer rule.
pub fn issuer_of(store: &Store, dev: &DeviceBar) -> Option<BarRef> {
    if let Some(((lane, track, idx), _)) = dev.by_name {
        return Some(BarRef { lane, track, idx });
    }
    let t = dev.host_call?;
    let source = usize::from(store.records.source[dev.rec as usize]);
    let search = dev
        .record
        .issuer_search(|thread| store.reports_events(source, thread));
    if search == IssuerSearch::Nowhere {
        return None;
    }
    let accept = |rec: u32| search.accepts(kind_of_code(store.records.kind[rec as usize]));
    let lanes = (0..store.lanes.len())
        .filter(|&l| store.lanes[l].source == source && search.looks_on(store.lanes[l].kind));
    innermost(store, lanes, t, &accept)
}

/// The device records whose work host event `host` issued.
pub fn device_work_of(store: &Store, host: BarRef) -> Vec<DeviceBar> {
    let source = store.lanes[host.lane].source;
    let (a, b) = store.span_of(host);
    let mut work: Vec<DeviceBar> = store
        .device
        .called_between(a, b)
        .filter(|r| usize::from(store.records.source[r.rec as usize]) == source)
        .filter(|r| issuer_of(store, r) == Some(host))
        .collect();
    work.extend(store.device.tied_to((host.lane, host.track, host.idx)));
    work
}

/// Gives each kernel record that names no call the launch of its kernel the by-name rule
/// picks (accprof-timeline's `by_name`, as the report and the export do), per trace, among
/// every launch on the rows; the rows' positions change when they are rebuilt, so this runs
/// after each rebuild.
pub fn tie_by_name(store: &mut Store) {
    let mut ties = Vec::new();
    for source in 0..store.sources.len() {
        let of_source = |d: &DeviceBar| usize::from(store.records.source[d.rec as usize]) == source;
        let unissued: Vec<(u32, DeviceBar)> = store
            .device
            .all()
            .filter(|(_, d)| of_source(d) && d.record.op == DeviceOp::Kernel)
            .filter(|(_, d)| d.record.issued().is_none())
            .collect();
        if unissued.is_empty() {
            continue;
        }
        let mut launches: KernelLaunches<LaunchAt> = KernelLaunches::unbounded();
        let name = |launches: &mut KernelLaunches<LaunchAt>, rec: u32| {
            let id = store.records.name[rec as usize];
            launches.name(StrId(id), store.strings.get(id)?);
            launches.of(Some(StrId(id)))
        };
        let is_launch = |rec: u32| {
            kind_of_code(store.records.kind[rec as usize]) == acc_event_t::ENQUEUE_LAUNCH_START
        };
        for (lane, l) in store.lanes.iter().enumerate() {
            let enqueues = matches!(
                l.kind,
                TrackKind::DeviceSync { .. } | TrackKind::DeviceQueue { .. }
            );
            if l.source != source || !enqueues {
                continue;
            }
            for (track, t) in l.tracks.iter().enumerate() {
                for idx in (0..t.len()).filter(|&i| is_launch(t.rec[i])) {
                    if let Some(n) = name(&mut launches, t.rec[idx]) {
                        launches.add_launch(n, (t.start[idx], t.end[idx], (lane, track, idx)));
                    }
                }
            }
        }
        // A launch a record names as its call is that record's, not one by name.
        for (_, d) in store.device.all().filter(|(_, d)| of_source(d)) {
            if d.record.op != DeviceOp::Kernel || d.record.issued().is_none() {
                continue;
            }
            let Some(b) = issuer_of(store, &d).filter(|b| is_launch(store.rec_of(*b))) else {
                continue;
            };
            if let Some(n) = name(&mut launches, store.rec_of(b)) {
                let (start, end) = store.span_of(b);
                launches.claim(n, (start, end, (b.lane, b.track, b.idx)));
            }
        }
        let asked: Vec<Unissued> = unissued
            .iter()
            .map(|(_, d)| Unissued {
                kernel: Some(StrId(store.records.name[d.rec as usize])),
                correlation: d.record.correlation,
                device_start: d.start,
            })
            .collect();
        for ((i, _), said) in unissued.iter().zip(launches.decide_all(&asked, u64::MAX)) {
            if let ByName::Launch(l) = said {
                ties.push((*i, l.2, call_of(&l)));
            }
        }
    }
    store.device.set_by_name(ties);
}

/// What a device record belongs to on the host side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostSide {
    /// The runtime's enqueue event for the same work (launch, upload, download), when it
    /// issued the record.
    pub enqueue: Option<BarRef>,
    /// The innermost event with a source location, short of an enqueue, open on the issuing
    /// thread's lane when its issuer started: the construct the work belongs to.
    pub construct: Option<BarRef>,
}

/// The issuer of `dev` and the construct it was issued in.
pub fn host_side_of(store: &Store, dev: &DeviceBar) -> HostSide {
    let Some(call) = dev.host_call.or(dev.by_name.map(|(_, call)| call)) else {
        return HostSide::default();
    };
    let issuer = issuer_of(store, dev);
    let issuer_rec = issuer.map(|i| store.rec_of(i));
    let kind = |rec: u32| kind_of_code(store.records.kind[rec as usize]);
    let enqueue = issuer.filter(|_| issuer_rec.is_some_and(|r| is_enqueue(kind(r))));
    // The issuing thread: the record's own, or (a helper thread's record) the thread whose
    // enqueue issued it.
    let (thread, t) = match issuer.map(|i| (store.lanes[i.lane].kind, store.span_of(i).0)) {
        Some((TrackKind::Host { thread } | TrackKind::DeviceSync { thread }, start)) => {
            (thread, start.max(call))
        }
        _ => (dev.record.thread, call),
    };
    let source = usize::from(store.records.source[dev.rec as usize]);
    let host = store.lane_of(source, TrackKind::Host { thread });
    let construct = innermost(store, host.into_iter(), t, &|rec| {
        store.records.file[rec as usize] != NO_STR && !is_enqueue(kind(rec))
    });
    HostSide { enqueue, construct }
}

/// The innermost event among `lanes` open at `t` that `accept`s, by the issuer rule's order.
fn innermost(
    store: &Store,
    lanes: impl Iterator<Item = usize>,
    t: u64,
    accept: &dyn Fn(u32) -> bool,
) -> Option<BarRef> {
    lanes
        .flat_map(|l| open_at(store, l, t))
        .filter(|o| accept(o.rec))
        .max_by_key(|o| inner_key(o.start, o.end))
        .map(|o| o.at)
}

/// A host event open at the time asked about.
struct Open {
    start: u64,
    end: u64,
    rec: u32,
    at: BarRef,
}

/// The events of `lane` open at `t`: rows hold disjoint events sorted by start, so per row it
/// is the one starting last at or before `t`, if it has not ended.
fn open_at(store: &Store, lane: usize, t: u64) -> Vec<Open> {
    let mut open = Vec::new();
    for (ti, track) in store.lanes[lane].tracks.iter().enumerate() {
        let Some(i) = track.first_starting_at(t.saturating_add(1)).checked_sub(1) else {
            continue;
        };
        if track.end[i] < t || track.start[i] == track.end[i] {
            continue;
        }
        open.push(Open {
            start: track.start[i],
            end: track.end[i],
            rec: track.rec[i],
            at: BarRef {
                lane,
                track: ti,
                idx: i,
            },
        });
    }
    open
}
