//! Writes the export benchmark's trace: `laplace_like_trace EVENTS OUT.trace`, copies of the
//! builder's `laplace_like` template (1,000 iterations, two threads, an async queue) until the
//! trace has at least EVENTS events. The trace `cargo test --release -p accprof-cli --test
//! export_bench` exports, as a file to time with `/usr/bin/time -v accprof export`.

use accprof_testkit::builder::{laplace_like, write_repeated, TraceBuilder};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(events), Some(out)) = (
        args.first().and_then(|e| e.parse::<u64>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: laplace_like_trace EVENTS OUT.trace");
        std::process::exit(2);
    };
    let mut template = TraceBuilder::new("/bench/laplace", 1, None);
    laplace_like(&mut template, 1000);
    let copies = events.div_ceil(template.events.len() as u64);
    let n = write_repeated(&template, copies, std::path::Path::new(out));
    println!("{n} events -> {out}");
}
