//! Writes a Laplace-shaped Perfetto trace of N events (default 10 million) to a file and prints
//! the time, the size and the bytes per event: the writer's share of `accprof export --format
//! perfetto`. See docs/performance/perfetto.md.
//!
//! ```sh
//! cargo build --release -p accprof-perfetto --example bench_write
//! /usr/bin/time -v target/release/examples/bench_write -o /tmp/bench.pftrace
//! ```
//!
//! Options: `-o PATH` (required), `--events N`, `--threads T` (1-3 host threads, default 2).
//! Per iteration each thread runs a compute construct with nested enter data (an allocation
//! and an upload with its bytes and variable), a launch, a wait and an exit data (a download);
//! the kernel runs on a device stream with a flow from its construct; every fourth iteration
//! also uploads on an async queue; counters follow bytes moved and device memory in use.

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;
use std::time::Instant;

use accprof_perfetto::{Arg, ArgValue, CounterUnit, Event, PerfettoWriter};

struct Options {
    out: String,
    events: u64,
    threads: u32,
}

fn parse() -> Result<Options, String> {
    let mut out = None;
    let mut events = 10_000_000u64;
    let mut threads = 2u32;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "-o" => out = Some(value("-o")?),
            "--events" => {
                events = value("--events")?
                    .parse()
                    .map_err(|e| format!("--events: {e}"))?
            }
            "--threads" => {
                threads = value("--threads")?
                    .parse()
                    .map_err(|e| format!("--threads: {e}"))?;
                if !(1..=3).contains(&threads) {
                    return Err("--threads takes 1, 2 or 3".into());
                }
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(Options {
        out: out.ok_or("-o PATH is required")?,
        events,
        threads,
    })
}

fn run(opts: &Options) -> std::io::Result<()> {
    let started = Instant::now();
    let file = File::create(&opts.out)?;
    let mut w = PerfettoWriter::new(BufWriter::new(file));

    let process = w.process(4242, "laplace", &["rank 0"])?;
    let threads: Vec<_> = (0..opts.threads)
        .map(|t| {
            w.thread(
                process,
                4242 + i64::from(t),
                if t == 0 { "main" } else { "worker" },
            )
        })
        .collect::<Result<_, _>>()?;
    let queue = w.slice_track(process, "async queue 1")?;
    let device = w.slice_track(process, "device 0")?;
    let stream = w.slice_track(device, "stream 7")?;
    let moved = w.counter_track(device, "bytes moved", CounterUnit::Bytes)?;
    let in_use = w.counter_track(device, "device memory in use", CounterUnit::Bytes)?;

    // Interned once, as the export does through its own string table.
    let construct = w.name("acc_compute_construct");
    let enter = w.name("acc_enter_data");
    let exit = w.name("acc_exit_data");
    let alloc = w.name("acc_alloc");
    let upload = w.name("acc_enqueue_upload");
    let download = w.name("acc_enqueue_download");
    let launch = w.name("acc_enqueue_launch");
    let wait = w.name("acc_wait");
    let kernels: Vec<_> = (0..40)
        .map(|l| w.name(&format!("main_{}_gpu", 40 + l)))
        .collect();
    let lines: Vec<_> = (0..40)
        .map(|l| w.location("laplace.c", "main", 40 + l))
        .collect();
    let c_construct = w.category("construct");
    let c_data = w.category("data");
    let c_transfer = w.category("transfer");
    let c_launch = w.category("launch");
    let c_device = w.category("device");
    let c_sync = w.category("sync");
    let a_bytes = w.arg_name("bytes");
    let a_var = w.arg_name("var");
    let a_gangs = w.arg_name("gangs");
    let vars = [w.string("A"), w.string("Anew")];

    let mut moved_total = 0i64;
    let mut memory = 0i64;
    let mut i = 0u64;
    while w.stats().events < opts.events {
        let k = (i % 40) as usize;
        let bytes = 4096 * (i % 7 + 1);
        let var = vars[(i % 2) as usize];
        let s = 1_000_000 + i * 12_000;
        let thread = threads[(i % u64::from(opts.threads)) as usize];
        let flow = w.new_flow();
        let queued = w.new_flow();
        let on_queue = i.is_multiple_of(4);
        let flows = [flow, queued];
        let flows_out = if on_queue { &flows[..] } else { &flows[..1] };
        w.slice(
            thread,
            s,
            s + 11_000,
            &Event::named(construct)
                .category(c_construct)
                .location(lines[k])
                .flows_out(flows_out),
        )?;
        w.slice(
            thread,
            s + 100,
            s + 2_000,
            &Event::named(enter).category(c_data).location(lines[k]),
        )?;
        w.slice(
            thread,
            s + 150,
            s + 190,
            &Event::named(alloc).category(c_data),
        )?;
        memory += bytes as i64;
        w.counter(in_use, s + 150, memory)?;
        let transfer = [
            Arg {
                name: a_bytes,
                value: ArgValue::Uint(bytes),
            },
            Arg {
                name: a_var,
                value: ArgValue::Interned(var),
            },
        ];
        w.slice(
            thread,
            s + 200,
            s + 1_500,
            &Event::named(upload).category(c_transfer).args(&transfer),
        )?;
        moved_total += bytes as i64;
        w.counter(moved, s + 1_500, moved_total)?;
        let geometry = [Arg {
            name: a_gangs,
            value: ArgValue::Uint(256),
        }];
        w.slice(
            thread,
            s + 2_100,
            s + 6_000,
            &Event::named(launch)
                .category(c_launch)
                .location(lines[k])
                .args(&geometry),
        )?;
        w.slice(
            stream,
            s + 2_500,
            s + 5_500,
            &Event::named(kernels[k])
                .category(c_device)
                .flows_in(&flows[..1]),
        )?;
        if on_queue {
            w.slice(
                queue,
                s + 5_600,
                s + 5_900,
                &Event::named(upload)
                    .category(c_transfer)
                    .args(&transfer)
                    .flows_in(&flows[1..]),
            )?;
        }
        w.slice(
            thread,
            s + 6_100,
            s + 6_400,
            &Event::named(wait).category(c_sync),
        )?;
        w.slice(
            thread,
            s + 6_600,
            s + 10_900,
            &Event::named(exit).category(c_data).location(lines[k]),
        )?;
        w.slice(
            thread,
            s + 6_700,
            s + 10_000,
            &Event::named(download).category(c_transfer).args(&transfer),
        )?;
        moved_total += bytes as i64;
        w.counter(moved, s + 10_000, moved_total)?;
        memory -= bytes as i64;
        w.counter(in_use, s + 10_900, memory)?;
        i += 1;
    }
    let (out, stats) = w.finish()?;
    // Closed like the export closes its output: flushed to the page cache, not synced.
    drop(out);
    let elapsed = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&opts.out)?.len();
    println!(
        "{i} iterations, {} events, {} packets, {size} bytes ({:.2} bytes/event), {elapsed:.3} s ({:.2} M events/s)",
        stats.events,
        stats.packets,
        size as f64 / stats.events as f64,
        stats.events as f64 / elapsed / 1e6
    );
    Ok(())
}

fn main() -> ExitCode {
    let opts = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_write: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_write: {}: {e}", opts.out);
            ExitCode::FAILURE
        }
    }
}
