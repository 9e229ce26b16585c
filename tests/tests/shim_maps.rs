//! Unmodified GCC programs whose maps use struct members, always_pointer and `acc declare`
//! (runtime-shim/tests/gcc: the best-practices guide's C++ class, function-local declare),
//! recorded by `accprof run --runtime shim` on the emulated device: their updates, declares and
//! transfers in the trace at their `#pragma acc` lines, and a report of the run.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_integration_tests::*;
use accprof_trace::Field;
use std::path::{Path, PathBuf};
use std::process::Command;

fn source(name: &str) -> PathBuf {
    workspace_root().join("runtime-shim/tests/gcc").join(name)
}

fn build(dir: &Path, name: &str) -> PathBuf {
    let src = source(name);
    let compiler = if name.ends_with(".cpp") { "g++" } else { "gcc" };
    let exe = dir.join(name.replace('.', "_"));
    let o = Command::new(compiler)
        .args(["-g", "-O2", "-fopenacc", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("gcc runs");
    assert!(o.status.success(), "{compiler}: {}", stderr(&o));
    exe
}

/// `accprof run --runtime shim` of `exe`: its stdout, and the trace.
fn record(dir: &Path, exe: &Path) -> (String, accprof_trace::Trace) {
    let trace = dir.join("run.trace");
    let out = Command::new(accprof_cli())
        .args(["run", "--runtime", "shim", "-q", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(exe)
        .env("ACC_DEVICE_TYPE", "emulated")
        .env("ACCSHIM_QUIET", "1")
        .env_remove("ACCPROF_SHIM_LIB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        load(&trace),
    )
}

#[test]
fn a_cpp_class_updating_its_member_array_is_recorded_at_its_lines() {
    let dir = scratch("shim-maps-class");
    let exe = build(&dir, "class_data.cpp");
    let (stdout, t) = record(&dir, &exe);
    assert_eq!(
        stdout,
        "a 249750.0 b 749250.0\na after update device 2000.0\n"
    );
    let src = source("class_data.cpp");
    let (self_line, device_line) = (
        pragma_line(&src, "update self"),
        pragma_line(&src, "update device"),
    );
    // update_host is called three times, update_device once; each moves the array, inside
    // the update (the always_pointer after the update device re-points the member on the
    // device: 8 bytes).
    let updates = |line: i64| -> Vec<&accprof_trace::Event> {
        t.events
            .iter()
            .filter(|e| e.kind == acc_event_t::UPDATE_START && e.line_no() == Some(line))
            .collect()
    };
    let inside = |u: &[&accprof_trace::Event], kind: acc_event_t, bytes: u64| {
        t.events
            .iter()
            .filter(|e| e.kind == kind && e.bytes() == Some(bytes))
            .filter(|e| {
                u.iter()
                    .any(|u| e.start_ns >= u.start_ns && e.start_ns <= u.end_ns)
            })
            .count()
    };
    let (updates_self, updates_device) = (updates(self_line), updates(device_line));
    assert_eq!((updates_self.len(), updates_device.len()), (3, 1));
    let down = acc_event_t::ENQUEUE_DOWNLOAD_START;
    let up = acc_event_t::ENQUEUE_UPLOAD_START;
    assert_eq!(inside(&updates_self, down, 8000), 3);
    assert_eq!(inside(&updates_self, up, 8), 0);
    assert_eq!(inside(&updates_device, up, 8000), 1);
    assert_eq!(inside(&updates_device, up, 8), 1);
    let at = |kind: acc_event_t, line: i64| {
        t.events
            .iter()
            .filter(|e| e.kind == kind && e.line_no() == Some(line))
            .count()
    };
    // Both objects' enter data (constructor and copy constructor) and exit data (destructor).
    let enter = pragma_lines(&src)
        .into_iter()
        .filter(|(_, text)| text.contains("enter data"))
        .map(|(l, _)| at(acc_event_t::ENTER_DATA_START, l))
        .sum::<usize>();
    assert_eq!(enter, 2);
    assert_eq!(
        at(acc_event_t::EXIT_DATA_START, pragma_line(&src, "exit data")),
        2
    );
    let report = Command::new(accprof_cli())
        .arg("report")
        .arg(dir.join("run.trace"))
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(
        String::from_utf8_lossy(&report.stdout).contains("update directive"),
        "{}",
        String::from_utf8_lossy(&report.stdout)
    );
}

#[test]
fn a_function_local_declare_is_recorded_as_a_declare_at_its_line() {
    let dir = scratch("shim-maps-declare");
    let exe = build(&dir, "declare_local.c");
    let (stdout, t) = record(&dir, &exe);
    assert_eq!(stdout, "smoothed: 244002.441406250\n");
    let line = pragma_line(&source("declare_local.c"), "declare copyin");
    let declares: Vec<_> = t
        .events
        .iter()
        .filter(|e| {
            e.kind == acc_event_t::ENTER_DATA_START
                && e.get_i64(Field::ParentConstruct) == Some(acc_construct_t::DECLARE.0.into())
        })
        .collect();
    assert_eq!(declares.len(), 3, "one per call");
    assert!(
        declares.iter().all(|e| e.line_no() == Some(line)),
        "at the declare's line {line}"
    );
    // Each call's weights (24 bytes) go up at its declare.
    let weights = t
        .events
        .iter()
        .filter(|e| e.kind == acc_event_t::ENQUEUE_UPLOAD_START && e.bytes() == Some(24))
        .filter(|e| {
            declares
                .iter()
                .any(|d| e.start_ns >= d.start_ns && e.start_ns <= d.end_ns)
        })
        .count();
    assert_eq!(weights, 3);
}
