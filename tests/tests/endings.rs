//! Every way a program can end keeps every construct it finished: fatal signals (with and
//! without a handler of the program's own), exec, `_exit`, exit from a thread while others run
//! constructs, SIGKILL. And the trace file is created, never followed: a planted link is left
//! alone, two processes on one path both keep their traces.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use accprof_trace::{EventFlags, Trace, TraceReader};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Compute constructs the trace holds as finished (start and end both recorded).
fn finished_constructs(t: &Trace) -> usize {
    t.events
        .iter()
        .filter(|e| {
            e.kind == acc_event_t::COMPUTE_CONSTRUCT_START
                && !e.flags().contains(EventFlags::NO_END)
        })
        .count()
}

fn dies() -> (PathBuf, PathBuf) {
    let dir = scratch("endings");
    let exe = compile_c("dies.c", &dir, &["-g", "-lpthread"]);
    (dir, exe)
}

/// Runs `dies MODE N` preloaded; returns its output and the trace.
fn run_dies(mode: &str, n: u32) -> (Output, Trace, PathBuf) {
    let (dir, exe) = dies();
    let trace = dir.join(format!("{mode}.trace"));
    let out = run_profiled(&exe, &[mode, &n.to_string()], Load::Preload, &trace, &[]);
    let t = Trace::load(&trace).unwrap_or_else(|e| panic!("{mode}: {e}\n{}", stderr(&out)));
    if t.footer.is_some() {
        assert!(
            !accprof_trace::live::live_path(&trace).exists(),
            "{mode}: a finished trace leaves no live file"
        );
    }
    (out, t, trace)
}

/// The count after "finished " on stdout.
fn said_finished(out: &Output) -> usize {
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .find_map(|l| l.strip_prefix("finished ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no 'finished N' line in {s:?}"))
}

fn assert_complete(mode: &str, t: &Trace, n: usize) {
    assert_eq!(
        finished_constructs(t),
        n,
        "{mode}: every finished construct is in the trace"
    );
    assert!(
        t.footer.is_some(),
        "{mode}: the trace was finished ({})",
        t.integrity
    );
    assert!(t.integrity.is_complete(), "{mode}: {}", t.integrity);
}

#[test]
fn sigsegv_keeps_every_finished_construct_and_still_dies_of_sigsegv() {
    let (out, t, _) = run_dies("segv", 5000);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "the default action still ends it: {:?}",
        out.status
    );
    assert_eq!(said_finished(&out), 5000);
    assert_complete("segv", &t, 5000);
    assert!(stderr(&out).contains("before SIGSEGV"), "{}", stderr(&out));
}

#[test]
fn abort_keeps_every_finished_construct_and_still_dies_of_sigabrt() {
    let (out, t, _) = run_dies("abort", 3000);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}", out.status);
    assert_complete("abort", &t, 3000);
}

#[test]
fn sigterm_keeps_every_finished_construct_and_still_ends_the_program() {
    let (out, t, _) = run_dies("term", 3000);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{:?}", out.status);
    assert_complete("term", &t, 3000);
    assert!(stderr(&out).contains("before SIGTERM"), "{}", stderr(&out));
}

#[test]
fn the_programs_own_sigsegv_handler_still_runs_after_the_flush() {
    let (out, t, _) = run_dies("own-handler", 2000);
    assert_eq!(
        out.status.code(),
        Some(42),
        "its handler decides the exit: {:?} {}",
        out.status,
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("own handler ran"));
    assert_complete("own-handler", &t, 2000);
}

#[test]
fn a_stack_overflow_reaches_the_programs_handler_on_its_alternate_stack() {
    let (out, t, _) = run_dies("overflow", 2000);
    assert_eq!(
        out.status.code(),
        Some(42),
        "{:?} {}",
        out.status,
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("own handler ran"));
    assert_complete("overflow", &t, 2000);
}

