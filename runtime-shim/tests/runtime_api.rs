//! Runtime library routines through the C API, on the emulated device: what the specification
//! (or, where it is silent, GCC's libgomp) says they do, in the cases an audit found wrong.
//! Each C program under tests/c/api_*.c takes the case to run as its argument.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// Compiles tests/c/<name>.c into `dir`.
fn program(dir: &Path, name: &str) -> PathBuf {
    let prog = dir.join(name);
    gcc(&crate_dir().join(format!("tests/c/{name}.c")), &prog, false);
    prog
}

/// Runs `prog args` on the emulated device: (exit code or -signal, stdout, stderr); a hang fails.
fn run(prog: &Path, args: &[&str]) -> (i32, String, String) {
    run_bounded(prog, args).unwrap_or_else(|| panic!("{} {args:?} hangs", prog.display()))
}

/// The lines of `out` that start with `prefix`.
fn lines_with<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The program stopped with the runtime's error of `class`, its message containing `text`
/// (the runtime prints the error and exits with status 1).
fn assert_runtime_error(
    what: &str,
    (code, out, err): &(i32, String, String),
    class: &str,
    text: &str,
) {
    assert_eq!(
        *code, 1,
        "{what}: exits with status 1; stdout {out:?} stderr {err:?}"
    );
    assert!(
        err.contains(&format!("OpenACC runtime error [{class}]")),
        "{what}: error class {class}: {err}"
    );
    assert!(
        err.contains(text),
        "{what}: message contains {text:?}: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{what}: no panic: {err}"
    );
    assert_routine_named_once(what, err);
}

#[test]
fn acc_malloc_of_zero_bytes_is_null_and_allocates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_memory");
    let (code, out, err) = run(&prog, &["malloc_zero"]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(
        out.contains("acc_malloc (0) = NULL\n"),
        "GCC returns NULL: {out}"
    );
    assert!(
        lines_with(&out, "alloc ").is_empty() && lines_with(&out, "free ").is_empty(),
        "no device memory, no event: {out}"
    );
}

#[test]
fn acc_free_reports_the_size_it_frees() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_memory");
    let (code, out, err) = run(&prog, &["free_bytes"]);
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(lines_with(&out, "alloc "), ["alloc 1000"], "{out}");
    assert_eq!(
        lines_with(&out, "free "),
        ["free 1000"],
        "the free event's bytes: {out}"
    );
}

#[test]
fn acc_free_of_memory_that_is_still_mapped_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_memory");
    // acc_map_data'd memory (GCC: "refusing to free device memory space at %p that is still
    // mapped"), and the device copy of acc_copyin'd data.
    for case in ["free_mapped", "free_mapped_inside", "free_present"] {
        let r = run(&prog, &[case]);
        assert_runtime_error(
            case,
            &r,
            "acc_error_invalid_argument",
            "refusing to free device memory",
        );
        assert!(r.2.contains("still mapped"), "{case}: {}", r.2);
        assert!(
            !r.1.contains("acc_free returned"),
            "{case}: stops at acc_free: {}",
            r.1
        );
        assert!(
            lines_with(&r.1, "free ").is_empty(),
            "{case}: nothing freed: {}",
            r.1
        );
    }
    // Unmapped first, it is an ordinary free.
    let (code, out, err) = run(&prog, &["free_unmapped"]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("acc_free returned\ndone\n"), "{out}");
    assert_eq!(lines_with(&out, "free ").len(), 1, "{out}");
}

#[test]
fn acc_memcpy_d2d_copies_between_device_copies() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_memory");
    let (code, out, err) = run(&prog, &["d2d"]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(
        out.contains("host b before update: 2 2\n"),
        "the host copy is untouched: {out}"
    );
    // b[0..100] from a's device copy (1, not the host's 7 at a[5]); b[200..210] from a[5..15].
    assert!(
        out.contains("b[0] 1 b[5] 1 b[99] 1 b[100] 2 b[200] 1 b[209] 1 b[210] 2\n"),
        "{out}"
    );
}

#[test]
fn the_default_async_queue_is_per_thread_and_outlives_a_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_default_async");
    let (code, out, err) = run(&prog, &[]);
    assert_eq!(code, 0, "{out} {err}");
    // Another thread's setting neither shows in nor comes from the main thread's.
    assert!(
        out.contains("other starts with -1\nother set 7\n"),
        "a new thread starts with acc_async_noval: {out}"
    );
    assert!(out.contains("main after the other thread: 3\n"), "{out}");
    assert!(
        out.contains("main after acc_shutdown: 3\nmain after acc_init: 3\n"),
        "survives shutdown and init: {out}"
    );
    assert!(
        out.contains("main set acc_async_sync: -2\n"),
        "acc_async_sync is accepted as the default: {out}"
    );
    assert!(out.ends_with("done\n"), "{out}");
    // acc_async_noval work runs on the current thread's default queue, before and after the
    // shutdown: routines and compute constructs alike.
    let work: Vec<&str> = out.lines().filter(|l| l.contains(" async=")).collect();
    let expected = [
        "other upload async=-1 queue=7",
        "other launch async=-1 queue=7",
        "main upload async=-1 queue=3",
        "main launch async=-1 queue=3",
        "main upload async=-1 queue=3",
        "main launch async=-1 queue=3",
        "main upload async=-1 queue=-2",
        "main launch async=-1 queue=-2",
    ];
    // The acc_copyin uploads are synchronous: async=-2.
    let noval: Vec<&str> = work
        .iter()
        .copied()
        .filter(|l| l.contains("async=-1"))
        .collect();
    assert_eq!(noval, expected, "{out}");
}

