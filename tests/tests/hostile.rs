//! Hostile and odd conditions on the recording side, each with real programs under the real
//! loader: the program's signals stay its own (sigwait), a FIFO at the trace's name never
//! blocks or kills the program and another user's is never written to, every image of a
//! program that execs itself and every process starting over an old trace keeps its trace, a
//! full disk is said once with its reason, a death inside the allocator is not held back,
//! `accprof symbolize` leaves a running program's trace alone, a second SIGTERM waits for the
//! exit flush, ACCPROF_DISABLE holds on every registration path, a forked child never hangs
//! where it would not without the tool, and the exit line counts what threads add after exit.

use accprof_integration_tests::*;
use accprof_trace::{Trace, TraceReader};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Long enough for any of these programs on a loaded machine; a run past it is a hang.
const HANG: Duration = Duration::from_secs(60);

fn program(dir: &Path) -> PathBuf {
    compile_c("hostile_program.c", dir, &["-g", "-pthread"])
}

/// Compute constructs with both ends recorded.
fn constructs(t: &Trace) -> usize {
    t.events
        .iter()
        .filter(|e| {
            e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START
                && !e.flags().contains(accprof_trace::EventFlags::NO_END)
        })
        .count()
}

/// Waits for `child`, killing it and failing the test when it runs past [`HANG`].
fn finish(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > HANG {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("{what}: still running after {HANG:?}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

fn preloaded(exe: &Path, args: &[&str], out: &Path) -> Command {
    let mut c = Command::new(exe);
    c.args(args)
        .env_remove("ACC_PROFLIB")
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The FIFO opened for reading without waiting for a writer.
fn fifo_reader(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .expect("open the FIFO for reading")
}

/// Lines of stderr that accprof wrote.
fn accprof_lines(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("accprof:"))
        .map(str::to_owned)
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_program_that_takes_sigterm_with_sigwait_still_gets_it() {
    // The signal is sent while every thread of the program blocks it: before the tool's own
    // threads blocked every signal, one of them took it and its default action ended the
    // program (status 143).
    let dir = scratch("sigwait");
    let exe = program(&dir);
    let shim = artifact("libaccshim.so");
    for runtime in ["libgomp", "the bundled runtime"] {
        let trace = dir.join(format!("{}.trace", runtime.len()));
        let mut c = preloaded(&exe, &["sigwait", "200"], &trace);
        if runtime != "libgomp" {
            c.env(
                "LD_PRELOAD",
                format!("{} {}", shim.display(), libaccprof().display()),
            )
            .env("ACC_DEVICE_TYPE", "emulated")
            .env("ACCSHIM_QUIET", "1");
        }
        let o = finish(c.spawn().unwrap(), "sigwait");
        assert!(
            o.status.success(),
            "{runtime}: {:?} {}",
            o.status,
            stderr(&o)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "got SIGTERM\n",
            "{runtime}"
        );
        let t = load(&trace);
        assert!(t.integrity.is_complete(), "{runtime}: {}", t.integrity);
        assert_eq!(constructs(&t), 201, "{runtime}");
    }
}

#[test]
fn a_fifo_without_a_reader_never_holds_the_program() {
    let dir = scratch("fifo-no-reader");
    let exe = program(&dir);
    let fifo = dir.join("stream");
    mkfifo(&fifo);
    let o = finish(
        preloaded(&exe, &["reexec", "500", "0"], &fifo)
            .spawn()
            .unwrap(),
        "no reader",
    );
    assert!(o.status.success(), "{:?} {}", o.status, stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "image 0 finished 500\n");
    let lines = accprof_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("no process opened the FIFO for reading"),
        "{lines:?}"
    );
}

#[test]
fn a_fifo_whose_reader_goes_away_never_kills_the_program() {
    let dir = scratch("fifo-reader-gone");
    let exe = compile_c("dies.c", &dir, &["-g", "-lpthread"]);
    let fifo = dir.join("stream");
    mkfifo(&fifo);
    let mut reader = fifo_reader(&fifo);
    let mut child = preloaded(&exe, &["hold", "3000"], &fifo)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready 3000\n");
    // Some of the stream, then the reader goes away; the exit flush still has to write.
    let mut got = vec![0u8; 4096];
    let start = Instant::now();
    while start.elapsed() < HANG {
        match reader.read(&mut got) {
            Ok(n) if n > 0 => break,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    assert_eq!(&got[..8], b"ACCPROF\0", "the stream starts with a trace");
    drop(reader);
    drop(child.stdin.take());
    let o = finish(child, "reader gone");
    // A write to a FIFO without a reader raises SIGPIPE, whose default action is death.
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    let lines = accprof_lines(&o);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("the reader of") && lines[0].contains("went away"),
        "{lines:?}"
    );
}

#[test]
fn another_users_fifo_at_the_trace_name_is_never_written_to() {
    if !is_root() {
        eprintln!("skipped: making a FIFO of another user's needs root");
        return;
    }
    let dir = scratch("foreign-fifo");
    let exe = program(&dir);
    let fifo = dir.join("victim.trace");
    mkfifo(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: chown with a NUL-terminated path: the FIFO now belongs to nobody (65534).
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    // The other user waits on their FIFO.
    let mut spy = fifo_reader(&fifo);
    let o = finish(
        preloaded(&exe, &["reexec", "300", "0"], &fifo)
            .spawn()
            .unwrap(),
        "foreign FIFO",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut leaked = Vec::new();
    let _ = spy.read_to_end(&mut leaked);
    assert!(leaked.is_empty(), "{} bytes leaked", leaked.len());
    let lines = accprof_lines(&o);
    assert!(
        lines.iter().any(|l| l.contains("another user's")),
        "{lines:?}"
    );
    let t = load(&dir.join("victim.1.trace"));
    assert_eq!(constructs(&t), 300);
}

#[test]
fn dev_stdout_streams_and_nothing_is_created_under_dev() {
    let dir = scratch("dev-stdout");
    let exe = program(&dir);
    let stray = Path::new("/dev/stdout.1");
    let before = stray
        .symlink_metadata()
        .ok()
        .and_then(|m| m.modified().ok());
    let o = finish(
        preloaded(&exe, &["quiet", "400"], Path::new("/dev/stdout"))
            .spawn()
            .unwrap(),
        "/dev/stdout",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stray
            .symlink_metadata()
            .ok()
            .and_then(|m| m.modified().ok()),
        before,
        "a file was created under /dev"
    );
    let t = Trace::from_reader(TraceReader::new("stdout", &o.stdout[..]).expect("a trace"))
        .expect("reads");
    assert_eq!(constructs(&t), 400);
    assert!(t.footer.is_some());
}

#[test]
fn a_trace_streamed_through_a_fifo_into_accprof_dump_arrives_whole() {
    // The documented way to stream: dump reads the FIFO while the program writes it. A FIFO
    // is read once, from the start: a look ahead for the trace's symbols would take part of it.
    let dir = scratch("fifo-dump");
    let exe = program(&dir);
    let fifo = dir.join("stream");
    mkfifo(&fifo);
    // Its output to a file: a pipe nobody reads until it ends would fill and stop it.
    let dumped = dir.join("dumped.json");
    let dump = Command::new(accprof_cli())
        .args(["dump", "--no-symbols", "-q"])
        .arg(&fifo)
        .stdout(std::fs::File::create(&dumped).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(
        preloaded(&exe, &["reexec", "3000", "0"], &fifo)
            .spawn()
            .unwrap(),
        "streaming program",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let d = finish(dump, "accprof dump");
    assert!(d.status.success(), "{}", stderr(&d));
    let starts = std::fs::read_to_string(&dumped)
        .unwrap()
        .matches("\"acc_ev_compute_construct_start\"")
        .count();
    assert_eq!(starts, 3000, "{}", stderr(&d));
}

/// Runs `hostile_program reexec 400 2` (three images, one pid) as `cmd` and checks that
/// `traces` are its three traces, in order, each whole.
fn three_images(traces: &[PathBuf], o: &Output, how: &str) {
    assert!(o.status.success(), "{how}: {}", stderr(o));
    let mut pids = Vec::new();
    for p in traces {
        let t = Trace::load(p).unwrap_or_else(|e| panic!("{how}: {e}\n{}", stderr(o)));
        assert!(t.integrity.is_complete(), "{how}: {}", t.integrity);
        assert_eq!(constructs(&t), 400, "{how}: {}", p.display());
        pids.push(t.header.pid);
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "{how}: one process, three images");
}

#[test]
fn a_program_that_execs_itself_keeps_the_trace_of_every_image() {
    let dir = scratch("reexec");
    let exe = program(&dir);
    // The default name: accprof.<program>.<pid>.trace in the working directory.
    let o = finish(
        preloaded(&exe, &["reexec", "400", "2"], Path::new("unused"))
            .env_remove("ACCPROF_OUT")
            .current_dir(&dir)
            .spawn()
            .unwrap(),
        "default name",
    );
    let pid = o.status.success().then(|| {
        let t = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().ends_with(".trace"))
            .expect("a trace");
        Trace::load(t.path()).unwrap().header.pid
    });
    let base = dir.join(format!("accprof.hostile_program.{}", pid.unwrap_or(0)));
    let names: Vec<PathBuf> = ["trace", "1.trace", "2.trace"]
        .iter()
        .map(|s| PathBuf::from(format!("{}.{s}", base.display())))
        .collect();
    three_images(&names, &o, "default name");
    assert!(
        stderr(&o).contains("is the trace of this process before it ran exec"),
        "{}",
        stderr(&o)
    );
    // %p: the same pid for every image.
    let pattern = dir.join("p.%p.trace");
    let o = finish(
        preloaded(&exe, &["reexec", "400", "2"], &pattern)
            .spawn()
            .unwrap(),
        "%p",
    );
    let pid = o.status.success().then(|| {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with("p."))
            .and_then(|e| Trace::load(e.path()).ok())
            .map_or(0, |t| t.header.pid)
    });
    let p = |s: &str| dir.join(format!("p.{}.{s}", pid.unwrap_or(0)));
    three_images(&[p("trace"), p("1.trace"), p("2.trace")], &o, "%p");
    // accprof run -o: every image's trace, named in its one line.
    let out = dir.join("run.trace");
    let o = finish(
        Command::new(accprof_cli())
            .args(["run", "-o"])
            .arg(&out)
            .arg("--")
            .arg(&exe)
            .args(["reexec", "400", "2"])
            .env_remove("LD_PRELOAD")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        "accprof run",
    );
    let r = |s: &str| dir.join(format!("run.{s}"));
    three_images(&[r("trace"), r("1.trace"), r("2.trace")], &o, "accprof run");
    let said = stderr(&o);
    assert!(said.contains("3 traces (one per program image"), "{said}");
}

#[test]
fn processes_starting_together_over_an_old_trace_each_keep_their_trace() {
    let dir = scratch("together");
    let exe = program(&dir);
    let shared = dir.join("same.trace");
    for round in 0..5 {
        for f in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            if f.file_name().to_string_lossy().starts_with("same") {
                std::fs::remove_file(f.path()).unwrap();
            }
        }
        // An earlier run's finished trace at the name: one new process may replace it, but
        // never another's trace while that one is running.
        let o = finish(
            preloaded(&exe, &["quiet", "10"], &shared).spawn().unwrap(),
            "old run",
        );
        assert!(o.status.success());
        // Let go together: all create their traces within microseconds of each other.
        let mut children: Vec<Child> = (0..6)
            .map(|_| {
                preloaded(&exe, &["gate", "300"], &shared)
                    .stdin(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        for c in &mut children {
            use std::io::Write;
            c.stdin.as_mut().unwrap().write_all(b"g").unwrap();
        }
        // All still running (so none of their traces is a finished one that may be replaced)
        // until every one has recorded.
        for c in &mut children {
            let mut line = String::new();
            BufReader::new(c.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line, "ready 300\n");
        }
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        let outs: Vec<Output> = children
            .into_iter()
            .map(|mut c| {
                drop(c.stdin.take());
                finish(c, "together")
            })
            .collect();
        let mut traced: Vec<u32> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("same") && n.ends_with(".trace")
            })
            .filter_map(|e| Trace::load(e.path()).ok())
            .filter(|t| constructs(t) == 300)
            .map(|t| t.header.pid)
            .collect();
        traced.sort();
        let mut pids = pids;
        pids.sort();
        assert_eq!(
            traced,
            pids,
            "round {round}: one whole trace per process: {}",
            outs.iter().map(stderr).collect::<String>()
        );
    }
}

/// Runs `hostile_program reexec N 0` with its trace on a small tmpfs (in a mount namespace of
/// its own) when this machine lets the test make one, and under a file size limit of the
/// same size (`ulimit -f`, a quota that also raises SIGXFSZ). Each: the program carries on,
/// and one line says why recording stopped.
#[test]
fn a_full_disk_or_file_limit_is_said_once_with_its_reason() {
    let dir = scratch("full");
    let exe = program(&dir);
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let trace = small.join("t.trace");
    let tmpfs = Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=256k none {0} && exec \"$@\"",
            small.display()
        ))
        .arg("sh")
        .arg(&exe)
        .args(["reexec", "200000", "0"])
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", &trace)
        .output()
        .expect("sh runs");
    let mut cases = vec![(
        "file size limit",
        {
            let mut c = preloaded(&exe, &["reexec", "200000", "0"], &dir.join("f.trace"));
            // SAFETY: setrlimit in the child before exec; async-signal-safe.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                    let l = libc::rlimit {
                        rlim_cur: 256 << 10,
                        rlim_max: 256 << 10,
                    };
                    libc::setrlimit(libc::RLIMIT_FSIZE, &l);
                    Ok(())
                })
            };
            finish(c.spawn().unwrap(), "file size limit")
        },
        "File too large",
    )];
    if stderr(&tmpfs).contains("unshare:") || stderr(&tmpfs).contains("mount:") {
        eprintln!(
            "no tmpfs here ({}); the file size limit stands in for a full disk",
            stderr(&tmpfs).trim()
        );
    } else {
        cases.push(("full tmpfs", tmpfs, "No space left on device"));
    }
    for (how, o, why) in cases {
        // Past the file size limit a write raises SIGXFSZ, which ends the program unless the
        // tool keeps it from the program's threads (the live file is sized on them).
        assert!(o.status.success(), "{how}: {:?} {}", o.status, stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "image 0 finished 200000\n",
            "{how}"
        );
        let err = stderr(&o);
        assert!(
            !err.contains("No such file"),
            "{how}: a stale reason: {err}"
        );
        let stopped: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("cannot write the trace"))
            .collect();
        assert_eq!(stopped.len(), 1, "{how}: {err}");
        assert!(stopped[0].contains(why), "{how}: {err}");
    }
}

