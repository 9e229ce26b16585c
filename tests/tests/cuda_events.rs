//! Device times from CUDA events (libaccprof/src/cuda_events), where there is no GPU (CI): the
//! mode must stay out of the way. With no CUDA handles in acc_api_info (GCC's host fallback,
//! the shim's emulated device) nothing is timed and nothing is said; `ACCPROF_CUDA_EVENTS=on`
//! without a CUDA driver says so in one line and the program runs unharmed. What the mode
//! records on a GPU is checked by `scripts/gpu-validate.sh cuda-events` and the committed trace
//! traces/gpu/shim_naive_cudaevents.trace (accprof-cli/tests/gpu_traces.rs reports it).

use accprof_integration_tests::*;
use accprof_trace::{device, EventFlags};

/// A driver path that cannot load, so that the test does not depend on what this machine has.
const NO_CUDA: (&str, &str) = ("ACCPROF_CUDA_LIB", "/nonexistent/libcuda.so.1");
/// And no CUPTI either: `auto` must not stand aside for a CUPTI that happens to be here.
const NO_CUPTI: (&str, &str) = ("ACCPROF_CUPTI_LIB", "/nonexistent/libcupti.so.13");

fn cuda_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.contains("CUDA")).collect()
}

fn no_cuda_event_records(t: &accprof_trace::Trace) -> bool {
    t.events.iter().all(|e| {
        !device::is_device_record(e.kind) && !e.flags().contains(EventFlags::FROM_CUDA_EVENTS)
    })
}

#[test]
fn on_without_a_driver_says_so_in_one_line_and_the_program_is_unharmed() {
    let dir = scratch("cuda-events-on");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    for how in ALL_LOADS {
        let trace = dir.join(format!("{how:?}.trace"));
        let out = run_profiled(
            &exe,
            &["100"],
            how,
            &trace,
            &[("ACCPROF_CUDA_EVENTS", "on"), NO_CUDA, NO_CUPTI],
        );
        assert!(out.status.success(), "{how:?}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "199",
            "{how:?}: the program's own output"
        );
        let err = stderr(&out);
        let lines = cuda_lines(&err);
        assert_eq!(
            lines.len(),
            1,
            "{how:?}: exactly one line about CUDA events:\n{err}"
        );
        assert!(
            lines[0].starts_with(
                "accprof: ACCPROF_CUDA_EVENTS=on but cannot load /nonexistent/libcuda.so.1"
            ),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("without CUDA-event device times"),
            "{}",
            lines[0]
        );
        let t = load(&trace);
        assert!(
            !t.header
                .extra
                .iter()
                .any(|(k, _)| k == "device_activity" || k == "cuda_events"),
            "nothing claimed"
        );
        assert!(
            t.events.len() >= 6,
            "the OpenACC events are recorded as usual"
        );
        assert!(no_cuda_event_records(&t));
    }
}

#[test]
fn the_shims_emulated_device_hands_out_no_cuda_handles_so_the_mode_is_silent() {
    let dir = scratch("cuda-events-shim");
    let saxpy = artifact("examples/saxpy");
    // auto (the default) and on: no driver here, and no CUDA handles either way.
    for (mode, expect_line) in [
        (None, false),
        (Some("auto"), false),
        (Some("off"), false),
        (Some("on"), true),
    ] {
        let trace = dir.join(format!("{}.trace", mode.unwrap_or("default")));
        let mut env = vec![
            NO_CUDA,
            NO_CUPTI,
            ("ACCPROF_QUIET", "1"),
            ("ACC_DEVICE_TYPE", "emulated"),
            ("ACCSHIM_QUIET", "1"),
        ];
        if let Some(m) = mode {
            env.push(("ACCPROF_CUDA_EVENTS", m));
        }
        let out = run_profiled(
            &saxpy,
            &["--n", "4096", "--reps", "3"],
            Load::Preload,
            &trace,
            &env,
        );
        assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(
            cuda_lines(&err).len(),
            usize::from(expect_line),
            "{mode:?}:\n{err}"
        );
        if !expect_line {
            assert_eq!(err, "", "{mode:?}: nothing on stderr");
        }
        let t = load(&trace);
        assert!(
            t.events
                .iter()
                .any(|e| e.kind == accprof_abi::acc_event_t::ENQUEUE_LAUNCH_START),
            "{mode:?}: launches recorded"
        );
        assert!(no_cuda_event_records(&t), "{mode:?}");
    }
}

#[test]
fn with_whatever_driver_this_machine_has_a_host_fallback_program_gets_no_device_records() {
    // No override: libcuda is looked for where users have it. GCC's host fallback hands out no
    // CUDA handles, so there is nothing to time whether or not the driver loads.
    let dir = scratch("cuda-events-here");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let trace = dir.join("t.trace");
    let out = run_profiled(
        &exe,
        &["100"],
        Load::Preload,
        &trace,
        &[
            ("ACCPROF_CUDA_EVENTS", "on"),
            ("ACCPROF_QUIET", "1"),
            NO_CUPTI,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "199");
    let t = load(&trace);
    let loaded = t.header.extra.iter().any(|(k, _)| k == "cuda_events");
    assert_eq!(
        cuda_lines(&stderr(&out)).len(),
        usize::from(!loaded),
        "{}",
        stderr(&out)
    );
    assert!(no_cuda_event_records(&t));
}

#[test]
fn the_committed_gpu_trace_from_cuda_events_reports_device_times_counted_once() {
    // Recorded on an H200 with ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=on (traces/gpu/README.md).
    let trace = workspace_root().join("traces/gpu/shim_naive_cudaevents.trace");
    let t = load(&trace);
    assert!(
        t.header
            .extra
            .iter()
            .any(|(k, v)| k == "device_activity" && v == "cuda_events"),
        "{:?}",
        t.header.extra
    );
    let records: Vec<_> = t
        .events
        .iter()
        .filter(|e| device::is_device_record(e.kind))
        .collect();
    assert_eq!(records.len(), 28, "8 kernels, 8 uploads, 12 downloads");
    assert!(records
        .iter()
        .all(|e| e.flags().contains(EventFlags::FROM_CUDA_EVENTS)
            && e.get(accprof_trace::Field::CorrelationId).is_none()));
    let out = std::process::Command::new(accprof_cli())
        .arg("report")
        .arg(&trace)
        .output()
        .expect("accprof report");
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    let line = |start: &str| {
        report
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} line:\n{report}"))
            .to_string()
    };
    let kernels = line("kernels [device]");
    assert!(kernels.contains("8 kernels run on the device"), "{kernels}");
    // Each runtime transfer has one device record: counted once, with the device's time.
    let up = line("host->device [device]");
    assert!(up.contains("8 transfers, 1 GiB"), "{up}");
    let down = line("device->host [device]");
    assert!(down.contains("12 transfers"), "{down}");
    assert!(
        report.contains("A[0:n*m]") && report.contains("[device]"),
        "{report}"
    );
}
