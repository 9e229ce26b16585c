//! `accprof report`: layout, formats, several ranks, bad input.

#[path = "report_common.rs"]
mod report_common;
use report_common::*;

#[test]
fn report_text_of_naive_laplace() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "naive.trace", naive(10));
    let o = accprof(&["report", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = scrub(&stdout(&o), dir.path());
    // The wording users of NV_ACC_TIME know.
    assert!(
        text.contains("57: compute region reached 10 times"),
        "{text}"
    );
    assert!(text.contains("57: data copyin transfers: 30"), "{text}");
    assert!(text.contains("71: kernel launched 10 times"), "{text}");
    assert!(text.contains("grid: [510]  block: [128]"), "{text}");
    assert!(text.contains("What the times measure"), "{text}");
    insta::assert_snapshot!("report_text_naive", text);
}

#[test]
fn report_text_of_data_region_laplace() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "data.trace", data(10));
    let o = accprof(&["report", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = scrub(&stdout(&o), dir.path());
    assert!(text.contains("55: data region reached 1 time"), "{text}");
    insta::assert_snapshot!("report_text_data", text);
}

#[test]
fn report_json_is_versioned_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "naive.trace", naive(4));
    let out = dir.path().join("r.json");
    let o = accprof(&[
        "report",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["kind"], "accprof-report");
    let p = &v["traces"][0]["profile"];
    assert_eq!(p["summary"]["compute"]["count"], 8);
    assert_eq!(p["summary"]["compute"]["source"], "host");
    assert_eq!(
        p["constructs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "compute")
            .count(),
        2
    );
    let a = p["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "A" && x["direction"] == "host_to_device")
        .unwrap();
    assert_eq!(a["count"], 8);
    assert_eq!(a["bytes"], 8 * 512 * 512 * 8);
    assert!(v["merged"].is_null());
}

#[test]
fn report_csv_has_one_row_per_table_entry() {
    let dir = tempfile::tempdir().unwrap();
    let t = synth_trace(dir.path(), "naive.trace", naive(2));
    let o = accprof(&["report", "--format", "csv", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    insta::assert_snapshot!("report_csv_naive", text);
}

#[test]
fn several_ranks_get_sections_and_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let r0 = synth_trace(dir.path(), "r0.trace", naive(3).rank(0));
    let r1 = synth_trace(dir.path(), "r1.trace", naive(5).rank(1));
    let o = accprof(&["report", r0.to_str().unwrap(), r1.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("==== rank 0"), "{text}");
    assert!(text.contains("==== rank 1"), "{text}");
    assert!(text.contains("==== all 2 traces merged ===="), "{text}");
    // Merged: 3 + 5 iterations.
    assert!(
        text.contains("57: compute region reached 8 times"),
        "{text}"
    );
    let j = accprof(&[
        "report",
        "--format",
        "json",
        r0.to_str().unwrap(),
        r1.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["traces"][1]["label"], "rank 1");
    assert_eq!(v["merged"]["summary"]["compute"]["count"], 16);
}

#[test]
fn missing_file_is_one_line_and_fails() {
    let o = accprof(&["report", "/nonexistent/x.trace"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("/nonexistent/x.trace: cannot read"), "{e}");
}

#[test]
fn empty_foreign_and_corrupt_files_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    let foreign = dir.path().join("foreign.trace");
    std::fs::write(&foreign, b"{\"traceEvents\": []}").unwrap();
    let good = synth_trace(dir.path(), "good.trace", naive(3));
    let mut bytes = std::fs::read(&good).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    let corrupt = dir.path().join("corrupt.trace");
    std::fs::write(&corrupt, &bytes).unwrap();
    for (f, want) in [
        (&empty, "the file is empty"),
        (&foreign, "not an accprof trace"),
        (&corrupt, "corrupt trace"),
    ] {
        for cmd in ["report", "advise"] {
            let o = accprof(&[cmd, f.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(1), "{cmd} {}", f.display());
            let e = stderr(&o);
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(e.contains(want), "{e}");
        }
    }
}

#[test]
fn truncated_trace_reports_what_it_holds_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Over 32768 events: several chunks, so that the first survives the cut.
    let good = synth_trace(dir.path(), "good.trace", naive(1000));
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
    let o = accprof(&["report", cut.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning:") && stderr(&o).contains("ends in the middle of a chunk"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("warning:"), "the report says it too");
    assert!(
        stdout(&o).contains("compute region reached"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn valid_empty_trace_gives_an_empty_report() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("none.trace");
    let w = accprof_trace::TraceWriter::new(
        std::fs::File::create(&p).unwrap(),
        &accprof_trace::Header::default(),
    )
    .unwrap();
    drop(w);
    let o = accprof(&["report", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("holds no OpenACC events"),
        "{}",
        stdout(&o)
    );
    let j = accprof(&["report", "--format", "json", p.to_str().unwrap()]);
    assert!(j.status.success());
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["traces"][0]["profile"]["summary"]["events"], 0);
}

#[test]
fn help_says_what_the_numbers_measure_with_an_example() {
    let o = accprof(&["report", "--help"]);
    let h = stdout(&o);
    assert!(h.contains("[host]") && h.contains("[device]"), "{h}");
    assert!(
        h.contains("accprof report accprof.laplace.1234.trace"),
        "{h}"
    );
    for cmd in ["advise", "diff"] {
        let h = stdout(&accprof(&[cmd, "--help"]));
        assert!(h.contains("Example"), "{cmd}: {h}");
    }
}

#[test]
fn report_of_the_real_laplace_example() {
    let dir = tempfile::tempdir().unwrap();
    let t = record_example(
        dir.path(),
        "laplace",
        &["--version", "naive", "--n", "128", "--iters", "5"],
    );
    let o = accprof(&["report", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("compute region reached 5 times"), "{text}");
    assert!(text.contains("data copyin transfers: 10"), "{text}");
    assert!(text.contains("laplace.rs"), "{text}");
}
