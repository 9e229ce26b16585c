//! Benchmark of `accprof report` on CUPTI-shaped traces (a device record for every launch and
//! transfer, delivered in batches): its peak memory must not grow with the records, so 2M and
//! 10M events print about the same figure. The GCC shape's kernel records do not say their
//! issuing call and are tied to their launches by kernel name. Not a pass/fail timing test; it prints the figures
//! recorded in docs/performance/report.md:
//!
//!     cargo test --release -p accprof-cli --test report_cupti_bench -- --ignored --nocapture

mod tools;

use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};
use std::process::Stdio;
use std::time::Instant;

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn report_memory_is_flat_in_device_records() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = [
        (Shape::LaplaceNaive, false),
        (Shape::LooseOps, false),
        (Shape::LaplaceNaive, true),
        (Shape::LooseOps, true),
    ];
    for (shape, gcc) in shapes {
        let mut peaks = Vec::new();
        for events in [2_000_000u64, 10_000_000] {
            let trace = dir.path().join("cupti.trace");
            let cfg = SynthConfig::new(shape).with_event_target(events);
            let cfg = if gcc {
                cfg.without_names().with_cupti_kernels_by_name()
            } else {
                cfg.with_cupti()
            };
            let stats = write_trace(&cfg, &trace).unwrap();
            let mut best = f64::MAX;
            let mut peak_kib = 0;
            for _ in 0..2 {
                let t = Instant::now();
                let (ok, rss) = run_measured(&["report", trace.to_str().unwrap()]);
                best = best.min(t.elapsed().as_secs_f64());
                peak_kib = rss;
                assert!(ok, "accprof report failed on {shape:?}");
            }
            let records = if gcc {
                "CUPTI records, kernels by name (GCC)"
            } else {
                "CUPTI records"
            };
            println!(
                "report {shape:?} with {records}: {} events ({:.0} MB) in {best:.2} s (best of 2), peak RSS {} MiB",
                stats.events,
                stats.bytes as f64 / 1e6,
                peak_kib / 1024
            );
            peaks.push(peak_kib);
        }
        // Five times the events: memory that grew with them would more than double.
        assert!(
            peaks[1] < 2 * peaks[0],
            "{shape:?} (GCC shape: {gcc}): peak RSS {} KiB at 2M events, {} KiB at 10M",
            peaks[0],
            peaks[1]
        );
    }
}

/// Runs `accprof` and gives whether it succeeded and its own peak resident set in KiB.
#[expect(
    clippy::zombie_processes,
    reason = "wait4 reaps the child, which std's wait cannot do with its resource usage"
)]
fn run_measured(args: &[&str]) -> (bool, i64) {
    let child = tools::accprof()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("accprof runs");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is a C struct of integers; all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the child is ours and not waited for elsewhere; wait4 only writes the status and
    // the struct it is given.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(waited, pid, "waiting for accprof");
    (
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        ru.ru_maxrss,
    )
}