#[test]
fn exec_keeps_every_finished_construct() {
    let (out, t, _) = run_dies("exec", 5000);
    assert!(
        out.status.success(),
        "/bin/true ran in its place: {:?} {}",
        out.status,
        stderr(&out)
    );
    assert_complete("exec", &t, 5000);
}

#[test]
fn execl_keeps_every_finished_construct_through_the_live_file() {
    // glibc's execl calls execve inside libc, past the tool's interposer: no final flush
    // runs, so what the writer had not written comes from the live file the new image leaves.
    let (out, t, trace) = run_dies("execl", 5000);
    assert!(
        out.status.success(),
        "/bin/true ran in its place: {:?} {}",
        out.status,
        stderr(&out)
    );
    assert_eq!(said_finished(&out), 5000);
    assert_eq!(
        finished_constructs(&t),
        5000,
        "every finished construct is in the trace: {}",
        t.integrity
    );
    assert!(t.integrity.live_file_ignored.is_none(), "{}", t.integrity);
    if t.footer.is_none() {
        assert!(
            accprof_trace::live::live_path(&trace).exists(),
            "no footer, so the live file is left"
        );
    }
}

#[test]
fn underscore_exit_keeps_every_finished_construct() {
    let (out, t, _) = run_dies("_exit", 4000);
    assert_eq!(out.status.code(), Some(3));
    assert_complete("_exit", &t, 4000);
}

#[test]
fn exit_from_a_thread_while_others_run_constructs_keeps_all_finished_before_it() {
    let (out, t, _) = run_dies("thread-exit", 20000);
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    let before_exit = said_finished(&out);
    let in_trace = finished_constructs(&t);
    // Constructs finished after the count was taken, during the exit flush, are recorded too
    // (late, after the footer), so the trace may hold more, never fewer.
    assert!(
        in_trace >= before_exit,
        "{in_trace} in the trace, {before_exit} finished before exit"
    );
    assert!(t.footer.is_some());
    let i = &t.integrity;
    assert_eq!(
        (
            i.missing_chunks,
            i.duplicate_chunks,
            i.footer_mismatch,
            i.dropped
        ),
        (0, 0, 0, 0),
        "{i}"
    );
    // Constructs finished during the exit flush wait for the footer in a bounded queue (65536
    // events, libaccprof's recorder::late); on a loaded machine the flush can outlast that many
    // (4 threads finished 60,000 to 90,000 constructs during it with 4 busy loops beside them),
    // and the rest is counted in a lost record. So a loss is allowed only once the queue was
    // full: every loss comes with at least 65536 late constructs kept.
    assert!(
        i.lost_late == 0 || in_trace - before_exit >= 1 << 16,
        "late constructs were lost before the queue was full: {in_trace} in the trace, \
         {before_exit} finished before exit: {i}"
    );
    if i.lost_late > 0 {
        let said = format!("{} events LOST", i.lost_late);
        assert!(i.to_string().contains(&said), "the reader says so: {i}");
    }
}

#[test]
fn sigkill_after_ready_keeps_what_finished_before_ready() {
    let (t, trace) = kill_after_ready("kill", 3000, 3000);
    assert_eq!(finished_constructs(&t), 3000);
    assert!(
        !t.integrity.ended_cleanly && t.footer.is_none(),
        "killed: no footer, and the reader says so"
    );
    assert!(
        t.integrity.to_string().contains("no footer"),
        "{}",
        t.integrity
    );
    let live = accprof_trace::live::live_path(&trace);
    assert!(live.exists(), "a killed run leaves its live file");
    // A `dir/*` glob gives the live file among the traces: it is read with its trace, and
    // said so in one line, instead of failing the report.
    let report = |files: &[&std::path::Path]| {
        let o = Command::new(accprof_cli())
            .args(["report", "-q"])
            .args(files)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        o
    };
    let alone = report(&[&trace]);
    let glob = report(&[&trace, &live]);
    assert_eq!(glob.stdout, alone.stdout);
    let note = format!(
        "accprof: note: {}: the live file of {}, read with it",
        live.display(),
        trace.display()
    );
    assert!(stderr(&glob).contains(&note), "{}", stderr(&glob));
}

