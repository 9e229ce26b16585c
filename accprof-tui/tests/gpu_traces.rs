//! The traces recorded on a real GPU (traces/gpu/, see traces/gpu/README.md), drawn with
//! ratatui's TestBackend: device records on their stream's lane, a device record's details, a
//! host launch with its [host] and [device] durations, and the constructs table with device
//! times from the analysis.

mod common;

use accprof_tui::app::App;
use accprof_tui::state::kind::BarKind;
use accprof_tui::state::store::{BarRef, LaneKind};
use accprof_tui::view::Mode;
use common::screen;
use std::path::PathBuf;

fn trace(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/gpu")
        .join(format!("{name}.trace"));
    assert!(p.exists(), "{} is missing", p.display());
    p
}

fn open(name: &str) -> App {
    common::open(&trace(name), false)
}

fn keys(app: &mut App, keys: &str) {
    common::keys_at(app, keys, 140, 44);
}

/// The first event of category `cat` (in time order over its lane's rows).
fn first_of(app: &App, cat: BarKind) -> BarRef {
    let mut best: Option<(u64, BarRef)> = None;
    for (lane, l) in app.state.store.lanes.iter().enumerate() {
        for (track, t) in l.tracks.iter().enumerate() {
            if let Some(idx) = t.cat.iter().position(|&c| c == cat as u8) {
                if best.is_none_or(|(s, _)| t.start[idx] < s) {
                    best = Some((t.start[idx], BarRef { lane, track, idx }));
                }
            }
        }
    }
    best.unwrap_or_else(|| panic!("no {cat:?} event")).1
}

/// Selects `r` and zooms the timeline to it, as `z` does.
fn select_and_zoom(app: &mut App, r: BarRef) {
    app.view.timeline.select(r, &mut app.state);
    keys(app, "z");
}

#[test]
fn gcc_naive_device_lane_and_a_device_copy() {
    let mut app = open("gcc_naive");
    let device_lanes: Vec<String> = (0..app.state.store.lanes.len())
        .filter(|&l| matches!(app.state.store.lanes[l].kind, LaneKind::DeviceStream { .. }))
        .map(|l| app.state.store.lane_label(l))
        .collect();
    assert_eq!(
        device_lanes,
        ["device stream 0x7"],
        "GCC runs everything on one stream"
    );
    insta::assert_snapshot!("gcc_naive_main", screen(&mut app, 140, 44));
    // The first big upload: GCC reports none, the device record is all there is.
    let r = first_of(&app, BarKind::DeviceUpload);
    select_and_zoom(&mut app, r);
    let s = screen(&mut app, 140, 44);
    assert!(
        s.contains("duration         ") && s.contains("[device]"),
        "{s}"
    );
    insta::assert_snapshot!("gcc_naive_device_upload", s);
}

#[test]
fn gcc_naive_launch_shows_host_and_device_durations() {
    let mut app = open("gcc_naive");
    let r = first_of(&app, BarKind::Launch);
    select_and_zoom(&mut app, r);
    let s = screen(&mut app, 140, 44);
    assert!(s.contains("[host]") && s.contains("[device]"), "{s}");
    insta::assert_snapshot!("gcc_naive_launch", s);
    // And the kernel's own record names the launch as its host enqueue.
    let k = first_of(&app, BarKind::DeviceKernel);
    select_and_zoom(&mut app, k);
    insta::assert_snapshot!("gcc_naive_device_kernel", screen(&mut app, 140, 44));
}

#[test]
fn gcc_naive_table_prefers_device_time() {
    let mut app = open("gcc_naive");
    app.run_analysis();
    keys(&mut app, "t");
    assert_eq!(app.view.mode, Mode::Table);
    let kernel = app
        .view
        .table
        .rows
        .iter()
        .find(|r| r.what.starts_with("kernel main$_omp_fn$0"))
        .expect("kernel row");
    assert_eq!(kernel.source_label(), "[device]");
    assert!(
        kernel.host_ns.is_some(),
        "GCC reports its launches: the host column has them"
    );
    let up = app
        .view
        .table
        .rows
        .iter()
        .find(|r| r.what.starts_with("upload A "))
        .expect("upload of A");
    assert_eq!(
        (up.source_label(), up.host_ns),
        ("[device]", None),
        "GCC reports no transfer of A"
    );
    insta::assert_snapshot!("gcc_naive_table", screen(&mut app, 140, 64));
    // Enter on the kernel row lands on its first launch; on a device-only transfer row, on the
    // device copy.
    app.view.table.pos = app
        .view
        .table
        .rows
        .iter()
        .position(|r| r.what.starts_with("kernel main$_omp_fn$0"))
        .unwrap();
    keys(&mut app, "\n");
    let sel = app.view.timeline.selected.expect("Enter selects");
    assert_eq!(
        app.state.store.label(app.state.store.rec_of(sel)),
        "launch main$_omp_fn$0"
    );
    keys(&mut app, "t");
    app.view.table.pos = app
        .view
        .table
        .rows
        .iter()
        .position(|r| r.what.starts_with("upload A "))
        .unwrap();
    keys(&mut app, "\n");
    let sel = app.view.timeline.selected.expect("Enter selects");
    assert!(
        matches!(
            app.state.store.lanes[sel.lane].kind,
            LaneKind::DeviceStream { .. }
        ),
        "jumped to {:?}",
        app.state.store.lane_label(sel.lane)
    );
}

#[test]
fn shim_naive_staged_upload_pairs_with_its_device_copies() {
    let mut app = open("shim_naive");
    let labels: Vec<String> = (0..app.state.store.lanes.len())
        .map(|l| app.state.store.lane_label(l))
        .collect();
    assert!(
        labels
            .iter()
            .filter(|l| l.starts_with("device stream "))
            .count()
            >= 2,
        "{labels:?}"
    );
    insta::assert_snapshot!("shim_naive_main", screen(&mut app, 140, 44));
    let r = first_of(&app, BarKind::Upload);
    select_and_zoom(&mut app, r);
    let s = screen(&mut app, 140, 44);
    assert!(
        s.contains("device records"),
        "staged on helper threads, summed:\n{s}"
    );
    insta::assert_snapshot!("shim_naive_upload", s);
    app.run_analysis();
    keys(&mut app, "t");
    insta::assert_snapshot!("shim_naive_table", screen(&mut app, 140, 64));
}
