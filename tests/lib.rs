//! Shared helpers for the integration tests: build real C programs with `gcc -fopenacc`, run
//! them with the tool loaded the ways users load it, and read back what was recorded.
//!
//! Built artifacts (libaccprof.so, the accprof binary, the shim's examples) are looked up in
//! `ACCPROF_BUILD_DIR`, by default `<workspace>/target/release`. `scripts/test.sh` builds them
//! first; a missing artifact fails the test with the command that builds it.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_trace::{Event, Field, Trace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

pub fn build_dir() -> PathBuf {
    std::env::var_os("ACCPROF_BUILD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/release"))
}

/// A built artifact, or a failure that says how to build it.
pub fn artifact(name: &str) -> PathBuf {
    let p = build_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --release --workspace --bins --examples` (or scripts/test.sh) first, or set ACCPROF_BUILD_DIR",
        p.display()
    );
    p
}

pub fn libaccprof() -> PathBuf {
    artifact("libaccprof.so")
}

pub fn accprof_cli() -> PathBuf {
    artifact("accprof")
}

/// A fresh directory for one test's files.
pub fn scratch(test: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    static PRUNED: std::sync::Once = std::sync::Once::new();
    // Kept after the run for a look at what failed; the next run's first scratch directory
    // clears those of runs whose process is gone, so repeated runs do not fill the disk.
    PRUNED.call_once(prune_scratch_of_finished_runs);
    let dir = std::env::temp_dir().join(format!(
        "accprof-it-{}-{}-{}",
        test,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Removes `accprof-it-TEST-PID-N` directories whose process has ended.
fn prune_scratch_of_finished_runs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("accprof-it-")) else {
            continue;
        };
        // TEST may hold dashes: the process id is the second field from the end.
        let pid = rest.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The source of a test program in tests/programs/.
pub fn program_source(name: &str) -> PathBuf {
    workspace_root().join("tests/programs").join(name)
}

/// Compiles `tests/programs/<name>` with gcc -fopenacc (host fallback) and `extra` flags.
pub fn compile_c(name: &str, out_dir: &Path, extra: &[&str]) -> PathBuf {
    let src = program_source(name);
    let exe = out_dir.join(name.trim_end_matches(".c"));
    let out = Command::new("gcc")
        .args(["-fopenacc", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(extra)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// How the tool is loaded into the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    Preload,
    Proflib,
    Both,
}

pub const ALL_LOADS: [Load; 3] = [Load::Preload, Load::Proflib, Load::Both];

/// Runs `exe args` with the tool loaded as `load`, writing its trace to `trace`.
pub fn run_profiled(
    exe: &Path,
    args: &[&str],
    load: Load,
    trace: &Path,
    env: &[(&str, &str)],
) -> Output {
    let lib = libaccprof();
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env("ACCPROF_OUT", trace)
        .env_remove("LD_PRELOAD")
        .env_remove("ACC_PROFLIB")
        .env_remove("NVTX_INJECTION64_PATH");
    if matches!(load, Load::Preload | Load::Both) {
        cmd.env("LD_PRELOAD", &lib);
    }
    if matches!(load, Load::Proflib | Load::Both) {
        cmd.env("ACC_PROFLIB", &lib);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("program runs")
}

/// Loads a trace and resolves its call sites, as the CLI does.
pub fn load(trace: &Path) -> Trace {
    let mut t = Trace::load(trace).unwrap_or_else(|e| panic!("{e}"));
    accprof_symbols::annotate_trace(&mut t);
    t
}

/// `(event name, line)` of each event, in recorded order.
pub fn names_and_lines(t: &Trace) -> Vec<(String, Option<i64>)> {
    t.events
        .iter()
        .map(|e| (event_name(e), e.line_no()))
        .collect()
}

pub fn event_name(e: &Event) -> String {
    e.kind
        .name()
        .map(str::to_owned)
        .unwrap_or_else(|| e.kind.0.to_string())
}

/// Line numbers (1-based) of the `#pragma acc` lines of a source file, with their text.
pub fn pragma_lines(src: &Path) -> Vec<(i64, String)> {
    std::fs::read_to_string(src)
        .expect("read source")
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("#pragma acc"))
        .map(|(i, l)| (i as i64 + 1, l.trim().to_string()))
        .collect()
}

/// The line of the pragma whose text contains `needle`.
pub fn pragma_line(src: &Path, needle: &str) -> i64 {
    pragma_lines(src)
        .into_iter()
        .find(|(_, t)| t.contains(needle))
        .unwrap_or_else(|| panic!("no pragma containing {needle:?} in {}", src.display()))
        .0
}

/// The string of a string field.
pub fn str_field<'a>(t: &'a Trace, e: &Event, f: Field) -> Option<&'a str> {
    t.str(e.get_str(f))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
