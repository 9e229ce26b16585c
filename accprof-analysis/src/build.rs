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

use crate::model::*;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::{is_async, DeviceOp};
use accprof_trace::{device, Event, EventFlags, Field, StrId, StringTable};
use std::collections::{HashMap as StdHashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher (the Fx hash of rustc): the builder does several map lookups per
/// event on small integer keys, where SipHash's DoS resistance buys nothing and costs a third of
/// the time.
#[derive(Default, Clone, Copy, Debug)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut v = [0u8; 8];
            v[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(v));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Stack entries a thread keeps waiting for an enclosing construct. Past this, the oldest half is
/// accounted as outside any construct, so that memory does not grow with a run of operations no
/// construct encloses (runtime API calls from a library, on many threads). A construct that
/// arrives later and would have enclosed them is counted and warned about.
const MAX_PENDING: usize = 4096;

/// Transfers smaller than this are not counted as slices of an array.
const SLICE_MIN_RUN: u64 = 8;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct ConstructKey {
    kind: ConstructKind,
    ctype: Option<i64>,
    file: Option<StrId>,
    func: Option<StrId>,
    line: Option<i64>,
    dev_type: Option<i64>,
    dev_num: Option<i64>,
}

/// A variable as the builder identifies it: by name when the runtime gave one, else by host range.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum VarId {
    Name(StrId),
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
    Group { start: u64, end: u64, leaves: Vec<Leaf> },
    /// A construct already accounted for (or several consecutive ones merged). `construct` is the
    /// latest one, to which events inside it that arrive later (start-ordered traces) belong.
    Closed { start: u64, end: u64, construct: Option<u32>, resolved: bool },
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
}

/// A construct instance on a thread, kept (in device mode) to tie device records to it.
#[derive(Clone, Copy, Debug)]
struct ConstructSpan {
    start: u64,
    end: u64,
    construct: u32,
    instance: u64,
    /// Index of the innermost span enclosing this one (set once spans are sorted).
    parent: Option<u32>,
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
    /// Whether the trace says which call issued it (thread and time); else `thread` is -1 and
    /// `host_ns` the device start until [`match_kernels_by_name`] finds its launch.
    issued: bool,
    /// CUPTI's correlation id: issue order across the process.
    correlation: Option<u64>,
    kind: DeviceOp,
    r: EventRef,
    bytes: Option<u64>,
    host_ptr: Option<u64>,
    var: Option<StrId>,
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
        Self { kernels: Timing::device(), uploads: Timing::device(), downloads: Timing::device(), upload_bytes: 0, download_bytes: 0 }
    }
}

#[derive(Default, Debug)]
struct ThreadState {
    /// Device mode only: construct instances and host-reported operations, by time.
    construct_spans: Vec<ConstructSpan>,
    op_spans: Vec<OpSpan>,
    /// A deque so that flushing the oldest entries (see [`MAX_PENDING`]) moves nothing.
    stack: VecDeque<Item>,
    /// Host time covered by the events at the bottom of the stack (not inside another event).
    covered_ns: u64,
    last_transfer: HashMap<VarId, LastTransfer>,
    run: Option<SliceRun>,
    instance: u64,
    /// The start of the latest operation accounted outside any construct because the stack
    /// grew past [`MAX_PENDING`].
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
    /// CUPTI recorded this run: device records from CUDA events (ACCPROF_CUDA_EVENTS=on beside
    /// CUPTI, a comparison mode) time the same work again and are set aside, counted here.
    cuda_event_records_set_aside: u64,
    prefer_cupti: bool,
    device_records: Vec<DeviceRecord>,
    device_totals: DeviceTotals,
    kernel_device: Vec<Timing>,
    variable_device: Vec<Timing>,
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
    slice_index: HashMap<(Option<u32>, Direction, VarId), usize>,
    /// Slice runs left open by device records, closed at the end.
    close_run_later: Vec<SliceRun>,
    allocs: Vec<AllocSite>,
    alloc_index: HashMap<(Option<u64>, Option<u64>), usize>,
    summary: Summary,
    /// Constructs that enclosed operations already accounted outside any construct (see
    /// [`MAX_PENDING`]).
    late_enclosing: u64,
}

fn is_compute_parent(p: Option<i64>) -> bool {
    matches!(p.map(|v| acc_construct_t(v as i32)), Some(acc_construct_t::PARALLEL | acc_construct_t::KERNELS | acc_construct_t::LOOP | acc_construct_t::SERIAL))
}

enum Class {
    Leaf(ChildKind),
    Group,
    Construct(ConstructKind),
    Ignore,
}

