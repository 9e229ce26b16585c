//! Device records (CUPTI's kernels, copies and memsets, or CUDA-event timings): what one says,
//! the words CUDA's tools name them with, and the one rule every view uses to tie a record to
//! the host slice that issued it.
//!
//! # The issuer rule
//!
//! Every view that ties records to their issuer decides with the functions of this module and
//! of [`crate::by_name`]: the streaming layout ([`crate::layout`], for export and plot), the
//! TUI, and the profile behind report, advise and diff (`accprof-analysis`, which then puts
//! the record's time in the construct or operation of its issuer). Each keeps the candidate
//! slices its own way; which slices are candidates and which one wins is decided here.
//!
//! 1. A record names the host thread that made the driver call and when
//!    ([`DeviceRecord::issued`]). A kernel record that names no call is first given one by its
//!    kernel's name ([`crate::by_name`]: the middle of the earliest launch of that kernel no
//!    other record claimed), and is then searched for like any other.
//! 2. Where to look ([`IssuerSearch::of`]): when the issuing thread recorded OpenACC events,
//!    on that thread's own slices ([`IssuerSearch::Thread`]): its constructs and the runtime's
//!    enqueue calls inside them (an enqueue of another kind than the record's did not issue
//!    it: what encloses it did). Runtimes that stage copies on helper threads of their own
//!    report no OpenACC events there; for those, the runtime's enqueue of the same kind
//!    ([`DeviceOp::enqueue_event`]) on any thread of the process ([`IssuerSearch::Enqueue`]).
//!    A record without a call, or from a helper thread for work no runtime reports (a memset),
//!    has no issuer ([`IssuerSearch::Nowhere`]).
//! 3. Which candidate wins ([`issuer_among`]): of the slices open at the call that the search
//!    [`accepts`](IssuerSearch::accepts), the innermost: the one that started last, the shorter
//!    at equal starts ([`inner_key`]).
//!
//! [`innermost_open`] answers step 3 for a batch of calls over laid-out slices, and
//! `crate::issuers` as slices stream by. The one difference between views is what they can
//! see of a thread's own slices: the profile keeps a thread's asynchronous enqueues with its
//! other operations, while the layout and the TUI place them on their queue's track, which
//! names no thread; there a record issued inside an asynchronous launch is tied to the
//! construct around it, the construct the profile puts it in too.

use crate::taxonomy::{is_enqueue, is_point, Direction};
use crate::track::TrackKind;
use accprof_abi::acc_event_t;
use accprof_trace::{device, Event, EventFlags, Field};

/// What the device did.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DeviceOp {
    Kernel,
    /// A copy between host and device.
    Copy(Direction),
    /// Device to device, host to host, peer or array copies: totals only.
    OtherCopy,
    Memset,
}

impl DeviceOp {
    /// The operation of a device record, `None` for any other event.
    pub fn of(ev: &Event) -> Option<DeviceOp> {
        Some(match ev.kind {
            device::KERNEL => DeviceOp::Kernel,
            device::MEMSET => DeviceOp::Memset,
            device::MEMCPY => match ev.get(Field::CopyKind).and_then(Direction::of_copy_kind) {
                Some(d) => DeviceOp::Copy(d),
                None => DeviceOp::OtherCopy,
            },
            _ => return None,
        })
    }

    /// The runtime event that enqueues this operation (the helper-thread fallback of the
    /// matching rule); `None` for operations the runtime does not report.
    pub fn enqueue_event(self) -> Option<acc_event_t> {
        match self {
            DeviceOp::Kernel => Some(acc_event_t::ENQUEUE_LAUNCH_START),
            DeviceOp::Copy(d) => Some(d.enqueue_event()),
            DeviceOp::OtherCopy | DeviceOp::Memset => None,
        }
    }
}

