//! Present-table and attachment semantics (OpenACC 3.x sections 2.6.7-2.6.8, and GCC's runtime
//! where the specification leaves a choice) through the C API and the construct API: one case
//! of tests/c/data_semantics.c per run, each on the emulated device with a deadline.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn program(dir: &Path) -> PathBuf {
    let prog = dir.join("data_semantics");
    gcc(&crate_dir().join("tests/c/data_semantics.c"), &prog, false);
    prog
}

fn passes(prog: &Path, case: &str) {
    let (code, out, err) = run_bounded(prog, &[case]).unwrap_or_else(|| panic!("{case}: hangs"));
    assert_eq!((code, out.as_str()), (0, "ok\n"), "{case}: stderr {err}");
}

#[test]
fn a_thread_mapping_data_that_another_is_uploading_waits_for_the_upload() {
    let dir = tempfile::tempdir().unwrap();
    passes(&program(dir.path()), "concurrent_copyin");
}

#[test]
fn copyout_copies_back_the_section_it_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path());
    for case in ["copyout_section", "region_copyout_section"] {
        passes(&prog, case);
    }
}

#[test]
fn attachments_follow_the_specification() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path());
    for case in [
        "detach_before_copyout",
        "attach_after_copyin",
        "reattach_new_target",
        "attach_null",
        "target_deleted",
        "copyout_attached",
    ] {
        passes(&prog, case);
    }
}

#[test]
fn sections_that_map_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path());
    for case in ["zero_length", "no_create_argument"] {
        passes(&prog, case);
    }
}

#[test]
fn mapping_one_device_block_twice_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_bounded(&program(dir.path()), &["map_twice"]).expect("no hang");
    assert_eq!(
        code, 1,
        "exits with status 1: stdout {out:?} stderr {err:?}"
    );
    assert!(
        err.contains("acc_error_invalid_argument") && err.contains("is already mapped"),
        "{err}"
    );
}
