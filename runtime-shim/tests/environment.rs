//! The runtime's environment variables as a user sets them: byte sizes with units, switches
//! with a value, and a value that cannot be used said once rather than silently replaced.

mod common;
use common::*;
use std::process::Command;

/// Runs a small saxpy with `env` (nothing else of the shim's set): exit code and stderr.
fn saxpy(env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(example("saxpy"));
    cmd.args(["--n", "1000", "--reps", "1"])
        .env("ACCSHIM_NO_CUDA", "1");
    for var in [
        "ACCSHIM_QUIET",
        "ACC_DEVICE_TYPE",
        "ACC_DEVICE_NUM",
        "ACCSHIM_EMU_MEMORY",
        "ACCSHIM_EMU_THREADS",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn init_line(err: &str) -> &str {
    err.lines()
        .find(|l| l.starts_with("accshim: using "))
        .unwrap_or_else(|| panic!("no init line: {err}"))
}

#[test]
fn emulated_memory_takes_units_and_says_its_capacity() {
    for (value, shown) in [
        ("1M", "1 MiB capacity"),
        ("64 MiB", "64 MiB capacity"),
        ("2G", "2 GiB capacity"),
        ("100000", "97 KiB capacity"),
    ] {
        let (code, err) = saxpy(&[("ACCSHIM_EMU_MEMORY", value)]);
        assert_eq!(code, 0, "{value}: {err}");
        assert!(init_line(&err).contains(shown), "{value}: {err}");
    }
    // saxpy's two 8000-byte arrays do not fit in 10000 bytes: the capacity is applied.
    let (code, err) = saxpy(&[("ACCSHIM_EMU_MEMORY", "10000")]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("acc_error_out_of_memory"), "{err}");
}

#[test]
fn an_unusable_value_is_said_once_and_the_default_used() {
    let (code, err) = saxpy(&[
        ("ACCSHIM_EMU_MEMORY", "lots"),
        ("ACCSHIM_EMU_THREADS", "-2"),
        ("ACC_DEVICE_TYPE", "bogus"),
    ]);
    assert_eq!(code, 0, "{err}");
    let said = |var: &str| {
        err.lines()
            .filter(|l| l.starts_with(&format!("accshim: {var}=")))
            .count()
    };
    assert_eq!(said("ACCSHIM_EMU_MEMORY"), 1, "{err}");
    assert!(err.contains("accshim: ACCSHIM_EMU_MEMORY=lots is not a size (bytes, or a number with K, M, G or T); ignored"), "{err}");
    assert_eq!(said("ACCSHIM_EMU_THREADS"), 1, "{err}");
    assert_eq!(
        said("ACC_DEVICE_TYPE"),
        1,
        "looked up twice, said once: {err}"
    );
    assert!(init_line(&err).contains("emulated device"), "{err}");
}

#[test]
fn quiet_is_a_switch() {
    for (value, quiet) in [
        ("1", true),
        ("yes", true),
        ("0", false),
        ("", false),
        ("off", false),
    ] {
        let (code, err) = saxpy(&[("ACCSHIM_QUIET", value)]);
        assert_eq!(code, 0, "{value}: {err}");
        assert_eq!(
            !err.contains("accshim: using "),
            quiet,
            "ACCSHIM_QUIET={value:?}: {err}"
        );
    }
}
