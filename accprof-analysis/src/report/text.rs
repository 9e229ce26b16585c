//! The text report: a summary, the top constructs, the transfers per variable, then the
//! per-construct detail in NV_ACC_TIME's layout and wording.

use super::{ReportOptions, Section};
use crate::format::{bytes, duration, percent, rate, thousands, us};
use crate::model::*;
use accprof_abi::acc_device_t;
use std::collections::BTreeMap;
use std::fmt::Write;

/// What each number measures, printed at the top of every report (and in `--help`).
pub const MEASURES: &str = "\
What the times measure: every time is marked [host] or [device].
  [host]   measured on the host thread, between the OpenACC runtime's start and end callbacks:
           for a compute region, from its start to its end, including its implicit data
           movement and, when it is synchronous, waiting for its kernels;
           for \"kernel launched\", the launch call only (not the kernel's run on the device);
           for a transfer, the enqueue_upload / enqueue_download call.
  [device] measured on the device (kernel execution, copy engine time), from CUPTI's activity
           records when the trace has them; preferred wherever they exist, as NV_ACC_TIME does.
  NV_ACC_TIME prints device times from CUPTI; a [host] total is the host's view of the same work.";

/// What the times of a run on the bundled runtime's emulated device are.
pub const EMULATED: &str = "this run's device was accprof's emulated one (separate memory on the host): each kernel ran inside its launch call on host threads, and each transfer copied between host buffers; the times show where a GPU run would copy and launch, not how long a GPU would take";

/// Renders the whole report.
pub fn render(sections: &[Section], merged: Option<&Profile>, opts: ReportOptions) -> String {
    let mut out = String::new();
    out.push_str(MEASURES);
    out.push('\n');
    let several = sections.len() > 1;
    for s in sections {
        out.push('\n');
        if several {
            let _ = writeln!(
                out,
                "==== {} ({}) ====",
                s.label,
                s.profile
                    .sources
                    .first()
                    .map(|x| x.path.as_str())
                    .unwrap_or("")
            );
        }
        render_profile(&mut out, &s.profile, opts);
    }
    if let Some(m) = merged {
        out.push('\n');
        super::ranks::render_merged_header(&mut out, sections, m);
        render_profile(&mut out, m, opts);
        super::ranks::render_rank_stats(&mut out, sections, opts.top);
    }
    out
}

/// One profile: header line, warnings, summary, top constructs, variables, NV_ACC_TIME detail.
pub fn render_profile(out: &mut String, p: &Profile, opts: ReportOptions) {
    if p.sources.len() > 1 {
        let _ = writeln!(out, "Traces: the {} files listed above", p.sources.len());
    }
    for src in p.sources.iter().take(1).filter(|_| p.sources.len() == 1) {
        let args = if src.args.is_empty() {
            src.exe.clone()
        } else {
            src.args.join(" ")
        };
        let _ = writeln!(
            out,
            "Trace: {}  ({}, {}{})",
            src.path,
            args,
            src.rank_label(),
            if src.hostname.is_empty() {
                String::new()
            } else {
                format!(", host {}", src.hostname)
            }
        );
    }
    for w in &p.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if p.is_empty() {
        out.push_str("\nThe trace holds no OpenACC events: the program ran no OpenACC construct while the tool was loaded.\n");
        return;
    }
    if crate::host_fallback::ran_on_emulated_device(p) {
        let _ = writeln!(out, "Emulated device: {}", EMULATED);
    }
    summary(out, p);
    top_constructs(out, p, opts.top);
    nvtx_ranges(out, p, opts.top);
    variables(out, p);
    device_memory(out, p);
    nv_acc_time(out, p);
}

