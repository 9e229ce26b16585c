//! `accprof run`, `accprof dump` and ACCPROF_REPORT, as a user types them.

use accprof_integration_tests::*;
use std::io::Write;
use std::process::{Command, Stdio};

fn accprof(dir: &std::path::Path) -> Command {
    let mut c = Command::new(accprof_cli());
    c.current_dir(dir)
        .env_remove("LD_PRELOAD")
        .env_remove("ACC_PROFLIB");
    c
}

#[test]
fn run_passes_streams_and_exit_status_through_and_says_where_the_trace_is() {
    let dir = scratch("run");
    let exe = compile_c("exit_code.c", &dir, &["-g"]);
    let mut child = accprof(&dir)
        .args(["run", "-o", "t.trace", "--"])
        .arg(&exe)
        .arg("7")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\nworld\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7), "the program's exit status");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nworld\n");
    let err = stderr(&out);
    assert!(err.starts_with("to stderr\n"), "{err}");
    assert!(err.contains("exited with status 7"), "{err}");
    assert!(err.contains("trace: t.trace"), "{err}");
    assert!(err.contains("accprof report t.trace"), "{err}");
    let t = load(&dir.join("t.trace"));
    let computes: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START)
        .collect();
    assert_eq!(
        computes.len(),
        1,
        "recorded once although the tool is loaded both ways"
    );
    assert_eq!(
        computes[0].line_no(),
        Some(pragma_line(&program_source("exit_code.c"), "parallel loop"))
    );
}