fn classify(ev: &Event) -> Class {
    let parent = ev.get_i64(Field::ParentConstruct);
    match ev.kind {
        acc_event_t::ENQUEUE_UPLOAD_START => Class::Leaf(ChildKind::Upload),
        acc_event_t::ENQUEUE_DOWNLOAD_START => Class::Leaf(ChildKind::Download),
        acc_event_t::ENQUEUE_LAUNCH_START => Class::Leaf(ChildKind::Launch),
        acc_event_t::ALLOC => Class::Leaf(ChildKind::Alloc),
        acc_event_t::FREE => Class::Leaf(ChildKind::Free),
        acc_event_t::CREATE => Class::Leaf(ChildKind::Create),
        acc_event_t::DELETE => Class::Leaf(ChildKind::Delete),
        acc_event_t::WAIT_START => match parent.map(|v| acc_construct_t(v as i32)) {
            Some(acc_construct_t::WAIT | acc_construct_t::RUNTIME_API) => Class::Construct(ConstructKind::Wait),
            _ => Class::Leaf(ChildKind::Wait),
        },
        acc_event_t::ENTER_DATA_START | acc_event_t::EXIT_DATA_START => {
            let enter = ev.kind == acc_event_t::ENTER_DATA_START;
            match parent.map(|v| acc_construct_t(v as i32)) {
                Some(acc_construct_t::DATA) => Class::Construct(ConstructKind::Data),
                Some(acc_construct_t::RUNTIME_API) => Class::Construct(ConstructKind::RuntimeApi),
                _ if is_compute_parent(parent) => Class::Group,
                None if ev.implicit() => Class::Group,
                _ if enter => Class::Construct(ConstructKind::EnterData),
                _ => Class::Construct(ConstructKind::ExitData),
            }
        }
        acc_event_t::UPDATE_START => Class::Construct(ConstructKind::Update),
        acc_event_t::COMPUTE_CONSTRUCT_START => Class::Construct(ConstructKind::Compute),
        acc_event_t::DEVICE_INIT_START => Class::Construct(ConstructKind::Init),
        _ => Class::Ignore,
    }
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
        Self { device_mode: true, ..Self::default() }
    }

    /// Like [`with_device_records`](Self::with_device_records), for a trace where CUPTI recorded
    /// the device: its records are kept and those from CUDA events, which time the same work
    /// less exactly, are left out so nothing is counted twice.
    pub fn with_cupti_records() -> Self {
        Self { device_mode: true, prefer_cupti: true, ..Self::default() }
    }

    /// Events fed so far.
    pub fn events_seen(&self) -> u64 {
        self.index
    }

    /// Takes the next event of the trace, in file order.
    pub fn feed(&mut self, ev: &Event) {
        let r = EventRef { index: self.index, start_ns: ev.start_ns, end_ns: ev.end_ns.max(ev.start_ns) };
        self.index += 1;
        let s = &mut self.summary;
        if s.events == 0 || r.start_ns < s.first_ns {
            s.first_ns = r.start_ns;
        }
        s.last_ns = s.last_ns.max(r.end_ns);
        s.events += 1;
        let thread = ev.thread().unwrap_or(-1);
        if device::is_device_record(ev.kind) {
            if self.prefer_cupti && ev.flags().contains(accprof_trace::EventFlags::FROM_CUDA_EVENTS) {
                self.cuda_event_records_set_aside += 1;
                return;
            }
            self.feed_device_record(ev, thread, r);
            return;
        }
        match classify(ev) {
            Class::Ignore => {}
            Class::Leaf(kind) => {
                let leaf = self.leaf(ev, kind, r);
                self.push_leaf(thread, leaf);
            }
            Class::Group => self.push_group(thread, r),
            Class::Construct(kind) => self.push_construct(thread, ev, kind, r),
        }
    }

    fn leaf(&self, ev: &Event, kind: ChildKind, r: EventRef) -> Leaf {
        let bytes = ev.bytes().filter(|_| !ev.flags().contains(EventFlags::BYTES_UNKNOWN));
        let host_ptr = ev.get(Field::HostPtr);
        let var = match (ev.var_name(), host_ptr) {
            (Some(n), _) => VarId::Name(n),
            (None, Some(p)) => VarId::Host { ptr: p, bytes: bytes.unwrap_or(0) },
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
        }
    }

    fn feed_device_record(&mut self, ev: &Event, thread: i64, r: EventRef) {
        let Some(kind) = DeviceOp::of(ev) else { return };
        self.summary.device_records += 1;
        self.device_records.push(DeviceRecord {
            thread,
            host_ns: ev.get(Field::HostCallNs).unwrap_or(r.start_ns),
            issued: ev.get(Field::HostCallNs).is_some(),
            correlation: ev.get(Field::CorrelationId),
            kind,
            r,
            bytes: ev.bytes(),
            host_ptr: ev.get(Field::HostPtr),
            var: ev.var_name(),
            kernel: ev.kernel_name(),
        });
    }

    fn push_leaf(&mut self, thread: i64, leaf: Leaf) {
        let ts = self.threads.entry(thread).or_default();
        // Start-ordered traces: the leaf lies inside the construct on top of the stack.
        if let Some(Item::Closed { start, end, construct, resolved: true }) = ts.stack.back() {
            if *start <= leaf.r.start_ns && leaf.r.end_ns <= *end {
                let (c, inst) = (*construct, ts.instance);
                self.resolve(thread, c, inst, vec![leaf]);
                return;
            }
        }
        if let Some(Item::Group { start, end, leaves }) = ts.stack.back_mut() {
            if *start <= leaf.r.start_ns && leaf.r.end_ns <= *end {
                leaves.push(leaf);
                return;
            }
        }
        ts.covered_ns += leaf.dur();
        ts.stack.push_back(Item::Leaf(leaf));
        if ts.stack.len() > MAX_PENDING {
            self.flush_pending(thread);
        }
    }

    /// Accounts the older half of `thread`'s stack as outside any construct (see
    /// [`MAX_PENDING`]).
    fn flush_pending(&mut self, thread: i64) {
        let ts = self.threads.entry(thread).or_default();
        let mut stack = std::mem::take(&mut ts.stack);
        let mut last_start = None;
        for item in stack.drain(..MAX_PENDING / 2) {
            match &item {
                Item::Leaf(l) => {
                    last_start = Some(l.r.start_ns);
                    self.resolve_leaf(thread, None, u64::MAX, l);
                }
                Item::Group { leaves, .. } => {
                    for l in leaves {
                        last_start = Some(l.r.start_ns);
                        self.resolve_leaf(thread, None, u64::MAX, l);
                    }
                }
                Item::Closed { .. } => {}
            }
        }
        let ts = self.threads.entry(thread).or_default();
        ts.stack = stack;
        if last_start.is_some() {
            ts.flushed_last_start = last_start;
        }
    }

    /// Notes a construct or implicit data region that encloses operations already flushed.
    fn check_late_enclosing(&mut self, thread: i64, r: EventRef) {
        let flushed = self.threads.get(&thread).and_then(|ts| ts.flushed_last_start);
        if flushed.is_some_and(|f| r.start_ns <= f) {
            self.late_enclosing += 1;
        }
    }

    /// Pops the stack entries inside `[start, end]`, returning their leaves in time order and the
    /// time they covered.
    fn pop_inside(ts: &mut ThreadState, start: u64, end: u64) -> (Vec<Leaf>, u64) {
        let mut leaves = Vec::new();
        let mut covered = 0;
        while let Some(top) = ts.stack.back() {
            let (s, e) = top.span();
            if s < start || e > end {
                break;
            }
            covered += e - s;
            match ts.stack.pop_back() {
                Some(Item::Leaf(l)) => leaves.push(l),
                Some(Item::Group { leaves: g, .. }) => leaves.extend(g.into_iter().rev()),
                _ => {}
            }
        }
        leaves.reverse();
        (leaves, covered)
    }

    fn push_group(&mut self, thread: i64, r: EventRef) {
        self.check_late_enclosing(thread, r);
        let ts = self.threads.entry(thread).or_default();
        let (mut leaves, covered) = Self::pop_inside(ts, r.start_ns, r.end_ns);
        share_overhead(&mut leaves, r.end_ns - r.start_ns);
        // Start-ordered: the group lies inside the construct on top; its leaves come later.
        if let Some(Item::Closed { start, end, resolved: true, .. }) = ts.stack.back() {
            if *start <= r.start_ns && r.end_ns <= *end {
                if !leaves.is_empty() {
                    let (c, inst) = match ts.stack.back() {
                        Some(Item::Closed { construct, .. }) => (*construct, ts.instance),
                        _ => (None, ts.instance),
                    };
                    self.resolve(thread, c, inst, leaves);
                }
                return;
            }
        }
        ts.covered_ns = ts.covered_ns - covered + (r.end_ns - r.start_ns);
        ts.stack.push_back(Item::Group { start: r.start_ns, end: r.end_ns, leaves });
        if ts.stack.len() > MAX_PENDING {
            self.flush_pending(thread);
        }
    }

    fn push_construct(&mut self, thread: i64, ev: &Event, kind: ConstructKind, r: EventRef) {
        self.check_late_enclosing(thread, r);
        let cid = self.construct_id(ev, kind);
        let dur = r.end_ns - r.start_ns;
        {
            let acc = &mut self.constructs[cid as usize];
            let c = &mut acc.c;
            let exit_of_data_region = kind == ConstructKind::Data && ev.kind == acc_event_t::EXIT_DATA_START;
            if !exit_of_data_region {
                c.reached += 1;
            }
            c.time.add(dur);
            if is_async(ev) {
                c.async_count += 1;
            }
            if c.time.count == 1 {
                c.first_ns = r.start_ns;
            }
            c.first_ns = c.first_ns.min(r.start_ns);
            c.last_ns = c.last_ns.max(r.end_ns);
            if let Some(e) = ev.get_i64(Field::EndLineNo) {
                let cur = c.location.end_line.get_or_insert(e);
                *cur = (*cur).max(e);
            }
            push_sample(&mut c.samples, r);
        }
        match kind {
            ConstructKind::Compute => self.summary.compute.add(dur),
            ConstructKind::Init => self.summary.device_init.add(dur),
            ConstructKind::Wait => self.summary.waits.add(dur),
            ConstructKind::Data
            | ConstructKind::EnterData
            | ConstructKind::ExitData
            | ConstructKind::Update
            | ConstructKind::RuntimeApi => self.summary.data_constructs.add(dur),
        }
        let ts = self.threads.entry(thread).or_default();
        ts.instance += 1;
        let inst = ts.instance;
        if self.device_mode {
            ts.construct_spans.push(ConstructSpan { start: r.start_ns, end: r.end_ns, construct: cid, instance: inst, parent: None });
        }
        let (mut leaves, covered) = Self::pop_inside(ts, r.start_ns, r.end_ns);
        let inside_open = matches!(ts.stack.back(), Some(Item::Closed { start, end, resolved: true, .. }) if *start <= r.start_ns && r.end_ns <= *end);
        if !inside_open {
            ts.covered_ns = ts.covered_ns - covered + dur;
            match ts.stack.back_mut() {
                // Merge with the previous top-level construct: keeps the stack short over a long
                // run while no event encloses both.
                Some(Item::Closed { end, construct, resolved, .. }) if *end <= r.start_ns && !matches!(kind, ConstructKind::Init) => {
                    *end = r.end_ns;
                    *construct = Some(cid);
                    *resolved = true;
                }
                _ => ts.stack.push_back(Item::Closed { start: r.start_ns, end: r.end_ns, construct: Some(cid), resolved: true }),
            }
        }
        if kind != ConstructKind::Compute {
            share_overhead(&mut leaves, dur);
        }
        if !leaves.is_empty() {
            self.resolve(thread, Some(cid), inst, leaves);
        }
    }

    fn construct_id(&mut self, ev: &Event, kind: ConstructKind) -> u32 {
        let key = ConstructKey {
            kind,
            ctype: ev.get_i64(Field::ParentConstruct),
            file: ev.src_file(),
            func: ev.func_name(),
            line: ev.line_no(),
            dev_type: ev.get_i64(Field::DeviceType),
            dev_num: ev.get_i64(Field::DeviceNumber),
        };
        if let Some(&i) = self.construct_index.get(&key) {
            return i;
        }
        let i = self.constructs.len() as u32;
        self.construct_index.insert(key, i);
        self.constructs.push(ConstructAcc {
            key,
            c: Construct {
                kind,
                construct_type: key.ctype.and_then(|v| acc_construct_t(v as i32).name()).map(|n| n.trim_start_matches("acc_construct_").to_string()),
                location: Location {
                    file: None,
                    function: None,
                    line: key.line,
                    end_line: None,
                    device_type: key.dev_type,
                    device_number: key.dev_num,
                },
                reached: 0,
                time: Timing::host(),
                async_count: 0,
                first_ns: 0,
                last_ns: 0,
                children: Vec::new(),
                samples: Vec::new(),
            },
            children: HashMap::default(),
            device: Vec::new(),
        });
        i
    }

    /// Accounts leaves (in time order) to construct `c` (instance `inst` on `thread`).
    fn resolve(&mut self, thread: i64, c: Option<u32>, inst: u64, leaves: impl IntoIterator<Item = Leaf>) {
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
            if self.device_mode && leaf.host_timed && matches!(leaf.kind, ChildKind::Upload | ChildKind::Download | ChildKind::Launch) {
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
                self.threads.entry(thread).or_default().op_spans.push(span);
            }
        }
    }

    /// Accounts `leaf` as a child of construct `c`; returns the child's index.
    fn account_child(&mut self, c: Option<u32>, leaf: &Leaf) -> Option<u32> {
        let c = c?;
        let acc = &mut self.constructs[c as usize];
        let kernel_key = if leaf.kind == ChildKind::Launch { leaf.kernel } else { None };
        let key = (leaf.kind, leaf.line, kernel_key);
        let n = acc.children.len();
        let i = *acc.children.entry(key).or_insert(n);
        if i == acc.c.children.len() {
            acc.c.children.push(ConstructChild { kind: leaf.kind, line: leaf.line, kernel: None, count: 0, bytes: 0, time: Timing::host(), host_time: Timing::host() });
            acc.device.push(Timing::device());
        }
        let ch = &mut acc.c.children[i];
        ch.count += 1;
        ch.bytes += leaf.bytes.unwrap_or(0);
        leaf.add_times(&mut ch.time, &mut acc.device[i]);
        Some(i as u32)
    }

    /// Accounts a launch to its kernel; returns the kernel's index.
    fn account_launch(&mut self, c: Option<u32>, leaf: &Leaf) -> u32 {
        let key = (leaf.kernel, if leaf.kernel.is_some() { None } else { c });
        let i = match self.kernel_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.kernels.len();
                self.kernel_index.insert(key, i);
                self.kernels.push((
                    leaf.kernel,
                    c,
                    Kernel {
                        name: String::new(),
                        construct: c.map(|c| c as usize),
                        launches: 0,
                        num_gangs: None,
                        num_workers: None,
                        vector_length: None,
                        time: Timing::host(),
                        host_time: Timing::host(),
                        async_launches: 0,
                        first_ns: leaf.r.start_ns,
                        last_ns: 0,
                        samples: Vec::new(),
                    },
                ));
                self.kernel_device.push(Timing::device());
                i
            }
        };
        let k = &mut self.kernels[i].2;
        k.launches += 1;
        leaf.add_times(&mut k.time, &mut self.kernel_device[i]);
        if let Some(g) = leaf.gangs {
            ValueRange::add(&mut k.num_gangs, g);
        }
        if let Some(w) = leaf.workers {
            ValueRange::add(&mut k.num_workers, w);
        }
        if let Some(v) = leaf.vector {
            ValueRange::add(&mut k.vector_length, v);
        }
        if leaf.is_async {
            k.async_launches += 1;
        }
        k.first_ns = k.first_ns.min(leaf.r.start_ns);
        k.last_ns = k.last_ns.max(leaf.r.end_ns);
        push_sample(&mut k.samples, leaf.r);
        leaf.add_times(&mut self.summary.kernels, &mut self.device_totals.kernels);
        if let Some(c) = c {
            let acc = &mut self.constructs[c as usize];
            if let Some(&ci) = acc.children.get(&(ChildKind::Launch, leaf.line, leaf.kernel)) {
                acc.c.children[ci].kernel = Some(i);
            }
        }
        i as u32
    }

    fn variable_index(&mut self, var: VarId, dir: Direction, host_ptr: Option<u64>) -> u32 {
        if let Some(&i) = self.variable_index.get(&(var, dir)) {
            return i;
        }
        let i = self.variables.len() as u32;
        self.variable_index.insert((var, dir), i);
        self.variables.push((
            var,
            Variable {
                name: String::new(),
                named: matches!(var, VarId::Name(_)),
                host_ptr,
                direction: dir,
                count: 0,
                bytes: 0,
                time: Timing::host(),
                host_time: Timing::host(),
                samples: Vec::new(),
            },
        ));
        self.variable_device.push(Timing::device());
        i
    }

    /// Accounts a transfer; returns the indices of its variable and transfer site.
    fn account_transfer(&mut self, thread: i64, c: Option<u32>, inst: u64, leaf: &Leaf) -> (u32, u32) {
        let dir = if leaf.kind == ChildKind::Upload { Direction::HostToDevice } else { Direction::DeviceToHost };
        let bytes = leaf.bytes.unwrap_or(0);
        let dur = leaf.best_ns();
        match dir {
            Direction::HostToDevice => {
                leaf.add_times(&mut self.summary.uploads, &mut self.device_totals.uploads);
                self.summary.upload_bytes += bytes;
            }
            Direction::DeviceToHost => {
                leaf.add_times(&mut self.summary.downloads, &mut self.device_totals.downloads);
                self.summary.download_bytes += bytes;
            }
        }
        let vi = self.variable_index(leaf.var, dir, leaf.host_ptr);
        {
            let v = &mut self.variables[vi as usize].1;
            v.count += 1;
            v.bytes += bytes;
            leaf.add_times(&mut v.time, &mut self.variable_device[vi as usize]);
            push_sample(&mut v.samples, leaf.r);
        }
        // Per construct and variable.
        let si = match self.site_index.get(&(c, vi)) {
            Some(&i) => i,
            None => {
                let i = self.sites.len();
                self.site_index.insert((c, vi), i);
                self.sites.push(TransferSite {
                    construct: c.map(|c| c as usize),
                    variable: vi as usize,
                    direction: dir,
                    count: 0,
                    bytes: 0,
                    max_bytes: 0,
                    host_ptr: leaf.host_ptr,
                    same_range: true,
                    time: Timing::host(),
                    host_time: Timing::host(),
                    first_ns: leaf.r.start_ns,
                    last_ns: 0,
                    samples: Vec::new(),
                });
                self.site_device.push(Timing::device());
                i
            }
        };
        let site = &mut self.sites[si];
        if site.count > 0 && (site.host_ptr != leaf.host_ptr || site.max_bytes != bytes) {
            site.same_range = false;
        }
        site.count += 1;
        site.bytes += bytes;
        site.max_bytes = site.max_bytes.max(bytes);
        leaf.add_times(&mut site.time, &mut self.site_device[si]);
        site.first_ns = site.first_ns.min(leaf.r.start_ns);
        site.last_ns = site.last_ns.max(leaf.r.end_ns);
        push_sample(&mut site.samples, leaf.r);

        // Copied out by one construct, copied back in by the next one that touches it.
        let range_key = match (leaf.host_ptr, leaf.var) {
            (Some(p), _) => VarId::Host { ptr: p, bytes },
            (None, v) => v,
        };
        let ts = self.threads.entry(thread).or_default();
        let prev = ts.last_transfer.insert(range_key, LastTransfer { dir, construct: c, instance: inst, var_index: vi, r: leaf.r, best_ns: dur });
        if let (Direction::HostToDevice, Some(p)) = (dir, prev) {
            if p.dir == Direction::DeviceToHost && p.instance != inst && range_key != VarId::Unknown {
                let key = (p.var_index, p.construct, c);
                let ri = match self.roundtrip_index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.roundtrips.len();
                        self.roundtrip_index.insert(key, i);
                        self.roundtrips.push(Roundtrip {
                            variable: p.var_index as usize,
                            from_construct: p.construct.map(|c| c as usize),
                            to_construct: c.map(|c| c as usize),
                            count: 0,
                            bytes: 0,
                            time_ns: 0,
                            samples: Vec::new(),
                        });
                        i
                    }
                };
                let rt = &mut self.roundtrips[ri];
                rt.count += 1;
                rt.bytes += bytes;
                rt.time_ns += dur + p.best_ns;
                push_sample(&mut rt.samples, p.r);
                push_sample(&mut rt.samples, leaf.r);
            }
        }
        self.track_slices(thread, c, dir, leaf);
        (vi, si as u32)
    }

    /// Consecutive transfers of adjacent host ranges by one construct in one direction form a
    /// run; a long run could have been one transfer of the whole array.
    fn track_slices(&mut self, thread: i64, c: Option<u32>, dir: Direction, leaf: &Leaf) {
        let bytes = leaf.bytes.unwrap_or(0);
        let array = match leaf.var {
            VarId::Name(n) => VarId::Name(n),
            _ => VarId::Unknown,
        };
        let ts = self.threads.entry(thread).or_default();
        let continues = match (&ts.run, leaf.host_ptr) {
            (Some(run), Some(p)) => {
                // Adjacent, or separated by a gap smaller than a slice (the halo columns a row
                // slice skips).
                run.construct == c && run.dir == dir && p >= run.next_ptr && p - run.next_ptr <= bytes.max(64)
            }
            _ => false,
        };
        if continues {
            let run = ts.run.as_mut().expect("checked above");
            run.count += 1;
            run.bytes += bytes;
            run.time.add(leaf.best_ns());
            run.next_ptr = leaf.host_ptr.unwrap_or(0) + bytes;
            run.last = leaf.r;
            return;
        }
        let finished = ts.run.take();
        if let Some(p) = leaf.host_ptr.filter(|_| bytes > 0) {
            let mut time = if leaf.device_ns.is_some() { Timing::device() } else { Timing::host() };
            time.add(leaf.best_ns());
            ts.run = Some(SliceRun {
                construct: c,
                dir,
                next_ptr: p + bytes,
                count: 1,
                bytes,
                time,
                first: leaf.r,
                last: leaf.r,
                array: match array {
                    VarId::Unknown => VarId::Host { ptr: p, bytes: 0 },
                    a => a,
                },
            });
        }
        if let Some(run) = finished {
            self.close_run(run);
        }
    }

    fn close_run(&mut self, run: SliceRun) {
        if run.count < SLICE_MIN_RUN {
            return;
        }
        let key = (run.construct, run.dir, run.array);
        let i = match self.slice_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.slices.len();
                self.slice_index.insert(key, i);
                self.slices.push((
                    run.array,
                    SliceRuns {
                        construct: run.construct.map(|c| c as usize),
                        direction: run.dir,
                        array: String::new(),
                        runs: 0,
                        transfers: 0,
                        bytes: 0,
                        time: Timing::host(),
                        first_ns: run.first.start_ns,
                        last_ns: 0,
                        samples: Vec::new(),
                    },
                ));
                i
            }
        };
        let s = &mut self.slices[i].1;
        s.runs += 1;
        s.transfers += run.count;
        s.bytes += run.bytes;
        s.time.merge(&run.time);
        s.first_ns = s.first_ns.min(run.first.start_ns);
        s.last_ns = s.last_ns.max(run.last.end_ns);
        push_sample(&mut s.samples, run.first);
        push_sample(&mut s.samples, run.last);
    }

    fn account_alloc(&mut self, c: Option<u32>, leaf: &Leaf, alloc: bool) {
        // By host array and size: an enter data directive allocates and an exit data directive
        // frees the same array; the site keeps the construct that allocated first.
        let key = (leaf.host_ptr, leaf.bytes);
        let i = match self.alloc_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.allocs.len();
                self.alloc_index.insert(key, i);
                self.allocs.push(AllocSite {
                    construct: c.map(|c| c as usize),
                    bytes: leaf.bytes,
                    allocs: 0,
                    frees: 0,
                    overhead_ns: 0,
                    first_ns: leaf.r.start_ns,
                    last_ns: 0,
                    samples: Vec::new(),
                });
                i
            }
        };
        let a = &mut self.allocs[i];
        if alloc && a.allocs == 0 && c.is_some() {
            a.construct = c.map(|c| c as usize);
        }
        // Alloc and create (or free and delete) both describe one allocation: count the pair
        // once, by the alloc/free event when the runtime sends it.
        let counts = matches!(leaf.kind, ChildKind::Alloc | ChildKind::Free);
        if counts {
            if alloc {
                a.allocs += 1;
            } else {
                a.frees += 1;
            }
        }
        a.overhead_ns += leaf.overhead_ns;
        a.first_ns = a.first_ns.min(leaf.r.start_ns);
        a.last_ns = a.last_ns.max(leaf.r.end_ns);
        if counts {
            push_sample(&mut a.samples, leaf.r);
        }
    }

    /// Ends the stream: accounts what is still waiting for a construct, resolves names with
    /// `strings` (the trace's table, complete by now) and returns the profile.
    pub fn finish(self, strings: &StringTable) -> Profile {
        self.finish_with_wall(strings, None)
    }

    /// Like [`finish`](Self::finish), with the run's wall time when the trace knows it (from its
    /// header's start to its footer); else the span of the events is used.
    pub fn finish_with_wall(mut self, strings: &StringTable, wall_ns: Option<u64>) -> Profile {
        let mut threads: Vec<i64> = self.threads.keys().copied().collect();
        threads.sort_unstable();
        let mut busiest = 0u64;
        for t in &threads {
            let ts = self.threads.get_mut(t).expect("key from the map");
            busiest = busiest.max(ts.covered_ns);
            let stack = std::mem::take(&mut ts.stack);
            let run = ts.run.take();
            let mut loose = Vec::new();
            for item in stack {
                match item {
                    Item::Leaf(l) => loose.push(l),
                    Item::Group { leaves, .. } => loose.extend(leaves),
                    Item::Closed { .. } => {}
                }
            }
            if let Some(run) = run {
                self.close_run(run);
            }
            if !loose.is_empty() {
                self.resolve(*t, None, u64::MAX, loose);
            }
        }
        self.attribute_device_records(strings);
        self.prefer_device_times();
        let name = |id: Option<StrId>| strings.resolve(id).map(str::to_string);
        let mut profile = Profile { summary: self.summary, ..Profile::default() };
        if self.late_enclosing > 0 {
            profile.warnings.push(format!(
                "{} construct(s) enclosed more than {MAX_PENDING} operations that no inner construct did; operations of theirs were counted outside any construct",
                self.late_enclosing
            ));
        }
        if self.cuda_event_records_set_aside > 0 {
            profile.warnings.push(format!(
                "this run recorded device times both with CUPTI and with CUDA events (ACCPROF_CUDA_EVENTS=on); the {} CUDA-event records are left out and CUPTI's are used",
                self.cuda_event_records_set_aside
            ));
        }
        profile.summary.threads = threads.len() as u64;
        profile.summary.untracked_ns = 0;
        let span = wall_ns.unwrap_or_else(|| profile.summary.last_ns.saturating_sub(profile.summary.first_ns));
        profile.summary.wall_ns = span;
        profile.summary.wall_from_footer = wall_ns.is_some();
        profile.summary.untracked_ns = span.saturating_sub(busiest);
        profile.constructs = self
            .constructs
            .into_iter()
            .map(|acc| {
                let mut c = acc.c;
                c.location.file = name(acc.key.file);
                c.location.function = name(acc.key.func);
                c
            })
            .collect();
        let cname = |c: Option<u32>, cs: &[Construct]| -> String {
            match c.and_then(|c| cs.get(c as usize)) {
                Some(c) => format!("<kernel of {}>", c.location.short()),
                None => "<unnamed kernel>".into(),
            }
        };
        profile.kernels = self
            .kernels
            .into_iter()
            .map(|(n, c, mut k)| {
                k.name = name(n).unwrap_or_else(|| cname(c, &profile.constructs));
                k
            })
            .collect();
        profile.variables = self
            .variables
            .into_iter()
            .map(|(id, mut v)| {
                v.name = var_label(id, strings);
                v
            })
            .collect();
        profile.transfer_sites = self.sites;
        profile.roundtrips = self.roundtrips;
        profile.slice_runs = self
            .slices
            .into_iter()
            .map(|(id, mut s)| {
                s.array = match id {
                    VarId::Name(n) => {
                        let full = strings.get(n).unwrap_or("?");
                        full.split('[').next().unwrap_or(full).to_string()
                    }
                    VarId::Host { ptr, .. } => format!("host array near {ptr:#x}"),
                    VarId::Unknown => "?".into(),
                };
                s
            })
            .collect();
        profile.allocs = self.allocs;
        profile
    }
}