/// acc_device_t values (include/openacc.h).
const ACC_DEVICE_CURRENT: i32 = -1;
const ACC_DEVICE_NONE: i32 = 0;
const ACC_DEVICE_DEFAULT: i32 = 1;
const ACC_DEVICE_HOST_NONSHM: i32 = 3;
const ACC_DEVICE_NOT_HOST: i32 = 4;

#[test]
fn acc_shutdown_shuts_down_only_a_device_of_the_type_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_devices");
    // The emulated device runs; types that name it (itself, and the generic types that mean
    // the device in use) shut it down, the others leave it and its data alone.
    for t in [
        ACC_DEVICE_HOST_NONSHM,
        ACC_DEVICE_DEFAULT,
        ACC_DEVICE_NOT_HOST,
        ACC_DEVICE_CURRENT,
        ACC_DEVICE_NONE,
    ] {
        let (code, out, err) = run(&prog, &["shutdown_types", &t.to_string()]);
        assert_eq!(code, 0, "type {t}: {out} {err}");
        for other in ["acc_device_nvidia", "acc_device_host", "acc_device_radeon"] {
            assert!(
                out.contains(&format!("after acc_shutdown ({other}): present 1\n")),
                "type {t}: {other} is not running: {out}"
            );
        }
        assert!(
            out.contains("after acc_shutdown (argv[2]): present 0\ndone\n"),
            "type {t} names the running device: {out}"
        );
    }
    // Shutting down when nothing runs is nothing.
    let (code, out, err) = run(&prog, &["shutdown_uninitialised"]);
    assert_eq!((code, out.as_str()), (0, "done\n"), "{err}");
    // A value that is no device type at all is an error, not a shutdown.
    let r = run(&prog, &["shutdown_unknown_type"]);
    assert_runtime_error(
        "acc_shutdown (42)",
        &r,
        "acc_error_device_unavailable",
        "unknown device type 42",
    );
}

#[test]
fn acc_set_device_num_with_a_negative_number_selects_the_default_device() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_devices");
    let (code, out, err) = run(&prog, &["set_device_num_negative"]);
    assert_eq!(
        code, 0,
        "OpenACC 3.x: a negative number reverts to the default behaviour: {out} {err}"
    );
    // The default number is that of the device in use: it keeps running, with its data.
    assert_eq!(
        out,
        "num 0\nafter acc_set_device_num (-1, acc_device_host_nonshm): present 1\nnum 0\ndone\n",
        "{err}"
    );
}

#[test]
fn acc_init_device_and_acc_shutdown_device_take_a_device_number() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_devices");
    let (code, out, err) = run(&prog, &["init_device"]);
    assert_eq!(code, 0, "{out} {err}");
    // Events 1, 2: device_init start/end; 3, 4: device_shutdown start/end. The emulated
    // device is acc_device_host_nonshm (3), number 0.
    let expected = "event 1 device 3/0\nevent 2 device 3/0\ninitialised: type 3 num 0\n\
                    before acc_shutdown_device: present 1\n\
                    event 3 device 3/0\nevent 4 device 3/0\n\
                    after acc_shutdown_device (0, acc_device_host_nonshm): present 0\n\
                    event 1 device 3/0\nevent 2 device 3/0\nevent 3 device 3/0\nevent 4 device 3/0\n\
                    shut down again\ndone\n";
    assert_eq!(
        out, expected,
        "initialised once, at the call; shut down by its number: {err}"
    );
    for (case, text) in [
        (
            "init_device_bad_num",
            "device number 1 of type acc_device_host_nonshm",
        ),
        (
            "init_device_no_such_type",
            "device number 0 of type acc_device_nvidia",
        ),
        (
            "shutdown_device_bad_num",
            "device number 1 of type acc_device_host_nonshm",
        ),
    ] {
        let r = run(&prog, &[case]);
        assert_runtime_error(case, &r, "acc_error_device_unavailable", text);
    }
}

