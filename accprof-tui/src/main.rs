//! `accprof-tui TRACE...`: a full-screen timeline of accprof traces in the terminal.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_tui::app::App;
use accprof_tui::input::Input;
use accprof_tui::state::State;
use accprof_tui::{terminal, view};
use clap::Parser;
use ratatui::crossterm::event;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Interactive timeline of accprof traces: host threads and device queues as lanes, constructs,
/// kernels and transfers as bars, with details, search, a constructs table and advice.
///
/// Example:
///   accprof-tui laplace.trace
///   accprof-tui rank0.trace rank1.trace      (one set of lanes per rank)
///   accprof-tui --follow run.trace           (while the program is still running)
///   accprof-tui --event 58 laplace.trace     (at the event the advice names)
///
/// Press ? inside for the keys; q quits.
#[derive(Parser, Debug)]
#[command(name = "accprof-tui", version, verbatim_doc_comment)]
struct Args {
    /// Trace files written by accprof (one per process / MPI rank).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Keep reading the traces as the running program appends to them.
    #[arg(long)]
    follow: bool,
    /// Open at this event of the first trace (the advice's `see: event #58`; inside, `/#58`).
    #[arg(long, value_name = "N")]
    event: Option<u64>,
}

/// How often a followed trace is checked for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("accprof-tui: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    // Everything that can fail on bad input happens here, before the screen is taken over.
    let started = Instant::now();
    let show_progress = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    let (traces, notes) = accprof_trace::live::traces_given(&args.traces);
    for n in notes {
        eprintln!("accprof-tui: note: {n}");
    }
    if traces.is_empty() {
        return Err("no trace among the files given (only live files)".into());
    }
    let state = State::open(&traces, args.follow, &mut |done, total| {
        if show_progress && total > 0 && last.elapsed() > Duration::from_millis(250) {
            last = Instant::now();
            eprint!("\raccprof-tui: reading {:>3}%", done * 100 / total);
        }
    })
    .map_err(|e| e.to_string())?;
    if show_progress && started.elapsed() > Duration::from_millis(250) {
        eprint!("\r\x1b[K");
    }
    if !args.follow {
        for w in &state.loader.warnings {
            eprintln!("accprof-tui: warning: {w}");
        }
    }
    let mut app = App::new(state);
    app.start_analysis();
    let mut goto = args.event;

    let (mut term, _guard) =
        terminal::enter().map_err(|e| format!("cannot use the terminal: {e}"))?;
    let mut input = Input::default();
    let mut last_poll = Instant::now();
    while !app.quit {
        term.draw(|f| view::draw(&mut app.view, &app.state, f))
            .map_err(|e| e.to_string())?;
        // After the first frame, when the layout is known.
        if let Some(n) = goto.take() {
            app.apply(accprof_tui::action::Action::GotoEvent(n));
            continue;
        }
        // For the end-to-end test of terminal restoration on panic.
        if std::env::var_os("ACCPROF_TUI_PANIC_AFTER_DRAW").is_some() {
            panic!("panic requested by ACCPROF_TUI_PANIC_AFTER_DRAW");
        }
        let wait = if app.state.following || app.state.analysis.running() {
            FOLLOW_POLL.saturating_sub(last_poll.elapsed())
        } else {
            Duration::from_secs(1)
        };
        if event::poll(wait).map_err(|e| e.to_string())? {
            let ev = event::read().map_err(|e| e.to_string())?;
            if let Some(action) = input.action(&ev, &app.view.mode, &app.view.geometry) {
                app.apply(action);
            }
            // Drain what queued up meanwhile (wheel bursts) before drawing again.
            while event::poll(Duration::ZERO).map_err(|e| e.to_string())? {
                let ev = event::read().map_err(|e| e.to_string())?;
                if let Some(action) = input.action(&ev, &app.view.mode, &app.view.geometry) {
                    app.apply(action);
                }
            }
        }
        app.poll_analysis();
        if app.state.following && last_poll.elapsed() >= FOLLOW_POLL {
            last_poll = Instant::now();
            if let Err(e) = app.poll_follow() {
                app.state.following = false;
                app.view.flash = Some(format!("stopped following: {e}"));
            }
        }
    }
    Ok(())
}
