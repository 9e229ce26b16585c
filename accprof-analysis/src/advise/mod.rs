//! Advice: what to change in the program, found by rules over a [`Profile`].
//!
//! Each rule reads the profile's tables and yields [`Finding`]s with the source location, the
//! evidence, an estimate of the time the change would save and the change itself, worded like the
//! OpenACC guides ("11 Tips", the data-locality guide). [`advise`] returns them ordered by the
//! saving, largest first. A program that already keeps its data on the device gets none of the
//! data rules.
//!
//! Each rule is an [`AdviceRule`] in a file of its own under [`rules`].

pub mod clauses;
pub(crate) mod placement;
pub mod rules;

use crate::model::*;
use serde::Serialize;
use std::collections::HashSet;

/// Transfers smaller than this (reduction scalars, kernel arguments) are left to the runtime:
/// the host usually needs them every iteration.
pub const MIN_ARRAY_BYTES: u64 = 1024;

/// The rules, by the id the JSON output and the tests use.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The same arrays copied in and out by constructs of one function on every iteration.
    DataRegion,
    /// The same arrays copied by constructs in different functions: enter data / exit data.
    EnterExitData,
    /// An array copied out and copied back in unchanged, or a device-only temporary: create/present.
    CreateInsteadOfCopy,
    /// Many small transfers of adjacent slices of one array (tip 9).
    WholeArray,
    /// An update directive inside a loop moving whole arrays.
    UpdateInLoop,
    /// Repeated allocation and free of the same size.
    AllocChurn,
    /// Kernels so short that launch overhead dominates.
    ShortKernels,
    /// Kernels running on one gang or one vector lane (tips 1, 3, 5).
    SequentialKernel,
    /// The host waits on synchronous constructs while it has work of its own: async queues.
    AsyncQueues,
    /// Device initialization dominates a short run.
    InitEarly,
    /// The device idles between constructs while the host works (traces with device records).
    DeviceIdleGaps,
    /// Launch geometry that wastes the GPU: fewer gangs than SMs, partial warps, register-bound
    /// occupancy (traces with device records and the device's limits).
    LaunchGeometry,
    /// A `kernels` construct copying the scalars it uses back to the host after every launch.
    KernelsScalars,
}

impl Rule {
    pub fn id(self) -> &'static str {
        match self {
            Rule::DataRegion => "data_region",
            Rule::EnterExitData => "enter_exit_data",
            Rule::CreateInsteadOfCopy => "create_instead_of_copy",
            Rule::WholeArray => "whole_array",
            Rule::UpdateInLoop => "update_in_loop",
            Rule::AllocChurn => "alloc_churn",
            Rule::ShortKernels => "short_kernels",
            Rule::SequentialKernel => "sequential_kernel",
            Rule::AsyncQueues => "async_queues",
            Rule::InitEarly => "init_early",
            Rule::DeviceIdleGaps => "device_idle_gaps",
            Rule::LaunchGeometry => "launch_geometry",
            Rule::KernelsScalars => "kernels_scalars",
        }
    }

    /// Whether the rule is about data movement (the rules a well-structured program must not
    /// trigger).
    pub fn is_data_rule(self) -> bool {
        matches!(
            self,
            Rule::DataRegion
                | Rule::EnterExitData
                | Rule::CreateInsteadOfCopy
                | Rule::WholeArray
                | Rule::UpdateInLoop
                | Rule::AllocChurn
                | Rule::KernelsScalars
        )
    }
}

/// Where the change goes.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct FindingLocation {
    pub file: Option<String>,
    pub line: Option<i64>,
    pub end_line: Option<i64>,
    pub function: Option<String>,
}

impl FindingLocation {
    pub(crate) fn of(c: &Construct) -> Self {
        FindingLocation {
            file: c.location.file.clone(),
            line: c.location.line,
            end_line: c.location.end_line,
            function: c.location.function.clone(),
        }
    }

    /// `laplace2d.c:57 (main)`.
    pub fn display(&self) -> String {
        let file = self.file.as_deref().unwrap_or("<unknown file>");
        let mut s = match (self.line, self.end_line) {
            (Some(l), Some(e)) if e > l => format!("{file}:{l}-{e}"),
            (Some(l), _) => format!("{file}:{l}"),
            _ => file.to_string(),
        };
        if let Some(f) = &self.function {
            s.push_str(&format!(" ({f})"));
        }
        s
    }
}

/// The measurements behind a finding.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct Evidence {
    /// Occurrences (transfers, launches, allocations...) the finding is about.
    pub count: u64,
    pub bytes: u64,
    /// Host time of those occurrences.
    pub time_ns: u64,
    /// The same in words, one fact a line.
    pub details: Vec<String>,
}