/// What a device record says beyond its slice (times, bytes, names are the slice's).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DeviceRecord {
    pub op: DeviceOp,
    /// The host thread that issued the driver call.
    pub thread: Option<i64>,
    /// When that thread made the call (CLOCK_MONOTONIC ns, as recorded).
    pub host_call_ns: Option<u64>,
    /// CUPTI's id of the driver call: issue order across the process.
    pub correlation: Option<u64>,
    /// The CUDA stream (`async_handle`).
    pub stream: Option<u64>,
    /// CUPTI's copy kind ([`Field::CopyKind`]: direction and memory kinds), for copies.
    pub copy_kind: Option<u64>,
    /// The device's start and end as recorded (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    pub end_ns: u64,
    /// Timed with CUDA events around the operation rather than by CUPTI.
    pub from_cuda_events: bool,
}

impl DeviceRecord {
    /// The record in `ev`, `None` when `ev` is not a device record.
    pub fn of(ev: &Event) -> Option<DeviceRecord> {
        Some(DeviceRecord {
            op: DeviceOp::of(ev)?,
            thread: ev.thread(),
            host_call_ns: ev.get(Field::HostCallNs),
            correlation: ev.get(Field::CorrelationId),
            stream: ev.get(Field::AsyncHandle),
            copy_kind: ev.get(Field::CopyKind),
            start_ns: ev.start_ns,
            end_ns: ev.end_ns.max(ev.start_ns),
            from_cuda_events: ev.flags().contains(EventFlags::FROM_CUDA_EVENTS),
        })
    }

    /// The issuing call, when the record names both its thread and time.
    pub fn issued(&self) -> Option<(i64, u64)> {
        Some((self.thread?, self.host_call_ns?))
    }

    /// Where the issuer rule looks for the slice that issued this record; `reports_events`
    /// says whether a thread of its process recorded OpenACC events (a thread that did not is
    /// a runtime's helper thread).
    pub fn issuer_search(&self, reports_events: impl Fn(i64) -> bool) -> IssuerSearch {
        IssuerSearch::of(self.op, self.issued(), reports_events)
    }

    /// The copy's direction in CUPTI's numbering (`CUpti_ActivityMemcpyKind`), for a copy.
    pub fn copy_direction(&self) -> Option<u64> {
        self.copy_kind.map(|k| device::split_copy_kind(k).0)
    }

    /// The memory kinds a copy went from and to (`CUpti_ActivityMemoryKind`).
    pub fn copy_memory(&self) -> Option<(u64, u64)> {
        self.copy_kind.map(|k| {
            let (_, src, dst) = device::split_copy_kind(k);
            (src, dst)
        })
    }

    /// The matching rule seen from the host side: whether this record is the device's work
    /// for the runtime operation `enqueue` that thread `thread` had open over `start..=end`.
    /// It is when it does that operation ([`DeviceOp::enqueue_event`]) and was issued within
    /// the span by that thread, or by a thread that recorded no OpenACC events
    /// (`reports_events` says false: a runtime's helper thread).
    pub fn issued_within(
        &self,
        enqueue: acc_event_t,
        thread: i64,
        (start, end): (u64, u64),
        reports_events: impl Fn(i64) -> bool,
    ) -> bool {
        let Some((by, t)) = self.issued() else {
            return false;
        };
        self.op.enqueue_event() == Some(enqueue)
            && (start..=end).contains(&t)
            && (by == thread || !reports_events(by))
    }
}

/// Where the issuer of a device record is looked for ([`DeviceRecord::issuer_search`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IssuerSearch {
    /// A slice of this thread's own tracks (its host track and its synchronous device track):
    /// a construct, or the runtime's enqueue of this kind (an enqueue of another kind did not
    /// issue the record; what encloses it did).
    Thread(i64, Option<acc_event_t>),
    /// The runtime's enqueue of this kind, on any synchronous device track or async queue of
    /// the process (the record came from a runtime's helper thread).
    Enqueue(acc_event_t),
    /// The record names no call, or was made on a helper thread for work no runtime reports.
    Nowhere,
}

impl IssuerSearch {
    /// Where the issuer of a record of operation `op`, issued by thread and at time `issued`
    /// (when it says), is looked for; `reports_events` says whether a thread of its process
    /// recorded OpenACC events (a thread that did not is a runtime's helper thread).
    pub fn of(
        op: DeviceOp,
        issued: Option<(i64, u64)>,
        reports_events: impl Fn(i64) -> bool,
    ) -> IssuerSearch {
        let Some((thread, _)) = issued else {
            return IssuerSearch::Nowhere;
        };
        if reports_events(thread) {
            return IssuerSearch::Thread(thread, op.enqueue_event());
        }
        match op.enqueue_event() {
            Some(kind) => IssuerSearch::Enqueue(kind),
            None => IssuerSearch::Nowhere,
        }
    }