#[test]
fn sigkill_keeps_what_every_thread_finished() {
    let (t, _) = kill_after_ready("kill-threads", 1500, 6000);
    assert_eq!(finished_constructs(&t), 6000);
    let threads: std::collections::BTreeSet<_> = t
        .events
        .iter()
        .filter(|e| e.kind == acc_event_t::COMPUTE_CONSTRUCT_START)
        .filter_map(|e| e.get(accprof_trace::Field::Thread))
        .collect();
    assert!(
        threads.len() >= 4,
        "constructs of every thread: {threads:?}"
    );
}

/// Runs `dies MODE N`, kills it with SIGKILL as soon as it says "ready TOTAL" (no time for
/// the writer to sweep a buffer), and reads its trace: what the trace file lacks comes from
/// the live file beside it, and the reader says so.
fn kill_after_ready(mode: &str, n: u32, total: u32) -> (Trace, PathBuf) {
    let (dir, exe) = dies();
    let trace = dir.join(format!("{mode}.trace"));
    let mut child = Command::new(&exe)
        .args([mode, &n.to_string()])
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", &trace)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, format!("ready {total}\n"));
    child.kill().unwrap();
    child.wait().unwrap();
    let t = Trace::load(&trace).unwrap();
    // What the trace file alone holds: unless the writer's 200 ms sweep happened to come
    // between the last construct and the kill, that is not all of it.
    let alone = Trace::from_reader(TraceReader::new("alone", File::open(&trace).unwrap()).unwrap())
        .unwrap();
    assert_eq!(
        alone.integrity.recovered_from_live, 0,
        "a reader given no live file reads none"
    );
    let missing = finished_constructs(&t) - finished_constructs(&alone);
    assert_eq!(
        t.integrity.recovered_from_live > 0,
        t.events.len() > alone.events.len(),
        "{mode}: {}",
        t.integrity
    );
    if missing > 0 {
        assert!(
            t.integrity.to_string().contains(&format!(
                "{} events recovered from the live file",
                t.integrity.recovered_from_live
            )),
            "{}",
            t.integrity
        );
    }
    eprintln!("{mode}: {missing} of {total} constructs came from the live file");
    // Recovered times are converted to the trace's clock like written ones: all within the run.
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let now = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    let started = t.header.start_monotonic_ns;
    assert!(
        t.events
            .iter()
            .all(|e| e.start_ns >= started && e.start_ns <= e.end_ns && e.end_ns <= now),
        "{mode}: an event outside the run ({started}..{now})"
    );
    assert!(t.integrity.live_file_ignored.is_none(), "{}", t.integrity);
    (t, trace)
}

#[test]
fn a_link_planted_at_the_default_name_is_left_alone() {
    let dir = scratch("planted");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let target = dir.join("precious");
    std::fs::write(&target, b"not yours").unwrap();
    // The shell plants the link at the name its own pid gives, then becomes the program (exec
    // keeps the pid), so the link sits exactly at accprof.simple.<pid>.trace.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ln -s {} accprof.simple.$$.trace && exec {}",
            target.display(),
            exe.display()
        ))
        .current_dir(&dir)
        .env("LD_PRELOAD", libaccprof())
        .env_remove("ACCPROF_OUT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"not yours",
        "the link's target is untouched"
    );
    let traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trace"))
        .collect();
    let link = traces
        .iter()
        .find(|p| p.symlink_metadata().unwrap().file_type().is_symlink())
        .expect("the link stays");
    assert_eq!(std::fs::read_link(link).unwrap(), target);
    let real: Vec<&PathBuf> = traces
        .iter()
        .filter(|p| !p.symlink_metadata().unwrap().file_type().is_symlink())
        .collect();
    assert_eq!(real.len(), 1, "{traces:?}");
    let err = stderr(&out);
    assert_eq!(
        err.matches("exists and is not a finished accprof trace")
            .count(),
        1,
        "said once: {err}"
    );
    assert!(
        err.contains(&*real[0].file_name().unwrap().to_string_lossy()),
        "{err}"
    );
    let t = Trace::load(real[0]).unwrap();
    assert!(t.integrity.is_complete(), "{}", t.integrity);
    let mode = std::os::unix::fs::PermissionsExt::mode(&real[0].metadata().unwrap().permissions());
    assert_eq!(
        mode & 0o777 & !0o022,
        0o644 & !0o022,
        "mode 0644 under the umask: {mode:o}"
    );
}

