//! The traces recorded on a real GPU (traces/gpu/, made by scripts/gpu-validate.sh; see
//! traces/gpu/README.md): every CI run reports, advises, exports and diffs them, so the device
//! records CUPTI gave, and their attribution to GCC's constructs, are exercised without a GPU.

mod report_common;
use report_common::*;
use std::path::PathBuf;

fn trace(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/gpu")
        .join(format!("{name}.trace"));
    assert!(p.exists(), "{} is missing", p.display());
    p.display().to_string()
}

fn report_json(name: &str) -> serde_json::Value {
    let o = accprof(&["report", "--format", "json", &trace(name)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["traces"][0]["profile"].clone()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn gcc_naive_report_has_cuptis_transfers_under_the_pragma_lines() {
    let p = report_json("gcc_naive");
    let s = &p["summary"];
    // What the bare CUPTI collector counted on the same program (traces/gpu/results.txt).
    assert_eq!(
        (u(&s["uploads"]["count"]), u(&s["upload_bytes"])),
        (32, 2147483936)
    );
    assert_eq!(
        (u(&s["downloads"]["count"]), u(&s["download_bytes"])),
        (20, 2147483680)
    );
    assert_eq!(u(&s["kernels"]["count"]), 8);
    assert_eq!(s["kernels"]["source"], "device");
    assert_eq!(s["uploads"]["source"], "device");
    assert_eq!(u(&s["device_records_outside"]), 0);
    // Both compute constructs, at the lines of their pragmas in scripts/gpu/laplace.c.
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/gpu/laplace.c"),
    )
    .unwrap();
    let pragmas: Vec<i64> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with("#pragma acc parallel loop"))
        .map(|(i, _)| i as i64 + 1)
        .collect();
    let computes: Vec<&serde_json::Value> = p["constructs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "compute")
        .collect();
    assert_eq!(computes.len(), 2);
    for c in computes {
        assert!(
            pragmas.contains(&c["location"]["line"].as_i64().unwrap()),
            "{}",
            c["location"]
        );
        let up = c["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kind"] == "upload")
            .expect("copyin row");
        assert_eq!(u(&up["count"]), 16, "4 iterations x (A, Anew, 2 scalars)");
        assert_eq!(up["time"]["source"], "device");
        assert!(u(&up["bytes"]) >= 1 << 30, "4 x (A + Anew) = 1 GiB");
    }
    let vars: Vec<&str> = p["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(
        vars.contains(&"A") && vars.contains(&"Anew"),
        "named from the symbol table: {vars:?}"
    );
}

/// scripts/gpu/laplace_heap.c mallocs A and Anew: no symbol names them and GCC reports no
/// names, so libaccprof's allocation hooks on the GPU machine recorded the mallocs' call sites,
/// and the trace's symbols chunk (written by `accprof symbolize` with the binary and the source
/// at hand) keeps the pointers their statements store them in: `double *A = malloc(cells *
/// sizeof(double))` is `A[0:cells]`, a clause's section. No binary or source is needed here.
#[test]
fn gcc_heap_arrays_are_named_by_the_pointers_their_mallocs_set() {
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/gpu/laplace_heap.c"),
    )
    .unwrap();
    assert!(src.contains("double *A = malloc(cells * sizeof(double));    /* ALLOC_A */"));
    let p = report_json("gcc_heap");
    let vars = p["variables"].as_array().unwrap();
    for name in ["A[0:cells]", "Anew[0:cells]"] {
        let rows: Vec<&serde_json::Value> = vars.iter().filter(|v| v["name"] == name).collect();
        assert_eq!(rows.len(), 2, "{name} up and down: {vars:?}");
        for r in rows {
            assert_eq!(u(&r["count"]), 8, "4 iterations x 2 constructs: {r}");
            assert_eq!(u(&r["bytes"]), 8 << 27, "8 x 128 MiB: {r}");
        }
    }
    let advice = stdout(&accprof(&["advise", &trace("gcc_heap")]));
    assert!(
        advice.contains("`#pragma acc data copy(A[0:cells], Anew[0:cells])`"),
        "{advice}"
    );
    assert!(!advice.contains("heap@"), "{advice}");
}

