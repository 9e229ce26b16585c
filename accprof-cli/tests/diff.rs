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

/// Several traces per side (`B1 B2 -- A1 A2`): medians and ranges, and a change inside the
/// runs' spread is said to be run-to-run noise, one outside it is not.
#[test]
fn diff_of_several_runs_per_side_tells_a_change_from_noise() {
    let dir = tempfile::tempdir().unwrap();
    let t = |name: &str, trace| {
        synth_trace(dir.path(), name, trace)
            .to_str()
            .unwrap()
            .to_string()
    };
    let (n20, n22) = (t("n20.trace", naive(20)), t("n22.trace", naive(22)));
    let (n21, n23) = (t("n21.trace", naive(21)), t("n23.trace", naive(23)));
    let (d20, d22) = (t("d20.trace", data(20)), t("d22.trace", data(22)));
    let wall_line = |args: &[&str]| {
        let mut all = vec!["diff"];
        all.extend_from_slice(args);
        let o = accprof(&all);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains("medians of 2 and 2 runs"), "{text}");
        text.lines()
            .find(|l| l.starts_with("wall time"))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let overlapping = wall_line(&[&n20, &n22, "--", &n21, &n23]);
    assert!(
        overlapping.contains("within run-to-run noise"),
        "{overlapping}"
    );
    let apart = wall_line(&[&n20, &n22, "--", &d20, &d22]);
    assert!(!apart.contains("noise"), "{apart}");
}
