//! A program that switches every callback off and on with the specification's global toggle
//! (`acc_prof_unregister` / `acc_prof_register` of `acc_ev_none`, NULL, `acc_toggle`), as
//! scripts/gpu/laplace_blocks.c does to measure accprof's overhead inside one process: accprof
//! records the constructs of the periods the callbacks were on, all of them and no others, and
//! leaves nothing half open, on GCC's libgomp and on the bundled runtime.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use std::path::Path;
use std::process::Command;

fn build(dir: &Path) -> std::path::PathBuf {
    let gpu = workspace_root().join("scripts/gpu");
    let exe = dir.join("laplace_blocks");
    let o = Command::new("gcc")
        .args([
            "-O1",
            "-fopenacc",
            "-foffload=disable",
            "-DDATA_REGION",
            "-DNMAX=64",
            "-I",
        ])
        .arg(&gpu)
        .arg(gpu.join("laplace_blocks.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-lm")
        .output()
        .expect("gcc runs");
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    exe
}

/// Runs 11 iterations in blocks of 1 and checks the trace against the blocks the program says
/// were on: the first iteration (before any block) and each "on" block has two compute
/// constructs. Blocks go off, on, on, off, ...: after the tenth block the callbacks are on
/// again, so the data region's exit is recorded.
fn check(exe: &Path, dir: &Path, shim: bool) {
    let trace = dir.join(if shim { "shim.trace" } else { "gomp.trace" });
    let mut env = vec![("LAPLACE_BLOCK", "1"), ("ACCPROF_QUIET", "1")];
    if shim {
        env.extend([("ACC_DEVICE_TYPE", "emulated"), ("ACCSHIM_QUIET", "1")]);
    }
    let mut cmd = Command::new(exe);
    cmd.args(["32", "11"])
        .env("ACCPROF_OUT", &trace)
        .env_remove("ACC_PROFLIB")
        .envs(env);
    let preload = if shim {
        format!(
            "{} {}",
            artifact("libaccshim.so").display(),
            libaccprof().display()
        )
    } else {
        libaccprof().display().to_string()
    };
    let out = cmd.env("LD_PRELOAD", preload).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let blocks: Vec<&str> = stdout.lines().filter(|l| l.starts_with("block ")).collect();
    assert_eq!(blocks.len(), 10, "{stdout}");
    let on = blocks.iter().filter(|l| l.contains(" on ")).count();
    assert!(on > 0 && on < blocks.len(), "{stdout}");
    let t = load(&trace);
    let count = |k: acc_event_t| t.events.iter().filter(|e| e.kind == k).count();
    let how = if shim {
        "the bundled runtime"
    } else {
        "libgomp"
    };
    assert_eq!(
        count(acc_event_t::COMPUTE_CONSTRUCT_START),
        2 * (1 + on),
        "{how}: {stdout}"
    );
    // Every event recorded is a start joined with its end (or a point event): none was left
    // open by callbacks switched off between them.
    assert!(
        t.events
            .iter()
            .all(|e| !e.flags().contains(accprof_trace::EventFlags::NO_END)
                && !e.flags().contains(accprof_trace::EventFlags::NO_START)),
        "{how}: an event without its end"
    );
    // The data region's enter (before the first block) and exit (after the last, on).
    let explicit = |k: acc_event_t| {
        t.events
            .iter()
            .filter(|e| e.kind == k && !e.implicit())
            .count()
    };
    assert_eq!(explicit(acc_event_t::ENTER_DATA_START), 1, "{how}");
    assert_eq!(explicit(acc_event_t::EXIT_DATA_START), 1, "{how}");
}

#[test]
fn callbacks_switched_off_and_on_record_only_the_on_periods() {
    let dir = scratch("toggle");
    let exe = build(&dir);
    check(&exe, &dir, false);
    check(&exe, &dir, true);
}
