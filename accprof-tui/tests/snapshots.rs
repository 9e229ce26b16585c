//! Snapshots of the main screens and of each interaction, drawn with ratatui's TestBackend on
//! a synthetic Laplace-like trace (see `support/synth.rs`).

mod common;
mod support;

use accprof_tui::action::Action;
use accprof_tui::app::App;
use accprof_tui::input::Input;
use accprof_tui::state::State;
use accprof_tui::view::Mode;
use common::{open, screen};
use ratatui::crossterm::event::{Event, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use std::path::PathBuf;
use support::synth;

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn trace(iterations: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("laplace.trace");
    synth::write_trace(&path, iterations).unwrap();
    Fixture { _dir: dir, path }
}

/// Sends keys at the size most snapshots use.
fn keys(app: &mut App, keys: &str) {
    common::keys_at(app, keys, 120, 36);
}

fn main_app() -> (Fixture, App) {
    let f = trace(24);
    let app = open(&f.path, false);
    (f, app)
}

#[test]
fn main_screen() {
    let (_f, mut app) = main_app();
    insta::assert_snapshot!(screen(&mut app, 120, 36));
}

#[test]
fn zoom_in_twice_then_out_once() {
    let (_f, mut app) = main_app();
    keys(&mut app, "+++");
    let zoomed = screen(&mut app, 120, 36);
    insta::assert_snapshot!("zoom_in_x3", zoomed);
    keys(&mut app, "-");
    insta::assert_snapshot!("zoom_out_x1", screen(&mut app, 120, 36));
}

#[test]
fn pan_right_and_home_end() {
    let (_f, mut app) = main_app();
    keys(&mut app, "++++ll");
    insta::assert_snapshot!("pan_right", screen(&mut app, 120, 36));
    keys(&mut app, "G");
    insta::assert_snapshot!("end", screen(&mut app, 120, 36));
    keys(&mut app, "g");
    let home = screen(&mut app, 120, 36);
    assert!(
        home.contains("view +0 ns"),
        "Home goes to the start:\n{home}"
    );
}

#[test]
fn select_and_step_shows_details() {
    let (_f, mut app) = main_app();
    // Row 2 holds the launches and transfers; zoom so they are wide enough to read.
    keys(&mut app, "++++++jj]]");
    let s = screen(&mut app, 120, 36);
    assert!(app.view.timeline.selected.is_some());
    insta::assert_snapshot!("selected_details", s);
}

#[test]
fn next_of_kind_and_of_construct() {
    let (_f, mut app) = main_app();
    keys(&mut app, "++++++jj]");
    let first = app.view.timeline.selected.expect("selected");
    keys(&mut app, "n");
    let next_kind = app.view.timeline.selected.expect("still selected");
    assert_ne!(first, next_kind);
    insta::assert_snapshot!("next_of_kind", screen(&mut app, 120, 36));
    keys(&mut app, "c");
    insta::assert_snapshot!("next_of_construct", screen(&mut app, 120, 36));
    keys(&mut app, "C");
    assert_eq!(
        app.view.timeline.selected,
        Some(next_kind),
        "c then C comes back"
    );
}

#[test]
fn zoom_to_selection() {
    let (_f, mut app) = main_app();
    keys(&mut app, "++++++jj]z");
    insta::assert_snapshot!(screen(&mut app, 120, 36));
}

#[test]
fn help_overlay() {
    let (_f, mut app) = main_app();
    keys(&mut app, "?");
    assert_eq!(app.view.mode, Mode::Help);
    insta::assert_snapshot!(screen(&mut app, 120, 36));
    keys(&mut app, "?");
    assert_eq!(app.view.mode, Mode::Timeline);
}

#[test]
fn search_prompt_and_filter() {
    let (_f, mut app) = main_app();
    keys(&mut app, "/main_52");
    insta::assert_snapshot!("search_prompt", screen(&mut app, 120, 36));
    keys(&mut app, "\n");
    let f = app.view.timeline.filter.as_ref().expect("filter on");
    // Every 4th of 24 iterations launches main_52_gpu.
    assert_eq!(f.matches, 6);
    insta::assert_snapshot!("filtered", screen(&mut app, 120, 36));
    keys(&mut app, "\x1b");
    assert!(app.view.timeline.filter.is_none());
}

#[test]
fn filter_by_file_and_line() {
    let (_f, mut app) = main_app();
    keys(&mut app, "/laplace.c:60\n");
    // Every 10th iteration: an update and its download, at line 60.
    assert_eq!(app.view.timeline.filter.as_ref().unwrap().matches, 4);
    keys(&mut app, "/70\n");
    assert_eq!(app.view.timeline.filter.as_ref().unwrap().matches, 2);
}

#[test]
fn constructs_table_sorts_and_jumps() {
    let (_f, mut app) = main_app();
    keys(&mut app, "t");
    insta::assert_snapshot!("table_by_total", screen(&mut app, 120, 36));
    keys(&mut app, "s");
    insta::assert_snapshot!("table_by_count", screen(&mut app, 120, 36));
    let counts: Vec<u64> = app.view.table.rows.iter().map(|r| r.count).collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "sorted by count: {counts:?}"
    );
    keys(&mut app, "jj\n");
    assert_eq!(app.view.mode, Mode::Timeline);
    let sel = app
        .view
        .timeline
        .selected
        .expect("Enter selects the construct");
    let rec = app.state.store.rec_of(sel);
    assert_eq!(app.view.table.rows[2].jump, Some(rec));
    insta::assert_snapshot!("table_jump", screen(&mut app, 120, 36));
}

