//! Writes a synthetic trace: `synth_trace naive|data|loose EVENTS OUT.trace [--iters K] [--n N] [--threads T] [--queues Q] [--no-names] [--cupti] [--cupti-by-name] [--rank R]`.
//! EVENTS is a minimum event count (0: use --iters). `--cupti-by-name` is `--cupti` with kernel
//! records that do not say their issuing call, as GCC programs give (matched by kernel name). Used by the report benchmark
//! (docs/performance/report.md) and handy for trying the TUI and exporters.

use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: synth_trace naive|data|loose EVENTS OUT.trace [--iters K] [--n N] [--threads T] [--queues Q] [--no-names] [--cupti] [--cupti-by-name] [--rank R]");
        std::process::exit(2);
    }
    let shape = match args[0].as_str() {
        "naive" => Shape::LaplaceNaive,
        "data" => Shape::LaplaceData,
        "loose" => Shape::LooseOps,
        other => {
            eprintln!("unknown shape {other}: naive, data or loose");
            std::process::exit(2);
        }
    };
    let events: u64 = args[1].parse().expect("EVENTS is a number");
    let mut cfg = SynthConfig::new(shape);
    let mut i = 3;
    while i < args.len() {
        let val = || {
            args.get(i + 1)
                .and_then(|v| v.parse::<u64>().ok())
                .expect("a number after the flag")
        };
        match args[i].as_str() {
            "--iters" => cfg = cfg.iterations(val()),
            "--n" => cfg = cfg.grid(val()),
            "--rank" => cfg = cfg.rank(val() as u32),
            "--threads" => cfg = cfg.threads(val()),
            "--queues" => cfg = cfg.queues(val()),
            "--no-names" => {
                cfg = cfg.without_names();
                i -= 1;
            }
            "--cupti-by-name" => {
                cfg = cfg.with_cupti_kernels_by_name();
                i -= 1;
            }
            "--cupti" => {
                cfg = cfg.with_cupti();
                i -= 1;
            }
            other => panic!("unknown flag {other}"),
        }
        i += 2;
    }
    if events > 0 {
        cfg = cfg.with_event_target(events);
    }
    let stats = write_trace(&cfg, &args[2]).expect("writing the trace");
    println!(
        "{} events, {} bytes, {} iterations -> {}",
        stats.events, stats.bytes, cfg.iterations, args[2]
    );
}
