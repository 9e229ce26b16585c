//! Traces that outlive their binary: the Laplace program built with gcc -fopenacc -g, run with
//! libaccprof.so preloaded (or under `accprof run`, killed), then rebuilt in place with a line
//! inserted, deleted, or its trace copied elsewhere. The source lines come from the trace's
//! symbols chunk, written when the program ended (or by `accprof run` after a kill).

use accprof_integration_tests::{accprof_cli, libaccprof, load, scratch, stderr, workspace_root};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether GCC builds nvptx images here: kernels calling libm then need `-foffload=-lm`.
fn offload_compiler() -> bool {
    let out = Command::new("gcc")
        .arg("-print-prog-name=accel/nvptx-none/mkoffload")
        .output()
        .expect("gcc runs");
    Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_file()
}

/// Builds `dir/src` into `dir/exe` (in place: the same path every time) with -g.
fn build(dir: &Path, src: &str, exe: &str) -> PathBuf {
    let out_exe = dir.join(exe);
    let mut cmd = Command::new("gcc");
    cmd.current_dir(dir)
        .args(["-fopenacc", "-g", "-O2", src, "-o"])
        .arg(&out_exe)
        .arg("-lm");
    if offload_compiler() {
        cmd.arg("-foffload=-lm");
    }
    let out = cmd.output().expect("gcc runs");
    assert!(out.status.success(), "gcc: {}", stderr(&out));
    out_exe
}

fn place_app(from: &str, dir: &Path, to: &str) {
    std::fs::copy(workspace_root().join("tests/apps").join(from), dir.join(to))
        .expect("copy the source");
}

/// Runs `exe` in `dir` with libaccprof.so preloaded, its trace to `dir/trace`.
fn run_preloaded(dir: &Path, exe: &Path, trace: &str, env: &[(&str, &str)]) {
    let out = Command::new(exe)
        .current_dir(dir)
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", dir.join(trace))
        .env("ACCPROF_QUIET", "1")
        .envs(env.iter().copied())
        .output()
        .expect("the program runs");
    assert!(out.status.success(), "{}", stderr(&out));
}

fn accprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(accprof_cli())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("accprof runs")
}

/// The constructs table rows of `accprof report` over `traces` run in `dir`, and its stderr.
fn report(dir: &Path, traces: &[&str]) -> (String, String) {
    let mut args = vec!["report", "-q"];
    args.extend_from_slice(traces);
    let o = accprof(dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    (String::from_utf8_lossy(&o.stdout).into_owned(), stderr(&o))
}

/// Whether the report has a compute-region row at `location` (`laplace.c:41 main`).
fn has_compute_row(text: &str, location: &str) -> bool {
    text.lines()
        .any(|l| l.trim_start().starts_with(location) && l.contains("compute region"))
}

fn symbols_chunks(trace: &Path) -> usize {
    accprof_trace::symbols::scan(trace)
        .expect("the trace scans")
        .symbols_chunks
}

#[test]
fn lines_survive_a_rebuild_in_place_a_deleted_binary_and_a_copy_of_the_trace() {
    let dir = scratch("sc-laplace");
    place_app("laplace_naive.c", &dir, "laplace.c");
    let exe = build(&dir, "laplace.c", "laplace");
    run_preloaded(&dir, &exe, "old.trace", &[]);
    assert_eq!(symbols_chunks(&dir.join("old.trace")), 1, "written at exit");
    let (before, _) = report(&dir, &["old.trace"]);
    assert!(has_compute_row(&before, "laplace.c:41 main"), "{before}");

    // Rebuilt in place with one line inserted above the loop: the constructs move to 42, 51.
    place_app("laplace_edit.c", &dir, "laplace.c");
    let rebuilt = build(&dir, "laplace.c", "laplace");
    assert_eq!(rebuilt, exe);
    run_preloaded(&dir, &exe, "new.trace", &[]);
    let (old, warnings) = report(&dir, &["old.trace"]);
    for loc in ["laplace.c:41 main", "laplace.c:50 main"] {
        assert!(has_compute_row(&old, loc), "{loc}:\n{old}");
    }
    assert!(!has_compute_row(&old, "laplace.c:42 main"), "{old}");
    assert!(!warnings.contains("build id"), "{warnings}");
    let (both, _) = report(&dir, &["old.trace", "new.trace"]);
    for loc in [
        "laplace.c:41 main",
        "laplace.c:50 main",
        "laplace.c:42 main",
        "laplace.c:51 main",
    ] {
        assert!(
            has_compute_row(&both, loc),
            "old and new apart, {loc}:\n{both}"
        );
    }

    // The binary deleted, and the trace read in another directory: the lines are the trace's.
    std::fs::remove_file(&exe).unwrap();
    let elsewhere = scratch("sc-laplace-copy");
    std::fs::copy(dir.join("old.trace"), elsewhere.join("copied.trace")).unwrap();
    let (copied, _) = report(&elsewhere, &["copied.trace"]);
    assert!(has_compute_row(&copied, "laplace.c:41 main"), "{copied}");
    // The in-memory loader resolves from the same chunk.
    let t = load(&elsewhere.join("copied.trace"));
    let lines: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START)
        .filter_map(|e| e.line_no())
        .collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| [41, 50].contains(l)),
        "{lines:?}"
    );
}

