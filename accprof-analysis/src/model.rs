//! What a trace says, aggregated: the [`Profile`] and its tables.
//!
//! Every duration is a [`Timing`] that names where it was measured ([`TimeSource`]): between the
//! runtime's host-side start/end callbacks, or on the device (CUPTI's records), and the report
//! labels each line with its source.

use serde::Serialize;

/// Where a duration was measured.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeSource {
    /// Between the runtime's start and end callbacks on the host thread: what the host thread
    /// spent in the construct or operation (including waiting for the device when it was
    /// synchronous).
    #[default]
    Host,
    /// Measured on the device (kernel execution, copy engine time).
    Device,
}

impl TimeSource {
    pub fn label(self) -> &'static str {
        match self {
            TimeSource::Host => "host",
            TimeSource::Device => "device",
        }
    }
}

/// Count, total, minimum and maximum of a set of durations in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct Timing {
    pub source: TimeSource,
    pub count: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Timing {
    pub fn host() -> Self {
        Self::default()
    }

    pub fn device() -> Self {
        Self {
            source: TimeSource::Device,
            ..Self::default()
        }
    }

    pub fn add(&mut self, ns: u64) {
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
    }

    pub fn merge(&mut self, o: &Timing) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 || o.min_ns < self.min_ns {
            self.min_ns = o.min_ns;
        }
        self.max_ns = self.max_ns.max(o.max_ns);
        self.count += o.count;
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.source = o.source;
    }

    pub fn avg_ns(&self) -> u64 {
        self.total_ns.checked_div(self.count).unwrap_or(0)
    }
}

/// The smallest and largest value seen (launch geometry).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ValueRange {
    pub min: u64,
    pub max: u64,
}

impl ValueRange {
    pub fn add(range: &mut Option<ValueRange>, v: u64) {
        match range {
            Some(r) => {
                r.min = r.min.min(v);
                r.max = r.max.max(v);
            }
            None => *range = Some(ValueRange { min: v, max: v }),
        }
    }

    pub fn merge(range: &mut Option<ValueRange>, o: Option<ValueRange>) {
        if let Some(o) = o {
            ValueRange::add(range, o.min);
            ValueRange::add(range, o.max);
        }
    }
}

/// One event of the trace a finding or table row points at, so that a UI can jump to it.
/// `index` is the event's position in the trace file's event stream (0-based), which is also its
/// index in `Trace::load(..).events`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct EventRef {
    pub index: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// How many evidence events a table row keeps (the first ones, in time order).
pub const MAX_SAMPLES: usize = 8;

pub(crate) fn push_sample(samples: &mut Vec<EventRef>, r: EventRef) {
    if samples.len() < MAX_SAMPLES {
        samples.push(r);
    }
}

/// Where in the program something happened. Fields are `None` when the runtime did not say
/// (GCC fills none of them).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Serialize, PartialOrd, Ord)]
pub struct Location {
    pub file: Option<String>,
    pub function: Option<String>,
    pub line: Option<i64>,
    pub end_line: Option<i64>,
    pub device_type: Option<i64>,
    pub device_number: Option<i64>,
}

impl Location {
    /// `file:line` as far as known.
    pub fn short(&self) -> String {
        let file = self
            .file
            .as_deref()
            .map(|f| f.rsplit('/').next().unwrap_or(f))
            .unwrap_or("?");
        match self.line {
            Some(l) => format!("{file}:{l}"),
            None => file.to_string(),
        }
    }
}

/// The kinds of construct and of operation inside one (the shared vocabulary's).
pub use accprof_timeline::taxonomy::{ChildKind, ConstructKind};

/// Direction of a data transfer (the shared vocabulary's).
pub use accprof_timeline::Direction;

/// One kind of operation at one line inside a construct (NV_ACC_TIME's indented lines).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ConstructChild {
    pub kind: ChildKind,
    pub line: Option<i64>,
    /// Index into [`Profile::kernels`] for launches.
    pub kernel: Option<usize>,
    pub count: u64,
    pub bytes: u64,
    /// Device time where the trace has device records for these operations, else host time.
    pub time: Timing,
    /// Host time of the runtime's enqueue callbacks (count 0 when the runtime reported none:
    /// GCC reports no transfers, so its transfers are known from device records alone).
    pub host_time: Timing,
}