/// Device memory in use: per device its high-water mark, when, the arrays holding it, and a
/// line drawing bytes in use over the run.
fn device_memory(out: &mut String, p: &Profile) {
    if p.device_memory.iter().all(|d| d.peak_bytes == 0) {
        return;
    }
    let start = p
        .sources
        .first()
        .map_or(p.summary.first_ns, |s| s.start_monotonic_ns);
    out.push_str("\nDevice memory in use\n");
    for d in p.device_memory.iter().filter(|d| d.peak_bytes > 0) {
        let dev = d
            .device
            .map_or_else(|| "device ?".to_string(), |n| format!("device {n}"));
        let _ = writeln!(
            out,
            "  {dev}: peak {} at {} ({} live; {}, {} still allocated at the end)",
            crate::format::bytes(d.peak_bytes),
            crate::format::duration(d.peak_ns.saturating_sub(start)),
            count(d.arrays_at_peak, "array"),
            count(
                d.allocations,
                if d.events == "alloc/free" {
                    "allocation"
                } else {
                    "create"
                }
            ),
            crate::format::bytes(d.in_use_at_end),
        );
        for h in &d.largest_at_peak {
            let at = match (&h.file, h.line) {
                (Some(f), Some(l)) => format!("  ({}:{l})", f.rsplit('/').next().unwrap_or(f)),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "    {:>10}  {}{at}",
                crate::format::bytes(h.bytes),
                h.name
            );
        }
        if d.arrays_at_peak > d.largest_at_peak.len() as u64 {
            let _ = writeln!(
                out,
                "    ... and {} smaller",
                d.arrays_at_peak - d.largest_at_peak.len() as u64
            );
        }
        let _ = writeln!(
            out,
            "    over time: {}",
            sparkline(&d.series, d.peak_bytes, 60)
        );
        if d.unmatched_frees > 0 {
            let _ = writeln!(
                out,
                "    ({} of memory allocated before recording began left out)",
                count(d.unmatched_frees, "free")
            );
        }
    }
}

/// "1 array", "3 arrays".
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `series` (time, value) as `width` block characters, each the largest value in its column.
fn sparkline(series: &[(u64, u64)], max: u64, width: usize) -> String {
    const BLOCKS: [char; 8] = [
        '\u{2581}', '\u{2582}', '\u{2583}', '\u{2584}', '\u{2585}', '\u{2586}', '\u{2587}',
        '\u{2588}',
    ];
    let (Some(first), Some(last)) = (
        series.iter().map(|p| p.0).min(),
        series.iter().map(|p| p.0).max(),
    ) else {
        return String::new();
    };
    if width == 0 {
        return String::new();
    }
    let span = (last - first).max(1);
    let mut cols = vec![None::<u64>; width];
    for &(t, v) in series {
        let c = (((t - first) as u128 * (width as u128 - 1)) / span as u128) as usize;
        let c = c.min(width - 1);
        cols[c] = Some(cols[c].map_or(v, |m: u64| m.max(v)));
    }
    // A column with no change holds the value before it.
    let mut prev = 0;
    cols.iter()
        .map(|c| {
            let v = c.unwrap_or(prev);
            prev = v;
            if v == 0 {
                ' '
            } else {
                BLOCKS[(((v as u128 * 7) / max.max(1) as u128) as usize).min(7)]
            }
        })
        .collect()
}