#[test]
fn without_kept_symbols_a_rebuild_says_so_once_and_keeps_the_builds_apart() {
    let dir = scratch("sc-nosym");
    place_app("laplace_naive.c", &dir, "laplace.c");
    let exe = build(&dir, "laplace.c", "laplace");
    run_preloaded(&dir, &exe, "old.trace", &[("ACCPROF_SYMBOLS", "off")]);
    assert_eq!(
        symbols_chunks(&dir.join("old.trace")),
        0,
        "ACCPROF_SYMBOLS=off"
    );
    place_app("laplace_edit.c", &dir, "laplace.c");
    build(&dir, "laplace.c", "laplace");
    run_preloaded(&dir, &exe, "new.trace", &[]);
    let (both, warnings) = report(&dir, &["old.trace", "new.trace"]);
    let mismatch: Vec<_> = warnings
        .lines()
        .filter(|l| l.contains("build id differs"))
        .collect();
    assert_eq!(mismatch.len(), 1, "once:\n{warnings}");
    assert!(mismatch[0].contains(&*exe.to_string_lossy()), "{warnings}");
    // The old build's two call sites keep their own rows, by module and offset; the new
    // build's lines are its own.
    let old_sites: std::collections::BTreeSet<&str> = both
        .lines()
        .filter(|l| l.contains("compute region"))
        .flat_map(|l| l.split_whitespace())
        .filter(|w| w.starts_with("laplace+0x"))
        .collect();
    assert_eq!(old_sites.len(), 2, "{both}");
    assert!(has_compute_row(&both, "laplace.c:42 main"), "{both}");
    assert!(has_compute_row(&both, "laplace.c:51 main"), "{both}");
}

/// A program that records, waits past the tool's sweep period (its events are then on disk)
/// and kills itself with SIGKILL: no exit handler runs.
const KILLED: &str = r#"#include <signal.h>
#include <unistd.h>
int main(void) {
    static double a[256];
    for (int it = 0; it < 50; it++) {
#pragma acc parallel loop copy(a[0:256])
        for (int i = 0; i < 256; i++) a[i] += 1.0;
    }
    usleep(800000);
    raise(SIGKILL);
    return 0;
}
"#;

