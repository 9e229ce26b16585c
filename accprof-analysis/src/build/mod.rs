//! Building a [`Profile`] from a stream of events, in memory proportional to the number of
//! distinct constructs, kernels and variables, not to the number of events.
//!
//! The tool joins a start and its end into one event and writes it when the end arrives, so on one
//! thread a construct comes *after* the transfers and launches it contains. Each thread keeps a
//! stack of events whose enclosing construct has not arrived yet; when a construct arrives it
//! takes the stack entries that lie inside its interval as its children. Traces written in start
//! order work too: an event that lies inside the construct on top of the stack is attributed to it
//! at once. The implicit enter/exit data events inside a compute construct are transparent: what
//! they contain is attributed to the compute construct itself, as NV_ACC_TIME does.
//!
//! One file per concern: `nesting` (the per-thread stacks), `constructs`, `kernels`,
//! `transfers`, `allocations`, `device_records` (with `kernel_names`, which ties kernel records
//! that do not say their call to the launch of their kernel) and `finish`.

mod allocations;
mod constructs;
mod device_gaps;
mod device_memory;
mod device_records;
mod finish;
mod geometry;
mod kernel_names;
mod kernels;
mod nesting;
mod nvtx;
mod transfers;

use crate::model::*;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::taxonomy::EventClass;
use accprof_timeline::{is_async, DeviceOp};
use accprof_trace::{device, Event, EventFlags, Field, StrId, StringTable};
use nesting::share_overhead;
use std::collections::VecDeque;

/// The builder's tables are looked up on small integer keys once or more per event, where
/// SipHash's DoS resistance buys nothing and costs a third of the time.
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Stack entries a thread keeps waiting for an enclosing construct, at most. Past its share,
/// the oldest half is accounted as outside any construct, so that memory does not grow with a
/// run of operations no construct encloses (runtime API calls from a library, on many
/// threads). A construct that arrives later and would have enclosed them is counted and warned
/// about.
const MAX_PENDING: usize = 4096;
/// All threads together keep about this many waiting entries (a thread's share is this divided
/// by the threads, within [`MIN_PENDING`]..=[`MAX_PENDING`]).
const PENDING_BUDGET: usize = 1 << 16;
/// A thread keeps at least this many waiting entries, however many threads there are.
const MIN_PENDING: usize = 256;

/// Transfers smaller than this are not counted as slices of an array.
const SLICE_MIN_RUN: u64 = 8;

/// What makes two construct events "the same construct" in every table: the report's rows,
/// and the TUI's constructs table (which keys its rows with this, so the two cannot disagree).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ConstructKey {
    pub kind: ConstructKind,
    /// `acc_construct_t` of the event's `parent_construct`.
    pub ctype: Option<i64>,
    pub file: Option<StrId>,
    pub func: Option<StrId>,
    pub line: Option<i64>,
    pub dev_type: Option<i64>,
    pub dev_num: Option<i64>,
}

impl ConstructKey {
    /// The key of construct event `ev` of kind `kind` (its [`EventClass`]), with the trace's
    /// string ids.
    pub fn of(ev: &Event, kind: ConstructKind) -> Self {
        ConstructKey {
            kind,
            ctype: ev.get_i64(Field::ParentConstruct),
            file: ev.src_file(),
            func: ev.func_name(),
            line: ev.line_no(),
            dev_type: ev.get_i64(Field::DeviceType),
            dev_num: ev.get_i64(Field::DeviceNumber),
        }
    }

    /// The same key with its string ids translated (a view that interns the strings of several
    /// traces in one table of its own).
    pub fn map_strings(self, mut f: impl FnMut(StrId) -> StrId) -> Self {
        ConstructKey {
            file: self.file.map(&mut f),
            func: self.func.map(&mut f),
            ..self
        }
    }
}

/// A variable as the builder identifies it: by name when the runtime gave one, else by host range.
/// A heap block's name comes with its allocation call site (0 for other memory): two blocks the
/// source names alike (a template's `u_` for `float` and for `double`) are two arrays.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum VarId {
    Name(StrId, u64),
    Host { ptr: u64, bytes: u64 },
    Unknown,
}

