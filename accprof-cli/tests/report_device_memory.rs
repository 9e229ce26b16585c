//! The report's device memory: the high-water mark per device and the arrays holding it, on
//! runs of a real program (laplace on a real GPU, traces/gpu): through the shim, whose
//! allocations name their variables, and through GCC's libgomp, whose frees give no size
//! (bytes = SIZE_MAX) and are matched to their allocation by device pointer.

mod tools;

use serde_json::Value;
use std::path::PathBuf;
use tools::{run, stderr, stdout};

fn report_json(name: &str) -> Value {
    let t = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/gpu")
        .join(format!("{name}.trace"));
    let o = run(&["report", "-q", "--format", "json", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["traces"][0]["profile"]["device_memory"].clone()
}

#[test]
fn the_shims_run_peaks_with_both_grids_on_the_device() {
    let m = report_json("shim_naive");
    let d = &m.as_array().unwrap()[0];
    assert_eq!(d["device"], 0);
    assert_eq!(d["events"], "alloc/free");
    // A and Anew, 4096 x 4096 doubles each, are on the device together at the peak.
    assert_eq!(d["peak_bytes"], 2 * 128 * 1024 * 1024);
    let names: Vec<&str> = d["largest_at_peak"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("A[")) && names.iter().any(|n| n.starts_with("Anew[")),
        "{names:?}"
    );
    // Every allocation of this run was freed.
    assert_eq!(d["in_use_at_end"], 0);
    assert_eq!(d["allocations"], d["frees"]);
    let series = d["series"].as_array().unwrap();
    let max = series.iter().map(|p| p[1].as_u64().unwrap()).max().unwrap();
    assert_eq!(
        max,
        d["peak_bytes"].as_u64().unwrap(),
        "the series shows the peak"
    );
}

#[test]
fn gccs_frees_without_size_are_matched_by_device_pointer() {
    let m = report_json("gcc_data");
    let d = &m.as_array().unwrap()[0];
    // GCC maps the data region's arrays as one block (both grids and padding).
    assert!(d["peak_bytes"].as_u64().unwrap() >= 2 * 128 * 1024 * 1024);
    assert_eq!(
        d["unmatched_frees"], 0,
        "every free found its allocation by device pointer"
    );
    assert_eq!(d["in_use_at_end"], 0);
    assert!(d["largest_at_peak"][0]["name"]
        .as_str()
        .unwrap()
        .starts_with("device 0x"));
}

#[test]
fn the_text_report_shows_the_peak_and_its_arrays() {
    let t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/shim_naive.trace");
    let o = run(&["report", "-q", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let section = text
        .split("Device memory in use")
        .nth(1)
        .expect("a device memory section");
    assert!(section.contains("device 0: peak 256 MiB"), "{section}");
    assert!(
        section.contains("A[0:n*m]") && section.contains("Anew[0:n*m]"),
        "{section}"
    );
}

#[path = "report_common.rs"]
mod report_common;

/// Recorded here: the shim's Laplace (on its emulated device when there is no GPU) under
/// libaccprof, 128 x 128 doubles per grid. The naive version maps both grids around every
/// compute construct, so the peak holds both, and each iteration frees what it allocated.
#[test]
fn a_recorded_run_peaks_with_both_grids_and_frees_them() {
    let dir = tempfile::tempdir().unwrap();
    let t = report_common::record_example(
        dir.path(),
        "laplace",
        &["--version", "naive", "--n", "128", "--iters", "5"],
    );
    let o = run(&["report", "-q", "--format", "json", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let m = v["traces"][0]["profile"]["device_memory"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(m.len(), 1, "{m:?}");
    let d = &m[0];
    let grid = 128 * 128 * 8;
    assert_eq!(d["peak_bytes"], 2 * grid, "{d}");
    let names: Vec<&str> = d["largest_at_peak"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("A[")) && names.iter().any(|n| n.starts_with("Anew[")),
        "{names:?}"
    );
    assert_eq!(d["in_use_at_end"], 0);
    // Allocated again on each of the 5 iterations.
    assert!(d["allocations"].as_u64().unwrap() >= 10, "{d}");
    assert_eq!(d["allocations"], d["frees"]);
}