/// One construct of the program (file, function, line, device, kind) and what it did.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Construct {
    pub kind: ConstructKind,
    /// The construct type as the runtime named it (parallel, kernels, serial, data ...).
    pub construct_type: Option<String>,
    pub location: Location,
    /// How many times the construct was reached (for a data region: its entries).
    pub reached: u64,
    /// Host time spent in it (for a data region: its entry plus its exit, not the body).
    pub time: Timing,
    /// Times it ran on an async queue.
    pub async_count: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub children: Vec<ConstructChild>,
    /// The first few occurrences.
    pub samples: Vec<EventRef>,
}

/// What tables call a data region's exit-only row ([`Construct::is_exit_only`]).
pub const EXIT_ONLY_LABEL: &str = "data region exit";

impl Construct {
    /// A data region's exit reported on a line of its own (GCC's line table puts the end call
    /// at the region's closing line or last statement): a row that is only ever exited.
    pub fn is_exit_only(&self) -> bool {
        self.kind == ConstructKind::Data && self.reached == 0
    }

    /// How many times the row happened: its entries, or its exits for an exit-only row.
    pub fn times(&self) -> u64 {
        if self.is_exit_only() {
            self.time.count
        } else {
            self.reached
        }
    }

    /// What tables call the row: "data region exit" for an exit-only row, not "data region
    /// reached 0 times".
    pub fn label(&self) -> &'static str {
        if self.is_exit_only() {
            EXIT_ONLY_LABEL
        } else {
            self.kind.label()
        }
    }

    /// Host time of the construct not spent in the transfers, launches and waits it contains:
    /// runtime bookkeeping (present lookups, allocations) and, for synchronous constructs, waiting.
    pub fn own_time_ns(&self) -> u64 {
        let kids: u64 = self.children.iter().map(|c| c.time.total_ns).sum();
        self.time.total_ns.saturating_sub(kids)
    }

    pub fn child_total(&self, kind: ChildKind) -> (u64, u64, u64) {
        self.children
            .iter()
            .filter(|c| c.kind == kind)
            .fold((0, 0, 0), |(n, b, t), c| {
                (n + c.count, b + c.bytes, t + c.time.total_ns)
            })
    }
}

/// One kernel (by name) and its launches.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Kernel {
    /// The kernel name, or `<construct file:line>` when the runtime gave none.
    pub name: String,
    /// Index into [`Profile::constructs`] of the construct that launched it (the first one seen).
    pub construct: Option<usize>,
    pub launches: u64,
    pub num_gangs: Option<ValueRange>,
    pub num_workers: Option<ValueRange>,
    pub vector_length: Option<ValueRange>,
    /// The kernel's execution on the device where the trace has device records; else the host
    /// time of the enqueue_launch events (the launch call, not the kernel's execution, unless
    /// the runtime runs kernels synchronously inside the launch).
    pub time: Timing,
    /// Host time of the enqueue_launch events, always.
    pub host_time: Timing,
    /// Launches made on an async queue.
    pub async_launches: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub samples: Vec<EventRef>,
    /// What the device's kernel records say of its launches (CUPTI), where the trace has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometry: Option<LaunchGeometry>,
}

/// A kernel's launch geometry as the device ran it (CUPTI's kernel records): ranges over its
/// launches, and the theoretical occupancy of its largest launch on its device.
#[derive(Clone, PartialEq, Debug, Default, Serialize)]
pub struct LaunchGeometry {
    /// Kernel records that gave geometry.
    pub launches: u64,
    /// Grid extents x, y, z (blocks).
    pub grid: [ValueRange; 3],
    /// Block extents x, y, z (threads).
    pub block: [ValueRange; 3],
    /// Blocks per launch (the grid's product).
    pub blocks: ValueRange,
    /// Threads per block (the block's product).
    pub threads_per_block: ValueRange,
    pub registers_per_thread: ValueRange,
    /// Static plus dynamic shared memory per block, bytes.
    pub shared_mem_bytes: ValueRange,
    /// The CUDA device ordinal of its first launch.
    pub device: Option<i64>,
    /// The device's multiprocessors, where the trace has the device's limits.
    pub multiprocessors: Option<u64>,
    /// For the largest block, registers and shared memory seen, where the trace has the
    /// device's limits.
    pub occupancy: Option<crate::occupancy::Occupancy>,
}

impl LaunchGeometry {
    /// Whether the fewest blocks of a launch leave multiprocessors with nothing to run.
    pub fn fewer_blocks_than_multiprocessors(&self) -> bool {
        self.multiprocessors.is_some_and(|sm| self.blocks.min < sm)
    }
}

