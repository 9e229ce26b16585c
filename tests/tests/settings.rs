//! Each problem with a setting or the trace file is said once, naming the variable or the file
//! and what is done instead.

use accprof_integration_tests::*;

#[test]
fn an_unusable_setting_is_said_once_with_the_value_used_instead() {
    let dir = scratch("settings");
    let exe = compile_c("simple.c", &dir, &[]);
    let trace = dir.join("t.trace");
    let out = run_profiled(
        &exe,
        &[],
        Load::Both,
        &trace,
        &[
            ("ACCPROF_MAX_BUFFER_MB", "lots"),
            ("ACCPROF_BUFFER_EVENTS", "3"),
            ("ACCPROF_CUPTI", "maybe"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for line in [
        "accprof: ACCPROF_MAX_BUFFER_MB=lots is not a whole number; using the default, 64",
        "accprof: ACCPROF_BUFFER_EVENTS=3 is below the smallest value, 16; using 16",
        "accprof: ACCPROF_CUPTI=maybe is not auto, on or off; using auto",
    ] {
        assert_eq!(
            err.lines().filter(|l| *l == line).count(),
            1,
            "{line:?} once in:\n{err}"
        );
    }
    assert!(load(&trace).integrity.is_complete());
}

#[test]
fn a_trace_that_cannot_be_written_is_said_once() {
    let dir = scratch("write-error");
    let exe = compile_c("threads.c", &dir, &["-pthread"]);
    // /dev/full takes the open and refuses every write (ENOSPC).
    let out = run_profiled(
        &exe,
        &["2", "2000"],
        Load::Preload,
        std::path::Path::new("/dev/full"),
        &[],
    );
    assert!(
        out.status.success(),
        "the program carries on: {}",
        stderr(&out)
    );
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("accprof:")).collect();
    assert_eq!(
        lines.len(),
        1,
        "one line, not one per batch or a second at exit:\n{err}"
    );
    assert!(
        lines[0].contains("cannot write the trace") && lines[0].contains("No space left"),
        "{err}"
    );
}