#[test]
fn two_processes_on_one_path_both_keep_their_traces() {
    let (dir, exe) = dies();
    let shared = dir.join("same.trace");
    let spawn = || {
        Command::new(&exe)
            .args(["hold", "2000"])
            .env("LD_PRELOAD", libaccprof())
            .env("ACCPROF_OUT", &shared)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Both are recording at once: each has finished its constructs (so has its file) before
    // either is let go.
    let mut children = [spawn(), spawn()];
    for c in &mut children {
        let mut line = String::new();
        BufReader::new(c.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready 2000\n");
    }
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|mut c| {
            drop(c.stdin.take());
            c.wait_with_output().unwrap()
        })
        .collect();
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    let other = dir.join("same.1.trace");
    let mut traced = Vec::new();
    for p in [&shared, &other] {
        let t = Trace::load(p).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            t.integrity.is_complete(),
            "{}: {}",
            p.display(),
            t.integrity
        );
        assert_eq!(finished_constructs(&t), 2000, "{}", p.display());
        traced.push(t.header.pid);
    }
    traced.sort();
    let mut want = pids.clone();
    want.sort();
    assert_eq!(traced, want, "one trace per process");
    // Each says where its own trace went, and the second one says why its name differs.
    let said: String = outs.iter().map(stderr).collect();
    assert!(
        said.contains(&*shared.to_string_lossy()) && said.contains(&*other.to_string_lossy()),
        "{said}"
    );
    assert_eq!(
        said.matches("exists and is not a finished accprof trace")
            .count(),
        1,
        "{said}"
    );
}

#[test]
fn the_tui_shows_the_details_of_every_event_of_a_killed_trace() {
    for (mode, n, total) in [("kill", 3000, 3000), ("kill-threads", 1000, 4000)] {
        tui_fetches_every_event(mode, n, total);
    }
}

/// Opens a killed `dies MODE N` trace in the TUI's loader and fetches every record's details.
fn tui_fetches_every_event(mode: &str, n: u32, total: u32) {
    let (t, trace) = kill_after_ready(mode, n, total);
    // The chunk index says where the recovered events begin: no chunk holds them.
    let mut r = accprof_symbols::ResolvingReader::open(&trace).unwrap();
    while r.advance().unwrap() {}
    let index = r.chunk_index();
    let recovered = t.integrity.recovered_from_live;
    let in_chunks = t.events.len() as u64 - recovered;
    assert_eq!(
        index.recovered_from(),
        (recovered > 0).then_some(in_chunks),
        "{mode}"
    );
    assert_eq!(
        index.chunk_of(t.events.len() as u64 - 1).is_some(),
        recovered == 0
    );
    let mut store = accprof_tui::state::store::Store::new(false);
    let mut loader =
        accprof_tui::state::load::Loader::open(std::slice::from_ref(&trace), &mut store, false)
            .unwrap();
    loader.poll(&mut store, &mut |_, _| {}).unwrap();
    assert_eq!(
        store.event_count(),
        t.events.len(),
        "the TUI reads what Trace::load does"
    );
    // Every record's details are the event it stands for, those recovered from the live file
    // (which lie in no events chunk of the trace) included: the fetched event's times are the
    // record's on the timeline, one constant (the shift to the wall clock) apart. (Compared
    // with the TUI's own read: a second read of a live file whose writer never published a
    // second clock anchor converts its ticks with its own, a few ns apart.)
    let mut spans = std::collections::BTreeMap::new();
    for lane in &store.lanes {
        for track in &lane.tracks {
            for (i, &rec) in track.rec.iter().enumerate() {
                spans.insert(rec, (track.start[i], track.end[i]));
            }
        }
    }
    assert_eq!(
        spans.len(),
        t.events.len(),
        "{mode}: every event is on the timeline"
    );
    let mut shift = None;
    for (&rec, &(start, end)) in &spans {
        let (got, _) = loader
            .fetch(rec)
            .unwrap_or_else(|e| panic!("{mode}: record {rec} of {}: {e}", t.events.len()));
        let want = &t.events[rec as usize];
        let here = i128::from(start) - i128::from(got.start_ns);
        assert_eq!(
            (got.kind, end - start, here),
            (
                want.kind,
                got.end_ns - got.start_ns,
                *shift.get_or_insert(here)
            ),
            "{mode}: record {rec} of {} ({} recovered)",
            t.events.len(),
            t.integrity.recovered_from_live
        );
    }
}