fn summary(out: &mut String, p: &Profile) {
    let s = &p.summary;
    let wall = s.wall_ns;
    let row = |out: &mut String, name: &str, t: u64, extra: String| {
        let _ = writeln!(
            out,
            "  {name:<34}{:>12} {:>7}  {extra}",
            duration(t),
            percent(t, wall)
        );
    };
    let tag = |t: &Timing| format!("[{}]", t.source.label());
    out.push_str("\nSummary\n");
    if crate::host_fallback::ran_on_host(p) {
        let _ = writeln!(
            out,
            "  Host fallback: {}.",
            crate::host_fallback::EXPLANATION
        );
    }
    let _ = writeln!(
        out,
        "  {:<34}{:>12}           {}",
        "wall time",
        duration(wall),
        if s.wall_from_footer {
            "from the tool's start to the program's end"
        } else {
            "span of the recorded events"
        }
    );
    row(
        out,
        "compute constructs [host]",
        s.compute.total_ns,
        format!("{} reached", thousands(s.compute.count)),
    );
    if s.kernels.source == TimeSource::Device {
        row(
            out,
            "kernels [device]",
            s.kernels.total_ns,
            format!("{} kernels run on the device", thousands(s.kernels.count)),
        );
        if s.kernels_host.count > 0 {
            row(
                out,
                "  launch calls [host]",
                s.kernels_host.total_ns,
                format!("{} launches", thousands(s.kernels_host.count)),
            );
        }
    } else if crate::host_fallback::ran_on_emulated_device(p) {
        // The emulated device runs each kernel inside its launch call.
        row(
            out,
            "kernels [host, emulated]",
            s.kernels.total_ns,
            format!(
                "{} launches, each running its kernel on host threads: not a GPU's time",
                thousands(s.kernels.count)
            ),
        );
    } else {
        row(
            out,
            "kernel launches [host]",
            s.kernels.total_ns,
            format!(
                "{} launches (launch calls only)",
                thousands(s.kernels.count)
            ),
        );
    }
    let xfers =
        s.uploads.count.max(s.uploads_host.count) + s.downloads.count.max(s.downloads_host.count);
    let xfer_tag =
        if s.uploads.source == TimeSource::Device || s.downloads.source == TimeSource::Device {
            "[device]"
        } else {
            "[host]"
        };
    row(
        out,
        &format!("data transfers {xfer_tag}"),
        s.transfers_ns(),
        format!(
            "{} transfers, {}, {}",
            thousands(xfers),
            bytes(s.transfer_bytes()),
            rate(gbps(s.transfer_bytes(), s.transfers_ns()))
        ),
    );
    for (name, t, host, b) in [
        ("host->device", &s.uploads, &s.uploads_host, s.upload_bytes),
        (
            "device->host",
            &s.downloads,
            &s.downloads_host,
            s.download_bytes,
        ),
    ] {
        let n = t.count.max(host.count);
        row(
            out,
            &format!("  {name} {}", tag(t)),
            t.total_ns,
            format!(
                "{} transfers, {}, {}",
                thousands(n),
                bytes(b),
                rate(gbps(b, t.total_ns))
            ),
        );
        if t.source == TimeSource::Device && host.count > 0 {
            row(
                out,
                "    enqueue calls [host]",
                host.total_ns,
                format!("{} enqueues", thousands(host.count)),
            );
        }
    }
    if s.memsets.count > 0 {
        row(
            out,
            "memsets [device]",
            s.memsets.total_ns,
            format!(
                "{} memsets, {}",
                thousands(s.memsets.count),
                bytes(s.memset_bytes)
            ),
        );
    }
    row(
        out,
        "data constructs/directives [host]",
        s.data_constructs.total_ns,
        format!(
            "{} reached (data, enter/exit data, update)",
            thousands(s.data_constructs.count)
        ),
    );
    row(
        out,
        "waits [host]",
        s.waits.total_ns,
        format!("{} waits", thousands(s.waits.count)),
    );
    row(
        out,
        "device initialization [host]",
        s.device_init.total_ns,
        format!("{} times", s.device_init.count),
    );
    row(
        out,
        "untracked host time [host]",
        s.untracked_ns,
        "the program's own work, outside every OpenACC event".into(),
    );
    if s.device_records > 0 {
        let outside = if s.device_records_outside > 0 {
            format!(
                ", {} issued outside every OpenACC construct",
                thousands(s.device_records_outside)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {} device records (kernels, copies, memsets measured on the device){outside}",
            thousands(s.device_records)
        );
    }
    let _ = writeln!(
        out,
        "  {} events on {} thread(s){}",
        thousands(s.events),
        s.threads,
        if s.dropped_events > 0 {
            format!(", {} dropped", thousands(s.dropped_events))
        } else {
            String::new()
        }
    );
}

fn top_constructs(out: &mut String, p: &Profile, n: usize) {
    let top = p.top_constructs(n);
    if top.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nTop constructs by host time [host]");
    let loc_of = |c: &Construct| {
        format!(
            "{} {}",
            c.location.short(),
            c.location.function.as_deref().unwrap_or("")
        )
        .trim_end()
        .to_string()
    };
    // As wide as the longest location (a Fortran file and procedure easily pass 32), within
    // reason.
    let w = top
        .iter()
        .map(|(_, c)| loc_of(c).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(32, 60);
    let _ = writeln!(
        out,
        "  {:<w$} {:<22} {:>9} {:>12} {:>7} {:>11}",
        "location", "construct", "reached", "total", "%wall", "avg"
    );
    for (_, c) in top {
        let loc = loc_of(c);
        let times = c.times();
        let _ = writeln!(
            out,
            "  {:<w$} {:<22} {:>9} {:>12} {:>7} {:>11}",
            loc,
            c.label(),
            thousands(times),
            duration(c.time.total_ns),
            percent(c.time.total_ns, p.summary.wall_ns),
            duration(c.time.total_ns.checked_div(times.max(1)).unwrap_or(0))
        );
    }
}

/// The program's NVTX ranges: what each phase took, how much of it was OpenACC, and the
/// transfers and device work inside it.
fn nvtx_ranges(out: &mut String, p: &Profile, n: usize) {
    if p.nvtx_ranges.is_empty() && p.nvtx_marks.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nNVTX ranges: the program's own phases [host] (a range includes the ranges inside it)"
    );
    let label = |r: &NvtxRangeRow| {
        let l = r.label();
        if r.start_end {
            format!("{l} (start/end)")
        } else {
            l
        }
    };
    let rows: Vec<&NvtxRangeRow> = p.nvtx_ranges.iter().take(n.max(1) * 2).collect();
    let w = rows
        .iter()
        .map(|r| label(r).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(24, 48);
    let device = rows
        .iter()
        .any(|r| r.inside.device_copies > 0 || r.inside.kernel_ns > 0);
    let mut line = format!(
        "  {:<w$} {:>7} {:>11} {:>7} {:>11} {:>11}  {:<24}",
        "range", "count", "total", "%wall", "OpenACC", "outside", "transfers [host]"
    );
    if device {
        let _ = write!(line, "  {:<24} {:>11}", "copies [device]", "kernels");
    }
    let _ = writeln!(out, "{}", line.trim_end());
    for r in rows {
        let w_ = &r.inside;
        let (acc, outside) = if r.start_end {
            ("-".to_string(), "-".to_string())
        } else {
            (
                duration(w_.openacc_ns),
                duration(r.time.total_ns.saturating_sub(w_.openacc_ns)),
            )
        };
        let transfers = if w_.transfers == 0 {
            "-".to_string()
        } else {
            format!(
                "{} {}, {}",
                thousands(w_.transfers),
                bytes(w_.transfer_bytes),
                duration(w_.transfer_ns)
            )
        };
        let mut line = format!(
            "  {:<w$} {:>7} {:>11} {:>7} {:>11} {:>11}  {:<24}",
            label(r),
            thousands(r.time.count),
            duration(r.time.total_ns),
            percent(r.time.total_ns, p.summary.wall_ns),
            acc,
            outside,
            transfers
        );
        if device {
            let copies = if w_.device_copies == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} {}, {}",
                    thousands(w_.device_copies),
                    bytes(w_.device_copy_bytes),
                    duration(w_.device_copy_ns)
                )
            };
            let _ = write!(line, "  {:<24} {:>11}", copies, duration(w_.kernel_ns));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if p.nvtx_ranges.len() > n.max(1) * 2 {
        let _ = writeln!(
            out,
            "  ... and {} more ranges",
            p.nvtx_ranges.len() - n.max(1) * 2
        );
    }
    if !p.nvtx_marks.is_empty() {
        let marks: Vec<String> = p
            .nvtx_marks
            .iter()
            .take(8)
            .map(|m| {
                let name = match &m.domain {
                    Some(d) => format!("{d}: {}", m.name),
                    None => m.name.clone(),
                };
                format!("{name} x{}", thousands(m.count))
            })
            .collect();
        let _ = writeln!(out, "  marks: {}", marks.join(", "));
    }
    out.push_str("  \"outside\": the range's time not spent in OpenACC constructs: the program's own host work\n");
}

fn variables(out: &mut String, p: &Profile) {
    if p.variables.is_empty() {
        return;
    }
    let folded = crate::runtime_internal::fold(&p.variables);
    let mut vs: Vec<&Variable> = folded.iter().collect();
    vs.sort_by(|a, b| {
        b.time
            .total_ns
            .cmp(&a.time.total_ns)
            .then(a.name.cmp(&b.name))
    });
    let _ = writeln!(out, "\nTransfers by variable");
    let _ = writeln!(
        out,
        "  {:<30} {:<13} {:>9} {:>12} {:>21} {:>12}",
        "variable", "direction", "count", "bytes", "time", "rate"
    );
    for v in vs {
        let _ = writeln!(
            out,
            "  {:<30} {:<13} {:>9} {:>12} {:>12} {:>8} {:>12}",
            v.name,
            v.direction.label(),
            thousands(v.count),
            bytes(v.bytes),
            duration(v.time.total_ns),
            format!("[{}]", v.time.source.label()),
            rate(v.gbps())
        );
    }
}

fn device_label(c: &Construct) -> String {
    let dev = c
        .location
        .device_type
        .map(|t| match acc_device_t(t as i32).name() {
            Some(n) => n.trim_start_matches("acc_device_").to_uppercase(),
            None if t == crate::host_fallback::EMULATED_DEVICE_TYPE => {
                "EMULATED (accprof's bundled runtime, host_nonshm)".to_string()
            }
            None => format!("acc_device_t {t} (a number the runtime's openacc.h defines)"),
        });
    match (dev, c.location.device_number) {
        (Some(d), Some(n)) => format!("{d}  devicenum={n}"),
        (Some(d), None) => d,
        (None, Some(n)) => format!("devicenum={n}"),
        (None, None) => String::new(),
    }
}

fn times_line(t: &Timing) -> String {
    format!(
        "{} time(us): total={} max={} min={} avg={}",
        t.source.label(),
        us(t.total_ns),
        us(t.max_ns),
        us(t.min_ns),
        us(t.avg_ns())
    )
}

fn times_word(n: u64) -> &'static str {
    if n == 1 {
        "time"
    } else {
        "times"
    }
}

