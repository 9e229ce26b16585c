//! A runtime that fills fields badly must neither crash the program nor lose or invent events.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use accprof_trace::{EventFlags, Field};

#[test]
fn bad_fields_odd_orders_and_late_events_are_kept_and_flagged() {
    let dir = scratch("hostile");
    let exe = dir.join("hostile");
    let out = std::process::Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(program_source("hostile_runtime.c"))
        .args(["-ldl", "-pthread"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = dir.join("h.trace");
    let out = std::process::Command::new(&exe)
        .arg(libaccprof())
        .env("ACCPROF_OUT", &trace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, stderr(&out));
    assert!(
        stdout.contains("main done") && stdout.contains("calls 16"),
        "{stdout}"
    );
    let t = load(&trace);
    let kinds: Vec<i32> = t.events.iter().map(|e| e.kind.0).collect();
    // 1 compute pair, 1 launch pair, wait end alone, free, event 99, an upload holding an
    // alloc and a launch, a download and the update start left open (closed at exit), free on
    // the new thread, runtime shutdown after exit.
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![5, 8, 9, 9, 14, 16, 18, 18, 20, 22, 24, 99],
        "{kinds:?}"
    );
    let find = |k: acc_event_t| t.events.iter().find(|e| e.kind == k).unwrap();

    let compute = find(acc_event_t::COMPUTE_CONSTRUCT_START);
    assert_eq!(compute.line_no(), None, "-1 lines are not lines");
    assert_eq!(compute.src_file(), None);
    assert!(compute.flags().contains(EventFlags::OS_THREAD_ID));

    let launch = find(acc_event_t::ENQUEUE_LAUNCH_START);
    assert_eq!(
        launch.get(Field::Version),
        None,
        "valid_bytes = 8 hides everything after it"
    );
    assert_eq!(launch.get(Field::KernelName), None);

    let wait = find(acc_event_t::WAIT_START);
    assert!(wait.flags().contains(EventFlags::NO_START));
    assert_eq!(wait.start_ns, wait.end_ns);

    for free in t.events.iter().filter(|e| e.kind == acc_event_t::FREE) {
        assert_eq!(free.bytes(), None);
        assert!(free.flags().contains(EventFlags::BYTES_UNKNOWN));
    }
    let threads: std::collections::HashSet<_> = t
        .events
        .iter()
        .filter(|e| e.kind == acc_event_t::FREE)
        .map(|e| e.thread())
        .collect();
    assert_eq!(
        threads.len(),
        2,
        "the free on the other thread carries that thread's id"
    );

    // A transfer's record is built in the buffer where it will be committed; events inside it
    // move it out first, and every event keeps its fields and times.
    let upload = find(acc_event_t::ENQUEUE_UPLOAD_START);
    let inner = t
        .events
        .iter()
        .find(|e| e.kind == acc_event_t::ENQUEUE_LAUNCH_START && e.get(Field::KernelName).is_some())
        .unwrap();
    assert_eq!(t.str(upload.var_name()), Some("A"));
    assert_eq!(upload.bytes(), Some(64));
    assert!(!upload.flags().contains(EventFlags::NO_END));
    assert_eq!(t.str(inner.kernel_name()), Some("inner"));
    assert!(upload.start_ns <= inner.start_ns && inner.end_ns <= upload.end_ns);
    let alloc = find(acc_event_t::ALLOC);
    assert!(upload.start_ns <= alloc.start_ns && alloc.start_ns <= inner.start_ns);
    let download = find(acc_event_t::ENQUEUE_DOWNLOAD_START);
    assert_eq!(t.str(download.var_name()), Some("B"));
    assert!(download.flags().contains(EventFlags::NO_END));

    let update = find(acc_event_t::UPDATE_START);
    assert!(update.flags().contains(EventFlags::NO_END));
    assert_eq!(t.str(update.src_file()), Some("hostile.c"));
    assert_eq!(update.line_no(), Some(42));

    let shutdown = find(acc_event_t::RUNTIME_SHUTDOWN);
    assert!(shutdown.flags().contains(EventFlags::AFTER_SHUTDOWN));
    // The footer counted what was written before exit; the late event follows it.
    assert_eq!(t.footer.as_ref().unwrap().events_recorded, 11);
    assert!(
        stderr(&out).contains("11 events recorded"),
        "{}",
        stderr(&out)
    );
}
