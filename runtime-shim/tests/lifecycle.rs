//! The device's life cycle through the C API: a tool's callbacks on the initialisation and
//! shutdown events may call runtime routines (no hang, no crash, the program finishes), and
//! shutting a device down ends the threads it started and frees its memory; device memory
//! allocated and freed over and over does not pile up.

mod common;
use common::*;

/// acc_event_t numbers (GCC's acc_prof.h).
const DEVICE_INIT_START: i32 = 1;
const DEVICE_INIT_END: i32 = 2;
const DEVICE_SHUTDOWN_START: i32 = 3;
const DEVICE_SHUTDOWN_END: i32 = 4;
const RUNTIME_SHUTDOWN: i32 = 5;

#[test]
fn lifecycle_callbacks_may_call_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("lifecycle_callbacks");
    gcc(
        &crate_dir().join("tests/c/lifecycle_callbacks.c"),
        &prog,
        false,
    );
    for ev in [
        DEVICE_INIT_END,
        DEVICE_SHUTDOWN_START,
        DEVICE_SHUTDOWN_END,
        RUNTIME_SHUTDOWN,
    ] {
        for action in ["prop", "wait", "stream", "init", "shutdown"] {
            let what = format!("a callback on event {ev} doing {action}");
            let (code, out, err) = run_bounded(&prog, &[&ev.to_string(), action])
                .unwrap_or_else(|| panic!("{what}: hangs"));
            assert_eq!(
                code, 0,
                "{what}: exit status; stdout {out:?} stderr {err:?}"
            );
            assert!(
                out.contains("a[5] = 5\ndone\n"),
                "{what}: the program finishes with its data intact: {out:?}"
            );
            assert!(
                out.contains(&format!("cb {ev} ")),
                "{what}: the callback ran: {out:?}"
            );
            if action == "prop" {
                // The device answers: with its capacity, never 0.
                for line in out.lines().filter(|l| l.starts_with("cb ")) {
                    let memory: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
                    assert!(memory > 0, "{what}: {line}");
                }
            }
        }
    }
    // Where the lock is held, a callback's acc_shutdown is ignored, with a line that says so.
    for ev in [DEVICE_INIT_END, DEVICE_SHUTDOWN_START] {
        let (_, out, err) = run_bounded(&prog, &[&ev.to_string(), "shutdown"]).unwrap();
        assert!(out.contains(&format!("cb {ev} shutdown returned")), "{out}");
        assert!(err.contains("acc_shutdown called by a callback during device initialisation or shutdown is ignored"), "{err}");
    }
}

#[test]
fn a_device_init_start_callback_needing_the_device_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("lifecycle_callbacks");
    gcc(
        &crate_dir().join("tests/c/lifecycle_callbacks.c"),
        &prog,
        false,
    );
    let (code, out, err) =
        run_bounded(&prog, &[&DEVICE_INIT_START.to_string(), "prop"]).expect("no hang");
    assert_eq!(
        code, 1,
        "the runtime error ends the program with status 1: stdout {out:?} stderr {err:?}"
    );
    assert!(
        err.contains("acc_error_device_unavailable")
            && err.contains("device_init_start callback needs the device"),
        "{err}"
    );
}

#[test]
fn shutdown_ends_the_async_queues_threads_and_frees_the_device_memory() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("lifecycle_cycles");
    gcc(
        &crate_dir().join("tests/c/lifecycle_cycles.c"),
        &prog,
        false,
    );
    // Two arrays of 8 MB each per cycle: a shutdown that kept them would add 480 MB.
    let (code, out, err) = run_bounded(&prog, &["30", "1000000"]).expect("no hang");
    assert_eq!(code, 0, "{out} {err}");
    let count = |prefix: &str| -> usize {
        let line = out
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {out}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (first, last) = (
        count("threads after the first cycle"),
        count("threads after 30 cycles"),
    );
    assert_eq!(
        first, 1,
        "after acc_shutdown only the main thread is left: {out}"
    );
    assert_eq!(last, first, "threads after 30 cycles as after one: {out}");
    let (rss_first, rss_last) = (
        count("resident KiB after the first cycle"),
        count("resident KiB after 30 cycles"),
    );
    assert!(
        rss_last < rss_first + 32 * 1024,
        "resident memory grows with the cycles: {out}"
    );
}

#[test]
fn device_memory_allocated_and_freed_every_round_does_not_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("memory_churn");
    gcc(&crate_dir().join("tests/c/memory_churn.c"), &prog, false);
    // 8 MB, 8 MB and 2.7 MB of device memory a round. Blocks from glibc's heap piled up here:
    // 10 MB resident after the first round, 67 MB after 200.
    let (code, out, err) = run_bounded(&prog, &["1000000", "200"]).expect("no hang");
    assert_eq!(code, 0, "{out} {err}");
    let kib = |prefix: &str| -> usize {
        let line = out
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {out}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (first, last) = (
        kib("resident KiB after the first round"),
        kib("resident KiB after 200 rounds"),
    );
    // One round's device memory (19 MB) may become resident after the first round: a freed
    // block that create never touched serves a later copyin.
    assert!(
        last < first + 24 * 1024,
        "resident memory grows with the rounds: {out}"
    );
}