/// One variable (or host address range) and one direction.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Variable {
    /// The variable as the runtime named it, else `host 0x7f..+8 MiB`.
    pub name: String,
    /// True when `name` is the variable as the source writes it (from the runtime, or named by
    /// accprof), false when it is an address range or a hint (`heap@x.c:3 (returned)`).
    pub named: bool,
    /// For a heap block, its allocation's call site: variables named alike with different
    /// sites are different arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_site: Option<u64>,
    pub host_ptr: Option<u64>,
    pub direction: Direction,
    pub count: u64,
    pub bytes: u64,
    /// Device (copy engine) time where the trace has device records, else host enqueue time.
    pub time: Timing,
    /// Host time of the enqueue_upload / enqueue_download events (count 0 when none).
    pub host_time: Timing,
    pub samples: Vec<EventRef>,
    /// What the hashes of its transfers' bytes showed, when the trace has them
    /// (ACCPROF_CONTENT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentStats>,
}

/// What the hashes of one variable's transfers (in one direction) showed: proof by content
/// that a transfer was redundant.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ContentStats {
    /// Transfers whose bytes were hashed.
    pub hashed: u64,
    /// Uploads that carried the bytes the device last received or gave back (with a data
    /// region keeping the array, it would have held them still).
    pub already_held: u64,
    /// Downloads that brought back the bytes the device was last given: it did not change them.
    pub unchanged: u64,
    /// How the array's first use on the device began: `Some(false)` when it was created there
    /// without an upload (its first construct did not need the host's bytes), `Some(true)` when
    /// it was uploaded; `None` when not known. Set on the first transfer's variable.
    pub first_uploaded: Option<bool>,
    /// After a first upload: whether the next download brought back bytes the device had
    /// changed. Set on that download's variable.
    pub first_changed: Option<bool>,
}

impl Variable {
    pub fn gbps(&self) -> Option<f64> {
        gbps(self.bytes, self.time.total_ns)
    }
}

/// Bytes per nanosecond is GB/s (10^9 bytes per second).
pub use accprof_timeline::format::gbps;

/// Transfers of one variable in one direction by one construct: what the advice rules read.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct TransferSite {
    /// Index into [`Profile::constructs`]; `None` for transfers outside any construct.
    pub construct: Option<usize>,
    /// Index into [`Profile::variables`].
    pub variable: usize,
    pub direction: Direction,
    pub count: u64,
    pub bytes: u64,
    /// Largest single transfer.
    pub max_bytes: u64,
    /// The host address of the first transfer.
    pub host_ptr: Option<u64>,
    /// Whether every transfer moved the same host range (the same array again, not successive
    /// chunks under one clause).
    pub same_range: bool,
    /// Device time where known, else host time (see [`Variable::time`]).
    pub time: Timing,
    pub host_time: Timing,
    pub first_ns: u64,
    pub last_ns: u64,
    pub samples: Vec<EventRef>,
}

/// A variable copied out by one construct and copied back in by the next construct that touched
/// it, on the same thread: its device copy could have stayed.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Roundtrip {
    /// Index into [`Profile::variables`] of the download side.
    pub variable: usize,
    pub from_construct: Option<usize>,
    pub to_construct: Option<usize>,
    pub count: u64,
    pub bytes: u64,
    /// Time of both transfers.
    pub time_ns: u64,
    pub samples: Vec<EventRef>,
}

/// Runs of many small transfers of adjacent pieces of one array by one construct.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct SliceRuns {
    pub construct: Option<usize>,
    pub direction: Direction,
    /// The array as far as known: variable base name or `host 0x..`.
    pub array: String,
    /// Whether `array` is a name the runtime (or the symbol table) gave, not an address.
    pub named: bool,
    /// How many runs (each run could have been one transfer).
    pub runs: u64,
    pub transfers: u64,
    pub bytes: u64,
    pub time: Timing,
    pub first_ns: u64,
    pub last_ns: u64,
    pub samples: Vec<EventRef>,
}

/// Device allocations (alloc/free, create/delete) of one size by one construct.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct AllocSite {
    pub construct: Option<usize>,
    /// Where the program called the runtime API for these allocations (`acc_malloc`), outside
    /// every construct.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<Location>,
    /// The pointer the program stores the block in (`tmp` of `tmp = acc_malloc(...)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub bytes: Option<u64>,
    pub allocs: u64,
    pub frees: u64,
    /// Host time of the data operations around these allocations, less their transfers: what
    /// allocation and bookkeeping cost.
    pub overhead_ns: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub samples: Vec<EventRef>,
}

