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