    /// Whether slices of a track of this kind may have issued the record.
    pub fn looks_on(&self, track: TrackKind) -> bool {
        match (*self, track) {
            (
                IssuerSearch::Thread(t, _),
                TrackKind::Host { thread } | TrackKind::DeviceSync { thread },
            ) => thread == Some(t),
            (
                IssuerSearch::Enqueue(_),
                TrackKind::DeviceSync { .. } | TrackKind::DeviceQueue { .. },
            ) => true,
            _ => false,
        }
    }

    /// Whether a slice of event `kind`, open at the call on a track it looks on, may be the
    /// issuer.
    pub fn accepts(&self, kind: acc_event_t) -> bool {
        match *self {
            IssuerSearch::Thread(_, want) => !is_enqueue(kind) || Some(kind) == want,
            IssuerSearch::Enqueue(want) => kind == want,
            IssuerSearch::Nowhere => false,
        }
    }
}

/// Of the slices open at a call, the issuer is the one with the greatest key: the one that
/// started last, the shorter at equal starts.
pub fn inner_key(start: u64, end: u64) -> (u64, std::cmp::Reverse<u64>) {
    (start, std::cmp::Reverse(end))
}

/// The issuer among `candidates` (slices on the tracks `search` looks on, as
/// `(event kind, start, end)` by `of`) of a record issued at `t`: the innermost slice open at
/// `t` that `search` accepts (instants contain nothing). At equal keys the earlier candidate
/// stays.
pub fn issuer_among<C>(
    search: IssuerSearch,
    t: u64,
    candidates: impl IntoIterator<Item = C>,
    of: impl Fn(&C) -> (acc_event_t, u64, u64),
) -> Option<C> {
    let mut best: Option<(C, (u64, std::cmp::Reverse<u64>))> = None;
    for c in candidates {
        let (kind, start, end) = of(&c);
        if start > t || end < t || is_point(kind) || !search.accepts(kind) {
            continue;
        }
        let key = inner_key(start, end);
        if best.as_ref().is_none_or(|(_, k)| key > *k) {
            best = Some((c, key));
        }
    }
    best.map(|(c, _)| c)
}

/// "HtoD", "DtoH", ... as CUDA's tools name a copy's direction (CUPTI's memcpy kind), and in
/// words ("host to device").
pub fn copy_direction_name(direction: u64) -> (&'static str, &'static str) {
    match direction {
        1 => ("HtoD", "host to device"),
        2 => ("DtoH", "device to host"),
        3 => ("HtoA", "host to array"),
        4 => ("AtoH", "array to host"),
        5 => ("AtoA", "array to array"),
        6 => ("AtoD", "array to device"),
        7 => ("DtoA", "device to array"),
        8 => ("DtoD", "device to device"),
        9 => ("HtoH", "host to host"),
        10 => ("PtoP", "peer to peer"),
        _ => ("copy", "unknown"),
    }
}

/// A copy's memory kind in words (CUPTI's memory kind, bits 8-15 and 16-23 of the copy kind).
pub fn memory_kind_name(kind: u64) -> &'static str {
    match kind {
        1 => "pageable",
        2 => "pinned",
        3 => "device",
        4 => "array",
        5 => "managed",
        6 => "device static",
        7 => "managed static",
        _ => "unknown",
    }
}

/// What a device record's event is called: "device kernel", "device memcpy", "device memset".
pub fn record_name(kind: acc_event_t) -> Option<&'static str> {
    match kind {
        device::KERNEL => Some("device kernel"),
        device::MEMCPY => Some("device memcpy"),
        device::MEMSET => Some("device memset"),
        _ => None,
    }
}

/// A host span a device record may be matched to.
pub trait Span {
    fn start(&self) -> u64;
    fn end(&self) -> u64;
    /// Instants contain nothing.
    fn is_point(&self) -> bool {
        false
    }
}