#[test]
fn findings_jump_to_evidence() {
    let (_f, mut app) = main_app();
    app.run_analysis();
    assert!(
        !app.state.analysis.findings.is_empty(),
        "{}",
        app.state.analysis.note
    );
    keys(&mut app, "a");
    insta::assert_snapshot!("findings", screen(&mut app, 120, 36));
    keys(&mut app, "\n");
    assert_eq!(app.view.mode, Mode::Timeline);
    assert!(app.view.timeline.selected.is_some());
    insta::assert_snapshot!("findings_jump", screen(&mut app, 120, 36));
}

#[test]
fn resize_layout_follows() {
    let (_f, mut app) = main_app();
    keys(&mut app, "jj]");
    insta::assert_snapshot!("narrow_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("wide_160x30", screen(&mut app, 160, 30));
}

#[test]
fn mouse_click_selects_and_drag_zooms() {
    let (_f, mut app) = main_app();
    screen(&mut app, 120, 36);
    let g = app.view.geometry;
    let mut input = Input::default();
    let mut mouse = |app: &mut App, kind, col: u16, row: u16| {
        let ev = Event::Mouse(MouseEvent {
            kind,
            column: g.timeline_x + col,
            row: g.rows_y + row,
            modifiers: KeyModifiers::NONE,
        });
        if let Some(a) = input.action(&ev, &app.view.mode, &app.view.geometry) {
            app.apply(a);
        }
    };
    // Drag over the first quarter of the timeline.
    let span = app.view.timeline.viewport.span;
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), 0, 0);
    mouse(
        &mut app,
        MouseEventKind::Up(MouseButton::Left),
        g.timeline_width / 4,
        0,
    );
    assert!(
        app.view.timeline.viewport.span < span / 3,
        "drag zooms in: {} -> {}",
        span,
        app.view.timeline.viewport.span
    );
    // Click in the middle of row 0 (the compute constructs are nearly back to back).
    mouse(
        &mut app,
        MouseEventKind::Down(MouseButton::Left),
        g.timeline_width / 2,
        0,
    );
    mouse(
        &mut app,
        MouseEventKind::Up(MouseButton::Left),
        g.timeline_width / 2,
        0,
    );
    assert!(app.view.timeline.selected.is_some());
    let before = app.view.timeline.viewport.span;
    mouse(&mut app, MouseEventKind::ScrollUp, 10, 0);
    assert!(app.view.timeline.viewport.span < before);
    insta::assert_snapshot!(screen(&mut app, 120, 36));
}