#[test]
fn a_run_killed_under_accprof_run_keeps_its_lines_after_a_rebuild() {
    let dir = scratch("sc-killed");
    std::fs::write(dir.join("killed.c"), KILLED).unwrap();
    let exe = build(&dir, "killed.c", "killed");
    let o = accprof(&dir, &["run", "-q", "-o", "k.trace", "--", "./killed"]);
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    let trace = dir.join("k.trace");
    assert_eq!(symbols_chunks(&trace), 1, "added by accprof run");
    // Rebuilt in place with a line inserted: the construct's line in the source is now 7.
    std::fs::write(dir.join("killed.c"), format!("/* edited */\n{KILLED}")).unwrap();
    assert_eq!(build(&dir, "killed.c", "killed"), exe);
    let (text, warnings) = report(&dir, &["k.trace"]);
    assert!(has_compute_row(&text, "killed.c:6 main"), "{text}");
    assert!(!warnings.contains("build id"), "{warnings}");
    // A second symbolize leaves the trace alone.
    let again = accprof(&dir, &["symbolize", "k.trace"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("kept already"),
        "{}",
        stderr(&again)
    );
    assert_eq!(symbols_chunks(&trace), 1);
}

/// Heap arrays moved before and after the tool's sweep wrote the first events into the trace,
/// then SIGKILL: the later events are only in the live file, which holds them unnamed.
const KILLED_HEAP: &str = r#"#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
static void step(double *T, double *U, int n) {
#pragma acc parallel loop copy(T[0:n]) copyin(U[0:n])
    for (int i = 0; i < n; i++) T[i] += U[i];
}
int main(void) {
    int n = 1 << 14;
    double *T = calloc(n, sizeof *T);
    double *U = calloc(n, sizeof *U);
    for (int it = 0; it < 20; it++) step(T, U, n);
    usleep(800000);
    for (int it = 0; it < 20; it++) step(T, U, n);
    raise(SIGKILL);
    return 0;
}
"#;

/// The report's uploaded variables of the trace `t` in `dir`: name and uploads.
fn uploads_by_variable(dir: &Path, t: &str) -> Vec<(String, u64)> {
    let o = accprof(dir, &["report", "--format", "json", t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    r["traces"][0]["profile"]["variables"]
        .as_array()
        .expect("variables")
        .iter()
        .filter(|v| v["direction"] == "host_to_device")
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_string(),
                v["count"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// A killed run's events recovered from its live file name their heap arrays as the trace's
/// own events do: folded in by `accprof run`, and read beside the trace by `accprof report`
/// (unnamed, each would be a second array `host 0x...+128 KiB` that the advice cannot name).
#[test]
fn a_killed_runs_recovered_transfers_keep_their_heap_arrays_names() {
    let dir = scratch("sc-killed-heap");
    std::fs::write(dir.join("killed_heap.c"), KILLED_HEAP).unwrap();
    let exe = build(&dir, "killed_heap.c", "killed_heap");
    let o = accprof(
        &dir,
        &[
            "run",
            "-q",
            "--runtime",
            "shim",
            "-o",
            "k.trace",
            "--",
            "./killed_heap",
        ],
    );
    assert_eq!(o.status.code(), Some(128 + 9), "{}", stderr(&o));
    let shim = accprof_integration_tests::artifact("libaccshim.so");
    let direct = Command::new(&exe)
        .current_dir(&dir)
        .env(
            "LD_PRELOAD",
            format!("{}:{}", shim.display(), libaccprof().display()),
        )
        .env("ACCPROF_OUT", dir.join("d.trace"))
        .env("ACCPROF_QUIET", "1")
        .env("ACCSHIM_QUIET", "1")
        .output()
        .expect("the program runs");
    assert_eq!(direct.status.signal(), Some(9), "{}", stderr(&direct));
    assert!(dir.join("d.trace.live").exists(), "the live file is left");
    for t in ["k.trace", "d.trace"] {
        let vars = uploads_by_variable(&dir, t);
        let named = |n: &str| vars.iter().find(|(v, _)| v == n).map(|(_, u)| *u);
        assert_eq!(named("T[0:n]"), Some(40), "{t}: {vars:?}");
        assert_eq!(named("U[0:n]"), Some(40), "{t}: {vars:?}");
        // (`n`, passed by value, is a 4-byte host address of its own.)
        assert!(
            !vars
                .iter()
                .any(|(v, _)| v.contains("0x") && v.ends_with("KiB")),
            "{t}: {vars:?}"
        );
    }
}

/// A build with relative source paths in its debug information (`-fdebug-prefix-map=DIR=.`, as
/// reproducible builds do) and the binary in a subdirectory: the report, run from another
/// directory, finds the source from the working directory the trace's header records, and
/// gives the data region's exit its closing line as it does beside the source.
#[test]
fn relative_source_paths_are_found_from_the_recorded_working_directory() {
    let dir = scratch("sc-cwd");
    place_app("laplace_data.c", &dir, "laplace.c");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let mut cmd = Command::new("gcc");
    cmd.current_dir(&dir)
        .args([
            "-fopenacc",
            "-g",
            "-O2",
            "laplace.c",
            "-o",
            "bin/laplace",
            "-lm",
        ])
        .arg(format!("-fdebug-prefix-map={}=.", dir.display()));
    if offload_compiler() {
        cmd.arg("-foffload=-lm");
    }
    let out = cmd.output().expect("gcc runs");
    assert!(out.status.success(), "gcc: {}", stderr(&out));
    let o = accprof(&dir, &["run", "-q", "-o", "t.trace", "--", "./bin/laplace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = dir.join("t.trace");
    let t = load(&trace);
    let files: std::collections::BTreeSet<_> = t
        .events
        .iter()
        .filter_map(|e| t.str(e.src_file()))
        .collect();
    assert!(
        !files.is_empty() && files.iter().all(|f| !f.starts_with('/')),
        "relative paths in the trace: {files:?}"
    );
    let elsewhere = scratch("sc-cwd-elsewhere");
    let (text, _) = report(&elsewhere, &[&*trace.to_string_lossy()]);
    // laplace_data.c: `#pragma acc data` at 38, its block the while loop at 39-59.
    assert!(text.contains("    59: data region exit"), "{text}");
    assert!(!text.contains("    39: data region"), "{text}");
}

/// A trace recorded without its symbols (ACCPROF_SYMBOLS=off, as a run killed outside
/// `accprof run` would be) gets them from `accprof symbolize` while the binary is unchanged, and
/// then keeps its lines after a rebuild.
#[test]
fn accprof_symbolize_keeps_the_lines_of_a_trace_recorded_without_them() {
    let dir = scratch("sc-symbolize");
    place_app("laplace_naive.c", &dir, "laplace.c");
    let exe = build(&dir, "laplace.c", "laplace");
    run_preloaded(&dir, &exe, "t.trace", &[("ACCPROF_SYMBOLS", "off")]);
    let o = accprof(&dir, &["symbolize", "t.trace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("kept 2 call sites"), "{}", stderr(&o));
    assert_eq!(symbols_chunks(&dir.join("t.trace")), 1);
    place_app("laplace_edit.c", &dir, "laplace.c");
    build(&dir, "laplace.c", "laplace");
    let (text, warnings) = report(&dir, &["t.trace"]);
    assert!(has_compute_row(&text, "laplace.c:41 main"), "{text}");
    assert!(!warnings.contains("build id"), "{warnings}");
    // Not a trace: one line, non-zero exit.
    std::fs::write(dir.join("junk.trace"), "hello").unwrap();
    let bad = accprof(&dir, &["symbolize", "junk.trace"]);
    assert!(!bad.status.success());
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
}