#[test]
fn cuda_streams_of_the_synchronous_queue_are_refused_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_cuda_stream");
    let (code, out, err) = run(&prog, &[]);
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(
        out,
        "get (acc_async_sync) = NULL\nset (acc_async_sync, s) = 0\nget (acc_async_sync) = NULL\nset (1, s) = 0\ndone\n",
        "GCC: set refuses acc_async_sync with 0; the emulated device has no streams: {err}"
    );
    // An async argument that is none stays the specification's error.
    let r = run(&prog, &["invalid"]);
    assert_runtime_error(
        "acc_set_cuda_stream (-7)",
        &r,
        "acc_error_invalid_async",
        "invalid async argument -7",
    );
}

#[test]
fn acc_on_device_inside_an_emulated_kernel_answers_as_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_on_device");
    let (code, out, err) = run(&prog, &[]);
    assert_eq!(code, 0, "{out} {err}");
    let n = 1 << 16;
    assert_eq!(
        out,
        format!(
            "host calls=0 not_host=0 host=1 type=0\n\
             sync calls=4 not_host={n} host=0 type={n}\n\
             async calls=4 not_host={n} host=0 type={n}\n\
             host again calls=0 not_host=0 host=1 type=0\n"
        ),
        "in a kernel (4 threads), not_host and host_nonshm are true and host false; on the host the reverse: {err}"
    );
}

#[test]
fn data_left_at_shutdown_is_deleted_and_freed_with_events() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_shutdown_events");
    for action in [
        "none", "prop", "wait", "stream", "present", "init", "shutdown",
    ] {
        let (code, out, err) = run(&prog, &[action]);
        assert_eq!(code, 0, "{action}: {out} {err}");
        // Twice: at acc_shutdown and at the program's exit.
        for (from, to) in [
            ("-- acc_shutdown\n", "-- after acc_shutdown\n"),
            ("-- exit\n", ""),
        ] {
            let start = out.find(from).unwrap_or_else(|| panic!("{action}: {out}")) + from.len();
            let end = if to.is_empty() {
                out.len()
            } else {
                out[start..].find(to).unwrap() + start
            };
            let lines: Vec<&str> = out[start..end].lines().collect();
            let what = format!("{action}, {from:?}");
            assert_eq!(
                lines.first(),
                Some(&"device_shutdown_start"),
                "{what}: {out}"
            );
            assert_eq!(lines.last(), Some(&"device_shutdown_end"), "{what}: {out}");
            let mut inner: Vec<&str> = lines[1..lines.len() - 1].to_vec();
            inner.sort_unstable();
            // a and b are the runtime's: delete, then free. c is acc_map_data'd: delete only
            // (the program owns its memory), as acc_unmap_data does.
            let expected = [
                "delete var=- bytes=800 host=a dev=known",
                "delete var=- bytes=800 host=c dev=known",
                "delete var=b[0:100] bytes=800 host=b dev=known",
                "free var=- bytes=800 host=a dev=known",
                "free var=b[0:100] bytes=800 host=b dev=known",
            ];
            assert_eq!(inner, expected, "{what}: {out}");
            for v in ["a", "b"] {
                let d = lines
                    .iter()
                    .position(|l| l.starts_with("delete") && l.contains(&format!("host={v} ")));
                let f = lines
                    .iter()
                    .position(|l| l.starts_with("free") && l.contains(&format!("host={v} ")));
                assert!(d < f, "{what}: {v} deleted before freed: {out}");
            }
        }
        if action == "shutdown" {
            assert!(err.contains("acc_shutdown called by a callback during device initialisation or shutdown is ignored"), "{err}");
        }
    }
}

/// The emulated device's bound on its async queues' worker threads (backend/emulated.rs).
const QUEUE_WORKERS: usize = 16;

#[test]
fn many_async_queue_numbers_do_not_cost_a_thread_each() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_queues");
    let (code, out, err) = run(&prog, &["many", "5000"]);
    assert_eq!(code, 0, "{out} {err}");
    let most: usize = lines_with(&out, "most threads ")[0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        most <= 1 + QUEUE_WORKERS,
        "5000 queues: {most} threads at most, not one per queue: {out}"
    );
    assert!(out.ends_with("done\n"), "{out}");
}

#[test]
fn async_queues_sharing_one_worker_keep_their_order_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_queues");
    let (code, out, err) = run(&prog, &["shared"]);
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(
        out,
        "queue 1 busy: 1, queue 4 idle: 1\n\
         after waiting for queue 3: x[0] = 2, queue 1 idle: 1\n\
         after both: x[0] = 4\ndone\n",
        "{err}"
    );
}

#[test]
fn a_queue_thread_that_cannot_start_is_an_openacc_error() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), "api_queues");
    let r = run(&prog, &["spawn_fails"]);
    assert_runtime_error(
        "no thread can start",
        &r,
        "acc_error_device_failure",
        "cannot start a thread",
    );
}
