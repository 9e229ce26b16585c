//! The user's loop on the realistic programs of tests/apps: run with a report, edit, rebuild,
//! compare, take the advice. Each test builds the sources it needs with gcc/g++/gfortran
//! -fopenacc -g, as tests/apps/build.sh does.

use accprof_integration_tests::{accprof_cli, scratch, stderr, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn app_source(name: &str) -> PathBuf {
    workspace_root().join("tests/apps").join(name)
}

/// Whether GCC builds nvptx images here (Debian's gcc-12-offload-nvptx): kernels calling libm
/// then need `-foffload=-lm`, as tests/apps/build.sh passes.
fn offload_compiler() -> bool {
    let out = Command::new("gcc")
        .arg("-print-prog-name=accel/nvptx-none/mkoffload")
        .output()
        .expect("gcc runs");
    Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_file()
}

/// Builds `sources` (in `dir`, under the names given) into `dir/exe` with `compiler`.
fn build(compiler: &str, dir: &Path, sources: &[&str], exe: &str, extra: &[&str]) -> PathBuf {
    let out_exe = dir.join(exe);
    let mut cmd = Command::new(compiler);
    cmd.current_dir(dir)
        .args(["-fopenacc", "-g", "-O2"])
        .args(sources)
        .arg("-o")
        .arg(&out_exe)
        .args(extra);
    if offload_compiler() {
        cmd.arg("-foffload=-lm");
    }
    let out = cmd.output().expect("compiler runs");
    assert!(
        out.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out_exe
}

/// Copies tests/apps/`from` to `dir/to` (the user's file, edited in place).
fn place(from: &str, dir: &Path, to: &str) {
    std::fs::copy(app_source(from), dir.join(to)).expect("copy the source");
}

fn accprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(accprof_cli())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("accprof runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn run_report_and_advise_leave_the_programs_stdout_byte_for_byte_its_own() {
    let dir = scratch("ul-stdout");
    place("laplace_naive.c", &dir, "laplace.c");
    let exe = build("gcc", &dir, &["laplace.c"], "laplace", &["-lm"]);
    let alone = Command::new(&exe).current_dir(&dir).output().unwrap();
    assert!(alone.status.success());
    let profiled = accprof(
        &dir,
        &[
            "run",
            "--report",
            "--advise",
            "-o",
            "r.trace",
            "--",
            "./laplace",
        ],
    );
    assert!(profiled.status.success(), "{}", stderr(&profiled));
    assert_eq!(
        profiled.stdout, alone.stdout,
        "the program's stdout is its own"
    );
    let err = stderr(&profiled);
    assert!(
        err.contains("compute region reached"),
        "the report is on stderr: {err}"
    );
    // And to a file: nothing of the report on either stream.
    let to_file = accprof(
        &dir,
        &[
            "run",
            "--report",
            "--advise",
            "--report-file",
            "rep.txt",
            "-o",
            "f.trace",
            "--",
            "./laplace",
        ],
    );
    assert!(to_file.status.success(), "{}", stderr(&to_file));
    assert_eq!(to_file.stdout, alone.stdout);
    assert!(
        !stderr(&to_file).contains("compute region reached"),
        "{}",
        stderr(&to_file)
    );
    let rep = std::fs::read_to_string(dir.join("rep.txt")).unwrap();
    assert!(
        rep.contains("compute region reached") && rep.contains("laplace.c"),
        "{rep}"
    );
}
