//! Every view of a trace gives the same counts and totals: `accprof report --format json`,
//! `accprof export` (Chrome JSON) and `accprof plot` (the SVG's texts), for every sample trace in
//! traces/ (GPU traces with device records included) and for synthetic traces of the shapes the
//! samples lack. The comparison is accprof-testkit's `check_consistent`, which the TUI's tests
//! call with their tables too.

mod tools;

use accprof_analysis::format::duration_compact;
use accprof_testkit::consistency::{check_consistent, ViewFigures};
use accprof_testkit::laplace::{self, Shape, SynthConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tools::synth::{laplace_like, Synth};

fn sample_traces() -> Vec<PathBuf> {
    let root = tools::workspace_root().join("traces");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("gpu")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "trace") {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn json_of(args: &[&str]) -> Value {
    let o = tools::run(args);
    assert!(
        o.status.success(),
        "accprof {args:?}: {}",
        tools::stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("accprof {args:?}: not JSON: {e}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The report's figures, and how many constructs it has with any time (the plot shows at most
/// 15 bars, so construct figures are compared only below that).
fn report_figures(trace: &Path) -> (ViewFigures, usize) {
    let j = json_of(&["report", "--format", "json", "-q", trace.to_str().unwrap()]);
    let p = &j["traces"][0]["profile"];
    let s = &p["summary"];
    let mut f = ViewFigures::new("report");
    f.set("events", u(&s["events"]))
        .set("compute constructs", u(&s["compute"]["count"]))
        .set("compute construct ns", u(&s["compute"]["total_ns"]))
        .set("launches", u(&s["kernels_host"]["count"]))
        .set("uploads", u(&s["uploads_host"]["count"]))
        .set("downloads", u(&s["downloads_host"]["count"]))
        .set("device records", u(&s["device_records"]))
        .set("device inits", u(&s["device_init"]["count"]));
    let constructs = p["constructs"].as_array().unwrap();
    let timed: Vec<&Value> = constructs
        .iter()
        .filter(|c| u(&c["time"]["total_ns"]) > 0)
        .collect();
    if timed.len() <= 15 {
        f.set("constructs shown", timed.len());
        // The plot writes "(xN)" for constructs reached more than once.
        f.set(
            "constructs reached more than once",
            timed
                .iter()
                .map(|c| u(&c["reached"]))
                .filter(|&n| n > 1)
                .sum::<u64>(),
        );
    }
    (f, timed.len())
}

fn export_figures(trace: &Path) -> ViewFigures {
    let j = json_of(&["export", "-o", "-", trace.to_str().unwrap()]);
    let events = j["traceEvents"].as_array().unwrap();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let of = |name: &str| events.iter().filter(|e| e["args"]["event"] == name).count();
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let compute_ns: u64 = slices
        .iter()
        .filter(|e| e["args"]["event"] == "acc_ev_compute_construct_start")
        .map(|e| ns(&e["dur"]))
        .sum();
    let start = slices.iter().map(|e| ns(&e["ts"])).min().unwrap_or(0);
    let end = slices
        .iter()
        .map(|e| ns(&e["ts"]) + ns(&e["dur"]))
        .max()
        .unwrap_or(0);
    let mut f = ViewFigures::new("export");
    f.set(
        "events",
        slices.len() + events.iter().filter(|e| e["ph"] == "i").count(),
    )
    .set("compute constructs", of("acc_ev_compute_construct_start"))
    .set("compute construct ns", compute_ns)
    .set("launches", of("acc_ev_enqueue_launch_start"))
    .set("uploads", of("acc_ev_enqueue_upload_start"))
    .set("downloads", of("acc_ev_enqueue_download_start"))
    .set(
        "device records",
        slices
            .iter()
            .filter(|e| e["cat"].as_str().is_some_and(|c| c.starts_with("device,")))
            .count(),
    )
    .set("device inits", of("acc_ev_device_init_start"))
    .set(
        "lanes",
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
            .count(),
    );
    if !slices.is_empty() {
        f.set("timeline span", duration_compact(end - start));
    }
    f
}

fn plot_figures(trace: &Path, dir: &Path) -> ViewFigures {
    let out = dir.join(format!(
        "{}.svg",
        trace.file_name().unwrap().to_string_lossy()
    ));
    let o = tools::run(&["plot", "-o", out.to_str().unwrap(), trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", tools::stderr(&o));
    let svg = std::fs::read_to_string(&out).unwrap();
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            Some(
                t.split_once('>')?
                    .1
                    .split_once("</text>")?
                    .0
                    .trim()
                    .replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
            )
        })
        .collect();
    let bars_from = texts
        .iter()
        .position(|t| t.contains("per construct (longest first)"))
        .expect("a breakdown")
        + 1;
    let timeline = texts
        .iter()
        .position(|t| t.starts_with("Timeline ("))
        .expect("a timeline");
    let mut f = ViewFigures::new("plot");
    // The breakdown: a label ("parallel laplace.c:42 (x10)") and its time, per bar.
    let bars: Vec<&String> = texts[bars_from..timeline].iter().step_by(2).collect();
    if !bars.iter().any(|b| b.ends_with("other constructs")) {
        f.set("constructs shown", bars.len());
        let reached = |b: &str| {
            b.rsplit_once(" (x")
                .and_then(|(_, n)| n.strip_suffix(')')?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        f.set(
            "constructs reached more than once",
            bars.iter().map(|b| reached(b)).sum::<u64>(),
        );
    }
    // The timeline: "Timeline (174 us)", then one label per lane until the first axis tick.
    let span = texts[timeline]
        .trim_start_matches("Timeline (")
        .trim_end_matches(')');
    f.set("timeline span", span);
    let lanes = texts[timeline + 1..]
        .iter()
        .take_while(|t| t.as_str() != "0")
        .count();
    if !texts.iter().any(|t| t.contains("more lanes")) {
        f.set("lanes", lanes);
    }
    f
}

fn check(trace: &Path, dir: &Path) {
    let (report, _) = report_figures(trace);
    let views = [report, export_figures(trace), plot_figures(trace, dir)];
    match check_consistent(&views) {
        Ok(n) => assert!(
            n >= 10,
            "{}: only {n} figures compared: {views:?}",
            trace.display()
        ),
        Err(e) => panic!("{}: the views disagree:\n{e}", trace.display()),
    }
}

#[test]
fn every_sample_trace_reads_the_same_in_report_export_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let samples = sample_traces();
    assert!(
        samples.len() >= 8,
        "the sample traces are missing: {samples:?}"
    );
    for t in &samples {
        check(t, dir.path());
    }
}

#[test]
fn synthetic_shapes_read_the_same_in_report_export_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/bench/laplace", 1, None);
    laplace_like(&mut s, 10);
    let small = dir.path().join("laplace_like.trace");
    s.write(&small);
    check(&small, dir.path());
    for shape in [Shape::LaplaceNaive, Shape::LaplaceData, Shape::LooseOps] {
        let p = dir.path().join(format!("{shape:?}.trace"));
        laplace::write_trace(&SynthConfig::new(shape).iterations(5), &p).unwrap();
        check(&p, dir.path());
    }
}

/// The lines of a trace's data region rows (entry and exit) in a view, sorted.
fn region_lines(lines: impl IntoIterator<Item = u64>) -> String {
    let mut v: Vec<u64> = lines.into_iter().collect();
    v.sort_unstable();
    format!("{v:?}")
}

/// Where a data region ends is read from the source (the runtime places the exit on a statement
/// inside the region): report, diff and plot put it at the region's closing line, all
/// the same, because the profile they read closes its regions as it is built.
#[test]
fn data_region_ends_read_the_same_in_report_diff_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let trace = accprof_testkit::consistency::data_region_trace(dir.path());
    let t = trace.to_str().unwrap();
    let data_key = "data region lines";
    let mut views = Vec::new();

    let j = json_of(&["report", "--format", "json", "-q", t]);
    let constructs = j["traces"][0]["profile"]["constructs"].as_array().unwrap();
    let data: Vec<&Value> = constructs.iter().filter(|c| c["kind"] == "data").collect();
    let mut report = ViewFigures::new("report");
    report.set(
        data_key,
        region_lines(data.iter().map(|c| u(&c["location"]["line"]))),
    );
    views.push(report);

    let d = json_of(&["diff", "--format", "json", "-q", t, t]);
    let mut diff = ViewFigures::new("diff");
    diff.set(
        data_key,
        region_lines(
            d["diff"]["constructs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["kind"] == "data")
                .map(|c| u(&c["location"]["line"])),
        ),
    );
    views.push(diff);

    let plot = plot_figures(&trace, dir.path());
    let out = dir.path().join("region.trace.svg");
    let svg = std::fs::read_to_string(&out).unwrap();
    let mut bars = ViewFigures::new("plot bars");
    bars.set(
        data_key,
        region_lines(svg.split("<text").filter_map(|t| {
            let text = t.split_once('>')?.1.split_once("</text>")?.0.trim();
            let rest = text.strip_prefix("data region region.c:")?;
            rest.split(' ').next()?.parse().ok()
        })),
    );
    views.push(bars);
    views.push(plot);

    match check_consistent(&views) {
        Ok(n) => assert!(n >= 3, "{n} figures compared: {views:?}"),
        Err(e) => panic!("the views disagree on the region's end:\n{e}"),
    }
    assert_eq!(
        views[0].figures.get(data_key).map(String::as_str),
        Some("[30, 50]"),
        "the exit moved to the block's closing line: {views:?}"
    );
}

/// A trace with one device record of each way the issuer rule finds (or does not find) its
/// issuer, each of its own duration, on program thread 1 (thread 9 is a runtime's helper,
/// which records no OpenACC events):
/// 1. a kernel issued inside its launch, in the compute construct at line 10;
/// 2. an upload staged by the helper thread while thread 1's upload (construct at line 20)
///    was open;
/// 3. a kernel record that names no call, of kernel `main_30_gpu`, launched once in the
///    construct at line 30 (matched by name);
/// 4. a download issued by thread 1 outside any construct.
fn issuers_trace(dir: &Path) -> PathBuf {
    use accprof_abi::{acc_construct_t, acc_event_t};
    use accprof_testkit::builder::{construct, TraceBuilder};
    use accprof_trace::device;
    let mut s = TraceBuilder::new("/bench/issuers", 7, None);
    s.header
        .extra
        .push(("device_activity".into(), "cupti".into()));
    let compute = |s: &mut TraceBuilder, start: u64, end: u64, line: i64| {
        construct(
            s.ev(acc_event_t::COMPUTE_CONSTRUCT_START, start, end, 1),
            acc_construct_t::PARALLEL,
        );
        s.at("/src/issuers.c", "main", line);
    };
    s.launch(1_200, 1_800, 1, "main_10_gpu", (64, 1, 128), None);
    s.at("/src/issuers.c", "main", 10);
    compute(&mut s, 1_000, 3_000, 10);
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        4_200,
        5_000,
        1,
        "A",
        1 << 20,
        None,
    );
    s.at("/src/issuers.c", "main", 20);
    compute(&mut s, 4_000, 6_000, 20);
    s.launch(7_200, 7_600, 1, "main_30_gpu", (64, 1, 128), None);
    s.at("/src/issuers.c", "main", 30);
    compute(&mut s, 7_000, 9_000, 30);
    s.device_kernel(1_500, 2_500, Some(0x42), Some((1, 1_400)), "main_10_gpu");
    s.device_copy(
        4_500,
        4_800,
        Some(0x42),
        Some((9, 4_600)),
        device::COPY_HTOD,
        1 << 20,
        Some("A"),
    );
    s.device_kernel(7_700, 8_400, Some(0x42), None, "main_30_gpu");
    s.device_copy(
        10_500,
        10_700,
        Some(0x42),
        Some((1, 10_000)),
        device::COPY_DTOH,
        1 << 20,
        Some("A"),
    );
    let trace = dir.join("issuers.trace");
    s.write(&trace);
    trace
}

/// Device time per construct line (launches and transfers, whose rows take device records'
/// times), and the device records outside any construct, as the report gives them.
fn report_issuers(trace: &str) -> (BTreeMap<u64, u64>, u64) {
    let j = json_of(&["report", "--format", "json", "-q", trace]);
    let p = &j["traces"][0]["profile"];
    let mut per_line = BTreeMap::new();
    for c in p["constructs"].as_array().unwrap() {
        let ns: u64 = c["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|ch| ["launch", "upload", "download"].contains(&ch["kind"].as_str().unwrap()))
            .map(|ch| u(&ch["time"]["total_ns"]))
            .sum();
        *per_line.entry(u(&c["location"]["line"])).or_default() += ns;
    }
    (per_line, u(&p["summary"]["device_records_outside"]))
}

/// The same from the JSON export: each device record's duration goes to the construct open
/// where its flow starts (in the slice that issued it); records without a flow are outside.
fn export_issuers(trace: &str) -> (BTreeMap<u64, u64>, u64) {
    let j = json_of(&["export", "-o", "-", trace]);
    let events = j["traceEvents"].as_array().unwrap();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let is_device = |e: &Value| e["cat"].as_str().is_some_and(|c| c.starts_with("device,"));
    let is_construct = |e: &Value| {
        [
            "acc_ev_compute_construct_start",
            "acc_ev_enter_data_start",
            "acc_ev_exit_data_start",
            "acc_ev_update_start",
        ]
        .contains(&e["args"]["event"].as_str().unwrap_or(""))
    };
    // The slice of `tid` (any, when `None`) open at `ts` that `want`s, the innermost.
    let open_at = |tid: Option<&Value>, ts: u64, want: &dyn Fn(&Value) -> bool| {
        slices
            .iter()
            .filter(|e| tid.is_none_or(|t| &e["tid"] == t) && want(e))
            .filter(|e| ns(&e["ts"]) <= ts && ts <= ns(&e["ts"]) + ns(&e["dur"]))
            .max_by_key(|e| (ns(&e["ts"]), std::cmp::Reverse(ns(&e["dur"]))))
            .copied()
    };
    let mut per_line = BTreeMap::new();
    let flows: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
    for s in &flows {
        let f = events
            .iter()
            .find(|e| e["ph"] == "f" && e["id"] == s["id"])
            .expect("each flow has its end");
        let record = open_at(Some(&f["tid"]), ns(&f["ts"]), &is_device).expect("a device slice");
        let issuer =
            open_at(Some(&s["tid"]), ns(&s["ts"]), &|e| !is_device(e)).expect("an issuing slice");
        assert_eq!(
            record["args"]["issued_by"], issuer["name"],
            "the flow starts in the issuer the record names"
        );
        let Some(c) = open_at(None, ns(&s["ts"]), &is_construct) else {
            continue;
        };
        *per_line.entry(u(&c["args"]["line"])).or_default() += ns(&record["dur"]);
    }
    let records = slices.iter().filter(|e| is_device(e)).count();
    (per_line, (records - flows.len()) as u64)
}

/// Each device record is tied to the same issuer by the profile (the report puts its device
/// time in its issuer's construct) and by the export's layout (its flow starts in the issuing
/// slice, inside that construct): one rule, whichever way it finds the issuer. A view that
/// changed its rule for any of the four records would put that record's time elsewhere. The
/// same holds on a GCC trace recorded on a GPU whose kernel records name no call.
#[test]
fn device_records_are_tied_to_the_same_issuer_in_report_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let trace = issuers_trace(dir.path());
    let t = trace.to_str().unwrap();
    let outside = "device records outside any construct";
    let (lines, out) = report_issuers(t);
    // Each record's own duration where the rule puts it.
    assert_eq!(lines, BTreeMap::from([(10, 1000), (20, 300), (30, 700)]));
    assert_eq!(out, 1);
    let view = |name: &str, (lines, out): (BTreeMap<u64, u64>, u64)| {
        let mut v = ViewFigures::new(name);
        for (line, ns) in lines {
            v.set(&format!("device ns in the construct at line {line}"), ns);
        }
        v.set(outside, out);
        v
    };
    let views = [
        view("report", (lines, out)),
        view("export", export_issuers(t)),
    ];
    match check_consistent(&views) {
        Ok(n) => assert_eq!(n, 4, "{views:?}"),
        Err(e) => panic!("report and export tie device records differently:\n{e}"),
    }

    // The report names a data region's exit by its closing line, the export by the runtime's:
    // the constructs' device times compare, not their lines.
    let gpu = tools::workspace_root().join("traces/gpu/gcc_data_by_name.trace");
    let t = gpu.to_str().unwrap();
    let sorted = |(lines, out): (BTreeMap<u64, u64>, u64)| {
        let mut ns: Vec<u64> = lines.into_values().filter(|&ns| ns > 0).collect();
        ns.sort_unstable();
        (ns, out)
    };
    let (report, export) = (sorted(report_issuers(t)), sorted(export_issuers(t)));
    assert!(report.0.len() >= 3 && report.1 == 0, "{report:?}");
    assert_eq!(report, export, "report and export of {t}");
}