fn line_text(l: Option<i64>) -> String {
    l.map(|l| l.to_string()).unwrap_or_else(|| "?".into())
}

fn geometry(k: &Kernel) -> String {
    let r = |v: Option<ValueRange>| match v {
        Some(r) if r.min == r.max => r.min.to_string(),
        Some(r) => format!("{}-{}", r.min, r.max),
        None => "?".into(),
    };
    let block = match k.num_workers {
        Some(w) if w.max > 1 => format!("{}x{}", r(k.vector_length), r(Some(w))),
        _ => r(k.vector_length),
    };
    let mut line = format!(
        "grid: [{}]  block: [{}]  ({})",
        r(k.num_gangs),
        block,
        k.name
    );
    if let Some(g) = &k.geometry {
        line.push_str("\n             ");
        line.push_str(&device_geometry(g));
    }
    line
}

/// What the device ran (CUPTI's kernel records): grid and block extents, registers, shared
/// memory, the blocks against the multiprocessors, and the theoretical occupancy.
fn device_geometry(g: &LaunchGeometry) -> String {
    let r = |v: &ValueRange| {
        if v.min == v.max {
            v.min.to_string()
        } else {
            format!("{}-{}", v.min, v.max)
        }
    };
    let dims = |d: &[ValueRange; 3]| d.iter().map(r).collect::<Vec<_>>().join("x");
    let mut s = format!(
        "device: grid {}  block {}  {} regs  {} smem",
        dims(&g.grid),
        dims(&g.block),
        r(&g.registers_per_thread),
        if g.shared_mem_bytes.min == g.shared_mem_bytes.max {
            bytes(g.shared_mem_bytes.max)
        } else {
            format!(
                "{}-{}",
                bytes(g.shared_mem_bytes.min),
                bytes(g.shared_mem_bytes.max)
            )
        }
    );
    if let Some(sm) = g.multiprocessors {
        let _ = write!(s, "  {} blocks on {sm} SMs", r(&g.blocks));
        if g.blocks.min < sm {
            let _ = write!(s, " ({} idle)", sm - g.blocks.min);
        }
    }
    if let Some(o) = &g.occupancy {
        let _ = write!(s, "  occupancy {:.0}%", o.percent);
        if o.percent < 100.0 {
            let _ = write!(s, " (limited by {})", o.limited_by.label());
        }
    }
    s
}