impl ProfileBuilder {
    /// Ties each device record to what its issuing thread was doing when it issued the driver
    /// call: the transfer or launch the runtime reported (the device time is added to that
    /// operation's rows), else the innermost construct instance open then (the record is a new
    /// operation of that construct: GCC reports no transfers), else no construct.
    fn attribute_device_records(&mut self, strings: &StringTable) {
        if self.device_records.is_empty() {
            return;
        }
        let mut recs = std::mem::take(&mut self.device_records);
        for ts in self.threads.values_mut() {
            index_spans(ts);
        }
        match_kernels_by_name(&self.threads, &mut recs, strings);
        // Issue order per thread: the round-trip and slice rules read transfers in order.
        recs.sort_by_key(|d| (d.thread, d.host_ns, d.r.start_ns));
        for d in recs {
            match d.kind {
                DeviceOp::Memset => {
                    self.summary.memsets.source = TimeSource::Device;
                    self.summary.memsets.add(dur(d.r));
                    self.summary.memset_bytes += d.bytes.unwrap_or(0);
                    continue;
                }
                DeviceOp::OtherCopy => continue,
                DeviceOp::Kernel | DeviceOp::Copy(_) => {}
            }
            let want = match d.kind {
                DeviceOp::Kernel => ChildKind::Launch,
                DeviceOp::Copy(Direction::HostToDevice) => ChildKind::Upload,
                _ => ChildKind::Download,
            };
            let ts = self.threads.get(&d.thread);
            // The issuing thread's own operation; else one open on another thread at that time:
            // runtimes stage copies on helper threads of their own (the shim's pinned uploads),
            // which report no OpenACC events.
            let op = ts.and_then(|ts| find_op(ts, d.host_ns, want)).or_else(|| {
                let helper = ts.is_none_or(|ts| ts.construct_spans.is_empty() && ts.op_spans.is_empty());
                if !helper {
                    return None;
                }
                self.threads.values().find_map(|other| find_op(other, d.host_ns, want))
            });
            if let Some(op) = op {
                self.add_device_bytes(want, d.bytes);
                self.add_device_time(&op, dur(d.r));
                continue;
            }
            let span = ts.and_then(|ts| innermost_construct(ts, d.host_ns));
            self.add_device_bytes(want, d.bytes);
            let (c, inst) = match span {
                Some(span) => (Some(span.construct), span.instance),
                None => {
                    self.summary.device_records_outside += 1;
                    (None, u64::MAX)
                }
            };
            let leaf = Leaf {
                kind: want,
                r: d.r,
                // Like the runtime's own operations inside a construct: the construct's line.
                line: None,
                bytes: d.bytes,
                host_ptr: d.host_ptr,
                var: match (d.var, d.host_ptr) {
                    (Some(n), _) => VarId::Name(n),
                    (None, Some(p)) => VarId::Host { ptr: p, bytes: d.bytes.unwrap_or(0) },
                    (None, None) => VarId::Unknown,
                },
                kernel: d.kernel,
                gangs: None,
                workers: None,
                vector: None,
                is_async: false,
                overhead_ns: 0,
                host_timed: false,
                device_ns: Some(dur(d.r)),
            };
            self.resolve(d.thread, c, inst, vec![leaf]);
        }
        for ts in self.threads.values_mut() {
            if let Some(run) = ts.run.take() {
                self.close_run_later.push(run);
            }
        }
        for run in std::mem::take(&mut self.close_run_later) {
            self.close_run(run);
        }
    }