#[test]
fn follow_shows_new_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.trace");
    let file = std::fs::File::create(&path).unwrap();
    let mut s = synth::Synth::new(file).unwrap();
    s.prologue().unwrap();
    for i in 0..4 {
        s.iteration(i).unwrap();
    }
    s.flush_events().unwrap();
    let mut app = open(&path, true);
    let before = app.state.store.event_count();
    insta::assert_snapshot!("follow_before", screen(&mut app, 120, 30));
    for i in 4..12 {
        s.iteration(i).unwrap();
    }
    s.flush_events().unwrap();
    let added = app.poll_follow().unwrap();
    assert!(added > 0);
    assert_eq!(app.state.store.event_count(), before + added);
    insta::assert_snapshot!("follow_after", screen(&mut app, 120, 30));
    // The details of an event read after following started still come from the file.
    keys(&mut app, "G+++jj[");
    let sel = app.view.timeline.selected.expect("selected");
    let d = app.view.timeline.details.as_ref().expect("details");
    assert_eq!(d.rec, app.state.store.rec_of(sel));
    assert!(d.event.is_some(), "{:?}", d.error);
}

#[test]
fn empty_trace_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.trace");
    let f = std::fs::File::create(&path).unwrap();
    let mut w = accprof_trace::TraceWriter::new(f, &accprof_trace::Header::default()).unwrap();
    w.write_footer(&accprof_trace::Footer::default()).unwrap();
    let mut app = open(&path, false);
    let s = screen(&mut app, 100, 12);
    assert!(s.contains("This trace holds no events."), "{s}");
    // Every key is harmless on an empty trace.
    keys(&mut app, "+-hljk[]nNcCz0gG/x\n\x1bt\x1ba\n\x1b?");
    screen(&mut app, 100, 12);
}

#[test]
fn quit_key() {
    let (_f, mut app) = main_app();
    keys(&mut app, "q");
    assert!(app.quit);
    let _ = Action::Quit;
}

#[test]
fn several_traces_get_lanes_per_rank() {
    let (a, b) = (trace(4), trace(8));
    let mut app =
        App::new(State::open(&[a.path.clone(), b.path.clone()], false, &mut |_, _| {}).unwrap());
    let s = screen(&mut app, 120, 20);
    assert!(
        s.contains("r0 thread 0") && s.contains("r1 thread 0") && s.contains("r1 queue 1"),
        "{s}"
    );
    assert!(s.contains("2 traces"), "{s}");
    // Details of rank 1's events come from rank 1's file.
    let lane = (0..app.state.store.lanes.len())
        .find(|&l| app.state.store.lane_label(l) == "r1 queue 1")
        .unwrap();
    let r = accprof_tui::state::store::BarRef {
        lane,
        track: 0,
        idx: 0,
    };
    app.view.timeline.select(r, &mut app.state);
    let d = app.view.timeline.details.as_ref().unwrap();
    assert_eq!(
        d.event.as_ref().map(|e| e.kind),
        Some(accprof_abi::acc_event_t::ENQUEUE_LAUNCH_START)
    );
}

/// A trace without its end marker (a killed run, or one cut short) is said in the status bar,
/// as every other command says it; not while following a trace whose program is running.
#[test]
fn a_trace_without_its_end_marker_is_said_unless_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.trace");
    let mut s = synth::Synth::new(std::fs::File::create(&path).unwrap()).unwrap();
    s.prologue().unwrap();
    for i in 0..4 {
        s.iteration(i).unwrap();
    }
    s.flush_events().unwrap();
    let mut app = open(&path, false);
    assert!(
        app.state
            .loader
            .warnings
            .iter()
            .any(|w| w.contains("no end marker")),
        "{:?}",
        app.state.loader.warnings
    );
    assert!(screen(&mut app, 200, 30).contains("no end marker"));
    let followed = open(&path, true);
    assert!(
        !followed
            .state
            .loader
            .warnings
            .iter()
            .any(|w| w.contains("no end marker")),
        "{:?}",
        followed.state.loader.warnings
    );
}
