//! Benchmark of `accprof export` on a million events (target: at most 2 s in a release build).
//! Not a pass/fail timing test; it prints the figures recorded in docs/performance/export.md:
//!
//!     cargo test --release -p accprof-cli --test export_bench -- --ignored --nocapture

mod tools;

use std::time::Instant;
use tools::chrome_validator::validate;
use tools::synth::{laplace_like, write_repeated, Synth};

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn export_a_million_events() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.trace");
    let mut template = Synth::new("/bench/laplace", 1, None);
    laplace_like(&mut template, 1000);
    let copies = 1_000_000u64.div_ceil(template.events.len() as u64);
    let n = write_repeated(&template, copies, &trace);
    let out = dir.path().join("big.json");
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let o = tools::run(&[
            "export",
            "-o",
            out.to_str().unwrap(),
            trace.to_str().unwrap(),
        ]);
        let secs = t.elapsed().as_secs_f64();
        assert!(o.status.success(), "{}", tools::stderr(&o));
        best = best.min(secs);
    }
    let trace_mb = std::fs::metadata(&trace).unwrap().len() as f64 / 1e6;
    let json = std::fs::read_to_string(&out).unwrap();
    println!(
        "export: {n} events ({trace_mb:.1} MB trace) -> {:.1} MB JSON in {best:.3} s (best of 3), {:.2} M events/s, peak RSS {:.0} MB",
        json.len() as f64 / 1e6,
        n as f64 / best / 1e6,
        children_peak_rss_kb() as f64 / 1024.0
    );
    // The big file must be as valid as the small ones.
    let sum = validate(&json).unwrap_or_else(|e| panic!("invalid export: {e}"));
    assert_eq!(sum.complete + sum.instants, n as usize);
}

/// The largest resident set of the child processes run so far (the exports), in KiB.
fn children_peak_rss_kb() -> i64 {
    // SAFETY: `rusage` is a C struct of integers; all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    ru.ru_maxrss
}
