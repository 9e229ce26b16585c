//! `accprof diff`: what a data region bought.

#[path = "report_common.rs"]
mod report_common;
use report_common::*;

#[test]
fn diff_of_naive_and_data_region_laplace() {
    let dir = tempfile::tempdir().unwrap();
    let before = synth_trace(dir.path(), "naive.trace", naive(20));
    let after = synth_trace(dir.path(), "data.trace", data(20));
    let o = accprof(&["diff", before.to_str().unwrap(), after.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = scrub(&stdout(&o), dir.path());
    insta::assert_snapshot!("diff_text_naive_vs_data", text);
    let j = accprof(&[
        "diff",
        "--format",
        "json",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let t = &v["diff"]["summary"]["transfers"];
    assert_eq!(t[0], 20 * 10); // 6 + 4 transfers per naive iteration
    assert_eq!(t[1], 20 * 2 + 2); // error both ways each iteration, A in and out once
    let data_region = v["diff"]["constructs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "data")
        .unwrap();
    assert!(data_region["before"].is_null());
    assert_eq!(data_region["reached"][1], 1);
}

#[test]
fn diff_needs_two_readable_traces() {
    let dir = tempfile::tempdir().unwrap();
    let before = synth_trace(dir.path(), "naive.trace", naive(2));
    let o = accprof(&["diff", before.to_str().unwrap(), "/nonexistent.trace"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}
