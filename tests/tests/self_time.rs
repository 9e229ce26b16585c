//! ACCPROF_SELF_TIME=1 prints, at exit, how long the program's threads spent inside accprof:
//! one line, even with ACCPROF_QUIET=1, counting every OpenACC callback (the one that started
//! recording apart); without it, nothing.

use accprof_integration_tests::*;

fn self_time_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("accprof: time inside accprof"))
        .collect()
}

#[test]
fn self_time_counts_every_callback_and_is_silent_unless_asked() {
    let dir = scratch("self-time");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let trace = dir.join("t.trace");
    let out = run_profiled(
        &exe,
        &["100"],
        Load::Preload,
        &trace,
        &[("ACCPROF_SELF_TIME", "1"), ("ACCPROF_QUIET", "1")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines = self_time_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    // Every recorded event is a start and an end callback joined, or one point callback.
    let t = load(&trace);
    let callbacks: u64 = t
        .events
        .iter()
        .map(|e| if e.kind.partner() == e.kind { 1 } else { 2 })
        .sum();
    let n: u64 = lines[0]
        .split(" ms in ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert_eq!(
        n + 1,
        callbacks,
        "the first callback is the start: {}",
        lines[0]
    );
    assert!(
        lines[0].contains("OpenACC callbacks")
            && lines[0].contains("CUDA driver callbacks")
            && lines[0].contains("starting"),
        "{}",
        lines[0]
    );
    for v in [None, Some("0")] {
        let mut env = vec![("ACCPROF_QUIET", "1")];
        if let Some(v) = v {
            env.push(("ACCPROF_SELF_TIME", v));
        }
        let out = run_profiled(&exe, &["100"], Load::Preload, &trace, &env);
        assert!(
            self_time_lines(&stderr(&out)).is_empty(),
            "{v:?}: {}",
            stderr(&out)
        );
    }
}
