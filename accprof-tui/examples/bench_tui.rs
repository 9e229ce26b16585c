//! Benchmark for docs/performance/tui.md: opening a 10M-event trace and drawing frames.
//!
//! cargo run --release -p accprof-tui --example bench_tui [-- TRACE]
//! Writes a synthetic trace of ~10M events to /tmp/accprof-tui-bench.trace when none is given.

#[path = "../tests/support/synth.rs"]
mod synth;

use accprof_tui::action::Action;
use accprof_tui::app::App;
use accprof_tui::state::State;
use accprof_tui::view;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::{Duration, Instant};

fn peak_rss_mib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

fn main() {
    let path = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or("/tmp/accprof-tui-bench.trace".into()),
    );
    if !path.exists() {
        let t = Instant::now();
        let n = synth::write_trace(&path, 10_400_000 / 8).unwrap();
        eprintln!(
            "wrote {n} events to {} in {:.2?}",
            path.display(),
            t.elapsed()
        );
    }
    let size = std::fs::metadata(&path).unwrap().len();
    let t = Instant::now();
    let state = State::open(std::slice::from_ref(&path), false, &mut |_, _| {}).unwrap();
    let n = state.store.event_count();
    let open = t.elapsed();
    println!(
        "open: {n} events, {} MiB file, {open:.2?}, peak RSS {} MiB",
        size >> 20,
        peak_rss_mib()
    );

    let mut app = App::new(state);
    let (w, h) = (200, 50);
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut frame = |app: &mut App, name: &str, actions: &[Action]| {
        let mut worst = Duration::ZERO;
        let mut total = Duration::ZERO;
        const N: u32 = 20;
        for _ in 0..N {
            for a in actions {
                app.apply(*a);
            }
            let t = Instant::now();
            term.draw(|f| view::draw(&mut app.view, &app.state, f))
                .unwrap();
            let d = t.elapsed();
            worst = worst.max(d);
            total += d;
        }
        println!(
            "frame {name:<28} mean {:>8.2?}  worst {:>8.2?}",
            total / N,
            worst
        );
    };
    frame(&mut app, "whole trace", &[]);
    frame(&mut app, "pan (whole trace)", &[Action::Pan(0.01)]);
    app.apply(Action::ZoomAll);
    frame(&mut app, "zoom in step by step", &[Action::Zoom(0.5)]);
    app.apply(Action::ZoomAll);
    for _ in 0..8 {
        app.apply(Action::Zoom(0.5));
    }
    frame(&mut app, "zoomed x256, panning", &[Action::Pan(0.125)]);
    app.apply(Action::Row(1));
    app.apply(Action::Row(1));
    frame(&mut app, "selection stepping", &[Action::Step(1)]);
    app.apply(Action::ZoomAll);
    app.apply(Action::StartSearch);
    for c in "main_52".chars() {
        app.apply(Action::SearchChar(c));
    }
    let t = Instant::now();
    app.apply(Action::SearchSubmit);
    println!("filter \"main_52\" over all events: {:.2?}", t.elapsed());
    frame(&mut app, "filtered, whole trace", &[]);
    let t = Instant::now();
    app.apply(Action::OpenTable);
    println!("open constructs table: {:.2?}", t.elapsed());
    println!("peak RSS {} MiB", peak_rss_mib());
    // What the findings panel and the table's device rows wait for after the timeline is up.
    let t = Instant::now();
    app.run_analysis();
    println!(
        "analysis (advice and device rows): {:.2?}, {} findings, peak RSS {} MiB",
        t.elapsed(),
        app.state.analysis.findings.len(),
        peak_rss_mib()
    );
}