/// One piece of advice.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub title: String,
    pub location: FindingLocation,
    pub evidence: Evidence,
    /// Host time the change would remove, as estimated from the trace.
    pub estimated_saving_ns: u64,
    /// The edit to make, in OpenACC terms.
    pub change: String,
    /// Events that show the problem (first occurrences), for a UI to jump to.
    pub events: Vec<EventRef>,
    /// The time span over which the problem occurs (first to last occurrence), monotonic ns.
    pub time_ranges: Vec<(u64, u64)>,
}

/// One advice rule: reads a [`Profile`] and adds its [`Finding`]s. Each lives in a file of its
/// own under [`rules`], with unit tests on hand-built profiles; [`advise`] runs them in the
/// order of [`RULES`].
pub trait AdviceRule {
    /// The [`Rule`] ids its findings carry.
    fn rules(&self) -> &'static [Rule];

    /// Adds the findings for `p` to `out`. `claimed` holds what earlier rules advised on (the
    /// data-region rules claim variables and constructs), so that no change is advised twice.
    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>);
}

/// Every rule, in the order they run (the data-region rules first: the others read what they
/// claimed).
pub const RULES: [&(dyn AdviceRule + Sync); 12] = [
    &rules::DataRegion,
    &rules::CreateInsteadOfCopy,
    &rules::WholeArray,
    &rules::UpdateInLoop,
    &rules::AllocChurn,
    &rules::KernelsScalars,
    &rules::ShortKernels,
    &rules::SequentialKernel,
    &rules::AsyncQueues,
    &rules::InitEarly,
    &rules::DeviceIdleGaps,
    &rules::LaunchGeometryRule,
];

/// Runs every rule and returns the findings, largest estimated saving first.
pub fn advise(p: &Profile) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut claimed = Claimed::default();
    for rule in RULES {
        rule.check(p, &mut claimed, &mut out);
    }
    // No change saves more than the whole run took.
    let wall = p.summary.wall_ns;
    if wall > 0 {
        for f in &mut out {
            f.estimated_saving_ns = f.estimated_saving_ns.min(wall);
        }
    }
    out.sort_by(|a, b| {
        b.estimated_saving_ns
            .cmp(&a.estimated_saving_ns)
            .then(a.rule.cmp(&b.rule))
            .then(a.location.line.cmp(&b.location.line))
    });
    out
}

/// What the data-region rules claimed, so that other rules do not repeat the same advice.
#[derive(Default, Debug)]
pub struct Claimed {
    /// Variable names.
    pub variables: HashSet<String>,
    /// Indices into [`Profile::constructs`].
    pub constructs: HashSet<usize>,
}

impl Claimed {
    pub fn merge(&mut self, other: Claimed) {
        self.variables.extend(other.variables);
        self.constructs.extend(other.constructs);
    }
}

/// Per variable name: its transfers by compute constructs.
pub(crate) struct VarTraffic<'a> {
    name: String,
    sites: Vec<&'a TransferSite>,
    /// What the hashes of its transfers' bytes showed, both directions (all zero without).
    content: VarContent,
}

/// What hashing the bytes of one array's transfers showed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct VarContent {
    uploads: u64,
    uploads_held: u64,
    downloads: u64,
    downloads_unchanged: u64,
    /// Whether the array's first use began with an upload (its construct read the host's
    /// bytes), and whether that use changed it.
    first_uploaded: Option<bool>,
    first_changed: Option<bool>,
}

impl VarContent {
    /// Sums the content statistics of the variables `sites` moved.
    fn of(p: &Profile, sites: &[&TransferSite]) -> Self {
        let mut seen: Vec<usize> = Vec::new();
        let mut out = VarContent::default();
        for s in sites {
            if seen.contains(&s.variable) {
                continue;
            }
            seen.push(s.variable);
            let v = &p.variables[s.variable];
            let Some(c) = v.content else { continue };
            match v.direction {
                Direction::HostToDevice => {
                    out.uploads += c.hashed;
                    out.uploads_held += c.already_held;
                }
                Direction::DeviceToHost => {
                    out.downloads += c.hashed;
                    out.downloads_unchanged += c.unchanged;
                }
            }
            out.first_uploaded = out.first_uploaded.or(c.first_uploaded);
            out.first_changed = out.first_changed.or(c.first_changed);
        }
        out
    }

    fn known(&self) -> bool {
        self.uploads + self.downloads > 0
    }