    /// Counts what a device copy moved, for the summary: with device records the device says
    /// how many copies moved how many bytes (a runtime's one upload may be many staged copies).
    fn add_device_bytes(&mut self, kind: ChildKind, bytes: Option<u64>) {
        match kind {
            ChildKind::Upload => self.device_totals.upload_bytes += bytes.unwrap_or(0),
            ChildKind::Download => self.device_totals.download_bytes += bytes.unwrap_or(0),
            _ => {}
        }
    }

    /// Adds a device record's time to the rows its host-reported operation was accounted in.
    fn add_device_time(&mut self, op: &OpSpan, ns: u64) {
        if let (Some(c), Some(ch)) = (op.construct, op.child) {
            self.constructs[c as usize].device[ch as usize].add(ns);
        }
        match op.kind {
            ChildKind::Launch => {
                if let Some(k) = op.kernel {
                    self.kernel_device[k as usize].add(ns);
                }
                self.device_totals.kernels.add(ns);
            }
            _ => {
                if let Some(v) = op.variable {
                    self.variable_device[v as usize].add(ns);
                }
                if let Some(s) = op.site {
                    self.site_device[s as usize].add(ns);
                }
                if op.kind == ChildKind::Upload {
                    self.device_totals.uploads.add(ns);
                } else {
                    self.device_totals.downloads.add(ns);
                }
            }
        }
    }