#[test]
fn run_reports_a_signal_death_like_a_shell() {
    let dir = scratch("run-signal");
    let exe = compile_c("exit_code.c", &dir, &[]);
    let out = accprof(&dir)
        .args(["run", "--"])
        .arg(&exe)
        .args(["--signal", "15"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
    assert!(
        stderr(&out).contains("killed by signal 15"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_with_a_missing_or_non_executable_program_is_one_line() {
    let dir = scratch("run-missing");
    for (arg, code, msg) in [
        ("./nope", 127, "./nope: no such file"),
        ("no-such-command-accprof", 127, "command not found"),
    ] {
        let out = accprof(&dir).args(["run", "--", arg]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{arg}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(msg), "{err}");
    }
    std::fs::write(dir.join("data.txt"), "x").unwrap();
    let out = accprof(&dir)
        .args(["run", "--", "./data.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(
        stderr(&out).contains("not an executable"),
        "{}",
        stderr(&out)
    );
}

/// A trace name whose directory cannot take a file is refused before the program starts, which
/// would otherwise run to its end unrecorded: a path through a regular file, and a read-only
/// file system where the test can mount one.
#[test]
fn run_refuses_a_trace_name_it_cannot_write_before_the_program_starts() {
    let dir = scratch("run-unwritable");
    let exe = compile_c("exit_code.c", &dir, &[]);
    std::fs::write(dir.join("file.txt"), "x").unwrap();
    let through_a_file = accprof(&dir)
        .args(["run", "-o", "file.txt/sub/t.trace", "--"])
        .arg(&exe)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ro = dir.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let read_only = Command::new("unshare")
        .current_dir(&dir)
        .args(["-rm", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o ro,size=64k none {0} && exec \"$@\"",
            ro.display()
        ))
        .arg("sh")
        .arg(accprof_cli())
        .args(["run", "-o", "ro/t.trace", "--"])
        .arg(&exe)
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut cases = vec![("through a file", through_a_file, "is not a directory")];
    if stderr(&read_only).contains("unshare:") || stderr(&read_only).contains("mount:") {
        eprintln!("no read-only mount here: {}", stderr(&read_only).trim());
    } else {
        cases.push(("read-only", read_only, "Read-only file system"));
    }
    for (how, out, why) in cases {
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{how}: {err}");
        assert_eq!(err.lines().count(), 1, "{how}: {err}");
        assert!(
            err.contains("cannot write the trace") && err.contains(why),
            "{how}: {err}"
        );
        assert!(!err.contains("to stderr"), "{how}: the program ran: {err}");
    }
}

/// `-o FIFO` with `accprof dump FIFO` reading it, the documented way to stream: the trace goes
/// to the reader whole, and `accprof run` ends with the program, saying where the trace went
/// (it must not open the FIFO again to read the trace back: with no writer left that waits
/// forever).
#[test]
fn run_streaming_to_a_fifo_ends_with_the_program() {
    let dir = scratch("run-fifo");
    let exe = compile_c("exit_code.c", &dir, &[]);
    let fifo = dir.join("t.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = accprof(&dir)
        .args(["dump", "-q", "t.fifo"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = accprof(&dir)
        .args(["run", "-o", "t.fifo", "--"])
        .arg(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while run.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = run.kill();
            panic!("accprof run still running 60 s after it started");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let run = run.wait_with_output().unwrap();
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("the trace was streamed to t.fifo"), "{err}");
    let dumped = reader.wait_with_output().unwrap();
    assert!(dumped.status.success(), "{}", stderr(&dumped));
    assert!(
        String::from_utf8_lossy(&dumped.stdout).contains("acc_ev_compute_construct_start"),
        "{}",
        stderr(&dumped)
    );
}

/// A run whose disk filled has a trace without its end: the summary says so before its
/// figures, which cover only what was recorded.
#[test]
fn run_says_when_the_trace_it_summarises_was_cut_short() {
    let dir = scratch("run-full");
    let exe = compile_c("hostile_program.c", &dir, &["-g", "-pthread"]);
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let out = Command::new("unshare")
        .current_dir(&dir)
        .args(["-rm", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=256k none {0} && exec \"$@\"",
            small.display()
        ))
        .arg("sh")
        .arg(accprof_cli())
        .args(["run", "-o", "small/t.trace", "--"])
        .arg(&exe)
        .args(["reexec", "200000", "0"])
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    if err.contains("unshare:") || err.contains("mount:") {
        eprintln!("no tmpfs here: {}", err.trim());
        return;
    }
    assert!(out.status.success(), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let warned = err
        .lines()
        // Cut between two chunks, or inside the one the disk took only part of.
        .position(|l| {
            l.starts_with("accprof: warning:")
                && (l.contains("no end marker") || l.contains("in the middle of a chunk"))
                && l.contains("disk filled")
        });
    let figures = err
        .lines()
        .position(|l| l.contains("in compute constructs"));
    assert!(
        matches!((warned, figures), (Some(w), Some(f)) if w < f),
        "{err}"
    );
}

/// `-q` leaves standard error to the program, the bundled runtime's banner included.
#[test]
fn run_quiet_on_the_bundled_runtime_prints_only_the_programs_own_lines() {
    let dir = scratch("run-quiet-shim");
    let exe = compile_c("exit_code.c", &dir, &[]);
    let out = accprof(&dir)
        .args(["run", "-q", "--runtime", "shim", "-o", "t.trace", "--"])
        .arg(&exe)
        .env_remove("ACCSHIM_QUIET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "to stderr\n");
    assert!(dir.join("t.trace").is_file());
}

#[test]
fn run_report_and_advise_print_after_the_program() {
    let dir = scratch("run-report");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let out = accprof(&dir)
        .args(["run", "--report", "--advise", "-o", "r.trace", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(all.contains("compute region reached"), "{all}");
    assert!(all.contains("simple.c"), "{all}");
    // GCC puts the data region's end on its last statement's line: that row is its exit, and
    // says so, rather than "data region reached 0 times".
    assert!(all.contains("data region exit"), "{all}");
    assert!(
        !all.lines()
            .any(|l| l.contains("data region") && l.contains("reached 0")),
        "{all}"
    );
    // In the table of top constructs the exit row counts its exits.
    let exits: Vec<u64> = all
        .lines()
        .filter_map(|l| l.split_once("data region exit"))
        .filter_map(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(!exits.is_empty() && exits.iter().all(|&n| n >= 1), "{all}");
}

#[test]
fn run_finds_the_trace_under_the_other_name_the_tool_chose() {
    let dir = scratch("run-taken");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    // The name asked for is a file of the user's, and the first other name a link: the tool
    // writes t.2.trace, and `run` reports on that one.
    std::fs::write(dir.join("t.trace"), b"my notes").unwrap();
    std::os::unix::fs::symlink("nowhere", dir.join("t.1.trace")).unwrap();
    let out = accprof(&dir)
        .args(["run", "--report", "-o", "t.trace", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("trace: t.2.trace"), "{err}");
    let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(all.contains("compute region reached"), "{all}");
    assert_eq!(std::fs::read(dir.join("t.trace")).unwrap(), b"my notes");
    let first_pid = load(&dir.join("t.2.trace")).header.pid;
    // Run again: t.2.trace is a finished trace now, which the tool replaces in place, and
    // `run` does not take the earlier process's trace for this one's.
    let again = accprof(&dir)
        .args(["run", "-o", "t.trace", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("trace: t.2.trace"),
        "{}",
        stderr(&again)
    );
    assert_ne!(load(&dir.join("t.2.trace")).header.pid, first_pid);
}

#[test]
fn dump_prints_one_json_object_per_event_with_the_specification_names() {
    let dir = scratch("dump");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let trace = dir.join("d.trace");
    assert!(run_profiled(&exe, &[], Load::Preload, &trace, &[])
        .status
        .success());
    let out = accprof(&dir).arg("dump").arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 6);
    let update = &lines[3];
    assert_eq!(update["event_type"], "acc_ev_update_start");
    assert_eq!(update["end_event_type"], "acc_ev_update_end");
    assert_eq!(
        update["line_no"],
        pragma_line(&program_source("simple.c"), "update self")
    );
    assert_eq!(update["func_name"], "main");
    assert_eq!(update["location_attributed"], true);
    assert_eq!(update["parent_construct"], "acc_construct_update");
    assert!(update["src_file"].as_str().unwrap().ends_with("simple.c"));
    assert!(update["end_ns"].as_u64().unwrap() >= update["start_ns"].as_u64().unwrap());
}

#[test]
fn dump_and_report_refuse_bad_files_in_one_line() {
    let dir = scratch("bad-files");
    std::fs::write(dir.join("empty.trace"), b"").unwrap();
    std::fs::write(
        dir.join("foreign.trace"),
        b"\x7fELF this is not a trace at all",
    )
    .unwrap();
    let exe = compile_c("simple.c", &dir, &[]);
    let good = dir.join("good.trace");
    assert!(run_profiled(&exe, &[], Load::Preload, &good, &[])
        .status
        .success());
    let mut corrupt = std::fs::read(&good).unwrap();
    let n = corrupt.len();
    corrupt[n - 20] ^= 0xff;
    std::fs::write(dir.join("corrupt.trace"), &corrupt).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(dir.join("truncated.trace"), &bytes[..bytes.len() - 7]).unwrap();
    for cmd in ["dump", "report"] {
        for (file, msg) in [
            ("missing.trace", "cannot read"),
            ("empty.trace", "empty"),
            ("foreign.trace", "not an accprof trace"),
            ("corrupt.trace", "corrupt"),
        ] {
            let out = accprof(&dir).arg(cmd).arg(file).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{cmd} {file}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{cmd} {file}: {err}");
            assert!(
                err.contains(msg) && !err.contains("panicked"),
                "{cmd} {file}: {err}"
            );
        }
        let out = accprof(&dir)
            .arg(cmd)
            .arg("truncated.trace")
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
        assert!(stderr(&out).contains("warning"), "{cmd}: {}", stderr(&out));
    }
}

#[test]
fn accprof_report_variable_prints_the_report_at_exit() {
    let dir = scratch("report-env");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let trace = dir.join("e.trace");
    let out = run_profiled(
        &exe,
        &[],
        Load::Preload,
        &trace,
        &[
            ("ACCPROF_REPORT", "1"),
            ("ACCPROF_CLI", accprof_cli().to_str().unwrap()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1999",
        "the report does not go to the program's stdout"
    );
    let err = stderr(&out);
    assert!(err.contains("compute region reached"), "{err}");
    // ACCPROF_REPORT=FILE writes it there instead, and finds accprof next to the library.
    let file = dir.join("report.txt");
    let out = run_profiled(
        &exe,
        &[],
        Load::Preload,
        &trace,
        &[("ACCPROF_REPORT", file.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("compute region reached"));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("compute region reached"));
}