/// The totals of a run.
#[derive(Clone, PartialEq, Debug, Default, Serialize)]
pub struct Summary {
    /// Wall time of the run: from the tool's start to its clean end (or the last event).
    pub wall_ns: u64,
    /// Whether `wall_ns` ends at the footer (a clean end) or at the last event.
    pub wall_from_footer: bool,
    /// Host time in compute constructs.
    pub compute: Timing,
    /// Kernel execution on the device where the trace has device records, else host time of the
    /// launch calls (`kernels.source` says which).
    pub kernels: Timing,
    /// Transfers: device time where known, else host enqueue time.
    pub uploads: Timing,
    pub upload_bytes: u64,
    pub downloads: Timing,
    pub download_bytes: u64,
    /// Host time of the launch calls and transfer enqueues the runtime reported.
    pub kernels_host: Timing,
    pub uploads_host: Timing,
    pub downloads_host: Timing,
    /// Device memsets (device records only).
    pub memsets: Timing,
    pub memset_bytes: u64,
    /// Device records in the trace (kernels, copies, memsets measured on the device).
    pub device_records: u64,
    /// Device records tied to no construct (issued outside every OpenACC event on their thread).
    pub device_records_outside: u64,
    /// Host time in data constructs and directives (data regions, enter/exit data, update).
    pub data_constructs: Timing,
    /// Host time waiting for the device (explicit and implicit waits).
    pub waits: Timing,
    pub device_init: Timing,
    /// Host time (of the busiest thread) outside every OpenACC event: the program's own work.
    pub untracked_ns: u64,
    pub events: u64,
    pub threads: u64,
    pub dropped_events: u64,
    pub first_ns: u64,
    pub last_ns: u64,
}

impl Summary {
    pub fn transfers_ns(&self) -> u64 {
        self.uploads.total_ns + self.downloads.total_ns
    }
    pub fn transfer_bytes(&self) -> u64 {
        self.upload_bytes + self.download_bytes
    }
}

/// Which trace a profile came from.
#[derive(Clone, PartialEq, Debug, Default, Serialize)]
pub struct ProfileSource {
    pub path: String,
    pub exe: String,
    pub args: Vec<String>,
    pub pid: u32,
    pub hostname: String,
    pub mpi_rank: Option<u32>,
    /// The monotonic time the trace started at (header), to make times relative.
    pub start_monotonic_ns: u64,
    /// Whether the trace ended with a footer.
    pub clean_end: bool,
    /// The program's working directory (header key `cwd`): where relative source paths start.
    pub cwd: Option<String>,
}

impl ProfileSource {
    /// "rank 3" or "pid 1234".
    pub fn rank_label(&self) -> String {
        match self.mpi_rank {
            Some(r) => format!("rank {r}"),
            None => format!("pid {}", self.pid),
        }
    }
}

/// What happened inside an NVTX range (its inner ranges included).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct NvtxWork {
    /// Host time of the OpenACC constructs (compute, data, update, wait, init ...).
    pub openacc_ns: u64,
    /// Transfers the runtime reported (enqueue upload/download): count, bytes, host time.
    pub transfers: u64,
    pub transfer_bytes: u64,
    pub transfer_ns: u64,
    /// Copies the device made (CUPTI's records): count, bytes, device time.
    pub device_copies: u64,
    pub device_copy_bytes: u64,
    pub device_copy_ns: u64,
    /// Kernels' device time (CUPTI's records).
    pub kernel_ns: u64,
}

impl NvtxWork {
    pub fn add(&mut self, o: &NvtxWork) {
        self.openacc_ns += o.openacc_ns;
        self.transfers += o.transfers;
        self.transfer_bytes += o.transfer_bytes;
        self.transfer_ns += o.transfer_ns;
        self.device_copies += o.device_copies;
        self.device_copy_bytes += o.device_copy_bytes;
        self.device_copy_ns += o.device_copy_ns;
        self.kernel_ns += o.kernel_ns;
    }
}

/// One NVTX range of the program (by domain and message), all its instances.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct NvtxRangeRow {
    /// `None`: NVTX's default domain.
    pub domain: Option<String>,
    pub name: String,
    /// A start/end range (not nested; `inside` is not counted for it).
    pub start_end: bool,
    /// Its instances' durations.
    pub time: Timing,
    /// What happened inside its push/pop instances.
    pub inside: NvtxWork,
}