    /// Every row whose operations have device records reports the device's time; the host's is
    /// kept in `host_time`. NV_ACC_TIME prefers device times the same way.
    fn prefer_device_times(&mut self) {
        fn pick(time: &mut Timing, host_time: &mut Timing, dev: &Timing) {
            *host_time = *time;
            if dev.count > 0 {
                *time = *dev;
            }
        }
        for acc in &mut self.constructs {
            for (ch, dev) in acc.c.children.iter_mut().zip(&acc.device) {
                pick(&mut ch.time, &mut ch.host_time, dev);
            }
        }
        for ((_, _, k), dev) in self.kernels.iter_mut().zip(&self.kernel_device) {
            pick(&mut k.time, &mut k.host_time, dev);
        }
        for ((_, v), dev) in self.variables.iter_mut().zip(&self.variable_device) {
            pick(&mut v.time, &mut v.host_time, dev);
        }
        for (s, dev) in self.sites.iter_mut().zip(&self.site_device) {
            pick(&mut s.time, &mut s.host_time, dev);
        }
        let s = &mut self.summary;
        if self.device_totals.uploads.count > 0 {
            s.upload_bytes = self.device_totals.upload_bytes;
        }
        if self.device_totals.downloads.count > 0 {
            s.download_bytes = self.device_totals.download_bytes;
        }
        pick(&mut s.kernels, &mut s.kernels_host, &self.device_totals.kernels);
        pick(&mut s.uploads, &mut s.uploads_host, &self.device_totals.uploads);
        pick(&mut s.downloads, &mut s.downloads_host, &self.device_totals.downloads);
    }
}

