//! Every command that reads a trace says, in one line, what the trace lacks: events the tool
//! lost (at exit, at a fork, on a write failure) and events the footer counts but the file does
//! not hold. A trace without such problems gets no such line.

use accprof_abi::acc_event_t;
use accprof_testkit::builder::TraceBuilder;
use accprof_trace::LostReason;
use std::path::Path;
use std::process::Command;

fn small_trace(path: &Path, lost: Vec<(LostReason, u64)>) {
    let mut b = TraceBuilder::new("app", 42, None);
    for i in 0..5u64 {
        b.ev(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            i * 100,
            i * 100 + 50,
            0,
        );
        b.at("app.c", "main", 10);
    }
    b.lost = lost;
    b.write(path);
}

fn stderr_of(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_accprof"))
        .args(args)
        .output()
        .expect("run accprof");
    assert!(
        o.status.success(),
        "accprof {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn commands(trace: &str, dir: &Path) -> Vec<Vec<String>> {
    let json = dir.join("out.json").display().to_string();
    vec![
        vec!["report".into(), "-q".into(), trace.into()],
        vec!["advise".into(), "-q".into(), trace.into()],
        vec!["export".into(), "-o".into(), json, trace.into()],
        vec!["dump".into(), trace.into()],
    ]
}

#[test]
fn lost_events_are_said_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lost.trace");
    small_trace(&path, vec![(LostReason::Late, 7), (LostReason::Fork, 3)]);
    let trace = path.display().to_string();
    for args in commands(&trace, dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = stderr_of(&args);
        assert!(
            err.contains("7 events LOST"),
            "accprof {args:?} did not say the lost events:\n{err}"
        );
        assert!(
            err.contains("3 events skipped while the program forked"),
            "accprof {args:?}:\n{err}"
        );
    }
}

#[test]
fn a_complete_trace_gets_no_loss_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.trace");
    small_trace(&path, Vec::new());
    let trace = path.display().to_string();
    for args in commands(&trace, dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = stderr_of(&args);
        assert!(
            !err.contains("incomplete"),
            "accprof {args:?} warned about a complete trace:\n{err}"
        );
    }
}