#[test]
fn a_death_inside_the_allocator_is_not_held_back_and_keeps_its_events() {
    // glibc aborts from inside free() holding its allocator's lock: the final flush, which
    // allocates, can never finish: the dying thread must not wait the whole 10 s for it.
    let dir = scratch("heap-corrupt");
    let exe = program(&dir);
    let trace = dir.join("t.trace");
    let start = Instant::now();
    let o = finish(
        preloaded(&exe, &["heap-corrupt", "1000"], &trace)
            .spawn()
            .unwrap(),
        "heap corruption",
    );
    let took = start.elapsed();
    assert_eq!(o.status.signal(), Some(libc::SIGABRT), "{}", stderr(&o));
    // A wide margin over the 0.25 s the death path waits for a flush that does not move.
    assert!(took < Duration::from_secs(5), "held back {took:?}");
    // What the flush could not write, the live file holds.
    let t = load(&trace);
    assert_eq!(constructs(&t), 1000, "{}", t.integrity);
    assert!(
        t.events.iter().all(|e| e.line_no().is_some()),
        "call sites resolve (the module map is written first)"
    );
}

#[test]
fn symbolize_refuses_the_trace_of_a_running_program_and_leaves_it_whole() {
    let dir = scratch("symbolize-live");
    let exe = compile_c("dies.c", &dir, &["-g", "-lpthread"]);
    let trace = dir.join("t.trace");
    let mut child = preloaded(&exe, &["hold", "2000"], &trace)
        .env("ACCPROF_SYMBOLS", "off")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready 2000\n");
    let s = Command::new(accprof_cli())
        .arg("symbolize")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(!s.status.success());
    let err = stderr(&s);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("still running"), "{err}");
    drop(child.stdin.take());
    let o = finish(child, "hold");
    assert!(o.status.success(), "{}", stderr(&o));
    let t = Trace::load(&trace).unwrap();
    assert!(t.integrity.is_complete(), "{}", t.integrity);
    assert_eq!(constructs(&t), 2000);
    // Once it has ended, symbolize does its work.
    let s = Command::new(accprof_cli())
        .arg("symbolize")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", stderr(&s));
}