fn dur(r: EventRef) -> u64 {
    r.end_ns.saturating_sub(r.start_ns)
}

/// Sorts a thread's spans by start (outer before inner at equal starts) and links each
/// construct span to the innermost span enclosing it.
fn index_spans(ts: &mut ThreadState) {
    let spans = &mut ts.construct_spans;
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut open: Vec<u32> = Vec::new();
    for i in 0..spans.len() {
        while let Some(&top) = open.last() {
            if spans[top as usize].end >= spans[i].end && spans[top as usize].start <= spans[i].start {
                break;
            }
            open.pop();
        }
        spans[i].parent = open.last().copied();
        open.push(i as u32);
    }
    ts.op_spans.sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
}

/// The innermost construct instance open on the thread at `t`.
fn innermost_construct(ts: &ThreadState, t: u64) -> Option<ConstructSpan> {
    let spans = &ts.construct_spans;
    let i = spans.partition_point(|s| s.start <= t).checked_sub(1)?;
    // The last span starting at or before t, or one of its ancestors, contains t if any does:
    // spans on one thread nest.
    let mut cur = Some(i as u32);
    while let Some(j) = cur {
        let s = spans[j as usize];
        if s.end >= t {
            return Some(s);
        }
        cur = s.parent;
    }
    None
}