impl NvtxRangeRow {
    /// "domain: name", or the name alone in the default domain.
    pub fn label(&self) -> String {
        match &self.domain {
            Some(d) => format!("{d}: {}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One NVTX mark (by domain and message) and how often it was made.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct NvtxMarkRow {
    pub domain: Option<String>,
    pub name: String,
    pub count: u64,
}

/// Everything the report, advice and diff need from one trace (or several merged).
#[derive(Clone, PartialEq, Debug, Default, Serialize)]
pub struct Profile {
    /// The traces this profile was built from (one, or several after [`merge`](crate::merge)).
    pub sources: Vec<ProfileSource>,
    pub summary: Summary,
    pub constructs: Vec<Construct>,
    pub kernels: Vec<Kernel>,
    pub variables: Vec<Variable>,
    pub transfer_sites: Vec<TransferSite>,
    pub roundtrips: Vec<Roundtrip>,
    pub slice_runs: Vec<SliceRuns>,
    pub allocs: Vec<AllocSite>,
    /// Device memory in use per device: high-water mark, the arrays holding it, the series.
    pub device_memory: Vec<DeviceMemory>,
    /// Where the device idled between constructs while the host worked (traces with device
    /// records only; left empty when profiles are merged).
    pub device_gaps: DeviceGaps,
    /// The limits of the devices kernels ran on (traces with CUPTI's device properties).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<crate::occupancy::DeviceLimits>,
    /// The program's NVTX ranges and marks (traces of programs that use NVTX).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvtx_ranges: Vec<NvtxRangeRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvtx_marks: Vec<NvtxMarkRow>,
    /// Problems the user should know about (truncated trace, dropped events).
    pub warnings: Vec<String>,
}

impl Profile {
    /// Whether the trace held no OpenACC activity at all.
    pub fn is_empty(&self) -> bool {
        self.summary.events == 0
    }

    /// Constructs sorted by host time, longest first.
    pub fn top_constructs(&self, n: usize) -> Vec<(usize, &Construct)> {
        let mut v: Vec<(usize, &Construct)> = self.constructs.iter().enumerate().collect();
        v.sort_by(|a, b| {
            b.1.time
                .total_ns
                .cmp(&a.1.time.total_ns)
                .then(a.0.cmp(&b.0))
        });
        v.truncate(n);
        v
    }

    /// The construct at `i`, if any (for optional indices in the tables).
    pub fn construct(&self, i: Option<usize>) -> Option<&Construct> {
        i.and_then(|i| self.constructs.get(i))
    }
}

/// Device memory of one device, from the runtime's allocations.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct DeviceMemory {
    /// The device number the runtime reported (`None` when it gave none).
    pub device: Option<i64>,
    /// "alloc/free" or "create/delete": the events the figures come from.
    pub events: &'static str,
    /// The most bytes in use at once, and when (monotonic ns).
    pub peak_bytes: u64,
    pub peak_ns: u64,
    /// How many allocations were live at the peak, and the largest of them.
    pub arrays_at_peak: u64,
    pub largest_at_peak: Vec<HeldArray>,
    /// Bytes in use over time: (monotonic ns, bytes), each point the largest value of its span.
    pub series: Vec<(u64, u64)>,
    pub allocations: u64,
    pub frees: u64,
    /// Frees of a device pointer no recorded allocation gave (allocated before recording
    /// began, or a runtime that names no device pointer): not counted.
    pub unmatched_frees: u64,
    /// Bytes still allocated when the trace ended.
    pub in_use_at_end: u64,
}

/// One allocation live at the peak.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct HeldArray {
    /// The variable; else its host address, else its device address (what the runtime gave).
    pub name: String,
    pub bytes: u64,
    /// Where it was allocated.
    pub file: Option<String>,
    pub line: Option<i64>,
    pub allocated: EventRef,
}

/// Where the device idled while the host worked between constructs.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct DeviceGaps {
    /// Time the device was busy (the union of its records).
    pub busy_ns: u64,
    /// From the first device record's start to the last one's end.
    pub span_ns: u64,
    /// Per pair of constructs, largest total first.
    pub sites: Vec<GapSite>,
}

/// The gaps between the device work of one construct and that of the next.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct GapSite {
    /// Index in `Profile::constructs` of the construct whose device work came before the gap
    /// (`None`: work no construct issued).
    pub before: Option<usize>,
    /// The construct whose device work ended the gap.
    pub after: Option<usize>,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    /// The longest gap, as the device record that ended it.
    pub longest: Option<EventRef>,
    /// Start of the first gap and end of the last, monotonic ns.
    pub first_ns: u64,
    pub last_ns: u64,
}
