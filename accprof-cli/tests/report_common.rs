//! Helpers shared by the report, advise and diff tests: synthetic traces, the accprof binary,
//! and real traces recorded from the runtime shim's examples.
#![allow(dead_code)]

use accprof_testkit::laplace::{self as synth, Shape, SynthConfig};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn accprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_accprof"))
        .args(args)
        .output()
        .expect("run accprof")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A synthetic Laplace trace in `dir`.
pub fn synth_trace(dir: &Path, name: &str, cfg: SynthConfig) -> PathBuf {
    let p = dir.join(name);
    synth::write_trace(&cfg, &p).unwrap();
    p
}

pub fn naive(iters: u64) -> SynthConfig {
    SynthConfig::new(Shape::LaplaceNaive)
        .iterations(iters)
        .grid(512)
}

pub fn data(iters: u64) -> SynthConfig {
    SynthConfig::new(Shape::LaplaceData)
        .iterations(iters)
        .grid(512)
}

/// Replaces the temporary directory in output so snapshots are stable.
pub fn scrub(s: &str, dir: &Path) -> String {
    s.replace(&dir.display().to_string(), "[DIR]")
}

/// Where built artifacts are: $ACCPROF_BUILD_DIR, else <workspace>/target/release.
pub fn build_dir() -> PathBuf {
    match std::env::var_os("ACCPROF_BUILD_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("target/release"),
    }
}

fn artifact(rel: &str) -> PathBuf {
    let p = build_dir().join(rel);
    assert!(
        p.exists(),
        "{} is missing: build it with `cargo build --release --workspace --bins --examples` (or set ACCPROF_BUILD_DIR)",
        p.display()
    );
    p
}

/// Runs a runtime-shim example under libaccprof and returns the trace it wrote.
pub fn record_example(dir: &Path, example: &str, args: &[&str]) -> PathBuf {
    let lib = artifact("libaccprof.so");
    let exe = artifact(&format!("examples/{example}"));
    let out = dir.join(format!("{example}.trace"));
    let o = Command::new(&exe)
        .args(args)
        .env("LD_PRELOAD", &lib)
        .env("ACCPROF_OUT", &out)
        .env_remove("ACCPROF_REPORT")
        .output()
        .expect("run the example");
    assert!(
        o.status.success(),
        "{example} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.exists(),
        "{example} wrote no trace at {}",
        out.display()
    );
    out
}