#[test]
fn dump_report_and_export_read_the_events_recovered_from_a_killed_trace() {
    let (t, trace) = kill_after_ready("kill", 3000, 3000);
    let dir = trace.parent().unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(accprof_cli())
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        out
    };
    let dump = cli(&["dump", "kill.trace"]);
    let constructs = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .filter(|l| l.contains("compute_construct_start"))
        .count();
    assert_eq!(constructs, 3000, "dump: {}", stderr(&dump));
    let report = String::from_utf8_lossy(&cli(&["report", "kill.trace"]).stdout).into_owned();
    assert!(report.contains("3,000 reached"), "{report}");
    for (file, format) in [("kill.json", "chrome"), ("kill.pftrace", "perfetto")] {
        let out = cli(&["export", "--format", format, "-o", file, "kill.trace"]);
        let said = format!("wrote {file}: {} events", t.events.len());
        assert!(stderr(&out).contains(&said), "{said}: {}", stderr(&out));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("kill.json")).unwrap()).unwrap();
    let slices = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("parallel"))
        })
        .count();
    assert_eq!(
        slices, 3000,
        "every recovered construct is a slice in the JSON"
    );
}

/// `accprof symbolize` (which `accprof run` does after a killed run) folds the live file into
/// the trace and removes it: the trace alone, copied elsewhere, holds every construct, once.
#[test]
fn symbolize_folds_a_killed_runs_live_file_into_the_trace() {
    for mode in ["kill", "kill-threads"] {
        let (t, trace) = kill_after_ready(mode, 1500, if mode == "kill" { 1500 } else { 6000 });
        let before = finished_constructs(&t);
        let out = Command::new(accprof_cli())
            .args(["symbolize"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stderr);
        let live = accprof_trace::live::live_path(&trace);
        assert!(
            !live.exists(),
            "{mode}: the live file is folded in and removed: {said}"
        );
        if t.integrity.recovered_from_live > 0 {
            assert!(
                said.contains(&format!(
                    "{} events of the killed run folded in",
                    t.integrity.recovered_from_live
                )),
                "{said}"
            );
        }
        let elsewhere = trace.with_extension("copied");
        std::fs::copy(&trace, &elsewhere).unwrap();
        let alone = Trace::load(&elsewhere).unwrap();
        assert_eq!(
            finished_constructs(&alone),
            before,
            "{mode}: {}",
            alone.integrity
        );
        assert_eq!(alone.events.len(), t.events.len(), "{mode}: nothing twice");
        assert_eq!(alone.integrity.recovered_from_live, 0);
        assert!(!alone.integrity.ended_cleanly, "still a killed run");
        // A second symbolize finds nothing more to fold.
        let again = Command::new(accprof_cli())
            .args(["symbolize"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&again.stderr).contains("folded in"));
        assert_eq!(finished_constructs(&Trace::load(&trace).unwrap()), before);
    }
}
