//! Test helpers: where the built artefacts are, compiling C against the system's headers, and
//! parsing the C event logger's output, running a program with a deadline.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// target/<profile>, found from the test binary (target/<profile>/deps/<test>-<hash>).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

pub fn example(name: &str) -> PathBuf {
    let p = profile_dir().join("examples").join(name);
    assert!(p.exists(), "{} not built: a plain `cargo test -p runtime-shim` builds the examples, one with --test does not (run `cargo build -p runtime-shim --examples` first)", p.display());
    p
}

/// The libaccshim.so that this `cargo test` built: target/<profile>/deps/libaccshim.so. Cargo
/// builds the crate's cdylib there for its tests but copies it up to target/<profile>/ only on
/// `cargo build`, so the copy up there can be older than the code under test.
pub fn shim_so() -> PathBuf {
    let p = profile_dir().join("deps").join("libaccshim.so");
    assert!(p.exists(), "{} not built", p.display());
    p
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles C with gcc; `shared` builds a tool library, else a program linked to libaccshim.so.
pub fn gcc(src: &Path, out: &Path, shared: bool) {
    let mut cmd = Command::new("gcc");
    cmd.arg("-O1").arg("-Wall").arg("-Werror").arg("-g");
    if shared {
        cmd.args(["-shared", "-fPIC"]);
    }
    cmd.arg("-o").arg(out).arg(src);
    if !shared {
        let dir = shim_so().parent().unwrap().to_path_buf();
        cmd.arg("-I").arg(crate_dir().join("include"));
        cmd.arg(format!("-L{}", dir.display()))
            .arg("-laccshim")
            .arg("-lm")
            .arg("-lpthread");
        // DT_RPATH, not RUNPATH: cargo test puts target/<profile> first in LD_LIBRARY_PATH,
        // which overrides a RUNPATH and would load the stale libaccshim.so that the last
        // cargo build left there instead of the one this cargo test built.
        cmd.arg(format!("-Wl,--disable-new-dtags,-rpath,{}", dir.display()));
    } else {
        cmd.arg("-lpthread");
    }
    let o = cmd.output().expect("gcc runs");
    assert!(
        o.status.success(),
        "gcc failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The C event logger, compiled against /usr/lib/gcc/.../acc_prof.h (gcc's include path).
pub fn event_logger(dir: &Path) -> PathBuf {
    let so = dir.join("event_logger.so");
    gcc(&crate_dir().join("tests/c/event_logger.c"), &so, true);
    so
}

pub type Event = HashMap<String, String>;

/// Parses the logger's lines: the event name, then key=value pairs.
pub fn parse_log(text: &str) -> Vec<Event> {
    text.lines()
        .filter(|l| !l.is_empty() && *l != "registered")
        .map(|l| {
            let mut it = l.split(' ');
            let mut ev: Event = HashMap::new();
            ev.insert("ev".into(), it.next().unwrap().to_string());
            for kv in it {
                if let Some((k, v)) = kv.split_once('=') {
                    ev.insert(k.to_string(), v.to_string());
                }
            }
            ev
        })
        .collect()
}

/// Runs `prog args` with the logger loaded through ACC_PROFLIB, on the emulated device whatever
/// the machine has (the expected events are the emulated device's); returns (events, output).
pub fn run_with_logger(
    dir: &Path,
    logger: &Path,
    prog: &Path,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> (Vec<Event>, Output) {
    let log = dir.join(format!(
        "log-{}.txt",
        std::process::id() as u64 ^ rand_u64()
    ));
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .env("ACC_PROFLIB", logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .env_remove("ACC_DEVICE_TYPE")
        .env("ACCSHIM_NO_CUDA", "1");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("program runs");
    assert!(
        out.status.success(),
        "{} failed: {}",
        prog.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    (parse_log(&text), out)
}

pub fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(7);
    h.finish()
}

pub fn names(evs: &[Event]) -> Vec<&str> {
    evs.iter().map(|e| e["ev"].as_str()).collect()
}

pub fn count(evs: &[Event], name: &str) -> usize {
    evs.iter().filter(|e| e["ev"] == name).count()
}

/// Runs `prog args` on the emulated device; None if it had not finished after 20 s (killed:
/// a deadlock), else (exit code or -signal, stdout, stderr).
pub fn run_bounded(prog: &Path, args: &[&str]) -> Option<(i32, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(prog)
        .args(args)
        .env("ACCSHIM_NO_CUDA", "1")
        .env("ACCSHIM_QUIET", "1")
        .env_remove("ACC_DEVICE_TYPE")
        .env_remove("ACC_PROFLIB")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| -status.signal().unwrap_or(0));
    Some((
        code,
        std::fs::read_to_string(out_path).unwrap(),
        std::fs::read_to_string(err_path).unwrap(),
    ))
}

/// The runtime's error line names the routine once ("in acc_map_data: <message>"), not again at
/// the start of the message.
pub fn assert_routine_named_once(what: &str, err: &str) {
    let line = err
        .lines()
        .find(|l| l.contains("OpenACC runtime error"))
        .unwrap_or_else(|| panic!("{what}: no error line: {err}"));
    let routine = line
        .split(" in ")
        .nth(1)
        .and_then(|w| w.split([':', ' ']).next())
        .unwrap_or_default();
    assert!(
        !line.contains(&format!("{routine}: {routine}")),
        "{what}: {line}"
    );
}
