//! Killed programs, forked children: the trace stays readable and the program unharmed.

use accprof_integration_tests::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn sigkill_mid_run_leaves_a_readable_prefix() {
    let dir = scratch("sigkill");
    let exe = compile_c("forever.c", &dir, &["-g"]);
    let trace = dir.join("killed.trace");
    let mut child = Command::new(&exe)
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", &trace)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "running\n");
    // Long enough for the writer's 200 ms sweep to write some buffers out.
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    let t = load(&trace);
    assert!(t.footer.is_none(), "a killed program writes no footer");
    assert!(
        t.events.len() > 1000,
        "only {} events survived",
        t.events.len()
    );
    let line_no = pragma_line(&program_source("forever.c"), "parallel loop");
    assert!(t
        .events
        .iter()
        .skip(1)
        .all(|e| e.line_no() == Some(line_no)));
    // The CLI reads it too, and says it is incomplete rather than failing.
    let out = Command::new(accprof_cli())
        .arg("dump")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        t.events.len()
    );
}

#[test]
fn a_forked_child_is_not_recorded_and_runs_unharmed() {
    let dir = scratch("fork");
    let exe = compile_c("forks.c", &dir, &["-g"]);
    let trace = dir.join("parent.trace");
    let out = run_profiled(&exe, &[], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "child exit 0\n");
    let t = load(&trace);
    let computes = t
        .events
        .iter()
        .filter(|e| e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START)
        .count();
    assert_eq!(
        computes, 2,
        "the parent's two constructs, none of the child's ten"
    );
    assert!(t
        .events
        .iter()
        .all(|e| e.thread() == Some(i64::from(t.header.pid))));
}
