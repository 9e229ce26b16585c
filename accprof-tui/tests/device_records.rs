//! Device records in a small synthetic trace whose every pairing is known: lanes per stream
//! (named by the queue a host event gives the same stream), which host event each device record
//! belongs to (same thread or a helper thread, call time inside the event, matching direction),
//! and the details of both sides.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{device, Event, Field, Footer, Header, StrId, TraceWriter};
use accprof_tui::app::App;
use accprof_tui::state::kind::BarKind;
use accprof_tui::state::pairing::{device_work_of, host_side_of};
use accprof_tui::state::store::{BarRef, LaneKind};
use accprof_tui::state::State;
use accprof_tui::view;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::Path;

const FILE: StrId = StrId(0);
const KERNEL: StrId = StrId(1);
const VAR: StrId = StrId(2);
/// The stream the async launch names (async_handle) and its kernel runs on.
const QUEUE_STREAM: u64 = 0xabc;
/// A stream no host event names.
const COPY_STREAM: u64 = 0x7;

fn host(kind: acc_event_t, start: u64, end: u64, thread: i64) -> Event {
    let mut e = Event::new(kind, start);
    e.end_ns = end;
    e.set_i64(Field::Thread, thread);
    e.set(Field::SrcFile, u64::from(FILE.0));
    e.set_i64(Field::LineNo, 10);
    e.set_i64(
        Field::ParentConstruct,
        i64::from(acc_construct_t::PARALLEL.0),
    );
    e
}

fn dev(
    kind: acc_event_t,
    start: u64,
    end: u64,
    stream: u64,
    thread: i64,
    call: Option<u64>,
) -> Event {
    let mut e = Event::new(kind, start);
    e.end_ns = end;
    e.set_i64(Field::Thread, thread);
    e.set(Field::AsyncHandle, stream);
    e.set(Field::CorrelationId, start);
    if let Some(c) = call {
        e.set(Field::HostCallNs, c);
    }
    e
}

fn copy(start: u64, end: u64, thread: i64, call: u64, dir: u64) -> Event {
    let mut e = dev(device::MEMCPY, start, end, COPY_STREAM, thread, Some(call));
    e.set(Field::Bytes, 1 << 20);
    e.set(Field::CopyKind, device::copy_kind(dir as u8, 1, 3));
    e
}

/// Thread 1: a compute construct [1000, 9000] holding an async launch on queue 1 [2000, 2500]
/// and an upload [4000, 5000]. Thread 2: a launch [2000, 2600] of its own.
/// Device: the queue's kernel (called by thread 1 at 2100), one for thread 2's launch (2200),
/// two halves of the upload staged by helper thread 99 (4100, 4600), a download issued by
/// thread 1 during the upload (must not pair: other direction), a memset with no call time.
fn write(path: &Path) {
    let header = Header {
        extra: vec![("device_activity".into(), "cupti".into())],
        ..Header::default()
    };
    let mut w = TraceWriter::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    w.write_strings([
        (FILE, &b"/src/t.c"[..]),
        (KERNEL, &b"k"[..]),
        (VAR, &b"A"[..]),
    ])
    .unwrap();
    let mut launch = host(acc_event_t::ENQUEUE_LAUNCH_START, 2000, 2500, 1);
    launch.set(Field::KernelName, u64::from(KERNEL.0));
    launch.set_i64(Field::Async, 1);
    launch.set_i64(Field::AsyncQueue, 1);
    launch.set(Field::AsyncHandle, QUEUE_STREAM);
    let mut upload = host(acc_event_t::ENQUEUE_UPLOAD_START, 4000, 5000, 1);
    upload.set(Field::VarName, u64::from(VAR.0));
    upload.set(Field::Bytes, 2 << 20);
    upload.set_i64(Field::Async, -2);
    let compute = host(acc_event_t::COMPUTE_CONSTRUCT_START, 1000, 9000, 1);
    let other = host(acc_event_t::ENQUEUE_LAUNCH_START, 2000, 2600, 2);
    let mut kernel = dev(device::KERNEL, 3000, 3400, QUEUE_STREAM, 1, Some(2100));
    kernel.set(Field::KernelName, u64::from(KERNEL.0));
    let mut other_kernel = dev(device::KERNEL, 3500, 3600, QUEUE_STREAM, 2, Some(2200));
    other_kernel.set(Field::KernelName, u64::from(KERNEL.0));
    let events = [
        launch,
        upload,
        compute,
        other,
        kernel,
        other_kernel,
        copy(4200, 4400, 99, 4100, device::COPY_HTOD),
        copy(4700, 4900, 99, 4600, device::COPY_HTOD),
        copy(5100, 5200, 1, 4500, device::COPY_DTOH),
        dev(device::MEMSET, 6000, 6050, COPY_STREAM, 1, None),
    ];
    w.write_events(&events).unwrap();
    w.write_footer(&Footer::default()).unwrap();
}

