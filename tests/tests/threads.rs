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