#[derive(Clone, Copy, Debug)]
struct Leaf {
    kind: ChildKind,
    r: EventRef,
    line: Option<i64>,
    bytes: Option<u64>,
    host_ptr: Option<u64>,
    var: VarId,
    kernel: Option<StrId>,
    gangs: Option<u64>,
    workers: Option<u64>,
    vector: Option<u64>,
    is_async: bool,
    /// Share of the enclosing data operation's non-transfer time (for alloc/free/create/delete).
    overhead_ns: u64,
    /// The host measured this operation (`r` spans the runtime's callbacks). False for an
    /// operation known only from a device record.
    host_timed: bool,
    /// The device's time for it, when it came from a device record.
    device_ns: Option<u64>,
    /// For an allocation or free the program called the runtime API for (`acc_malloc`): the
    /// call's file and function (its line is `line`).
    api_call: Option<(Option<StrId>, Option<StrId>)>,
    /// The hash of the host bytes a transfer moved, when the tool hashed them.
    content: Option<u64>,
    /// The device address of an allocation or free.
    device_ptr: Option<u64>,
}

impl Leaf {
    fn dur(&self) -> u64 {
        self.r.end_ns.saturating_sub(self.r.start_ns)
    }
    /// The duration the tables prefer: the device's when known.
    fn best_ns(&self) -> u64 {
        self.device_ns.unwrap_or_else(|| self.dur())
    }
    /// Adds this operation's times to a row's host and device timings.
    fn add_times(&self, host: &mut Timing, dev: &mut Timing) {
        if self.host_timed {
            host.add(self.dur());
        }
        if let Some(d) = self.device_ns {
            dev.add(d);
        }
    }
    fn is_transfer(&self) -> bool {
        matches!(self.kind, ChildKind::Upload | ChildKind::Download)
    }
}

#[derive(Debug)]
enum Item {
    /// An operation waiting for its construct.
    Leaf(Leaf),
    /// An implicit data operation of a compute construct, with what it contained.
    Group {
        start: u64,
        end: u64,
        leaves: Vec<Leaf>,
    },
    /// A construct already accounted for (or several consecutive ones merged). `construct` is the
    /// latest one, to which events inside it that arrive later (start-ordered traces) belong.
    Closed {
        start: u64,
        end: u64,
        construct: Option<u32>,
        resolved: bool,
    },
}