fn open(path: &Path) -> App {
    App::new(State::open(&[path.to_path_buf()], false, &mut |_, _| {}).unwrap())
}

fn find(app: &App, cat: BarKind, thread_lane: Option<LaneKind>) -> BarRef {
    for (lane, l) in app.state.store.lanes.iter().enumerate() {
        if thread_lane.is_some_and(|k| k != l.kind) {
            continue;
        }
        for (track, t) in l.tracks.iter().enumerate() {
            if let Some(idx) = t.cat.iter().position(|&c| c == cat as u8) {
                return BarRef { lane, track, idx };
            }
        }
    }
    panic!("no {cat:?}");
}

fn screen(app: &mut App) -> String {
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    term.draw(|f| view::draw(&mut app.view, &app.state, f))
        .unwrap();
    term.backend().to_string()
}

#[test]
fn device_records_get_stream_lanes_and_pair_with_the_host_events_that_issued_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.trace");
    write(&path);
    let mut app = open(&path);
    let store = &app.state.store;
    let labels: Vec<String> = (0..store.lanes.len())
        .map(|l| store.lane_label(l))
        .collect();
    assert_eq!(
        labels,
        [
            "thread 1",
            "thread 1 (sync)",
            "thread 2 (sync)",
            "queue 1",
            "device stream 0x7",
            "device stream 0xabc (queue 1)"
        ],
        "device streams last, by id"
    );

    // Thread 2's launch issued the kernel called during it; the async launch (on its queue's
    // lane, not thread 1's) issued none: its kernel belongs to the construct, as in the export.
    let launch = find(
        &app,
        BarKind::Launch,
        Some(LaneKind::DeviceSync { thread: Some(2) }),
    );
    let work = device_work_of(store, launch);
    assert_eq!(
        work.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
        [(3500, 3600)]
    );
    let async_launch = find(
        &app,
        BarKind::Launch,
        Some(LaneKind::DeviceQueue { queue: 1 }),
    );
    assert!(device_work_of(store, async_launch).is_empty());
    // The upload: both staged halves from the helper thread, not the download issued meanwhile.
    let upload = find(&app, BarKind::Upload, None);
    let work = device_work_of(store, upload);
    assert_eq!(
        work.iter().map(|r| r.duration()).collect::<Vec<_>>(),
        [200, 200]
    );
    // The construct issued the async kernel and the download called during the upload (an
    // upload issues no download: what encloses it does).
    let compute = find(&app, BarKind::Compute, None);
    let work = device_work_of(store, compute);
    assert_eq!(
        work.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
        [(3000, 3400), (5100, 5200)]
    );

    // From the device side: the kernel's enqueue and construct.
    let k = find(&app, BarKind::DeviceKernel, None);
    let rec = store.device.find(store.rec_of(k)).unwrap();
    let side = host_side_of(store, &rec);
    assert_eq!(
        side.enqueue.map(|e| store.label(store.rec_of(e))),
        None,
        "the async launch sits on the queue lane, not the thread's"
    );
    assert_eq!(
        side.construct
            .map(|c| store.label(store.rec_of(c)))
            .as_deref(),
        Some("parallel t.c:10")
    );
    // A helper thread's copy: the construct and upload open on the issuing program thread.
    let up = find(&app, BarKind::DeviceUpload, None);
    let rec = store.device.find(store.rec_of(up)).unwrap();
    let side = host_side_of(store, &rec);
    assert_eq!(
        side.enqueue
            .map(|e| store.label(store.rec_of(e)))
            .as_deref(),
        Some("upload 2 MiB A t.c:10")
    );
    // The memset has no call time: nothing to pair.
    let m = find(&app, BarKind::DeviceMemset, None);
    let rec = store.device.find(store.rec_of(m)).unwrap();
    assert_eq!(host_side_of(store, &rec), Default::default());

    // On screen: both durations for the upload, the device one for the copy.
    app.view.timeline.select(upload, &mut app.state);
    let s = screen(&mut app);
    assert!(s.contains("duration         1.0 us [host]"), "{s}");
    assert!(s.contains("duration         400 ns [device]"), "{s}");
    assert!(s.contains("device records   2"), "{s}");
    assert!(
        s.contains("device stream 0xabc (queue 1)") && s.contains("device stream 0x7"),
        "{s}"
    );
    app.view.timeline.select(up, &mut app.state);
    let s = screen(&mut app);
    assert!(
        s.contains("duration         200 ns [device]") && s.contains("issued by        thread 99"),
        "{s}"
    );
    assert!(
        s.contains("host enqueue     upload 2 MiB A t.c:10")
            && s.contains("enqueue duration 1.0 us [host]"),
        "{s}"
    );
    // The table waits for the analysis for kernels and transfers of a device trace.
    app.start_analysis();
    assert!(accprof_tui::view::table::table_note(&app.state).is_some());
}