#[test]
fn advise_asks_for_the_data_region_on_the_naive_runs_only() {
    for (name, wants) in [
        ("gcc_naive", true),
        ("gcc_data", false),
        ("shim_naive", true),
        ("shim_data", false),
    ] {
        let o = accprof(&["advise", "--format", "json", &trace(name)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let dr: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "data_region")
            .collect();
        assert_eq!(!dr.is_empty(), wants, "{name}: {dr:?}");
        if let Some(f) = dr.first() {
            let change = f["change"].as_str().unwrap();
            assert!(
                change.contains("A") && change.contains("Anew"),
                "{name}: {change}"
            );
        }
    }
}

#[test]
fn shim_staged_uploads_count_as_the_device_moved_them() {
    let p = report_json("shim_naive");
    let s = &p["summary"];
    // The shim uploads through pinned staging buffers: 8 reported uploads, 512 device copies.
    assert_eq!(
        (u(&s["uploads"]["count"]), u(&s["upload_bytes"])),
        (512, 1073741824)
    );
    assert_eq!(u(&s["uploads_host"]["count"]), 8);
    assert_eq!(
        (u(&s["downloads"]["count"]), u(&s["download_bytes"])),
        (12, 1073741856)
    );
    assert_eq!(u(&s["device_records_outside"]), 0);
    let text = stdout(&accprof(&["report", &trace("shim_naive")]));
    assert!(
        text.contains("kernels [device]") && text.contains("enqueue calls [host]"),
        "{text}"
    );
}

#[test]
fn every_gpu_trace_reports_exports_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "gcc_naive",
        "gcc_data",
        "gcc_heap",
        "shim_naive",
        "shim_data",
        "gcc_data_by_name",
        "shim_data_by_name",
    ] {
        let t = trace(name);
        let r = accprof(&["report", &t]);
        assert!(r.status.success(), "{name}: {}", stderr(&r));
        let text = stdout(&r);
        assert!(
            text.contains("[device]") && text.contains("device records"),
            "{name}:\n{text}"
        );
        for fmt in ["csv", "json"] {
            let o = accprof(&["report", "--format", fmt, &t]);
            assert!(o.status.success(), "{name} {fmt}: {}", stderr(&o));
        }
        let out = dir.path().join(format!("{name}.json"));
        let e = accprof(&["export", "-o", out.to_str().unwrap(), &t]);
        assert!(e.status.success(), "{name} export: {}", stderr(&e));
        let _: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    }
    for (a, b) in [("gcc_naive", "gcc_data"), ("shim_naive", "shim_data")] {
        let d = accprof(&["diff", &trace(a), &trace(b)]);
        assert!(d.status.success(), "{a} vs {b}: {}", stderr(&d));
        assert!(!stdout(&d).is_empty());
    }
}

/// Recorded after libaccprof learned to switch CUPTI's launch callback off at the runtime's first
/// reported launch: no kernel record says which call issued it, and the report still puts every
/// kernel under its construct, with its device time, by pairing it with the runtime's launch of
/// the same name. The shim's third kernel per iteration stores the reduction result
/// (accshim_store_reduction) and is reported as a launch of the construct too.
#[test]
fn kernels_recorded_without_their_calls_are_tied_to_the_runtimes_launches() {
    for (name, kernels) in [("gcc_data_by_name", 20), ("shim_data_by_name", 30)] {
        let dump = accprof(&["dump", &trace(name)]);
        assert!(dump.status.success(), "{name}: {}", stderr(&dump));
        let records: Vec<serde_json::Value> = stdout(&dump)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|e: &serde_json::Value| e["event_type"] == 1001)
            .collect();
        assert_eq!(records.len(), kernels, "{name}: kernel records");
        assert!(
            records.iter().all(|e| e.get("host_call_ns").is_none()),
            "{name}: the callback was off for every launch"
        );
        let p = report_json(name);
        let s = &p["summary"];
        assert_eq!(
            (u(&s["kernels"]["count"]), s["kernels"]["source"].as_str()),
            (kernels as u64, Some("device")),
            "{name}"
        );
        assert_eq!(
            u(&s["device_records_outside"]),
            0,
            "{name}: every record tied to a construct"
        );
        let launches: Vec<&serde_json::Value> = p["constructs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["children"].as_array().unwrap())
            .filter(|ch| ch["kind"] == "launch")
            .collect();
        let timed: u64 = launches
            .iter()
            .filter(|l| l["time"]["source"] == "device")
            .map(|l| u(&l["time"]["count"]))
            .sum();
        assert_eq!(
            timed, kernels as u64,
            "{name}: each launch row carries its kernels' device times"
        );
        if name.starts_with("shim") {
            let text = stdout(&accprof(&["report", &trace(name)]));
            assert!(text.contains("accshim_store_reduction"), "{text}");
        }
    }
}