/// NV_ACC_TIME's "Accelerator Kernel Timing data", with host times labelled as such.
fn nv_acc_time(out: &mut String, p: &Profile) {
    let _ = writeln!(out, "\nAccelerator Kernel Timing data (NV_ACC_TIME layout)");
    // file -> (function, device) -> constructs
    let mut files: BTreeMap<String, BTreeMap<(String, String), Vec<&Construct>>> = BTreeMap::new();
    for c in &p.constructs {
        let file = c
            .location
            .file
            .clone()
            .unwrap_or_else(|| "<unknown file: the runtime gave no source location>".into());
        let func = c
            .location
            .function
            .clone()
            .unwrap_or_else(|| "<unknown function>".into());
        files
            .entry(file)
            .or_default()
            .entry((func, device_label(c)))
            .or_default()
            .push(c);
    }
    for (file, funcs) in files {
        let _ = writeln!(out, "{file}");
        let mut funcs: Vec<_> = funcs.into_iter().collect();
        funcs.sort_by_key(|(_, cs)| cs.iter().filter_map(|c| c.location.line).min());
        for ((func, dev), mut cs) in funcs {
            let _ = writeln!(out, "{}", format!("  {func}  {dev}").trim_end());
            let total: u64 = cs
                .iter()
                .filter(|c| c.kind != ConstructKind::Init)
                .map(|c| c.time.total_ns)
                .sum();
            let _ = writeln!(out, "    host time(us): {}", us(total));
            cs.sort_by_key(|c| (c.location.line, c.kind));
            for c in cs {
                construct(out, p, c);
            }
        }
    }
}