/// The host-reported operation of kind `want` whose callbacks enclose `t` on this thread.
/// How far a kernel may seem to start before its launch was issued: device times converted by
/// anchoring CUPTI's clock to the host's (no timestamp callback) can be off by this much.
const CLOCK_SLACK_NS: u64 = 1_000_000;

/// Gives kernel records that do not say which call issued them the thread and time of the
/// runtime's reported launch of the same kernel. libaccprof stops CUPTI's launch callback once
/// the runtime reports launches through acc_prof (the callback cost about 0.6 us per launch on
/// the H200); GCC, NVHPC and the shim report each launch with the kernel's name, which CUPTI's
/// records carry too. Per name, the launches not already claimed by a record with its call are
/// taken in host time order and the records in issue (correlation id) order; a record that
/// started on the device before its candidate launch was issued is not that launch's, and stays
/// outside any construct (as do kernels that no runtime reported, such as a CUDA library's).
fn match_kernels_by_name(threads: &HashMap<i64, ThreadState>, recs: &mut [DeviceRecord], strings: &StringTable) {
    if !recs.iter().any(|d| d.kind == DeviceOp::Kernel && !d.issued) {
        return;
    }
    let mut claimed = std::collections::HashSet::new();
    for d in recs.iter().filter(|d| d.kind == DeviceOp::Kernel && d.issued) {
        if let Some(op) = threads.get(&d.thread).and_then(|ts| find_op(ts, d.host_ns, ChildKind::Launch)) {
            claimed.insert((d.thread, op.start));
        }
    }
    let mut launches: HashMap<&str, Vec<(u64, u64, i64)>> = HashMap::default();
    for (&thread, ts) in threads {
        for o in ts.op_spans.iter().filter(|o| o.kind == ChildKind::Launch && !claimed.contains(&(thread, o.start))) {
            if let Some(name) = strings.resolve(o.kernel_name) {
                launches.entry(name).or_default().push((o.start, o.end, thread));
            }
        }
    }
    for list in launches.values_mut() {
        list.sort_unstable();
    }
    let mut order: Vec<usize> = (0..recs.len()).filter(|&i| recs[i].kind == DeviceOp::Kernel && !recs[i].issued).collect();
    order.sort_by_key(|&i| (recs[i].correlation.unwrap_or(u64::MAX), recs[i].r.start_ns));
    let mut next: HashMap<&str, usize> = HashMap::default();
    for i in order {
        let Some(name) = strings.resolve(recs[i].kernel) else { continue };
        let Some(list) = launches.get(name) else { continue };
        let k = next.entry(name).or_default();
        let Some(&(start, end, thread)) = list.get(*k) else { continue };
        if recs[i].r.start_ns.saturating_add(CLOCK_SLACK_NS) < start {
            continue;
        }
        *k += 1;
        recs[i].thread = thread;
        recs[i].host_ns = start + (end - start) / 2;
    }
}

