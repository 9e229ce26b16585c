//! Device activity through CUPTI, where CUPTI is absent (CI has no GPU): the program must run
//! exactly as before; `ACCPROF_CUPTI=on` says in one line why there are no device times,
//! `auto` (the default) and `off` say nothing. What CUPTI records on a GPU is checked by
//! scripts/gpu-validate.sh and by the committed GPU traces (tests in accprof-cli/tests/gpu_traces.rs).

use accprof_integration_tests::*;

/// A library path that cannot load, so that the test does not depend on what this machine has.
const NO_CUPTI: (&str, &str) = ("ACCPROF_CUPTI_LIB", "/nonexistent/libcupti.so.13");

fn cupti_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.contains("CUPTI")).collect()
}

#[test]
fn on_without_cupti_says_so_in_one_line_and_the_program_is_unharmed() {
    let dir = scratch("cupti-on");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    for how in ALL_LOADS {
        let trace = dir.join(format!("{how:?}.trace"));
        let out = run_profiled(
            &exe,
            &["100"],
            how,
            &trace,
            &[("ACCPROF_CUPTI", "on"), NO_CUPTI],
        );
        assert!(out.status.success(), "{how:?}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "199",
            "{how:?}: the program's own output"
        );
        let err = stderr(&out);
        let lines = cupti_lines(&err);
        assert_eq!(
            lines.len(),
            1,
            "{how:?}: exactly one line about CUPTI:\n{err}"
        );
        assert!(
            lines[0].starts_with(
                "accprof: ACCPROF_CUPTI=on but cannot load /nonexistent/libcupti.so.13"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("without device times"), "{}", lines[0]);
        let t = load(&trace);
        assert!(
            !t.header.extra.iter().any(|(k, _)| k == "device_activity"),
            "no device activity claimed"
        );
        assert!(
            t.events.len() >= 6,
            "the OpenACC events are recorded as usual"
        );
        assert!(t
            .events
            .iter()
            .all(|e| !accprof_trace::device::is_device_record(e.kind)));
    }
}

#[test]
fn auto_and_off_without_cupti_are_silent() {
    let dir = scratch("cupti-auto");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    for mode in [None, Some("auto"), Some("off"), Some("0")] {
        let trace = dir.join(format!("{}.trace", mode.unwrap_or("default")));
        let mut env = vec![NO_CUPTI, ("ACCPROF_QUIET", "1")];
        if let Some(m) = mode {
            env.push(("ACCPROF_CUPTI", m));
        }
        let out = run_profiled(&exe, &["100"], Load::Preload, &trace, &env);
        assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{mode:?}: nothing on stderr");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "199");
        assert!(load(&trace).events.len() >= 6);
    }
}

#[test]
fn on_with_whatever_this_machine_has_is_consistent() {
    // No override: the library is looked for where users have it. Either it records device
    // activity (header says so, nothing printed) or it says in one line why not.
    let dir = scratch("cupti-here");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let trace = dir.join("t.trace");
    let out = run_profiled(
        &exe,
        &["100"],
        Load::Preload,
        &trace,
        &[("ACCPROF_CUPTI", "on"), ("ACCPROF_QUIET", "1")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "199");
    let err = stderr(&out);
    let recorded = load(&trace)
        .header
        .extra
        .iter()
        .any(|(k, v)| k == "device_activity" && v == "cupti");
    let lines = cupti_lines(&err);
    if recorded {
        assert!(lines.is_empty(), "{err}");
    } else {
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].starts_with("accprof: ACCPROF_CUPTI=on but "),
            "{err}"
        );
    }
}