impl Item {
    fn span(&self) -> (u64, u64) {
        match self {
            Item::Leaf(l) => (l.r.start_ns, l.r.end_ns),
            Item::Group { start, end, .. } | Item::Closed { start, end, .. } => (*start, *end),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct LastTransfer {
    dir: Direction,
    construct: Option<u32>,
    instance: u64,
    var_index: u32,
    r: EventRef,
    best_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct SliceRun {
    construct: Option<u32>,
    dir: Direction,
    next_ptr: u64,
    count: u64,
    bytes: u64,
    time: Timing,
    first: EventRef,
    last: EventRef,
    array: VarId,
    /// The first few names the run's transfers carried: adjacent transfers of different
    /// variables (`c1`, `c2`) are neighbouring objects, not slices of one array.
    names: [Option<StrId>; SLICE_NAMES_KEPT],
}

/// Where the program called the runtime API for an allocation: file, function, line and the
/// pointer it stored the block in.
type ApiCall = (Option<StrId>, Option<StrId>, Option<i64>, Option<StrId>);

/// How many of a run's names [`SliceRun`] keeps.
const SLICE_NAMES_KEPT: usize = 8;

/// A construct instance on a thread, kept (in device mode) to tie device records to it.
#[derive(Clone, Copy, Debug)]
struct ConstructSpan {
    start: u64,
    end: u64,
    /// The construct's event (the issuer rule accepts any construct).
    kind: acc_event_t,
    construct: u32,
    instance: u64,
}

/// Where a host-reported transfer or launch was accounted, so that a device record of the same
/// operation adds its device time to the same rows instead of counting the operation again.
#[derive(Clone, Copy, Debug)]
struct OpSpan {
    start: u64,
    end: u64,
    kind: ChildKind,
    construct: Option<u32>,
    child: Option<u32>,
    kernel: Option<u32>,
    /// The launched kernel's name as the runtime reported it (launches only).
    kernel_name: Option<StrId>,
    variable: Option<u32>,
    site: Option<u32>,
}

/// A device record waiting for the end of the stream (it arrives after the constructs that
/// issued it: CUPTI delivers its buffers late).
#[derive(Clone, Copy, Debug)]
struct DeviceRecord {
    thread: i64,
    /// When the host thread issued the driver call.
    host_ns: u64,
    /// Whether the trace says which call issued it (thread and time); else `host_ns` is the
    /// device start (and `thread` the record's, or -1) until its launch is found by kernel
    /// name (the timeline's by-name rule, see `kernel_names`).
    issued: bool,
    /// A kernel record without its call, waiting for the launch of its kernel (by name, see
    /// `kernel_names`).
    name_pending: bool,
    /// CUPTI's correlation id: issue order across the process.
    correlation: Option<u64>,
    kind: DeviceOp,
    r: EventRef,
    bytes: Option<u64>,
    host_ptr: Option<u64>,
    var: Option<StrId>,
    /// The heap block's allocation call site, if any.
    alloc_site: u64,
    kernel: Option<StrId>,
}

/// Device time per row, kept beside the host time until the end, when the row's `time` becomes
/// the device's where it has any.
#[derive(Debug)]
struct DeviceTotals {
    kernels: Timing,
    uploads: Timing,
    downloads: Timing,
    upload_bytes: u64,
    download_bytes: u64,
}

impl Default for DeviceTotals {
    fn default() -> Self {
        Self {
            kernels: Timing::device(),
            uploads: Timing::device(),
            downloads: Timing::device(),
            upload_bytes: 0,
            download_bytes: 0,
        }
    }
}

#[derive(Default, Debug)]
struct ThreadState {
    /// Device mode only: construct instances and host-reported operations, by time (those
    /// that no device record to come should need are dropped, see `device_records`).
    construct_spans: Vec<ConstructSpan>,
    op_spans: Vec<OpSpan>,
    /// The thread recorded OpenACC events (device mode): a device record it issued is its
    /// own, not a runtime helper thread's (the issuer rule's test).
    reports_events: bool,
    /// A deque so that flushing the oldest entries (see [`MAX_PENDING`]) moves nothing.
    stack: VecDeque<Item>,
    /// Host time covered by the events at the bottom of the stack (not inside another event).
    covered_ns: u64,
    last_transfer: HashMap<VarId, LastTransfer>,
    run: Option<SliceRun>,
    instance: u64,
    /// The start of the latest operation accounted outside any construct because the stack
    /// grew past its share (see [`MAX_PENDING`]).
    flushed_last_start: Option<u64>,
}

#[derive(Debug)]
struct ConstructAcc {
    key: ConstructKey,
    c: Construct,
    children: HashMap<(ChildKind, Option<i64>, Option<StrId>), usize>,
    /// Device time of each child, by the child's index.
    device: Vec<Timing>,
}

/// An allocation site's key: host array, bytes, and the line of the program's own
/// `acc_malloc` (None for the runtime's allocations).
type AllocKey = (Option<u64>, Option<u64>, Option<i64>);

/// Builds a [`Profile`] from events fed one at a time.
///
/// ```
/// # use accprof_analysis::ProfileBuilder;
/// # use accprof_trace::{Event, StringTable};
/// let mut b = ProfileBuilder::new();
/// // for each event `ev` of the trace, in file order: b.feed(&ev);
/// let profile = b.finish(&StringTable::default());
/// assert!(profile.is_empty());
/// ```
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    /// The trace holds device records: keep construct and operation spans to tie them to.
    device_mode: bool,
    /// When the trace started (its header), to tell device records with impossible times.
    trace_start_ns: Option<u64>,
    /// Device records with impossible times, left out of everything: (count, the first's
    /// kind and correlation id).
    impossible_records: (u64, Option<(acc_event_t, Option<u64>)>),
    /// CUPTI recorded this run: device records from CUDA events (ACCPROF_CUDA_EVENTS=on beside
    /// CUPTI, a comparison mode) time the same work again and are set aside, counted here.
    cuda_event_records_set_aside: u64,
    prefer_cupti: bool,
    device_records: Vec<DeviceRecord>,
    device_totals: DeviceTotals,
    kernel_device: Vec<Timing>,
    variable_device: Vec<Timing>,
    /// Per variable: what the hashes of its transfers' bytes showed.
    variable_content: Vec<ContentStats>,
    /// Per host range: the hash of the bytes the device last received or gave back.
    device_held: HashMap<(u64, u64), u64>,
    /// Per host range seen: whether its first use's download is still to come (it began with
    /// an upload).
    first_use_open: HashMap<(u64, u64), bool>,
    site_device: Vec<Timing>,
    index: u64,
    threads: HashMap<i64, ThreadState>,
    constructs: Vec<ConstructAcc>,
    construct_index: HashMap<ConstructKey, u32>,
    kernels: Vec<(Option<StrId>, Option<u32>, Kernel)>,
    kernel_index: HashMap<(Option<StrId>, Option<u32>), usize>,
    variables: Vec<(VarId, Variable)>,
    variable_index: HashMap<(VarId, Direction), u32>,
    sites: Vec<TransferSite>,
    site_index: HashMap<(Option<u32>, u32), usize>,
    roundtrips: Vec<Roundtrip>,
    roundtrip_index: HashMap<(u32, Option<u32>, Option<u32>), usize>,
    slices: Vec<(VarId, SliceRuns)>,
    /// Per entry of `allocs`: the runtime API call (file, function, line, pointer) of an
    /// allocation the program made itself (`acc_malloc`).
    alloc_calls: Vec<Option<ApiCall>>,
    /// Per entry of `slices`: names its runs' transfers carried (a few).
    slice_names: Vec<Vec<StrId>>,
    slice_index: HashMap<(Option<u32>, Direction, VarId), usize>,
    /// Slice runs left open by device records, closed at the end.
    close_run_later: Vec<SliceRun>,
    allocs: Vec<AllocSite>,
    /// By host array, size and, for the program's own allocations (`acc_malloc`), the line of
    /// the call: two `acc_malloc`s of one size at two lines are two arrays.
    alloc_index: HashMap<AllocKey, usize>,
    /// Per device block the program allocated itself: the line of its `acc_malloc`, which its
    /// `acc_free` (at a line of its own) releases.
    api_alloc_line: HashMap<u64, Option<i64>>,
    summary: Summary,
    /// Constructs that enclosed operations already accounted outside any construct (see
    /// [`MAX_PENDING`]).
    late_enclosing: u64,
    device_memory: device_memory::DeviceMemoryTracker,
    device_gaps: device_gaps::GapFinder,
    /// Launch geometry from kernel records, by kernel name (`geometry`).
    launch_geometry: HashMap<StrId, LaunchGeometry>,
    /// Device properties events: device ordinal and the text of its limits.
    device_properties: Vec<(i64, StrId)>,
    device_rounds: device_records::DeviceRounds,
    /// The last thread noted as recording events (see `note_reporting`).
    last_reporting: Option<i64>,
    kernel_names: kernel_names::KernelNames,
    /// The program's NVTX ranges and what happened inside them.
    nvtx: nvtx::NvtxRanges,
}

impl ProfileBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for a trace that holds device records (its header has a `device_activity`
    /// key): it keeps, per thread, the time spans of construct instances and of the transfers
    /// and launches the runtime reported, so that each device record can be tied to the
    /// construct open on its issuing thread when it was issued. Costs memory per construct
    /// instance, so traces without device records do without.
    pub fn with_device_records() -> Self {
        Self {
            device_mode: true,
            ..Self::default()
        }
    }

    /// Times no device record can have: zero (CUPTI left a record's timestamps unset), an end
    /// before its start, or a start long before the trace began. Counting one would put work at
    /// the epoch of the clock and stretch every total that spans it.
    fn impossible_times(&self, ev: &Event) -> bool {
        const SLACK_NS: u64 = 1_000_000_000;
        ev.start_ns == 0
            || ev.end_ns == 0
            || ev.end_ns < ev.start_ns
            || self
                .trace_start_ns
                .is_some_and(|t| ev.start_ns.saturating_add(SLACK_NS) < t)
    }

    /// Tells the builder when the trace started (its header's `start_monotonic_ns`).
    pub fn started_at(mut self, start_monotonic_ns: u64) -> Self {
        self.trace_start_ns = (start_monotonic_ns > 0).then_some(start_monotonic_ns);
        self
    }

    /// Like [`with_device_records`](Self::with_device_records), for a trace where CUPTI recorded
    /// the device: its records are kept and those from CUDA events, which time the same work
    /// less exactly, are left out so nothing is counted twice.
    pub fn with_cupti_records() -> Self {
        Self {
            device_mode: true,
            prefer_cupti: true,
            ..Self::default()
        }
    }

    /// Ties device records to their constructs every `records` records (twice that many wait
    /// at most, unless they wait for a construct still open) instead of the default's 32768:
    /// for tests that check the rounds give what one pass at the end would.
    pub fn device_round(mut self, records: usize) -> Self {
        self.device_rounds.size = Some(records);
        self
    }

    /// Events fed so far.
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Takes the next event of the trace, in file order.
    pub fn feed(&mut self, ev: &Event) {
        let r = EventRef {
            index: self.index,
            start_ns: ev.start_ns,
            end_ns: ev.end_ns.max(ev.start_ns),
        };
        self.index += 1;
        if self.device_mode && !device::is_device_record(ev.kind) {
            self.note_reporting(ev);
        }
        // The program's own annotations: not OpenACC activity (the summary's span and counts
        // stay the OpenACC events'), but kept for the table of NVTX ranges.
        if accprof_trace::nvtx::is_nvtx(ev.kind) {
            self.nvtx.feed(ev);
            return;
        }
        if device::is_device_record(ev.kind) && self.impossible_times(ev) {
            let (n, first) = &mut self.impossible_records;
            *n += 1;
            first.get_or_insert((ev.kind, ev.get(Field::CorrelationId)));
            return;
        }
        let s = &mut self.summary;
        if s.events == 0 || r.start_ns < s.first_ns {
            s.first_ns = r.start_ns;
        }
        s.last_ns = s.last_ns.max(r.end_ns);
        s.events += 1;
        let thread = ev.thread().unwrap_or(-1);
        self.device_memory.feed(ev, r);
        self.nvtx.feed(ev);
        if ev.kind == device::PROPERTIES {
            self.note_device_properties(ev);
            return;
        }
        if device::is_device_record(ev.kind) {
            if self.prefer_cupti
                && ev
                    .flags()
                    .contains(accprof_trace::EventFlags::FROM_CUDA_EVENTS)
            {
                self.cuda_event_records_set_aside += 1;
                return;
            }
            self.note_launch_geometry(ev);
            self.feed_device_record(ev, thread, r);
            return;
        }
        match EventClass::of(ev) {
            EventClass::Other => {}
            EventClass::Operation(kind) => {
                let leaf = self.leaf(ev, kind, r);
                self.push_leaf(thread, leaf);
            }
            EventClass::ImplicitData => self.push_group(thread, r),
            EventClass::Construct(kind) => self.push_construct(thread, ev, kind, r),
        }
    }

    /// Notes that the thread of `ev` (not a device record) recorded events: the issuer rule
    /// tells a program's thread from a runtime's helper thread by that, as the layout does
    /// (every event but an NVTX name counts).
    fn note_reporting(&mut self, ev: &Event) {
        let Some(t) = ev.thread() else { return };
        if self.last_reporting == Some(t) || accprof_trace::nvtx::is_name(ev.kind) {
            return;
        }
        self.last_reporting = Some(t);
        self.threads.entry(t).or_default().reports_events = true;
    }

    fn leaf(&self, ev: &Event, kind: ChildKind, r: EventRef) -> Leaf {
        let bytes = ev
            .bytes()
            .filter(|_| !ev.flags().contains(EventFlags::BYTES_UNKNOWN));
        let host_ptr = ev.get(Field::HostPtr);
        let var = match (ev.var_name(), host_ptr) {
            (Some(n), _) => VarId::Name(n, ev.get(Field::AllocSite).unwrap_or(0)),
            (None, Some(p)) => VarId::Host {
                ptr: p,
                bytes: bytes.unwrap_or(0),
            },
            (None, None) => VarId::Unknown,
        };
        Leaf {
            kind,
            r,
            line: ev.line_no(),
            bytes,
            host_ptr,
            var,
            kernel: ev.kernel_name(),
            gangs: ev.get(Field::NumGangs),
            workers: ev.get(Field::NumWorkers),
            vector: ev.get(Field::VectorLength),
            is_async: is_async(ev),
            overhead_ns: 0,
            host_timed: true,
            device_ns: None,
            content: ev.get(Field::ContentHash),
            device_ptr: ev.get(Field::DevicePtr),
            api_call: (matches!(kind, ChildKind::Alloc | ChildKind::Free)
                && ev.get_i64(Field::ParentConstruct)
                    == Some(i64::from(acc_construct_t::RUNTIME_API.0)))
            .then(|| (ev.src_file(), ev.func_name())),
        }
    }

    /// Accounts leaves (in time order) to construct `c` (instance `inst` on `thread`).
    fn resolve(
        &mut self,
        thread: i64,
        c: Option<u32>,
        inst: u64,
        leaves: impl IntoIterator<Item = Leaf>,
    ) {
        for leaf in leaves {
            self.resolve_leaf(thread, c, inst, &leaf);
        }
    }

    /// Accounts one leaf to construct `c` (instance `inst` on `thread`).
    fn resolve_leaf(&mut self, thread: i64, c: Option<u32>, inst: u64, leaf: &Leaf) {
        {
            let child = self.account_child(c, leaf);
            let (mut kernel, mut variable, mut site) = (None, None, None);
            match leaf.kind {
                ChildKind::Upload | ChildKind::Download => {
                    let (v, s) = self.account_transfer(thread, c, inst, leaf);
                    (variable, site) = (Some(v), Some(s));
                }
                ChildKind::Launch => kernel = Some(self.account_launch(c, leaf)),
                ChildKind::Wait => self.summary.waits.add(leaf.dur()),
                ChildKind::Alloc | ChildKind::Create => self.account_alloc(c, leaf, true),
                ChildKind::Free | ChildKind::Delete => self.account_alloc(c, leaf, false),
            }
            if self.device_mode
                && leaf.host_timed
                && matches!(
                    leaf.kind,
                    ChildKind::Upload | ChildKind::Download | ChildKind::Launch
                )
            {
                let span = OpSpan {
                    start: leaf.r.start_ns,
                    end: leaf.r.end_ns,
                    kind: leaf.kind,
                    construct: c,
                    child,
                    kernel,
                    kernel_name: leaf.kernel,
                    variable,
                    site,
                };
                let ts = self.threads.entry(thread).or_default();
                ts.op_spans.push(span);
                if let Some(n) = self.kernel_names.of(leaf.kernel) {
                    if leaf.kind == ChildKind::Launch {
                        let l = (leaf.r.start_ns, leaf.r.end_ns, thread);
                        self.kernel_names.launches.add_launch(n, l);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: acc_event_t, start: u64, thread: i64) -> Event {
        let mut e = Event::new(kind, start);
        e.end_ns = start + 10;
        e.set_i64(Field::Thread, thread);
        e.set(Field::Bytes, 64);
        e.set(Field::HostPtr, 0x1000);
        e
    }

    #[test]
    fn operations_outside_constructs_are_counted_in_bounded_memory() {
        let mut b = ProfileBuilder::new();
        let n = 10 * MAX_PENDING as u64;
        for i in 0..n {
            for thread in 1..=3 {
                b.feed(&op(
                    acc_event_t::ENQUEUE_UPLOAD_START,
                    i * 100 + thread as u64 * 20,
                    thread,
                ));
            }
            let longest = b.threads.values().map(|t| t.stack.len()).max().unwrap_or(0);
            assert!(longest <= MAX_PENDING, "a stack holds {longest} entries");
        }
        let p = b.finish(&StringTable::default());
        assert_eq!(p.summary.uploads.count, 3 * n);
        assert_eq!(p.summary.upload_bytes, 3 * n * 64);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn a_construct_enclosing_flushed_operations_is_said() {
        let mut b = ProfileBuilder::new();
        let n = 2 * MAX_PENDING as u64;
        for i in 0..n {
            b.feed(&op(acc_event_t::ENQUEUE_UPLOAD_START, 1_000 + i * 100, 1));
        }
        let mut region = Event::new(acc_event_t::ENTER_DATA_START, 0);
        region.end_ns = 1_000 + n * 100;
        region.set_i64(Field::Thread, 1);
        region.set_i64(Field::ParentConstruct, i64::from(acc_construct_t::DATA.0));
        b.feed(&region);
        let p = b.finish(&StringTable::default());
        assert_eq!(p.summary.uploads.count, n, "every upload is counted once");
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("counted outside any construct")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn many_threads_share_one_budget() {
        let mut b = ProfileBuilder::new();
        let threads = 128;
        for i in 0..2_000u64 {
            for thread in 0..threads {
                b.feed(&op(
                    acc_event_t::ENQUEUE_LAUNCH_START,
                    i * 1_000 + thread as u64,
                    thread,
                ));
            }
        }
        let held: usize = b.threads.values().map(|t| t.stack.len()).sum();
        assert!(
            held <= PENDING_BUDGET,
            "{held} entries held by {threads} threads"
        );
        let p = b.finish(&StringTable::default());
        assert_eq!(p.summary.kernels.count, 2_000 * threads as u64);
    }
}