fn find_op(ts: &ThreadState, t: u64, want: ChildKind) -> Option<OpSpan> {
    let ops = &ts.op_spans;
    let end = ops.partition_point(|o| o.start <= t);
    // Operations of one kind do not overlap on a thread; look back over a few neighbours.
    ops[..end].iter().rev().take(8).find(|o| o.kind == want && o.end >= t).copied()
}

/// Spreads the host time of a data operation that its transfers do not explain over the
/// allocations inside it.
fn share_overhead(leaves: &mut [Leaf], dur: u64) {
    let transfers: u64 = leaves.iter().filter(|l| l.is_transfer() || l.kind == ChildKind::Launch).map(|l| l.dur()).sum();
    let n = leaves.iter().filter(|l| matches!(l.kind, ChildKind::Alloc | ChildKind::Free)).count() as u64;
    if n == 0 {
        return;
    }
    let share = dur.saturating_sub(transfers) / n;
    for l in leaves.iter_mut().filter(|l| matches!(l.kind, ChildKind::Alloc | ChildKind::Free)) {
        l.overhead_ns = share;
    }
}

fn var_label(id: VarId, strings: &StringTable) -> String {
    match id {
        VarId::Name(n) => strings.get(n).unwrap_or("?").to_string(),
        VarId::Host { ptr, bytes } => format!("host {ptr:#x}+{}", crate::format::bytes(bytes)),
        VarId::Unknown => "(unknown variable)".into(),
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
                b.feed(&op(acc_event_t::ENQUEUE_UPLOAD_START, i * 100 + thread as u64 * 20, thread));
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
        assert!(p.warnings.iter().any(|w| w.contains("counted outside any construct")), "{:?}", p.warnings);
    }
}
