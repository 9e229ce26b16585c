//! The device-idle-gaps advice on runs of a real program on a real GPU (traces/gpu): it needs
//! device records and points at the construct whose device work ended the gap.

mod tools;

use serde_json::Value;
use std::path::PathBuf;
use tools::{run, stderr, stdout};

fn findings(name: &str) -> Vec<Value> {
    let t = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/gpu")
        .join(format!("{name}.trace"));
    let o = run(&["advise", "-q", "--format", "json", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "device_idle_gaps")
        .cloned()
        .collect()
}

#[test]
fn a_long_host_pause_before_the_loop_is_found_with_its_line() {
    let f = findings("shim_data_by_name");
    assert_eq!(f.len(), 1, "{f:?}");
    let f = &f[0];
    assert_eq!(f["location"]["line"], 399);
    // The gap's time is the saving, and the report's profile holds the same site.
    let saving = f["estimated_saving_ns"].as_u64().unwrap();
    assert!(saving > 100_000_000, "a pause of over 100 ms: {saving}");
    assert_eq!(f["evidence"]["time_ns"].as_u64().unwrap(), saving);
    let t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/shim_data_by_name.trace");
    let o = run(&["report", "-q", "--format", "json", t.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let sites = v["traces"][0]["profile"]["device_gaps"]["sites"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(sites[0]["total_ns"].as_u64().unwrap(), saving);
}

#[test]
fn silent_where_the_device_keeps_busy_between_constructs() {
    // GCC's data-region run keeps the device busy from one construct to the next.
    assert!(findings("gcc_data").is_empty());
    assert!(findings("gcc_naive").is_empty());
}