    /// The evidence in words: `8 of 8 uploads carried bytes the device already held`.
    pub(crate) fn describe(&self) -> Option<String> {
        if !self.known() {
            return None;
        }
        let mut parts = Vec::new();
        if self.uploads > 0 {
            parts.push(format!(
                "{} of {} uploads carried bytes the device already held",
                self.uploads_held, self.uploads
            ));
        }
        if self.downloads > 0 {
            parts.push(format!(
                "{} of {} downloads brought back bytes the device had not changed",
                self.downloads_unchanged, self.downloads
            ));
        }
        Some(parts.join("; "))
    }

    /// Uploads after the first that carried bytes the device did not hold: the host changed
    /// the array between them.
    pub(crate) fn host_changes(&self) -> u64 {
        (self.uploads - self.uploads_held).saturating_sub(1)
    }
}

impl VarTraffic<'_> {
    fn count(&self, d: Direction) -> u64 {
        self.sites
            .iter()
            .filter(|s| s.direction == d)
            .map(|s| s.count)
            .sum()
    }
    fn time(&self, d: Direction) -> u64 {
        self.sites
            .iter()
            .filter(|s| s.direction == d)
            .map(|s| s.time.total_ns)
            .sum()
    }
    fn bytes(&self) -> u64 {
        self.sites.iter().map(|s| s.bytes).sum()
    }
    /// The data clause a data region should give this variable: from the content of its
    /// transfers where the trace has their hashes (`used_after`: whether the program uses the
    /// array after the region; `written_first`: whether its first construct assigns to it
    /// before reading it; both from the source), else judged from its traffic.
    fn clause_from(&self, used_after: Option<bool>, written_first: Option<bool>) -> &'static str {
        let c = &self.content;
        if !c.known() || c.first_uploaded.is_none() {
            return self.clause();
        }
        if c.downloads_unchanged == c.downloads && c.first_uploaded == Some(true) {
            // The device never changed it (or never gave it back): what goes in is all the
            // program needed.
            return "copyin";
        }
        match (c.first_uploaded, c.first_changed, used_after) {
            // Its first construct did not read the host's bytes (it created the array), or
            // rewrote it (its body assigns to it before reading it), and nothing after the
            // region reads it: the device alone needs it.
            (Some(false), _, Some(false)) => "create",
            (Some(true), Some(true), Some(false)) if written_first == Some(true) => "create",
            // Created by its first construct, and read after the region.
            (Some(false), _, _) => "copyout",
            _ => "copy",
        }
    }

    /// The data clause a data region should give this variable, judged from its traffic:
    /// moved both ways and first moved device->host (produced on the device) = a temporary.
    fn clause(&self) -> &'static str {
        let (up, down) = (
            self.count(Direction::HostToDevice),
            self.count(Direction::DeviceToHost),
        );
        let first = self
            .sites
            .iter()
            .min_by_key(|s| (s.first_ns, s.direction == Direction::DeviceToHost))
            .map(|s| s.direction);
        match (up > 0, down > 0) {
            (true, true) if first == Some(Direction::DeviceToHost) => "create",
            (true, true) => "copy",
            (true, false) => "copyin",
            _ => "copyout",
        }
    }
    /// Transfer time a data region removes: every transfer but the first upload and the last
    /// download that the clause keeps.
    fn saving(&self) -> u64 {
        self.saving_with(self.clause())
    }

    fn saving_with(&self, clause: &str) -> u64 {
        let keep = |d: Direction, kept: bool| {
            let n = self.count(d);
            let t = self.time(d);
            if kept && n > 0 {
                t - t / n
            } else {
                t
            }
        };
        keep(Direction::HostToDevice, matches!(clause, "copy" | "copyin"))
            + keep(
                Direction::DeviceToHost,
                matches!(clause, "copy" | "copyout"),
            )
    }
    /// The array's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its first transfer's site.
    pub(crate) fn first_site(&self) -> Option<&TransferSite> {
        self.sites.iter().min_by_key(|s| s.first_ns).copied()
    }

    fn events(&self) -> Vec<EventRef> {
        let mut v: Vec<EventRef> = self
            .sites
            .iter()
            .flat_map(|s| s.samples.iter().copied())
            .collect();
        v.sort_by_key(|r| r.start_ns);
        v.truncate(MAX_SAMPLES);
        v
    }
    fn span(&self) -> (u64, u64) {
        let s = self.sites.iter().map(|s| s.first_ns).min().unwrap_or(0);
        let e = self.sites.iter().map(|s| s.last_ns).max().unwrap_or(0);
        (s, e)
    }
}

pub(crate) fn construct_lines(cs: &[&Construct]) -> String {
    let mut lines: Vec<String> = cs.iter().map(|c| c.location.short()).collect();
    lines.sort();
    lines.dedup();
    lines.join(", ")
}
