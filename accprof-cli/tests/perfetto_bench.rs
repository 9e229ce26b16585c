//! Benchmark of `accprof export --format perfetto` on ten million events, beside the JSON
//! export of the same trace (target: <= 3 s, <= 40 bytes per event, bounded memory). Not a
//! pass/fail timing test; it prints the figures recorded in docs/performance/perfetto.md:
//!
//!     cargo test --release -p accprof-cli --test perfetto_bench -- --ignored --nocapture
//!
//! ACCPROF_BENCH_EVENTS sets the number of events (default 10 M). Each export runs under
//! `/usr/bin/time -v` (when installed) for its maximum resident set.

mod tools;

use std::process::Command;
use std::time::Instant;
use tools::synth::{laplace_like, write_repeated, Synth};

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn export_ten_million_events_as_perfetto_and_json() {
    let events: u64 = std::env::var("ACCPROF_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.trace");
    let mut template = Synth::new("/bench/laplace", 1, None);
    laplace_like(&mut template, 1000);
    let copies = events.div_ceil(template.events.len() as u64);
    let n = write_repeated(&template, copies, &trace);
    let trace_mb = std::fs::metadata(&trace).unwrap().len() as f64 / 1e6;
    println!("trace: {n} events, {trace_mb:.1} MB");
    let time_v = std::path::Path::new("/usr/bin/time").exists();
    for (format, name) in [("perfetto", "big.pftrace"), ("chrome", "big.json")] {
        let out = dir.path().join(name);
        let mut best = f64::MAX;
        let mut rss_kb = 0u64;
        for _ in 0..2 {
            let mut cmd = if time_v {
                let mut c = Command::new("/usr/bin/time");
                c.arg("-v").arg(env!("CARGO_BIN_EXE_accprof"));
                c
            } else {
                Command::new(env!("CARGO_BIN_EXE_accprof"))
            };
            cmd.args(["export", "-q", "--format", format, "-o"])
                .arg(&out)
                .arg(&trace);
            let t = Instant::now();
            let o = cmd.output().unwrap();
            let secs = t.elapsed().as_secs_f64();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            best = best.min(secs);
            let err = String::from_utf8_lossy(&o.stderr);
            for key in [
                "User time (seconds): ",
                "System time (seconds): ",
                "Percent of CPU this job got: ",
            ] {
                if let Some(v) = err.lines().find_map(|l| l.trim().strip_prefix(key)) {
                    println!("  {format}: {key}{v}");
                }
            }
            if let Some(kb) = err.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("Maximum resident set size (kbytes): ")
            }) {
                rss_kb = rss_kb.max(kb.trim().parse().unwrap_or(0));
            }
        }
        let bytes = std::fs::metadata(&out).unwrap().len();
        println!(
            "export --format {format}: {n} events -> {:.1} MB ({:.2} B/event) in {best:.3} s (best of 2), {:.2} M events/s, max RSS {:.0} MiB",
            bytes as f64 / 1e6,
            bytes as f64 / n as f64,
            n as f64 / best / 1e6,
            rss_kb as f64 / 1024.0
        );
        std::fs::remove_file(&out).unwrap();
    }
}