fn construct(out: &mut String, p: &Profile, c: &Construct) {
    let line = line_text(c.location.line);
    let head = match c.kind {
        _ if c.is_exit_only() => c.label().to_string(),
        ConstructKind::Init => format!(
            "device init reached {} {}",
            c.reached,
            times_word(c.reached)
        ),
        k => format!(
            "{} reached {} {}",
            k.label(),
            thousands(c.reached),
            times_word(c.reached)
        ),
    };
    let asyncs = if c.async_count > 0 {
        format!(" ({} async)", thousands(c.async_count))
    } else {
        String::new()
    };
    let _ = writeln!(out, "    {line}: {head}{asyncs}");
    let _ = writeln!(out, "        {}", times_line(&c.time));
    let mut kids: Vec<&ConstructChild> = c
        .children
        .iter()
        .filter(|k| !matches!(k.kind, ChildKind::Create | ChildKind::Delete))
        .collect();
    kids.sort_by_key(|k| (k.line, child_order(k.kind)));
    for k in kids {
        let l = line_text(k.line.or(c.location.line));
        match k.kind {
            ChildKind::Upload | ChildKind::Download => {
                let word = if k.kind == ChildKind::Upload {
                    "copyin"
                } else {
                    "copyout"
                };
                let _ = writeln!(
                    out,
                    "        {l}: data {word} transfers: {}  ({}, {})",
                    thousands(k.count),
                    bytes(k.bytes),
                    rate(gbps(k.bytes, k.time.total_ns))
                );
                let _ = writeln!(out, "             {}", times_line(&k.time));
                if k.time.source == TimeSource::Device && k.host_time.count > 0 {
                    let _ = writeln!(
                        out,
                        "             {}",
                        times_line(&k.host_time).replacen("time(us)", "enqueue time(us)", 1)
                    );
                }
            }
            ChildKind::Launch => {
                let _ = writeln!(
                    out,
                    "        {l}: kernel launched {} {}",
                    thousands(k.count),
                    times_word(k.count)
                );
                if let Some(kernel) = k.kernel.and_then(|i| p.kernels.get(i)) {
                    let _ = writeln!(out, "            {}", geometry(kernel));
                }
                if k.time.source == TimeSource::Device {
                    let _ = writeln!(out, "             {}", times_line(&k.time));
                    if k.host_time.count > 0 {
                        let _ = writeln!(
                            out,
                            "             {}",
                            times_line(&k.host_time).replacen("time(us)", "launch time(us)", 1)
                        );
                    }
                } else {
                    let _ = writeln!(
                        out,
                        "             {}",
                        times_line(&k.time).replacen("time(us)", "launch time(us)", 1)
                    );
                }
            }
            ChildKind::Wait => {
                let _ = writeln!(
                    out,
                    "        {l}: wait for the device {} {}",
                    thousands(k.count),
                    times_word(k.count)
                );
                let _ = writeln!(out, "             {}", times_line(&k.time));
            }
            ChildKind::Alloc => {
                let _ = writeln!(
                    out,
                    "        {l}: device allocations: {}  ({})",
                    thousands(k.count),
                    bytes(k.bytes)
                );
            }
            ChildKind::Free => {
                let _ = writeln!(out, "        {l}: device frees: {}", thousands(k.count));
            }
            ChildKind::Create | ChildKind::Delete => {}
        }
    }
}

fn child_order(k: ChildKind) -> u8 {
    match k {
        ChildKind::Alloc => 0,
        ChildKind::Create => 1,
        ChildKind::Upload => 2,
        ChildKind::Launch => 3,
        ChildKind::Wait => 4,
        ChildKind::Download => 5,
        ChildKind::Delete => 6,
        ChildKind::Free => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::sparkline;

    #[test]
    fn a_sparkline_takes_points_in_any_order() {
        let s = sparkline(&[(50, 4), (10, 8), (30, 0), (90, 8)], 8, 5);
        assert_eq!(s.chars().count(), 5);
        // A column without a point holds the value before it.
        assert_eq!(s, "\u{2588} \u{2584}\u{2584}\u{2588}");
        assert_eq!(sparkline(&[], 1, 5), "");
        assert_eq!(
            sparkline(&[(1, 9)], 1, 3).chars().count(),
            3,
            "a value above max"
        );
    }
}
