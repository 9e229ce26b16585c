//! The constructs table agrees with `accprof report --format json`: for every sample trace
//! (traces/, traces/gpu/ included) and a synthetic Laplace-like one, the table's rows add up to
//! the report's counts, totals and bytes of compute constructs, kernels, uploads and downloads
//! (by transfer site and by variable), waits, device initialization and memsets; each kernel's
//! rows match the report's kernel and each compute construct's row the report's construct at
//! the same line.
//!
//! The report is rendered in-process by the code behind `accprof report --format json` and
//! read back as JSON, so the comparison goes through the documented schema
//! (docs/report-json-schema.md), not through shared Rust types.
//!
//! The same figures also go through accprof-testkit's `check_consistent` under the keys
//! accprof-cli's consistency test gives report, export and plot, so the TUI's timeline and
//! table join that comparison (events, compute constructs and their time, launches, uploads and
//! downloads the runtime reported, device records, device inits).

mod support;

use accprof_abi::acc_event_t;
use accprof_analysis::{report, Profile};
use accprof_testkit::consistency::{check_consistent, ViewFigures};
use accprof_trace::device;
use accprof_tui::app::App;
use accprof_tui::state::table::TableRow;
use accprof_tui::state::State;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every `*.trace` under traces/, sorted.
fn sample_traces() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "trace") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces"),
        &mut out,
    );
    out.sort();
    out
}

/// The report's profile of `path`, as `accprof report --format json` prints it.
fn report_json(path: &Path) -> Value {
    let profile = Profile::from_path(path).unwrap();
    let (sections, merged) = report::sections(vec![profile]);
    let text = report::json::render(&sections, merged.as_ref());
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["schema_version"], 1);
    doc["traces"][0]["profile"].clone()
}

/// The table as the TUI shows it once the analysis is done.
fn tui_rows(path: &Path) -> Vec<TableRow> {
    let mut app = App::new(State::open(&[path.to_path_buf()], false, &mut |_, _| {}).unwrap());
    app.run_analysis();
    assert!(
        app.state.analysis.error.is_none(),
        "{:?}",
        app.state.analysis.error
    );
    app.view.table.rows.clone()
}

/// (count, total ns, bytes) over the rows counting `event`.
fn sum(rows: &[TableRow], event: acc_event_t) -> (u64, u64, u64) {
    rows.iter()
        .filter(|r| r.event == event)
        .fold((0, 0, 0), |(c, t, b), r| {
            (c + r.count, t + r.total_ns, b + r.bytes)
        })
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// (count, total ns) of a TIMING.
fn timing(v: &Value) -> (u64, u64) {
    (u(&v["count"]), u(&v["total_ns"]))
}

fn check(path: &Path) {
    let name = path.display();
    let rows = tui_rows(path);
    let p = report_json(path);
    let s = &p["summary"];
    let pair = |(c, t, _): (u64, u64, u64)| (c, t);

    assert_eq!(
        pair(sum(&rows, acc_event_t::COMPUTE_CONSTRUCT_START)),
        timing(&s["compute"]),
        "{name}: compute constructs"
    );
    assert_eq!(
        pair(sum(&rows, acc_event_t::WAIT_START)),
        timing(&s["waits"]),
        "{name}: waits"
    );
    assert_eq!(
        pair(sum(&rows, acc_event_t::DEVICE_INIT_START)),
        timing(&s["device_init"]),
        "{name}: device init"
    );
    let kernels = sum(&rows, acc_event_t::ENQUEUE_LAUNCH_START);
    assert_eq!(
        kernels.1,
        u(&s["kernels"]["total_ns"]),
        "{name}: kernel time"
    );
    let launches: u64 = p["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| u(&k["launches"]))
        .sum();
    assert_eq!(kernels.0, launches, "{name}: kernel launches");
    // Transfers: the report's transfer sites and variables (the summary's transfer timing
    // counts device copies, several per staged transfer, and leaves out the host-timed
    // transfers of a device trace that no device copy carried).
    for (event, direction) in [
        (acc_event_t::ENQUEUE_UPLOAD_START, "host_to_device"),
        (acc_event_t::ENQUEUE_DOWNLOAD_START, "device_to_host"),
    ] {
        let of = |list: &str| {
            p[list]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["direction"] == direction)
                .fold((0, 0, 0), |(c, t, b), x| {
                    (
                        c + u(&x["count"]),
                        t + u(&x["time"]["total_ns"]),
                        b + u(&x["bytes"]),
                    )
                })
        };
        assert_eq!(
            sum(&rows, event),
            of("transfer_sites"),
            "{name}: {direction} transfers by site"
        );
        assert_eq!(
            sum(&rows, event),
            of("variables"),
            "{name}: {direction} transfers by variable"
        );
    }
    let (c, t, b) = sum(&rows, device::MEMSET);
    assert_eq!(
        (c, t, b),
        (
            timing(&s["memsets"]).0,
            timing(&s["memsets"]).1,
            u(&s["memset_bytes"])
        ),
        "{name}: memsets"
    );

    // Each kernel: its rows (one per construct it ran in) have its launches and time.
    for k in p["kernels"].as_array().unwrap() {
        let kname = k["name"].as_str().unwrap();
        let of_kernel = |r: &&TableRow| {
            r.event == acc_event_t::ENQUEUE_LAUNCH_START
                && ["launch ", "kernel "].iter().any(|w| {
                    r.what
                        .strip_prefix(w)
                        .and_then(|rest| rest.strip_prefix(kname))
                        .is_some_and(|t| t.is_empty() || t.starts_with(' '))
                })
        };
        let got = rows
            .iter()
            .filter(of_kernel)
            .fold((0, 0), |(n, t), r| (n + r.count, t + r.total_ns));
        assert_eq!(
            got,
            (u(&k["launches"]), u(&k["time"]["total_ns"])),
            "{name}: kernel {kname}"
        );
    }

    // Each compute construct: the row at its line has its count and time.
    for c in p["constructs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "compute")
    {
        let line = &c["location"]["line"];
        let file = c["location"]["file"]
            .as_str()
            .map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
        let at = match (&file, line.as_u64()) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            _ => continue,
        };
        let matching: Vec<&TableRow> = rows
            .iter()
            .filter(|r| {
                r.event == acc_event_t::COMPUTE_CONSTRUCT_START
                    && r.what.ends_with(&format!(" {at}"))
            })
            .collect();
        let got = matching
            .iter()
            .fold((0, 0), |(n, t), r| (n + r.count, t + r.total_ns));
        assert_eq!(
            got,
            (u(&c["reached"]), u(&c["time"]["total_ns"])),
            "{name}: the construct at {at}"
        );
    }
}

#[test]
fn the_table_agrees_with_the_report_on_every_sample_trace() {
    let traces = sample_traces();
    assert!(
        traces
            .iter()
            .any(|p| p.to_string_lossy().contains("traces/gpu/")),
        "no sample traces found: {traces:?}"
    );
    for t in &traces {
        check(t);
    }
}

#[test]
fn the_table_agrees_with_the_report_on_a_synthetic_trace_without_device_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("laplace.trace");
    support::synth::write_trace(&path, 40).unwrap();
    check(&path);
}

