//! Shared test tooling: synthetic traces, a Chrome trace validator, and running the binary.

#![allow(dead_code)]

pub mod chrome_validator;
#[allow(unused_imports)]
pub use accprof_testkit::builder as synth;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `accprof` binary under test.
pub fn accprof() -> Command {
    Command::new(env!("CARGO_BIN_EXE_accprof"))
}

/// Runs `accprof` with `args` and returns its output.
pub fn run(args: &[&str]) -> Output {
    accprof().args(args).output().expect("accprof runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Where built artifacts are: `$ACCPROF_BUILD_DIR`, else `<workspace>/target/release`.
pub fn build_dir() -> PathBuf {
    std::env::var_os("ACCPROF_BUILD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/release"))
}

/// Asserts that a failed run printed exactly one line and exited non-zero.
pub fn assert_one_line_failure(o: &Output, mentions: &str) {
    let err = stderr(o);
    assert!(
        !o.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert_eq!(
        err.lines().count(),
        1,
        "expected one line on stderr, got: {err}"
    );
    assert!(err.starts_with("accprof: "), "{err}");
    assert!(
        err.contains(mentions),
        "stderr should mention {mentions:?}: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
}

/// A synthetic Laplace trace in `dir` with what the exporters must lay out with care: two
/// launches overlapping on async queue 3 (two lanes), and device records on two streams (one
/// kernel stream over two lanes) with flows from the constructs and launches that issued them.
pub fn laplace_with_lanes_and_streams(dir: &Path) -> PathBuf {
    use synth::{laplace_like, TraceBuilder};
    let mut s = TraceBuilder::new("/home/user/laplace", 4242, None);
    laplace_like(&mut s, 4);
    s.launch(1_000, 5_000, 0, "k1", (1, 1, 1), Some(3));
    s.launch(3_000, 8_000, 0, "k2", (1, 1, 1), Some(3));
    s.device_kernel(
        102_500,
        111_000,
        Some(0x7f10),
        Some((0, 102_100)),
        "main_42_gpu",
    );
    s.device_kernel(
        110_000,
        112_000,
        Some(0x7f10),
        Some((0, 102_200)),
        "main_42_gpu",
    );
    s.device_copy(
        62_500,
        73_000,
        Some(0x7f20),
        Some((0, 62_100)),
        accprof_trace::device::COPY_HTOD,
        8 << 20,
        Some("A"),
    );
    let trace = dir.join("laplace.trace");
    s.write(&trace);
    trace
}
