//! The launch-geometry trace recorded on an H100 (traces/gpu/gcc_geometry.trace, made by
//! scripts/gpu-geometry.sh from scripts/gpu/geometry.c; see traces/gpu/README.md): the kernels'
//! grids and blocks as the device ran them, the device's limits, and the advice on the loop
//! launched with `num_gangs(4)`.

mod report_common;
use report_common::*;
use std::path::PathBuf;

fn trace() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/gcc_geometry.trace");
    assert!(p.exists(), "{} is missing", p.display());
    p.display().to_string()
}

/// The lines of the two `parallel loop` pragmas of scripts/gpu/geometry.c: num_gangs(4) first.
fn pragma_lines() -> Vec<i64> {
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/gpu/geometry.c"),
    )
    .unwrap();
    src.lines()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with("#pragma acc parallel loop"))
        .map(|(i, _)| i as i64 + 1)
        .collect()
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = accprof(args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn kernels_show_the_geometry_the_program_asked_for_on_the_h100() {
    let r = json(&["report", "--format", "json", &trace()]);
    let p = &r["traces"][0]["profile"];
    let d = &p["devices"][0];
    // The H100 SXM's published limits.
    assert_eq!(d["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(d["compute_capability"], "9.0");
    assert_eq!(u(&d["multiprocessors"]), 132);
    assert_eq!(u(&d["max_threads_per_multiprocessor"]), 2048);
    assert_eq!(u(&d["max_blocks_per_multiprocessor"]), 32);
    assert_eq!(u(&d["registers_per_multiprocessor"]), 65536);
    assert_eq!(u(&d["shared_memory_per_multiprocessor"]), 228 * 1024);
    let kernel = |name: &str| {
        p["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("no kernel {name}"))
            .clone()
    };
    // libgomp's GOMP_DEBUG said: gangs=4 (and 16896), workers=1, vectors=128, five launches each.
    // ptxas (the driver's JIT) reported 20 and 18 registers, 16 bytes of shared memory.
    for (name, gangs, regs) in [
        ("few_gangs$_omp_fn$0", 4, 20),
        ("many_gangs$_omp_fn$0", 16896, 18),
    ] {
        let k = kernel(name);
        let g = &k["geometry"];
        assert_eq!(u(&g["launches"]), 5, "{name}");
        let range = |v: &serde_json::Value| (u(&v["min"]), u(&v["max"]));
        assert_eq!(range(&g["grid"][0]), (gangs, gangs), "{name}");
        assert_eq!(range(&g["block"][0]), (128, 128), "{name}");
        assert_eq!(range(&g["grid"][1]), (1, 1));
        assert_eq!(range(&g["block"][1]), (1, 1), "num_workers 1");
        assert_eq!(
            range(&k["num_gangs"]),
            (gangs, gangs),
            "the runtime's own count"
        );
        assert_eq!(u(&g["multiprocessors"]), 132);
        assert_eq!(range(&g["registers_per_thread"]), (regs, regs), "{name}");
        assert_eq!(range(&g["shared_mem_bytes"]), (16, 16));
        // 128 threads of about 20 registers: 16 blocks fill the SM's 64 warps.
        assert_eq!(g["occupancy"]["percent"], 100.0);
    }
    let few = kernel("few_gangs$_omp_fn$0");
    let many = kernel("many_gangs$_omp_fn$0");
    assert!(
        u(&few["time"]["total_ns"]) > 10 * u(&many["time"]["total_ns"]),
        "4 blocks are much slower than 16896"
    );

    let o = accprof(&["report", &trace()]);
    let text = stdout(&o);
    assert!(
        text.contains("device: grid 4x1x1  block 128x1x1")
            && text.contains("4 blocks on 132 SMs (128 idle)"),
        "{text}"
    );
}

#[test]
fn advise_names_the_num_gangs_line_and_the_idle_sms() {
    let lines = pragma_lines();
    let a = json(&["advise", "--format", "json", &trace()]);
    let found: Vec<&serde_json::Value> = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "launch_geometry")
        .collect();
    assert_eq!(found.len(), 1, "the num_gangs(4) loop only: {found:#?}");
    let f = found[0];
    assert_eq!(f["location"]["line"], lines[0], "{f:#}");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("few_gangs") && title.contains("4 gangs on a GPU of 132 SMs"),
        "{title}"
    );
    assert!(
        f["change"].as_str().unwrap().contains("num_gangs(4)"),
        "{f:#}"
    );
}