/// The profile the TUI builds from its own read of a trace is the one `accprof report` builds
/// from reading it again (but for the report's warnings, which the TUI shows from its reader).
fn built_once_equals_report_profile(path: &Path) {
    let mut store = accprof_tui::state::store::Store::new(false);
    let mut loader =
        accprof_tui::state::load::Loader::open(&[path.to_path_buf()], &mut store, true).unwrap();
    loader.poll(&mut store, &mut |_, _| {}).unwrap();
    let mut jobs = loader.finish_profiles();
    assert_eq!(jobs.len(), 1);
    let built = jobs.pop().unwrap().wait().expect("the profile");
    let mut read_again = Profile::from_path(path).unwrap();
    read_again.warnings.clear();
    assert!(
        built == read_again,
        "{}: the profiles differ",
        path.display()
    );
}

#[test]
fn the_profile_built_while_loading_is_the_reports() {
    for t in sample_traces() {
        built_once_equals_report_profile(&t);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("laplace.trace");
    support::synth::write_trace(&path, 40).unwrap();
    built_once_equals_report_profile(&path);
}

/// The TUI's figures under the shared keys: from the timeline (events of each kind as read)
/// and from the table (compute constructs, device inits).
fn tui_figures(path: &Path) -> ViewFigures {
    use accprof_tui::state::kind::{is_device_code, kind_of_code};
    let mut app = App::new(State::open(&[path.to_path_buf()], false, &mut |_, _| {}).unwrap());
    app.run_analysis();
    let store = &app.state.store;
    let of = |kind: acc_event_t| {
        store
            .records
            .kind
            .iter()
            .filter(|&&k| !is_device_code(k) && kind_of_code(k) == kind)
            .count()
    };
    let rows = &app.view.table.rows;
    let (compute, compute_ns, _) = sum(rows, acc_event_t::COMPUTE_CONSTRUCT_START);
    let mut f = ViewFigures::new("tui");
    f.set("events", store.event_count())
        .set("compute constructs", compute)
        .set("compute construct ns", compute_ns)
        .set("launches", of(acc_event_t::ENQUEUE_LAUNCH_START))
        .set("uploads", of(acc_event_t::ENQUEUE_UPLOAD_START))
        .set("downloads", of(acc_event_t::ENQUEUE_DOWNLOAD_START))
        .set("device records", store.device.len())
        .set("device inits", sum(rows, acc_event_t::DEVICE_INIT_START).0);
    f
}

/// The report's figures under the same keys (as accprof-cli's consistency test reads them).
fn report_figures(path: &Path) -> ViewFigures {
    let p = report_json(path);
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
    f
}

#[test]
fn the_tui_joins_the_shared_consistency_check() {
    let dir = tempfile::tempdir().unwrap();
    let synthetic = dir.path().join("laplace.trace");
    support::synth::write_trace(&synthetic, 40).unwrap();
    for t in sample_traces().iter().chain([&synthetic]) {
        let views = [report_figures(t), tui_figures(t)];
        match check_consistent(&views) {
            Ok(n) => assert_eq!(n, 8, "{}: every figure compared", t.display()),
            Err(e) => panic!("{}: the TUI and the report disagree:\n{e}", t.display()),
        }
    }
}

/// The advice and the table are the same whether the profile was fed while loading (a trace
/// opened once) or built by reading the trace again (a followed trace, which keeps growing).
#[test]
fn findings_and_table_do_not_depend_on_how_the_profile_was_built() {
    let dir = tempfile::tempdir().unwrap();
    let synthetic = dir.path().join("laplace.trace");
    support::synth::write_trace(&synthetic, 40).unwrap();
    for t in sample_traces().iter().chain([&synthetic]) {
        let analysed = |follow: bool| {
            let mut app =
                App::new(State::open(&[t.to_path_buf()], follow, &mut |_, _| {}).unwrap());
            app.run_analysis();
            let a = &app.state.analysis;
            assert!(a.error.is_none(), "{}: {:?}", t.display(), a.error);
            (a.findings.clone(), app.view.table.rows.clone())
        };
        let (once, read_again) = (analysed(false), analysed(true));
        assert_eq!(once, read_again, "{}", t.display());
    }
    let mut app =
        App::new(State::open(std::slice::from_ref(&synthetic), false, &mut |_, _| {}).unwrap());
    app.run_analysis();
    let findings = &app.state.analysis.findings;
    assert!(
        !findings.is_empty(),
        "the synthetic trace has advice to compare"
    );
}

/// The table splits constructs as the report does: two compute constructs at the same file and
/// line in different functions (a macro expanded in two places) are two constructs, with their
/// own counts, in both.
#[test]
fn the_table_splits_constructs_as_the_report_does() {
    use accprof_abi::acc_construct_t;
    use accprof_testkit::TraceBuilder;
    use accprof_trace::Field;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("macro.trace");
    let mut b = TraceBuilder::new("/app/macro", 7, None);
    for (i, func) in ["smooth", "smooth", "sharpen"].into_iter().enumerate() {
        let t = 10_000 * i as u64;
        b.ev(acc_event_t::COMPUTE_CONSTRUCT_START, t, t + 5_000, 1)
            .set_i64(
                Field::ParentConstruct,
                i64::from(acc_construct_t::PARALLEL.0),
            );
        b.at("/app/stencil.h", func, 12);
    }
    b.write(&path);

    let report = report_json(&path);
    let mut from_report: Vec<u64> = report["constructs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "compute")
        .map(|c| u(&c["time"]["count"]))
        .collect();
    from_report.sort_unstable();
    assert_eq!(from_report, [1, 2], "{report}");

    let mut app =
        App::new(State::open(std::slice::from_ref(&path), false, &mut |_, _| {}).unwrap());
    app.run_analysis();
    let mut from_table: Vec<u64> = app
        .view
        .table
        .rows
        .iter()
        .filter(|r| r.event == acc_event_t::COMPUTE_CONSTRUCT_START)
        .map(|r| r.count)
        .collect();
    from_table.sort_unstable();
    assert_eq!(from_table, from_report);
}

/// Where a data region ends is read from its source (the runtime placed the exit inside it):
/// the TUI's profiles, built while loading or read again, close it as the report does, and the
/// table's transfer rows (a device trace's come from the profile) name its closing line.
#[test]
fn data_region_ends_read_the_same_in_the_tui_as_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let trace = accprof_testkit::consistency::data_region_trace(dir.path());
    built_once_equals_report_profile(&trace);
    data_region_lines_agree(&trace);
}

/// The same region without device records: the table counts its transfer rows from the host
/// events, which the runtime reported at the exit's line inside the region, and still names
/// the closing line.
#[test]
fn data_region_ends_of_host_rows_read_the_same_in_the_tui_as_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let trace = accprof_testkit::consistency::data_region_trace_with(dir.path(), false);
    data_region_lines_agree(&trace);
}

/// The report's data region lines are the lines of the TUI table's upload and download rows of
/// the region's array, and the exit is at the block's closing line.
fn data_region_lines_agree(trace: &Path) {
    let trace = trace.to_path_buf();
    let key = "data region lines";
    let lines = |v: Vec<u64>| {
        let mut v = v;
        v.sort_unstable();
        format!("{v:?}")
    };
    let p = report_json(&trace);
    let mut report = ViewFigures::new("report");
    report.set(
        key,
        lines(
            p["constructs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["kind"] == "data")
                .map(|c| u(&c["location"]["line"]))
                .collect(),
        ),
    );
    let rows = tui_rows(&trace);
    let mut tui = ViewFigures::new("tui table");
    tui.set(
        key,
        lines(
            rows.iter()
                .filter_map(|r| {
                    let loc = r
                        .what
                        .strip_prefix("upload A ")
                        .or(r.what.strip_prefix("download A "))?;
                    loc.strip_prefix("region.c:")?.parse().ok()
                })
                .collect(),
        ),
    );
    let views = [report, tui];
    assert_eq!(check_consistent(&views), Ok(1), "{views:?}");
    assert_eq!(
        views[0].figures[key], "[30, 50]",
        "the exit moved to the block's closing line"
    );
}
