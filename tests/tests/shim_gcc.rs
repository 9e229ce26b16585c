//! An unmodified `gcc -fopenacc` program recorded on the bundled runtime: `accprof run
//! --runtime shim` (and the shim and the tool preloaded by hand) records every construct once,
//! with the transfers the directives imply and each construct's `#pragma acc` line. The program
//! is runtime-shim/tests/gcc/transfers.c, run on the emulated device.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn source() -> PathBuf {
    workspace_root().join("runtime-shim/tests/gcc/transfers.c")
}

fn build(dir: &Path) -> PathBuf {
    let exe = dir.join("transfers");
    let o = Command::new("gcc")
        .args(["-g", "-O2", "-fopenacc", "-o"])
        .arg(&exe)
        .arg(source())
        .output()
        .expect("gcc runs");
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    exe
}

/// Checks one run's trace: constructs, launches and array transfers once each, at their lines.
fn check(t: &accprof_trace::Trace, how: &str) {
    let count = |k: acc_event_t| t.events.iter().filter(|e| e.kind == k).count();
    assert_eq!(count(acc_event_t::COMPUTE_CONSTRUCT_START), 5, "{how}");
    assert_eq!(count(acc_event_t::ENQUEUE_LAUNCH_START), 5, "{how}");
    let arrays = |k: acc_event_t| {
        t.events
            .iter()
            .filter(|e| e.kind == k && e.bytes() == Some(8000))
            .count()
    };
    assert_eq!(
        arrays(acc_event_t::ENQUEUE_UPLOAD_START),
        3,
        "{how}: a at entry, a by the update, c at enter data"
    );
    assert_eq!(
        arrays(acc_event_t::ENQUEUE_DOWNLOAD_START),
        2,
        "{how}: b at the data exit, c at exit data"
    );
    // Each compute construct at its own pragma's line: the first one three times.
    let src = source();
    let lines: Vec<i64> = pragma_lines(&src)
        .into_iter()
        .filter(|(_, t)| t.contains("parallel loop"))
        .map(|(l, _)| l)
        .collect();
    let want: BTreeMap<Option<i64>, usize> = [
        (Some(lines[0]), 3),
        (Some(lines[1]), 1),
        (Some(lines[2]), 1),
    ]
    .into_iter()
    .collect();
    let mut got: BTreeMap<Option<i64>, usize> = BTreeMap::new();
    for e in t
        .events
        .iter()
        .filter(|e| e.kind == acc_event_t::COMPUTE_CONSTRUCT_START)
    {
        *got.entry(e.line_no()).or_default() += 1;
    }
    assert_eq!(got, want, "{how}: line -> compute constructs");
    let update = t
        .events
        .iter()
        .find(|e| e.kind == acc_event_t::UPDATE_START)
        .expect("an update");
    assert_eq!(
        update.line_no(),
        Some(pragma_line(&src, "update device")),
        "{how}"
    );
}

#[test]
fn accprof_run_runtime_shim_records_a_gcc_program_once_with_its_lines() {
    let dir = scratch("shim-gcc");
    let exe = build(&dir);
    let trace = dir.join("run.trace");
    let out = Command::new(accprof_cli())
        .args(["run", "--runtime", "shim", "-q", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .env("ACC_DEVICE_TYPE", "emulated")
        .env("ACCSHIM_QUIET", "1")
        .env_remove("ACCPROF_SHIM_LIB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "b[10]=2 c[10]=4\n");
    let t = load(&trace);
    assert_eq!(
        t.header.registration, "acc_register_library",
        "the shim calls the tool's entry point"
    );
    check(&t, "accprof run --runtime shim");

    // By hand: the shim and the tool preloaded, the tool also in ACC_PROFLIB.
    let trace = dir.join("preload.trace");
    let shim = artifact("libaccshim.so");
    let out = Command::new(&exe)
        .env(
            "LD_PRELOAD",
            format!("{} {}", shim.display(), libaccprof().display()),
        )
        .env("ACC_PROFLIB", libaccprof())
        .env("ACCPROF_OUT", &trace)
        .env("ACCPROF_QUIET", "1")
        .env("ACC_DEVICE_TYPE", "emulated")
        .env("ACCSHIM_QUIET", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    check(&load(&trace), "LD_PRELOAD=\"libaccshim.so libaccprof.so\"");
}

#[test]
fn accprof_run_says_where_the_shim_is_missing() {
    let dir = scratch("shim-gcc-missing");
    let exe = build(&dir);
    let out = Command::new(accprof_cli())
        .args(["run", "--runtime", "shim", "--"])
        .arg(&exe)
        .env("ACCPROF_SHIM_LIB", dir.join("no-such-libaccshim.so"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("ACCPROF_SHIM_LIB=") && err.contains("no such file"),
        "{err}"
    );
}
