//! The example programs as a user meets them: `--help` explains the options, a mistyped option
//! or a bad value is refused with one line (not a run with the defaults), and `example | head`
//! ends quietly.

mod common;
use common::*;
use std::process::{Command, Stdio};

const EXAMPLES: [&str; 10] = [
    "laplace",
    "saxpy",
    "async_pipeline",
    "bench_gpu",
    "mistake_alloc_churn",
    "mistake_copies_in_loop",
    "mistake_no_present_across_calls",
    "mistake_slice_copies",
    "mistake_temp_roundtrip",
    "mistake_update_in_loop",
];

fn run(name: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(example(name))
        .args(args)
        .env("ACCSHIM_QUIET", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn help_lists_every_option_the_program_reads() {
    for name in EXAMPLES {
        let (code, out, err) = run(name, &["--help"]);
        assert_eq!(code, 0, "{name} --help: {err}");
        assert!(out.starts_with(&format!("{name}: ")), "{name}: {out}");
        assert!(out.contains("Options:"), "{name}: {out}");
        // Every option the source reads (common::arg("x", ...)) is in the help, so usage()
        // accepts it.
        let src = std::fs::read_to_string(crate_dir().join("examples").join(format!("{name}.rs")))
            .unwrap();
        for opt in src
            .split("common::arg(\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
        {
            assert!(
                out.contains(&format!("--{opt} ")),
                "{name}: --{opt} missing from --help: {out}"
            );
        }
        assert!(err.is_empty(), "{name}: {err}");
    }
}

#[test]
fn unknown_options_and_bad_values_are_refused_with_one_line() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--nn", "5"],
            "unknown argument --nn (--help lists the options)",
        ),
        (&["5"], "unknown argument 5 (--help lists the options)"),
        (&["--n=abc"], "bad value for --n: abc"),
        (&["--n", "abc"], "bad value for --n: abc"),
        (&["--iters"], "--iters needs a value"),
    ];
    for (args, line) in cases {
        let (code, out, err) = run("laplace", args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert_eq!(err.trim_end(), line, "{args:?}");
        assert!(out.is_empty(), "{args:?}: nothing runs: {out}");
    }
    // Both spellings of a value work.
    for args in [
        &["--n=32", "--iters", "2"][..],
        &["--n", "32", "--iters=2"][..],
    ] {
        let (code, out, err) = run("laplace", args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("32 x 32 mesh"), "{args:?}: {out}");
    }
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    // laplace prints a line per 100 iterations; the reader takes one line and goes away.
    let mut child = Command::new(example("laplace"))
        .args(["--n", "64", "--iters", "100000", "--tol", "0"])
        .env("ACCSHIM_QUIET", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "ends by SIGPIPE like a C program: {:?} {err}",
        out.status
    );
}
