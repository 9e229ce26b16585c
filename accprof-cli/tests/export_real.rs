//! `accprof export` and `accprof plot` on real traces: the runtime shim's examples recorded by
//! libaccprof. Needs the release build (`cargo build --release --workspace --bins --examples`),
//! found in `$ACCPROF_BUILD_DIR` (default `<workspace>/target/release`).

mod tools;

use std::process::Command;
use tools::chrome_validator::validate;

/// Records `example` with `args` under LD_PRELOAD and returns the trace's path.
fn record(dir: &std::path::Path, example: &str, args: &[&str]) -> std::path::PathBuf {
    let build = tools::build_dir();
    let lib = build.join("libaccprof.so");
    let exe = build.join("examples").join(example);
    for p in [&lib, &exe] {
        assert!(
            p.exists(),
            "{} is missing: build it with `cargo build --release --workspace --bins --examples` (or set ACCPROF_BUILD_DIR)",
            p.display()
        );
    }
    let trace = dir.join(format!("{example}.trace"));
    let o = Command::new(&exe)
        .args(args)
        .env("LD_PRELOAD", &lib)
        .env("ACCPROF_OUT", &trace)
        .output()
        .expect("the example runs");
    assert!(
        o.status.success(),
        "{example} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    trace
}

#[test]
fn real_laplace_and_async_pipeline_export_valid_traces() {
    let dir = tempfile::tempdir().unwrap();
    for (example, args) in [
        (
            "laplace",
            &["--version", "naive", "--n", "128", "--iters", "10"][..],
        ),
        ("async_pipeline", &[][..]),
    ] {
        let trace = record(dir.path(), example, args);
        let json = dir.path().join(format!("{example}.json"));
        let o = tools::run(&[
            "export",
            "-o",
            json.to_str().unwrap(),
            trace.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", tools::stderr(&o));
        let text = std::fs::read_to_string(&json).unwrap();
        let sum = validate(&text).unwrap_or_else(|e| panic!("{example}: invalid export: {e}"));
        assert!(sum.complete > 10, "{example}: {sum:?}");
        // Launches carry their kernel's geometry and transfers their variable and size.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        // The first category is the slice's kind; tags (implicit, construct=...) follow.
        let kind = |e: &serde_json::Value| -> String {
            let cat = e["cat"].as_str().unwrap_or_default();
            cat.split(',').next().unwrap_or_default().to_string()
        };
        assert!(
            evs.iter()
                .any(|e| kind(e) == "kernel" && e["args"]["num_gangs"].is_u64()),
            "{example}"
        );
        assert!(evs.iter().any(|e| kind(e) == "transfer"
            && e["args"]["bytes"].is_u64()
            && e["args"]["var"].is_string()));
        let svg = dir.path().join(format!("{example}.svg"));
        let o = tools::run(&["plot", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
        assert!(o.status.success(), "{}", tools::stderr(&o));
        assert!(std::fs::read_to_string(&svg)
            .unwrap()
            .contains("Host time per construct"));
    }
}
