//! The specification's error cases, through the C API: each prints the runtime error with its
//! class and ends the program with status 1 (exit, as libgomp does: no SIGABRT for a user's
//! error), rather than crashing or continuing.

mod common;
use common::*;
use std::process::Command;

fn run_case(
    prog: &std::path::Path,
    case: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(prog);
    cmd.arg(case)
        .env_remove("ACC_DEVICE_TYPE")
        .env_remove("ACC_PROFLIB");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    let code = out.status.code().or(out.status.signal().map(|s| -s));
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn error_cases_report_and_exit_with_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("errors");
    gcc(&crate_dir().join("tests/c/errors.c"), &prog, false);

    let (code, out, _) = run_case(&prog, "ok", &[]);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "fine\n"),
        "the harness itself works"
    );

    /// (program argument, environment, error class, message).
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 34] = [
        (
            "not_present",
            &[],
            "acc_error_not_present",
            "is not present on the device",
        ),
        (
            "partly_present",
            &[],
            "acc_error_partly_present",
            "partly present",
        ),
        (
            "invalid_async",
            &[],
            "acc_error_invalid_async",
            "invalid async argument -7",
        ),
        (
            "invalid_wait",
            &[],
            "acc_error_invalid_async",
            "invalid async argument -9",
        ),
        (
            "invalid_default_async",
            &[],
            "acc_error_invalid_async",
            "invalid async argument -3",
        ),
        (
            "device_unavailable",
            &[],
            "acc_error_device_unavailable",
            "acc_device_nvidia",
        ),
        (
            "out_of_memory",
            &[("ACCSHIM_EMU_MEMORY", "1000")],
            "acc_error_out_of_memory",
            "out of device memory allocating 8000 bytes",
        ),
        (
            "unmap_unmapped",
            &[],
            "acc_error_invalid_argument",
            "was not mapped by acc_map_data",
        ),
        (
            "null_copyin",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_copyin: data_arg is a null pointer and bytes is 8",
        ),
        (
            "null_copyout",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_copyout: data_arg is a null pointer",
        ),
        (
            "null_update",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_update_self: data_arg is a null pointer and bytes is 800",
        ),
        (
            "garbage_copyin",
            &[],
            "acc_error_invalid_argument",
            "acc_copyin: data_arg [0x1000,+800] is not host memory the program can read",
        ),
        (
            "garbage_update_self",
            &[],
            "acc_error_invalid_argument",
            "data_arg [0x400000000000,+800] is not host memory the program can write",
        ),
        (
            "garbage_memcpy",
            &[],
            "acc_error_invalid_argument",
            "data_host_src [0x1000,+64] is not host memory the program can read",
        ),
        (
            "copyin_wraps",
            &[],
            "acc_error_invalid_argument",
            ",+18446744073709551615] runs past the end of the address space",
        ),
        (
            "map_wraps",
            &[],
            "acc_error_invalid_argument",
            "runs past the end of the address space",
        ),
        (
            "memcpy_past_allocation",
            &[],
            "acc_error_invalid_argument",
            ",+128] runs past the end of its device allocation",
        ),
        (
            "memcpy_wraps",
            &[],
            "acc_error_invalid_argument",
            "runs past the end of its device allocation",
        ),
        (
            "memcpy_to_null_host",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_to_device: data_host_src is a null pointer and bytes is 64",
        ),
        (
            "memcpy_to_null_device",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_to_device: data_dev_dest is a null pointer and bytes is 64",
        ),
        (
            "memcpy_from_null_host",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_from_device: data_host_dest is a null pointer",
        ),
        (
            "memcpy_from_null_device_async",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_from_device_async: data_dev_src is a null pointer",
        ),
        (
            "memcpy_device_null",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_device: data_dev_src is a null pointer and bytes is 8",
        ),
        (
            "d2d_null",
            &[],
            "acc_error_invalid_null_pointer",
            "acc_memcpy_d2d: data_arg_dest is a null pointer and bytes is 8",
        ),
        (
            "memcpy_not_device",
            &[],
            "acc_error_invalid_argument",
            "is not device memory",
        ),
        (
            "d2d_not_present",
            &[],
            "acc_error_not_present",
            ",+8] (source) is not present on the device",
        ),
        (
            "d2d_other_device",
            &[],
            "acc_error_device_unavailable",
            "device number 1: this runtime copies within the current device (0) only",
        ),
        (
            "region_ended_twice",
            &[],
            "acc_error_invalid_argument",
            "is no open data region (ended twice",
        ),
        (
            "region_not_begun",
            &[],
            "acc_error_invalid_argument",
            "is no open data region",
        ),
        (
            "compute_null",
            &[],
            "acc_error_invalid_argument",
            "NULL construct descriptor",
        ),
        (
            "clauses_null",
            &[],
            "acc_error_invalid_argument",
            "2 clauses at a NULL address",
        ),
        (
            "reduction_unknown",
            &[],
            "acc_error_invalid_argument",
            "unknown reduction operator 9",
        ),
        (
            "reduction_null",
            &[],
            "acc_error_invalid_argument",
            "reduction variable at a NULL address",
        ),
        (
            "argument_unknown",
            &[],
            "acc_error_invalid_argument",
            "unknown kernel argument kind 9",
        ),
    ];
    let gpus = accshim::ffi::api::acc_get_num_devices(accprof_abi::acc_device_t::NVIDIA);
    for (case, env, class, text) in cases {
        if case == "device_unavailable" && gpus > 0 {
            continue; // a GPU is there: selecting it is no error
        }
        let (code, out, err) = run_case(&prog, case, env);
        assert_eq!(
            code,
            Some(1),
            "{case}: exits with status 1; stdout {out:?} stderr {err:?}"
        );
        assert!(!out.contains("no error reported"), "{case}");
        assert!(err.contains("OpenACC runtime error"), "{case}: {err}");
        assert!(err.contains(class), "{case}: {err}");
        assert!(err.contains(text), "{case}: {err}");
        assert_routine_named_once(case, &err);
    }
}
