//! Advice: what to change in the program, found by rules over a [`Profile`].
//!
//! Each rule reads the profile's tables and yields [`Finding`]s with the source location, the
//! evidence, an estimate of the time the change would save and the change itself, worded like the
//! OpenACC guides ("11 Tips", the data-locality guide). [`advise`] returns them ordered by the
//! saving, largest first. A program that already keeps its data on the device gets none of the
//! data rules.

use crate::format::{bytes, duration, percent};
use crate::model::*;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

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
        }
    }

    /// Whether the rule is about data movement (the rules a well-structured program must not
    /// trigger).
    pub fn is_data_rule(self) -> bool {
        matches!(
            self,
            Rule::DataRegion | Rule::EnterExitData | Rule::CreateInsteadOfCopy | Rule::WholeArray | Rule::UpdateInLoop | Rule::AllocChurn
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
    fn of(c: &Construct) -> Self {
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

/// Runs every rule and returns the findings, largest estimated saving first.
pub fn advise(p: &Profile) -> Vec<Finding> {
    let mut out = Vec::new();
    let claimed = data_region_rules(p, &mut out);
    create_instead_of_copy(p, &claimed, &mut out);
    whole_array(p, &mut out);
    update_in_loop(p, &mut out);
    alloc_churn(p, &claimed, &mut out);
    short_kernels(p, &mut out);
    sequential_kernels(p, &mut out);
    async_queues(p, &mut out);
    init_early(p, &mut out);
    out.sort_by(|a, b| b.estimated_saving_ns.cmp(&a.estimated_saving_ns).then(a.rule.cmp(&b.rule)).then(a.location.line.cmp(&b.location.line)));
    out
}

/// What the data-region rules claimed, so that other rules do not repeat the same advice.
#[derive(Default)]
struct Claimed {
    variables: HashSet<String>,
    constructs: HashSet<usize>,
}

/// Per variable name: its transfers by compute constructs.
struct VarTraffic<'a> {
    name: String,
    sites: Vec<&'a TransferSite>,
}

impl VarTraffic<'_> {
    fn count(&self, d: Direction) -> u64 {
        self.sites.iter().filter(|s| s.direction == d).map(|s| s.count).sum()
    }
    fn time(&self, d: Direction) -> u64 {
        self.sites.iter().filter(|s| s.direction == d).map(|s| s.time.total_ns).sum()
    }
    fn bytes(&self) -> u64 {
        self.sites.iter().map(|s| s.bytes).sum()
    }
    /// The data clause a data region should give this variable, judged from its traffic:
    /// moved both ways and first moved device->host (produced on the device) = a temporary.
    fn clause(&self) -> &'static str {
        let (up, down) = (self.count(Direction::HostToDevice), self.count(Direction::DeviceToHost));
        let first = self.sites.iter().min_by_key(|s| (s.first_ns, s.direction == Direction::DeviceToHost)).map(|s| s.direction);
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
        let clause = self.clause();
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
            + keep(Direction::DeviceToHost, matches!(clause, "copy" | "copyout"))
    }
    fn events(&self) -> Vec<EventRef> {
        let mut v: Vec<EventRef> = self.sites.iter().flat_map(|s| s.samples.iter().copied()).collect();
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

fn data_region_rules(p: &Profile, out: &mut Vec<Finding>) -> Claimed {
    let mut claimed = Claimed::default();
    // Transfers of arrays by compute constructs, per variable name.
    let mut by_var: BTreeMap<String, Vec<&TransferSite>> = BTreeMap::new();
    for s in &p.transfer_sites {
        let Some(c) = p.construct(s.construct) else { continue };
        if c.kind != ConstructKind::Compute || s.max_bytes < MIN_ARRAY_BYTES || !s.same_range {
            continue;
        }
        by_var.entry(p.variables[s.variable].name.clone()).or_default().push(s);
    }
    // Repeated: moved again and again (a loop around the constructs).
    let repeated: Vec<VarTraffic> = by_var
        .into_iter()
        .map(|(name, sites)| VarTraffic { name, sites })
        .filter(|v| v.count(Direction::HostToDevice) >= 2 || v.count(Direction::DeviceToHost) >= 2)
        .collect();
    // Group by the function(s) of the constructs that move each variable.
    let mut per_function: BTreeMap<Option<String>, Vec<&VarTraffic>> = BTreeMap::new();
    let mut across: Vec<&VarTraffic> = Vec::new();
    for v in &repeated {
        let funcs: BTreeSet<Option<(Option<String>, Option<String>)>> = v
            .sites
            .iter()
            .map(|s| p.construct(s.construct).map(|c| (c.location.file.clone(), c.location.function.clone())))
            .collect();
        if funcs.len() == 1 {
            let f = v.sites.first().and_then(|s| p.construct(s.construct)).and_then(|c| c.location.function.clone());
            per_function.entry(f).or_default().push(v);
        } else {
            across.push(v);
        }
    }
    for (_, vars) in per_function {
        let constructs: BTreeSet<usize> = vars.iter().flat_map(|v| v.sites.iter().filter_map(|s| s.construct)).collect();
        let cs: Vec<&Construct> = constructs.iter().map(|&i| &p.constructs[i]).collect();
        let first_line = cs.iter().filter_map(|c| c.location.line).min();
        let last_line = cs.iter().filter_map(|c| c.location.end_line.or(c.location.line)).max();
        let first = cs.iter().min_by_key(|c| c.location.line).copied().expect("a variable has sites");
        let mut clauses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for v in &vars {
            clauses.entry(v.clause()).or_default().push(v.name.clone());
        }
        let pragma = clause_text(&clauses);
        let saving: u64 = vars.iter().map(|v| v.saving()).sum();
        let count: u64 = vars.iter().map(|v| v.sites.iter().map(|s| s.count).sum::<u64>()).sum();
        let xbytes: u64 = vars.iter().map(|v| v.bytes()).sum();
        let time: u64 = vars.iter().map(|v| v.time(Direction::HostToDevice) + v.time(Direction::DeviceToHost)).sum();
        let lines = match (first_line, last_line) {
            (Some(a), Some(b)) if cs.len() > 1 && b > a => format!("lines {a}-{b}"),
            (Some(a), Some(b)) if b > a => format!("the loop around lines {a}-{b}"),
            (Some(a), _) => format!("the loop around line {a}"),
            _ => "the loop around these constructs".into(),
        };
        let names: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
        let mut details = vec![format!(
            "{} moved {} times ({}) by the compute constructs at {}, costing {} of host time",
            names.join(", "),
            count,
            bytes(xbytes),
            construct_lines(&cs),
            duration(time)
        )];
        for v in &vars {
            details.push(format!(
                "{}: {} uploads, {} downloads; first moved {} -> {}",
                v.name,
                v.count(Direction::HostToDevice),
                v.count(Direction::DeviceToHost),
                v.sites.iter().min_by_key(|s| s.first_ns).map(|s| s.direction.label()).unwrap_or("?"),
                v.clause()
            ));
        }
        let mut loc = FindingLocation::of(first);
        loc.line = first_line;
        loc.end_line = last_line;
        let span = vars.iter().map(|v| v.span()).fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let mut events: Vec<EventRef> = vars.iter().flat_map(|v| v.events()).collect();
        events.sort_by_key(|r| r.start_ns);
        events.truncate(MAX_SAMPLES);
        out.push(Finding {
            rule: Rule::DataRegion,
            title: format!("{} copied to and from the device on every iteration", names.join(", ")),
            location: loc,
            evidence: Evidence { count, bytes: xbytes, time_ns: time, details },
            estimated_saving_ns: saving,
            change: format!(
                "wrap {lines} in `#pragma acc data {pragma}` (a data region around the loop) and use `present({})` on the compute constructs, so the arrays stay on the device between them{}{}",
                names.join(", "),
                if clauses.contains_key("copy") && !clauses.contains_key("create") {
                    "; an array that only holds intermediate results can be `create` instead of `copy`"
                } else {
                    ""
                },
                if names.iter().any(|n| n.starts_with("heap@")) {
                    // The runtime named nothing and no symbol holds a heap block: the name is the
                    // allocation line, which the user has to turn back into the pointer's name.
                    "; heap@FILE:LINE is the array allocated at that line: write its pointer and section (A[0:n]) in the clauses"
                } else {
                    ""
                }
            ),
            events,
            time_ranges: vec![span],
        });
        claimed.variables.extend(names);
        claimed.constructs.extend(constructs);
    }
    if !across.is_empty() {
        let constructs: BTreeSet<usize> = across.iter().flat_map(|v| v.sites.iter().filter_map(|s| s.construct)).collect();
        let cs: Vec<&Construct> = constructs.iter().map(|&i| &p.constructs[i]).collect();
        let first = cs.iter().min_by_key(|c| c.first_ns).copied().expect("a variable has sites");
        let mut enter: Vec<String> = Vec::new();
        let mut exit: Vec<String> = Vec::new();
        for v in &across {
            match v.clause() {
                "copy" => {
                    enter.push(format!("copyin({})", v.name));
                    exit.push(format!("copyout({})", v.name));
                }
                "copyin" => {
                    enter.push(format!("copyin({})", v.name));
                    exit.push(format!("delete({})", v.name));
                }
                "copyout" => {
                    enter.push(format!("create({})", v.name));
                    exit.push(format!("copyout({})", v.name));
                }
                _ => {
                    enter.push(format!("create({})", v.name));
                    exit.push(format!("delete({})", v.name));
                }
            }
        }
        let names: Vec<String> = across.iter().map(|v| v.name.clone()).collect();
        let funcs: BTreeSet<String> = cs.iter().map(|c| c.location.function.clone().unwrap_or_else(|| "?".into())).collect();
        let count: u64 = across.iter().map(|v| v.sites.iter().map(|s| s.count).sum::<u64>()).sum();
        let xbytes: u64 = across.iter().map(|v| v.bytes()).sum();
        let time: u64 = across.iter().map(|v| v.time(Direction::HostToDevice) + v.time(Direction::DeviceToHost)).sum();
        let span = across.iter().map(|v| v.span()).fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let mut events: Vec<EventRef> = across.iter().flat_map(|v| v.events()).collect();
        events.sort_by_key(|r| r.start_ns);
        events.truncate(MAX_SAMPLES);
        out.push(Finding {
            rule: Rule::EnterExitData,
            title: format!("{} copied again by each call of {}", names.join(", "), funcs.iter().cloned().collect::<Vec<_>>().join(", ")),
            location: FindingLocation::of(first),
            evidence: Evidence {
                count,
                bytes: xbytes,
                time_ns: time,
                details: vec![format!(
                    "{} moved {} times ({}) by the compute constructs at {} in {} functions, costing {}",
                    names.join(", "),
                    count,
                    bytes(xbytes),
                    construct_lines(&cs),
                    funcs.len(),
                    duration(time)
                )],
            },
            estimated_saving_ns: across.iter().map(|v| v.saving()).sum(),
            change: format!(
                "add `#pragma acc enter data {}` before the first call and `#pragma acc exit data {}` after the last one, and `present({})` on the constructs at {}",
                enter.join(" "),
                exit.join(" "),
                names.join(", "),
                construct_lines(&cs)
            ),
            events,
            time_ranges: vec![span],
        });
        claimed.variables.extend(names);
        claimed.constructs.extend(constructs);
    }
    claimed
}

fn clause_text(clauses: &BTreeMap<&str, Vec<String>>) -> String {
    let order = ["copy", "copyin", "copyout", "create"];
    order
        .iter()
        .filter_map(|k| clauses.get(k).map(|v| format!("{k}({})", v.join(", "))))
        .collect::<Vec<_>>()
        .join(" ")
}

fn construct_lines(cs: &[&Construct]) -> String {
    let mut lines: Vec<String> = cs.iter().map(|c| c.location.short()).collect();
    lines.sort();
    lines.dedup();
    lines.join(", ")
}

fn create_instead_of_copy(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    for r in &p.roundtrips {
        let v = &p.variables[r.variable];
        if claimed.variables.contains(&v.name) || r.count == 0 || r.bytes / r.count < MIN_ARRAY_BYTES {
            continue;
        }
        let (Some(from), Some(to)) = (p.construct(r.from_construct), p.construct(r.to_construct)) else { continue };
        let lines: Vec<i64> = [from.location.line, to.location.line, from.location.end_line, to.location.end_line].into_iter().flatten().collect();
        let (a, b) = (lines.iter().min().copied(), lines.iter().max().copied());
        let mut loc = FindingLocation::of(from);
        loc.line = a;
        loc.end_line = b;
        let span = (r.samples.first().map(|e| e.start_ns).unwrap_or(0), r.samples.last().map(|e| e.end_ns).unwrap_or(0));
        out.push(Finding {
            rule: Rule::CreateInsteadOfCopy,
            title: format!("{} copied out at {} and copied back in at {} unchanged", v.name, from.location.short(), to.location.short()),
            location: loc,
            evidence: Evidence {
                count: r.count * 2,
                bytes: r.bytes * 2,
                time_ns: r.time_ns,
                details: vec![format!(
                    "{} went device->host after {} and host->device again for {}, {} times ({} each way), costing {}",
                    v.name,
                    from.location.short(),
                    to.location.short(),
                    r.count,
                    bytes(r.bytes),
                    duration(r.time_ns)
                )],
            },
            estimated_saving_ns: r.time_ns,
            change: format!(
                "keep {name} on the device: wrap lines {} in `#pragma acc data create({name})` and use `present({name})` on both constructs instead of copyout/copyin (if the host never reads it, it is a device-only temporary)",
                match (a, b) {
                    (Some(a), Some(b)) => format!("{a}-{b}"),
                    _ => "of both constructs".into(),
                },
                name = v.name
            ),
            events: r.samples.clone(),
            time_ranges: vec![span],
        });
    }
}

fn whole_array(p: &Profile, out: &mut Vec<Finding>) {
    for s in &p.slice_runs {
        if s.transfers < 16 {
            continue;
        }
        let c = p.construct(s.construct);
        let loc = c.map(FindingLocation::of).unwrap_or_default();
        // Each transfer pays a fixed cost; the fastest slice is at least that cost.
        let saving = (s.transfers - s.runs) * s.time.min_ns;
        let per_run = s.bytes / s.runs.max(1);
        let clause = match (c.map(|c| c.kind), s.direction) {
            (Some(ConstructKind::Update), Direction::HostToDevice) => "update device",
            (Some(ConstructKind::Update), Direction::DeviceToHost) => "update self",
            (_, d) => d.copy_word(),
        };
        out.push(Finding {
            rule: Rule::WholeArray,
            title: format!("{} moved in {} small slices instead of whole", s.array, s.transfers),
            location: loc,
            evidence: Evidence {
                count: s.transfers,
                bytes: s.bytes,
                time_ns: s.time.total_ns,
                details: vec![format!(
                    "{} transfers {} of adjacent slices ({} each on average) in {} runs of {} per run, costing {}",
                    s.transfers,
                    s.direction.label(),
                    bytes(s.bytes / s.transfers.max(1)),
                    s.runs,
                    bytes(per_run),
                    duration(s.time.total_ns)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "copy the whole array in one transfer: replace the per-slice {clause} of {a} with one `{clause}({a}[0:n])` covering all {} per run (tip 9)",
                bytes(per_run),
                a = s.array
            ),
            events: s.samples.clone(),
            time_ranges: vec![(s.first_ns, s.last_ns)],
        });
    }
}

fn update_in_loop(p: &Profile, out: &mut Vec<Finding>) {
    for (ci, c) in p.constructs.iter().enumerate() {
        if c.kind != ConstructKind::Update || c.reached < 3 {
            continue;
        }
        let sites: Vec<&TransferSite> = p.transfer_sites.iter().filter(|s| s.construct == Some(ci) && s.max_bytes >= 64 * 1024 && s.same_range).collect();
        if sites.is_empty() {
            continue;
        }
        let names: Vec<String> = sites.iter().map(|s| p.variables[s.variable].name.clone()).collect();
        let count: u64 = sites.iter().map(|s| s.count).sum();
        let xbytes: u64 = sites.iter().map(|s| s.bytes).sum();
        let time: u64 = sites.iter().map(|s| s.time.total_ns).sum();
        let saving = time - time / c.reached.max(1);
        let dirs: BTreeSet<&str> = sites.iter().map(|s| if s.direction == Direction::HostToDevice { "device" } else { "self" }).collect();
        out.push(Finding {
            rule: Rule::UpdateInLoop,
            title: format!("update of whole {} on every iteration", names.join(", ")),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count,
                bytes: xbytes,
                time_ns: time,
                details: vec![format!(
                    "the update at {} ran {} times, moving {} ({} each time) in {}",
                    c.location.short(),
                    c.reached,
                    bytes(xbytes),
                    bytes(xbytes / c.reached.max(1)),
                    duration(time)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "move `#pragma acc update {} ({})` out of the loop (once after it, where the host needs the data), or update only the part the host reads each iteration, e.g. `update self({}[0:k])`",
                dirs.into_iter().collect::<Vec<_>>().join("/"),
                names.join(", "),
                names.first().map(|n| n.split('[').next().unwrap_or(n)).unwrap_or("a")
            ),
            events: c.samples.clone(),
            time_ranges: vec![(c.first_ns, c.last_ns)],
        });
    }
}

fn alloc_churn(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    for a in &p.allocs {
        let Some(b) = a.bytes else { continue };
        if a.allocs < 3 || a.frees < 3 || b < MIN_ARRAY_BYTES || a.construct.is_some_and(|c| claimed.constructs.contains(&c)) {
            continue;
        }
        let c = p.construct(a.construct);
        let loc = c.map(FindingLocation::of).unwrap_or_default();
        let saving = a.overhead_ns - a.overhead_ns / a.allocs.max(1);
        let at = c.map(|c| c.location.short()).unwrap_or_else(|| "?".into());
        out.push(Finding {
            rule: Rule::AllocChurn,
            title: format!("{} allocated and freed {} times at {}", bytes(b), a.allocs, at),
            location: loc,
            evidence: Evidence {
                count: a.allocs + a.frees,
                bytes: b * a.allocs,
                time_ns: a.overhead_ns,
                details: vec![format!(
                    "{} device allocations and {} frees of {} at {}; the data operations around them spent {} besides transfers",
                    a.allocs,
                    a.frees,
                    bytes(b),
                    at,
                    duration(a.overhead_ns)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "keep the allocation: `#pragma acc enter data create(...)` the {} array once before the loop, `present(...)` on the construct at {at}, and `#pragma acc exit data delete(...)` after the loop",
                bytes(b)
            ),
            events: a.samples.clone(),
            time_ranges: vec![(a.first_ns, a.last_ns)],
        });
    }
}

fn short_kernels(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns;
    for k in &p.kernels {
        let Some(c) = p.construct(k.construct) else { continue };
        if k.launches < 1000 || c.reached == 0 {
            continue;
        }
        let per_construct = c.time.total_ns / c.reached;
        if per_construct > 20_000 || c.time.total_ns * 10 < wall {
            continue;
        }
        // The launch call's host time: with device records `time` is the kernel's run instead.
        let overhead = if k.time.source == TimeSource::Device { k.host_time.min_ns } else { k.time.min_ns };
        let saving = (k.launches - k.async_launches) * overhead;
        if saving == 0 {
            continue;
        }
        out.push(Finding {
            rule: Rule::ShortKernels,
            title: format!("kernel {} is so short that launching it dominates", k.name),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: k.launches,
                bytes: 0,
                time_ns: c.time.total_ns,
                details: vec![format!(
                    "{} launches, {} per construct on average, of which the launch call alone takes at least {} ({} of the run in this construct)",
                    k.launches,
                    duration(per_construct),
                    duration(overhead),
                    percent(c.time.total_ns, wall)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "give each launch more work (fuse the loop at {} with its neighbours, or `collapse` nested loops), or add `async` so launches overlap",
                c.location.short()
            ),
            events: k.samples.clone(),
            time_ranges: vec![(k.first_ns, k.last_ns)],
        });
    }
}

/// Kernels a runtime launches on one gang by design, to finish a reduction: the shim's store of
/// the result into host memory, and NVHPC's `<kernel>__red` (PGI's naming). They are no
/// sequential user loop, and charging their construct's time to them would be wrong.
fn finishes_a_reduction(kernel: &str) -> bool {
    kernel == "accshim_store_reduction" || kernel.ends_with("__red")
}

fn sequential_kernels(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns.max(1);
    for k in &p.kernels {
        if finishes_a_reduction(&k.name) {
            continue;
        }
        let Some(c) = p.construct(k.construct) else { continue };
        if c.construct_type.as_deref() == Some("serial") {
            continue;
        }
        let one = |r: Option<ValueRange>| r.is_some_and(|r| r.max <= 1);
        let (g1, v1) = (one(k.num_gangs), one(k.vector_length));
        let share_needed = if g1 && v1 { 100 } else { 20 };
        if !(g1 || v1) || c.time.total_ns * share_needed < wall {
            continue;
        }
        let what = match (g1, v1) {
            (true, true) => "one gang and one vector lane",
            (true, false) => "one gang",
            _ => "one vector lane",
        };
        out.push(Finding {
            rule: Rule::SequentialKernel,
            title: format!("kernel {} ran on {what}", k.name),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: k.launches,
                bytes: 0,
                time_ns: c.time.total_ns,
                details: vec![format!(
                    "{} launches with num_gangs {} vector_length {}; the construct took {} ({} of the run)",
                    k.launches,
                    range_text(k.num_gangs),
                    range_text(k.vector_length),
                    duration(c.time.total_ns),
                    percent(c.time.total_ns, wall)
                )],
            },
            // Assumes the parallel loop runs at least 10x faster; the real gain depends on the loop.
            estimated_saving_ns: c.time.total_ns / 10 * 9,
            change: format!(
                "make the loop at {} parallel: privatize the arrays and scalars it writes (`private(...)`, tips 1 and 5), make the loop rectangular (tip 3), then `#pragma acc parallel loop gang vector`",
                c.location.short()
            ),
            events: k.samples.clone(),
            time_ranges: vec![(k.first_ns, k.last_ns)],
        });
    }
}

fn range_text(r: Option<ValueRange>) -> String {
    match r {
        Some(r) if r.min == r.max => r.min.to_string(),
        Some(r) => format!("{}-{}", r.min, r.max),
        None => "?".into(),
    }
}

fn async_queues(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns;
    let mut waited = 0u64;
    let mut lines: Vec<&Construct> = Vec::new();
    let mut events = Vec::new();
    for c in &p.constructs {
        if c.kind != ConstructKind::Compute || c.async_count > 0 {
            continue;
        }
        let (n, _, t) = c.child_total(ChildKind::Wait);
        let w = if n > 0 { t } else { c.own_time_ns() };
        if w > 0 {
            waited += w;
            lines.push(c);
            events.extend(c.samples.iter().copied().take(2));
        }
    }
    let host_work = p.summary.untracked_ns;
    if wall == 0 || waited * 20 < wall || host_work * 20 < wall {
        return;
    }
    lines.sort_by_key(|c| std::cmp::Reverse(c.time.total_ns));
    let first = lines[0];
    let first_ns = lines.iter().map(|c| c.first_ns).min().unwrap_or(0);
    let last_ns = lines.iter().map(|c| c.last_ns).max().unwrap_or(0);
    lines.truncate(4);
    out.push(Finding {
        rule: Rule::AsyncQueues,
        title: "the host waits for the device while it has work of its own".into(),
        location: FindingLocation::of(first),
        evidence: Evidence {
            count: lines.len() as u64,
            bytes: 0,
            time_ns: waited,
            details: vec![format!(
                "{} waiting in synchronous compute constructs ({}) and {} of host work outside OpenACC that could overlap it",
                duration(waited),
                construct_lines(&lines),
                duration(host_work)
            )],
        },
        estimated_saving_ns: waited.min(host_work),
        change: format!(
            "add `async(1)` to the constructs at {} and `#pragma acc wait(1)` just before the host needs their results, so host work and device work overlap",
            construct_lines(&lines)
        ),
        events,
        time_ranges: vec![(first_ns, last_ns)],
    });
}

fn init_early(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns;
    let init = p.summary.device_init.total_ns;
    if wall == 0 || init * 4 < wall {
        return;
    }
    let c = p.constructs.iter().find(|c| c.kind == ConstructKind::Init);
    out.push(Finding {
        rule: Rule::InitEarly,
        title: "device initialization takes a large part of the run".into(),
        location: c.map(FindingLocation::of).unwrap_or_default(),
        evidence: Evidence {
            count: p.summary.device_init.count,
            bytes: 0,
            time_ns: init,
            details: vec![format!(
                "device initialization took {} of a {} run ({}), inside the first construct that needed the device",
                duration(init),
                duration(wall),
                percent(init, wall)
            )],
        },
        estimated_saving_ns: init,
        change: "initialize the device early: call `acc_init(acc_device_default)` (or `#pragma acc init`) at the start of main, before the part you time, so the first construct does not pay for it".into(),
        events: c.map(|c| c.samples.clone()).unwrap_or_default(),
        time_ranges: c.map(|c| vec![(c.first_ns, c.last_ns)]).unwrap_or_default(),
    });
}
