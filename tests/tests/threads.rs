//! Many host threads recording at once: every event arrives, on the right thread.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use std::collections::HashMap;

#[test]
fn four_threads_lose_nothing() {
    let dir = scratch("threads");
    let exe = compile_c("threads.c", &dir, &["-g", "-pthread"]);
    let (threads, iters) = (4usize, 3000usize);
    for how in [Load::Preload, Load::Both] {
        let trace = dir.join(format!("{how:?}.trace"));
        // Small buffers so that threads hand over many batches and the writer sweeps often.
        let out = run_profiled(
            &exe,
            &[&threads.to_string(), &iters.to_string()],
            how,
            &trace,
            &[("ACCPROF_BUFFER_EVENTS", "64")],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let t = load(&trace);
        let mut per_thread: HashMap<i64, usize> = HashMap::new();
        for e in t
            .events
            .iter()
            .filter(|e| e.kind == acc_event_t::COMPUTE_CONSTRUCT_START)
        {
            *per_thread.entry(e.thread().unwrap()).or_default() += 1;
        }
        assert_eq!(per_thread.len(), threads, "{how:?}: {per_thread:?}");
        assert!(
            per_thread.values().all(|&n| n == iters),
            "{how:?}: {per_thread:?}"
        );
        assert_eq!(t.dropped_total, 0);
        // Each thread's events are in time order (the writer keeps a thread's batches in order).
        let mut last: HashMap<i64, u64> = HashMap::new();
        for e in &t.events {
            let th = e.thread().unwrap();
            let prev = last.insert(th, e.start_ns).unwrap_or(0);
            assert!(e.start_ns >= prev, "{how:?}: thread {th} went back in time");
        }
        let line = pragma_line(&program_source("threads.c"), "parallel loop");
        assert!(t
            .events
            .iter()
            .filter(|e| e.kind == acc_event_t::COMPUTE_CONSTRUCT_START)
            .all(|e| e.line_no() == Some(line)));
    }
}

/// More threads than the tables that find a thread's state without a thread-local lookup hold
/// (126 entries beside the hot word, 1024 after them, direct-mapped: 300 threads collide in
/// both): every thread's events still carry its own thread and none is lost.
#[test]
fn three_hundred_threads_each_record_on_their_own_state() {
    let dir = scratch("threads-many");
    let exe = compile_c("threads.c", &dir, &["-g", "-pthread"]);
    let (threads, iters) = (300usize, 20usize);
    let trace = dir.join("many.trace");
    let out = run_profiled(
        &exe,
        &[&threads.to_string(), &iters.to_string()],
        Load::Preload,
        &trace,
        // Each recording thread holds a buffer: 64 MiB of the default 512 KiB buffers serve
        // 128 threads at once, so smaller ones here.
        &[("ACCPROF_BUFFER_EVENTS", "256")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let t = load(&trace);
    let mut per_thread: HashMap<i64, usize> = HashMap::new();
    for e in t.events.iter() {
        if e.kind == acc_event_t::COMPUTE_CONSTRUCT_START {
            *per_thread.entry(e.thread().unwrap()).or_default() += 1;
        }
    }
    assert_eq!(per_thread.len(), threads, "{per_thread:?}");
    assert!(per_thread.values().all(|&n| n == iters), "{per_thread:?}");
    assert_eq!(t.dropped_total, 0);
}

/// More threads recording at once than there are buffers: the drops are counted, and the run
/// says that the threads held every buffer (not that the writer fell behind) and what to set.
#[test]
fn more_recording_threads_than_buffers_are_said_to_be_the_cause_of_drops() {
    let dir = scratch("threads-buffers");
    let exe = compile_c("threads.c", &dir, &["-g", "-pthread"]);
    let trace = dir.join("few.trace");
    // 1 MiB of the default 512 KiB buffers: the pool's floor of 4 buffers, for 8 threads.
    let out = run_profiled(
        &exe,
        &["8", "20"],
        Load::Preload,
        &trace,
        &[
            ("ACCPROF_MAX_BUFFER_MB", "1"),
            ("ACCPROF_MAX_WAIT_MS", "10"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("8 threads recorded at once and each holds one of the 4 buffers; lower ACCPROF_BUFFER_EVENTS"),
        "{err}"
    );
    assert!(load(&trace).dropped_total > 0);
}

/// Two threads on the bundled runtime: each thread's buffers reach the trace on their own, so
/// the file holds one thread's allocations after the other's later ones. The report replays
/// them in time order: it prints (replayed in file order, the device-memory line indexes out
/// of bounds), its series never goes back in time, and every allocation meets its free.
#[test]
fn the_report_of_two_threads_on_the_bundled_runtime_orders_device_memory_in_time() {
    let dir = scratch("threads-report");
    let exe = compile_c("threads.c", &dir, &["-g", "-pthread"]);
    let trace = dir.join("two.trace");
    let o = std::process::Command::new(accprof_cli())
        .args(["run", "-q", "--runtime", "shim", "--report", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .args(["2", "200"])
        .env_remove("LD_PRELOAD")
        .env_remove("ACC_PROFLIB")
        .output()
        .expect("accprof runs");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("over time:"), "{}", stderr(&o));
    let o = std::process::Command::new(accprof_cli())
        .args(["report", "-q", "--format", "json"])
        .arg(&trace)
        .output()
        .expect("accprof runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let d = &v["traces"][0]["profile"]["device_memory"][0];
    let times: Vec<u64> = d["series"]
        .as_array()
        .expect("a series")
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .collect();
    assert!(times.len() > 2, "{d}");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(d["unmatched_frees"], 0, "{d}");
    assert_eq!(d["in_use_at_end"], 0, "{d}");
    assert_eq!(d["allocations"], d["frees"], "{d}");
}