/// A question for [`innermost_open`]: which span of `group` (a thread, a track) contains `t`?
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Query<T> {
    pub group: u32,
    pub t: u64,
    /// Passed back with the answer (which record asked).
    pub tag: T,
}

/// For each query, the innermost span of its group containing `t` among those `accept`s, as an
/// index into `spans`. `spans` are sorted by (group, start); spans of one group that overlap
/// without nesting are told apart by `layer` (a lane), each layer nesting strictly. The
/// innermost is the one that started last (and, at equal starts, ends first).
pub fn innermost_open<S: Span, T>(
    spans: &[S],
    group_of: impl Fn(&S) -> u32,
    layer_of: impl Fn(&S) -> usize,
    mut queries: Vec<Query<T>>,
    accept: impl Fn(&Query<T>, &S) -> bool,
) -> Vec<(Query<T>, usize)> {
    queries.sort_by_key(|q| (q.group, q.t));
    let mut out = Vec::new();
    // Per layer, the spans open at the current time, outermost first.
    let mut stacks: Vec<Vec<usize>> = Vec::new();
    let mut group = u32::MAX;
    let mut next = 0usize;
    for q in queries {
        if q.group != group {
            group = q.group;
            next = spans.partition_point(|s| group_of(s) < group);
            stacks.iter_mut().for_each(Vec::clear);
        }
        while next < spans.len() && group_of(&spans[next]) == group && spans[next].start() <= q.t {
            let s = &spans[next];
            if !s.is_point() {
                let layer = layer_of(s);
                if stacks.len() <= layer {
                    stacks.resize_with(layer + 1, Vec::new);
                }
                let stack = &mut stacks[layer];
                while stack.last().is_some_and(|&o| spans[o].end() < s.start()) {
                    stack.pop();
                }
                stack.push(next);
            }
            next += 1;
        }
        let mut found: Option<usize> = None;
        for stack in &mut stacks {
            while stack.last().is_some_and(|&o| spans[o].end() < q.t) {
                stack.pop();
            }
            let fit = stack.iter().rev().copied().find(|&o| accept(&q, &spans[o]));
            if let Some(o) = fit {
                let key = |i: usize| inner_key(spans[i].start(), spans[i].end());
                if found.is_none_or(|f| key(o) > key(f)) {
                    found = Some(o);
                }
            }
        }
        if let Some(f) = found {
            out.push((q, f));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct S(u32, usize, u64, u64);
    impl Span for S {
        fn start(&self) -> u64 {
            self.2
        }
        fn end(&self) -> u64 {
            self.3
        }
    }

    #[test]
    fn the_innermost_open_span_contains_the_call() {
        let spans = [
            S(0, 0, 0, 100),
            S(0, 0, 10, 20),
            S(0, 0, 30, 60),
            S(0, 1, 40, 120),
            S(1, 0, 0, 5),
        ];
        let q = |t| Query {
            group: 0,
            t,
            tag: (),
        };
        let found: Vec<(u64, usize)> = innermost_open(
            &spans,
            |s| s.0,
            |s| s.1,
            vec![q(15), q(25), q(35), q(50), q(110), q(130)],
            |_, _| true,
        )
        .into_iter()
        .map(|(q, f)| (q.t, f))
        .collect();
        assert_eq!(found, [(15, 1), (25, 0), (35, 2), (50, 3), (110, 3)]);
    }

    #[test]
    fn the_issuer_is_the_innermost_accepted_slice_open_at_the_call() {
        let (c, up, down) = (
            acc_event_t::COMPUTE_CONSTRUCT_START,
            acc_event_t::ENQUEUE_UPLOAD_START,
            acc_event_t::ENQUEUE_DOWNLOAD_START,
        );
        let slices = [
            (c, 0, 100),
            (down, 10, 50),
            (acc_event_t::CREATE, 20, 20),
            (up, 60, 70),
            (c, 60, 90),
        ];
        let pick =
            |search: IssuerSearch, t: u64| issuer_among(search, t, slices.iter().copied(), |&s| s);
        let thread = |kind| IssuerSearch::Thread(1, Some(kind));
        // An upload's record issued inside a download: the construct around it issued it.
        assert_eq!(pick(thread(up), 20), Some((c, 0, 100)));
        assert_eq!(pick(thread(down), 20), Some((down, 10, 50)));
        // Of a construct and an enqueue that start together, the shorter.
        assert_eq!(pick(thread(up), 65), Some((up, 60, 70)));
        assert_eq!(pick(thread(down), 65), Some((c, 60, 90)));
        // A helper thread's record: only an enqueue of its kind.
        assert_eq!(pick(IssuerSearch::Enqueue(up), 20), None);
        assert_eq!(pick(IssuerSearch::Enqueue(up), 65), Some((up, 60, 70)));
        assert_eq!(pick(IssuerSearch::Nowhere, 65), None);
        assert_eq!(pick(thread(up), 150), None);
        let kernel = DeviceOp::Kernel;
        let program = |t: i64| t == 1;
        assert_eq!(
            IssuerSearch::of(kernel, None, program),
            IssuerSearch::Nowhere
        );
        assert_eq!(
            IssuerSearch::of(DeviceOp::Memset, Some((9, 5)), program),
            IssuerSearch::Nowhere,
            "a helper's work no runtime reports"
        );
        assert_eq!(
            IssuerSearch::of(kernel, Some((9, 5)), program),
            IssuerSearch::Enqueue(acc_event_t::ENQUEUE_LAUNCH_START)
        );
    }

    #[test]
    fn records_say_what_and_who() {
        let mut ev = Event::new(device::MEMCPY, 10);
        ev.set(
            Field::CopyKind,
            device::copy_kind(device::COPY_DTOH as u8, 3, 1),
        );
        ev.set_i64(Field::Thread, 7);
        ev.set(Field::HostCallNs, 5);
        let r = DeviceRecord::of(&ev).unwrap();
        assert_eq!(r.op, DeviceOp::Copy(Direction::DeviceToHost));
        assert_eq!(r.issued(), Some((7, 5)));
        assert_eq!(
            r.op.enqueue_event(),
            Some(acc_event_t::ENQUEUE_DOWNLOAD_START)
        );
        assert_eq!(
            DeviceRecord::of(&Event::new(acc_event_t::ENQUEUE_LAUNCH_START, 0)),
            None
        );
        let up = acc_event_t::ENQUEUE_UPLOAD_START;
        let down = acc_event_t::ENQUEUE_DOWNLOAD_START;
        let program_threads = |t: i64| t == 7 || t == 8;
        assert!(r.issued_within(down, 7, (0, 10), program_threads));
        assert!(
            !r.issued_within(up, 7, (0, 10), program_threads),
            "the other direction"
        );
        assert!(
            !r.issued_within(down, 7, (6, 10), program_threads),
            "called before"
        );
        assert!(
            !r.issued_within(down, 8, (0, 10), program_threads),
            "another thread's"
        );
        let helper = DeviceRecord {
            thread: Some(99),
            ..r
        };
        assert!(helper.issued_within(down, 8, (0, 10), program_threads));
        assert_eq!(
            r.issuer_search(program_threads),
            IssuerSearch::Thread(7, Some(down))
        );
        assert!(IssuerSearch::Thread(7, Some(down)).accepts(acc_event_t::COMPUTE_CONSTRUCT_START));
        assert!(
            !IssuerSearch::Thread(7, Some(down)).accepts(up),
            "an upload issued no download"
        );
        assert_eq!(
            helper.issuer_search(program_threads),
            IssuerSearch::Enqueue(down)
        );
        let sync = TrackKind::DeviceSync { thread: Some(8) };
        assert!(!IssuerSearch::Thread(7, None).looks_on(sync));
        assert!(IssuerSearch::Enqueue(down).looks_on(sync));
        assert!(!IssuerSearch::Enqueue(down).accepts(up));
        assert_eq!(copy_direction_name(r.copy_direction().unwrap()).0, "DtoH");
        assert_eq!(memory_kind_name(r.copy_memory().unwrap().0), "device");
    }
}
