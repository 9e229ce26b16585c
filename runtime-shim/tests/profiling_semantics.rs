//! The profiling interface's callback lists under change: callbacks registered, unregistered,
//! enabled or disabled while their event is being dispatched take effect for that very dispatch,
//! as the OpenACC specification's "Dynamic Registration and Unregistration" and "Dynamic Enabling
//! and Disabling" say.

mod common;
use common::*;

/// Runs the C program of `tests/c/<name>.c` on the emulated device and returns its output lines
/// as (scenario, traces) pairs.
fn run_scenarios(name: &str) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join(name);
    gcc(&crate_dir().join(format!("tests/c/{name}.c")), &prog, false);
    let (code, out, err) = run_bounded(&prog, &[]).unwrap_or_else(|| panic!("{name} hangs"));
    assert_eq!(
        code, 0,
        "{name}: exit status; stdout {out:?} stderr {err:?}"
    );
    assert!(out.ends_with("done\n"), "{name} finishes: {out:?} {err:?}");
    out.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
        .collect()
}

/// Callbacks A, B, C (registered in that order) write their letter; one of them changes the
/// list during the dispatch. Each expectation is the trace of the first event instance, then
/// " | " and the second where it matters. Start events walk the list head to tail (A B C), end
/// events tail to head (B A).
#[test]
fn changes_during_a_dispatch_apply_to_that_dispatch() {
    let got = run_scenarios("prof_dispatch_changes");
    let expected = [
        // Enabled while the event is processed, later in the walk: called for this instance.
        ("start_enable_later", "AB | AB"),
        // Enabled, but its place in the walk is already passed: not called again.
        ("start_enable_earlier", "B"),
        // Disabled while the event is processed, later in the walk: not called.
        ("start_disable_later", "A | A"),
        // Disabled and enabled again before it is reached: called, at its place.
        ("start_disable_then_enable", "ABC"),
        // Registered during a start event: appended to the tail, so called for this instance.
        ("start_register", "AC | AC"),
        // Unregistered during the event: not called for this instance.
        ("start_unregister_later", "A | A"),
        // Unregistered and registered again: a new registration, at the tail.
        ("start_reregister_moves_to_tail", "ACB | ACB"),
        // The whole event, every event, or this thread switched off: no further callback.
        ("start_disable_event", "A |"),
        ("start_disable_everything", "A |"),
        ("start_disable_this_thread", "A |"),
        // The same with one callback registered.
        ("sole_disable_this_thread", "A |"),
        ("sole_disable_event", "A |"),
        // A thread that switched its own callbacks off gets none; the others still do, while
        // it lives and after it ended.
        ("sole_other_thread_off", "- | A | A"),
        ("two_other_thread_off", "- | AB | AB"),
        // End events walk tail to head: B runs first and changes A, which comes later.
        ("end_enable_later", "BA | BA"),
        ("end_disable_later", "B | B"),
        // Registered during an end event: at the tail, already passed, so called from the next
        // instance on (first, as the newest registration).
        ("end_register", "BA | CBA"),
        ("end_unregister_later", "B | B"),
        // One callback that registers a second during its end event: the walk is past its
        // place; the next instance calls both, the newest first.
        ("end_sole_register", "B | CB"),
    ];
    let mut wrong = Vec::new();
    for (name, want) in expected {
        match got.iter().find(|(k, _)| k == name) {
            Some((_, have)) if have == want => {}
            Some((_, have)) => wrong.push(format!("{name}: expected {want:?}, got {have:?}")),
            None => wrong.push(format!("{name}: no output line")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The first number on the line of `out` that starts with `prefix`.
fn number_after(out: &str, prefix: &str) -> i64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line: {out}"));
    let digits: String = line[prefix.len()..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {prefix:?}: {line}"))
}

/// A tool that toggles and re-registers callbacks all the time: a million rounds of toggling a
/// callback and a whole event off and on and registering and unregistering a second callback
/// keep resident memory flat (every change used to leak a copy of the callback list: 500 MB
/// here); and threads dispatching an event while the main thread keeps changing its other
/// callbacks neither crash nor miss a call of the callback that stays registered and enabled
/// throughout.
#[test]
fn toggling_and_reregistering_callbacks_is_bounded_and_safe_under_concurrent_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("prof_toggle_churn");
    gcc(
        &crate_dir().join("tests/c/prof_toggle_churn.c"),
        &prog,
        false,
    );
    let (threads, events) = (4, 20_000);
    let (code, out, err) = run_bounded(
        &prog,
        &["1000000", &threads.to_string(), &events.to_string()],
    )
    .expect("prof_toggle_churn hangs");
    assert_eq!(code, 0, "exit status; stdout {out:?} stderr {err:?}");
    assert!(out.ends_with("done\n"), "{out} {err}");
    let (before, after) = (
        number_after(&out, "resident KiB before"),
        number_after(&out, "resident KiB after"),
    );
    assert!(
        after - before < 8 * 1024,
        "resident memory grows with toggles: {before} KiB before, {after} KiB after"
    );
    for t in 0..threads {
        let line = format!("thread {t}: steady {events} of {events}");
        assert!(
            out.lines().any(|l| l == line),
            "thread {t} missed calls of the steady callback:\n{out}"
        );
    }
    assert!(number_after(&out, "churn rounds") > 0, "{out}");
}