#[test]
fn an_event_the_loader_does_not_hold_is_a_fault_of_ours_not_a_corrupt_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.trace");
    write(&path);
    let mut app = open(&path);
    let held = app.state.store.event_count() as u32;
    assert!(app.state.loader.fetch(held - 1).is_ok());
    for rec in [held, u32::MAX] {
        let err = app.state.loader.fetch(rec).unwrap_err().to_string();
        assert!(
            err.contains(&format!("lost track of event {rec}")) && !err.starts_with(':'),
            "{err}"
        );
    }
}

/// A kernel record that names no call (CUPTI's launch callback off, as libaccprof has it once
/// the runtime reports launches) is tied to the launch of its kernel by name, as the report and
/// the export tie it: the record names the kernel with an id of its own. A record of a kernel
/// no runtime launched is tied to nothing.
#[test]
fn a_kernel_record_without_its_call_pairs_with_the_launch_of_its_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("by_name.trace");
    let header = Header {
        extra: vec![("device_activity".into(), "cupti".into())],
        ..Header::default()
    };
    let (own_id, library) = (StrId(3), StrId(4));
    let mut w = TraceWriter::new(std::fs::File::create(&path).unwrap(), &header).unwrap();
    w.write_strings([
        (FILE, &b"/src/t.c"[..]),
        (KERNEL, &b"k"[..]),
        (own_id, &b"k"[..]),
        (library, &b"cublas_gemm"[..]),
    ])
    .unwrap();
    let mut launch = host(acc_event_t::ENQUEUE_LAUNCH_START, 2000, 2500, 1);
    launch.set(Field::KernelName, u64::from(KERNEL.0));
    let compute = host(acc_event_t::COMPUTE_CONSTRUCT_START, 1000, 9000, 1);
    let unissued = |start: u64, name: StrId| {
        let mut e = Event::new(device::KERNEL, start);
        e.end_ns = start + 400;
        e.set(Field::AsyncHandle, COPY_STREAM);
        e.set(Field::CorrelationId, start);
        e.set(Field::KernelName, u64::from(name.0));
        e
    };
    let events = [
        launch,
        compute,
        unissued(2600, own_id),
        unissued(4000, library),
    ];
    w.write_events(&events).unwrap();
    w.write_footer(&Footer::default()).unwrap();
    drop(w);
    let app = open(&path);
    let store = &app.state.store;
    let launch = find(&app, BarKind::Launch, None);
    let work = device_work_of(store, launch);
    assert_eq!(
        work.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
        [(2600, 3000)]
    );
    let side = host_side_of(store, &work[0]);
    assert_eq!(side.enqueue, Some(launch));
    assert_eq!(
        side.construct
            .map(|c| store.label(store.rec_of(c)))
            .as_deref(),
        Some("parallel t.c:10")
    );
    let library = store
        .device
        .all()
        .map(|(_, d)| d)
        .find(|d| d.start == 4000)
        .unwrap();
    assert_eq!(host_side_of(store, &library), Default::default());
}