#[test]
fn a_second_sigterm_during_the_exit_flush_waits_for_it() {
    // The flush streams to a FIFO whose reader is slow but steady, so the flush takes a while;
    // a second SIGTERM (as `timeout` sends one to the program and one to its group) comes in
    // the middle. On a thread of the tool's own it would end the process there.
    let dir = scratch("second-sigterm");
    let exe = program(&dir);
    let fifo = dir.join("stream");
    mkfifo(&fifo);
    let mut reader = fifo_reader(&fifo);
    let mut child = preloaded(&exe, &["spin", "0"], &fifo)
        // Large buffers, so that a backlog of a few MB waits for the slow reader.
        .env("ACCPROF_BUFFER_EVENTS", "65536")
        .env("ACCPROF_MAX_BUFFER_MB", "64")
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready 0\n");
    let pid = child.id() as i32;
    let slow = std::thread::spawn(move || {
        let mut all = Vec::new();
        // About 1.6 MB/s: the flush of the backlog takes a second or more.
        let mut buf = vec![0u8; 16 << 10];
        let start = Instant::now();
        while start.elapsed() < HANG {
            match reader.read(&mut buf) {
                Ok(0) if !all.is_empty() => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        all
    });
    // Let the backlog build up, then two SIGTERMs a moment apart.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill with the child's pid.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let o = finish(child, "second SIGTERM");
    let streamed = slow.join().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("before SIGTERM"),
        "the flush ended before its line: {}",
        stderr(&o)
    );
    let t = Trace::from_reader(TraceReader::new("stream", &streamed[..]).unwrap()).unwrap();
    assert!(t.footer.is_some(), "{}", t.integrity);
}

#[test]
fn disable_records_nothing_on_every_registration_path() {
    let dir = scratch("disable");
    let exe = program(&dir);
    let shim = artifact("libaccshim.so");
    let lib = libaccprof();
    let ways: [(&str, Vec<(&str, String)>); 3] = [
        (
            "LD_PRELOAD",
            vec![("LD_PRELOAD", lib.display().to_string())],
        ),
        (
            "ACC_PROFLIB",
            vec![("ACC_PROFLIB", lib.display().to_string())],
        ),
        (
            "the shim's acc_register_library",
            vec![
                (
                    "LD_PRELOAD",
                    format!("{} {}", shim.display(), lib.display()),
                ),
                ("ACC_PROFLIB", lib.display().to_string()),
                ("ACC_DEVICE_TYPE", "emulated".into()),
                ("ACCSHIM_QUIET", "1".into()),
            ],
        ),
    ];
    for (how, env) in ways {
        for (value, disabled) in [("1", true), ("yes", true), ("0", false), ("off", false)] {
            let trace = dir.join(format!("{}-{value}.trace", how.len()));
            let mut c = Command::new(&exe);
            c.args(["reexec", "50", "0"])
                .env_remove("LD_PRELOAD")
                .env_remove("ACC_PROFLIB")
                .env("ACCPROF_OUT", &trace)
                .env("ACCPROF_DISABLE", value);
            for (k, v) in &env {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{how} {value}: {}", stderr(&o));
            assert_eq!(
                !trace.exists(),
                disabled,
                "{how}, ACCPROF_DISABLE={value}: {}",
                stderr(&o)
            );
        }
    }
}

#[test]
fn each_unusable_setting_is_said_once_with_its_value_even_through_a_shell() {
    let dir = scratch("settings-once");
    let exe = program(&dir);
    let trace = dir.join("t.trace");
    // A shell between the launcher and the program loads the library too: it says nothing.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("{} reexec 20 0", exe.display()))
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", &trace)
        .env("ACCPROF_HEAP", "sometimes")
        .env("ACCPROF_CLOCK", "garbage")
        .env("ACCPROF_QUIET", "perhaps")
        .env("ACCPROF_SELF_TIME", "2")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    for line in [
        "accprof: ACCPROF_HEAP=sometimes is not auto, on or off; using auto",
        "accprof: ACCPROF_CLOCK=garbage is not monotonic or auto; using auto",
        "accprof: ACCPROF_QUIET=perhaps is not 1 or 0 (on/off, yes/no, true/false); using 0",
        "accprof: ACCPROF_SELF_TIME=2 is not 1 or 0 (on/off, yes/no, true/false); using 0",
    ] {
        assert_eq!(
            err.lines().filter(|l| *l == line).count(),
            1,
            "{line:?} once in:\n{err}"
        );
    }
    // Empty is unset, and `off` is off: recorded, not disabled.
    for off in ["", "off", "no", "false"] {
        let t = dir.join(format!("off{}.trace", off.len()));
        let o = Command::new(&exe)
            .args(["reexec", "20", "0"])
            .env("LD_PRELOAD", libaccprof())
            .env("ACCPROF_OUT", &t)
            .env("ACCPROF_DISABLE", off)
            .output()
            .unwrap();
        assert!(o.status.success());
        assert!(t.exists(), "ACCPROF_DISABLE={off:?} disabled the tool");
    }
}

#[test]
fn a_forked_child_never_hangs_at_its_first_construct() {
    // Another thread runs constructs without pause while the main thread forks; each child
    // runs one construct on the thread that forked. libgomp's profiling lock, held by the other
    // thread at the fork, hangs a child that dispatches with it (docs/performance/robustness.md).
    let dir = scratch("fork-hang");
    let exe = compile_c("fork_hang.c", &dir, &["-lpthread"]);
    let trace = dir.join("t.trace");
    // A child not done in 5 s is hung (it runs one construct: a few ms) and killed by
    // fork_hang itself, which then goes on; every one hung would take 500 s.
    let mut child = preloaded(&exe, &["100", "5"], &trace).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = finish(child, "fork_hang");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "forks 100 hung 0\n");
}

#[test]
fn the_exit_line_counts_what_threads_still_running_add_after_exit() {
    let dir = scratch("exit-count");
    let exe = compile_c("dies.c", &dir, &["-g", "-lpthread"]);
    let trace = dir.join("t.trace");
    let o = finish(
        preloaded(&exe, &["thread-exit", "20000"], &trace)
            .spawn()
            .unwrap(),
        "thread-exit",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let line = accprof_lines(&o)
        .into_iter()
        .find(|l| l.contains("events recorded to"))
        .unwrap_or_else(|| panic!("no exit line: {}", stderr(&o)));
    let said: u64 = line
        .trim_start_matches("accprof: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let t = Trace::load(&trace).unwrap();
    let total = t.events.len() as u64;
    assert!(said <= total, "{line}: the trace holds {total}");
    assert!(
        said == total || line.contains("from threads still running"),
        "{line}: the trace holds {total}, and the line does not say why it counts fewer"
    );
}
