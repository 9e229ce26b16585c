//! `accprof advise`: each rule fires on the example program that makes its mistake and stays
//! silent on the well-structured one.

#[path = "report_common.rs"]
mod report_common;
use report_common::*;
use serde_json::Value;

fn findings(trace: &std::path::Path) -> Vec<Value> {
    let o = accprof(&["advise", "--format", "json", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    v["findings"].as_array().unwrap().clone()
}

fn rules(f: &[Value]) -> Vec<String> {
    f.iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

const DATA_RULES: [&str; 6] = [
    "data_region",
    "enter_exit_data",
    "create_instead_of_copy",
    "whole_array",
    "update_in_loop",
    "alloc_churn",
];

fn has_no_data_rule(f: &[Value]) {
    for r in rules(f) {
        assert!(!DATA_RULES.contains(&r.as_str()), "unexpected {r}: {f:#?}");
    }
}

#[test]
fn advise_text_of_naive_laplace() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "naive.trace", naive(50));
    let o = accprof(&["advise", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = scrub(&stdout(&o), dir.path());
    assert!(
        text.contains("wrap lines 57-80 in `#pragma acc data copy(A, Anew)`"),
        "{text}"
    );
    insta::assert_snapshot!("advise_text_naive", text);
}

#[test]
fn findings_are_ordered_by_saving_and_point_at_events() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "naive.trace", naive(50));
    let f = findings(&t);
    assert!(!f.is_empty());
    let savings: Vec<u64> = f
        .iter()
        .map(|f| f["estimated_saving_ns"].as_u64().unwrap())
        .collect();
    assert!(savings.windows(2).all(|w| w[0] >= w[1]), "{savings:?}");
    let dr = f.iter().find(|f| f["rule"] == "data_region").unwrap();
    assert_eq!(dr["location"]["line"], 57);
    assert_eq!(dr["location"]["end_line"], 80);
    assert_eq!(dr["location"]["function"], "main");
    assert!(dr["events"].as_array().unwrap().len() > 1);
    assert!(dr["evidence"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn synthetic_data_region_laplace_gets_no_data_rule() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "data.trace", data(50));
    has_no_data_rule(&findings(&t));
}

#[test]
fn real_laplace_naive_gets_a_data_region_and_data_version_none() {
    let dir = tempfile::tempdir().unwrap();
    let naive = record_example(
        dir.path(),
        "laplace",
        &["--version", "naive", "--n", "128", "--iters", "10"],
    );
    let f = findings(&naive);
    let dr = f
        .iter()
        .find(|f| f["rule"] == "data_region")
        .unwrap_or_else(|| panic!("{f:#?}"));
    let change = dr["change"].as_str().unwrap();
    assert!(
        change.contains("#pragma acc data")
            && change.contains("A[0:n*m]")
            && change.contains("Anew[0:n*m]"),
        "{change}"
    );
    let dir2 = tempfile::tempdir().unwrap();
    let good = record_example(
        dir2.path(),
        "laplace",
        &["--version", "data", "--n", "128", "--iters", "10"],
    );
    let f = findings(&good);
    has_no_data_rule(&f);
    // The runtime's one-thread store of the error reduction (a launch of the construct) is no
    // sequential loop of the user's.
    assert!(
        !f.iter().any(|f| f["rule"] == "sequential_kernel"),
        "{f:#?}"
    );
}

fn example_findings(example: &str, args: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let t = record_example(dir.path(), example, args);
    findings(&t)
}

#[test]
fn copies_in_loop_gets_a_data_region() {
    let f = example_findings("mistake_copies_in_loop", &["--n", "65536", "--iters", "10"]);
    let dr = f
        .iter()
        .find(|f| f["rule"] == "data_region")
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert!(dr["change"].as_str().unwrap().contains("copy(x"), "{dr:#?}");
}

#[test]
fn no_present_across_calls_gets_enter_and_exit_data() {
    let f = example_findings(
        "mistake_no_present_across_calls",
        &["--n", "65536", "--iters", "5"],
    );
    let e = f
        .iter()
        .find(|f| f["rule"] == "enter_exit_data")
        .unwrap_or_else(|| panic!("{f:#?}"));
    let c = e["change"].as_str().unwrap();
    assert!(
        c.contains("enter data") && c.contains("exit data") && c.contains("present("),
        "{c}"
    );
}

#[test]
fn temp_roundtrip_gets_create_for_the_temporary() {
    let f = example_findings("mistake_temp_roundtrip", &["--n", "65536", "--iters", "5"]);
    let hit = f.iter().find(|f| {
        (f["rule"] == "create_instead_of_copy" || f["rule"] == "data_region")
            && f["change"].as_str().unwrap().contains("create(tmp")
    });
    assert!(hit.is_some(), "{f:#?}");
}

#[test]
fn slice_copies_get_whole_array() {
    let f = example_findings("mistake_slice_copies", &["--n", "256", "--m", "256"]);
    assert!(rules(&f).contains(&"whole_array".to_string()), "{f:#?}");
}

#[test]
fn update_in_loop_fires() {
    let f = example_findings("mistake_update_in_loop", &["--n", "65536", "--iters", "10"]);
    assert!(rules(&f).contains(&"update_in_loop".to_string()), "{f:#?}");
}

#[test]
fn alloc_churn_fires() {
    let f = example_findings("mistake_alloc_churn", &["--n", "65536", "--iters", "10"]);
    assert!(rules(&f).contains(&"alloc_churn".to_string()), "{f:#?}");
}

#[test]
fn async_pipeline_gets_no_data_rule_and_no_async_advice() {
    let f = example_findings("async_pipeline", &[]);
    has_no_data_rule(&f);
    assert!(!rules(&f).contains(&"async_queues".to_string()), "{f:#?}");
}

/// saxpy repeats `parallel loop copyin(x) copy(y)`: the arrays cross on every repetition, which
/// is the data-region mistake, so the rule must say so.
#[test]
fn repeated_saxpy_gets_a_data_region() {
    let f = example_findings("saxpy", &["--n", "65536", "--reps", "5"]);
    assert!(rules(&f).contains(&"data_region".to_string()), "{f:#?}");
}

#[test]
fn empty_trace_gets_no_findings() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("none.trace");
    drop(
        accprof_trace::TraceWriter::new(
            std::fs::File::create(&p).unwrap(),
            &accprof_trace::Header::default(),
        )
        .unwrap(),
    );
    let o = accprof(&["advise", p.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("nothing to advise"), "{}", stdout(&o));
}
