//! Every way a user loads the tool records the same events, exactly once, with the pragma lines.

use accprof_integration_tests::*;
use accprof_trace::EventFlags;

/// What GCC's host fallback dispatches for tests/programs/simple.c, in order, with the line of
/// the pragma each event belongs to (`None`: checked separately).
fn expected_simple(src: &std::path::Path) -> Vec<(String, Option<i64>)> {
    let data = pragma_line(src, "acc data");
    let lines = pragma_lines(src);
    let parallel: Vec<i64> = lines
        .iter()
        .filter(|(_, t)| t.contains("parallel loop"))
        .map(|(l, _)| *l)
        .collect();
    let update = pragma_line(src, "update self");
    vec![
        ("acc_ev_device_init_start".into(), Some(data)),
        ("acc_ev_enter_data_start".into(), Some(data)),
        ("acc_ev_compute_construct_start".into(), Some(parallel[0])),
        ("acc_ev_update_start".into(), Some(update)),
        ("acc_ev_compute_construct_start".into(), Some(parallel[1])),
        ("acc_ev_exit_data_start".into(), None),
    ]
}

#[test]
fn preload_proflib_and_both_record_the_same_events_once() {
    let dir = scratch("loading");
    let exe = compile_c("simple.c", &dir, &["-g"]);
    let src = program_source("simple.c");
    let expected = expected_simple(&src);
    for load in ALL_LOADS {
        let trace = dir.join(format!("{load:?}.trace"));
        let out = run_profiled(&exe, &["100"], load, &trace, &[]);
        assert!(out.status.success(), "{load:?}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "199",
            "{load:?}: the program's own output"
        );
        let t = load_trace(&trace);
        let mut got = names_and_lines(&t);
        // The exit data line is wherever GCC's line table puts the region's end call: it must
        // be inside the data region, after the last construct.
        let exit_line = got
            .last()
            .and_then(|(_, l)| *l)
            .expect("exit data has a line");
        assert!(
            exit_line >= expected[4].1.unwrap(),
            "{load:?}: exit data at line {exit_line}"
        );
        got.last_mut().unwrap().1 = None;
        assert_eq!(got, expected, "{load:?}");
        for e in &t.events {
            assert!(
                e.flags().contains(EventFlags::ATTRIBUTED_LOCATION),
                "{load:?}: {e:?}"
            );
            assert!(e.end_ns >= e.start_ns);
            assert_eq!(
                str_field(&t, e, accprof_trace::Field::SrcFile),
                Some(src.to_str().unwrap())
            );
            assert_eq!(
                str_field(&t, e, accprof_trace::Field::FuncName),
                Some("main")
            );
        }
        // Recorded events are nested properly: enter data ends before the first compute starts.
        assert!(t.events[1].end_ns <= t.events[2].start_ns);
        let footer = t.footer.as_ref().expect("a clean exit writes the footer");
        assert_eq!(footer.events_recorded, 6);
        assert_eq!(footer.events_dropped, 0);
        assert!(
            stderr(&out).contains("6 events recorded to"),
            "{load:?}: {}",
            stderr(&out)
        );
    }
}

fn load_trace(p: &std::path::Path) -> accprof_trace::Trace {
    load(p)
}

#[test]
fn a_stripped_program_gets_function_and_offset() {
    let dir = scratch("stripped");
    let exe = compile_c("simple.c", &dir, &["-s"]);
    let trace = dir.join("t.trace");
    let out = run_profiled(&exe, &[], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = load(&trace);
    assert_eq!(t.events.len(), 6);
    for e in &t.events {
        // No DWARF and no symbol table: the module and offset, and no line, never a made-up one.
        assert_eq!(e.line_no(), None, "{e:?}");
        assert_eq!(
            str_field(&t, e, accprof_trace::Field::SrcFile),
            Some(exe.to_str().unwrap())
        );
        let f = str_field(&t, e, accprof_trace::Field::FuncName).unwrap();
        assert!(f.starts_with("simple+0x"), "{f}");
    }
}

#[test]
fn a_program_built_without_g_but_with_symbols_gets_function_plus_offset() {
    let dir = scratch("nodebug");
    let exe = compile_c("simple.c", &dir, &[]);
    let trace = dir.join("t.trace");
    let out = run_profiled(&exe, &[], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = load(&trace);
    let f = str_field(&t, &t.events[2], accprof_trace::Field::FuncName)
        .unwrap()
        .to_string();
    assert!(f.starts_with("main+0x"), "{f}");
}

#[test]
fn a_program_without_openacc_runs_unharmed_and_leaves_no_trace() {
    let dir = scratch("no-openacc");
    let exe = dir.join("plain");
    let out = std::process::Command::new("gcc")
        .arg("-o")
        .arg(&exe)
        .arg(program_source("no_openacc.c"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let trace = dir.join("t.trace");
    for load in ALL_LOADS {
        let out = run_profiled(&exe, &[], load, &trace, &[]);
        assert_eq!(out.status.code(), Some(3), "{load:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "plain\n");
        assert_eq!(stderr(&out), "", "{load:?}");
        assert!(!trace.exists(), "{load:?}");
    }
}

#[test]
fn default_output_name_quiet_and_directory_output() {
    let dir = scratch("naming");
    let exe = compile_c("simple.c", &dir, &[]);
    // Default: accprof.<exe>.<pid>.trace in the working directory.
    let out = std::process::Command::new(&exe)
        .current_dir(&dir)
        .env("LD_PRELOAD", libaccprof())
        .env_remove("ACCPROF_OUT")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = stderr(&out);
    let named: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("accprof.simple.") && n.ends_with(".trace"))
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(err.contains(&named[0]), "{err}");
    // A directory: the default name inside it, created when it ends with '/'.
    let sub = dir.join("traces/");
    let out = run_profiled(&exe, &[], Load::Preload, &sub, &[("ACCPROF_QUIET", "1")]);
    assert!(out.status.success());
    assert_eq!(stderr(&out), "", "ACCPROF_QUIET=1 prints nothing");
    assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 1);
    // %p expands to the pid; MPI ranks get their own files.
    let pattern = dir.join("t.%p.trace");
    let out = run_profiled(&exe, &[], Load::Preload, &pattern, &[]);
    assert!(out.status.success());
    assert!(stderr(&out).contains(".trace"));
    assert!(!pattern.exists());
    let ranked = dir.join("mpi.trace");
    for rank in ["0", "1"] {
        let out = run_profiled(
            &exe,
            &[],
            Load::Preload,
            &ranked,
            &[("OMPI_COMM_WORLD_RANK", rank)],
        );
        assert!(out.status.success());
        let t = load(&dir.join(format!("mpi.rank{rank}.trace")));
        assert_eq!(t.header.mpi_rank, Some(rank.parse().unwrap()));
    }
}

#[test]
fn an_unwritable_trace_is_one_line_and_the_program_carries_on() {
    let dir = scratch("unwritable");
    let exe = compile_c("simple.c", &dir, &[]);
    let trace = std::path::Path::new("/proc/accprof-cannot-write-here/t.trace");
    let out = run_profiled(&exe, &["10"], Load::Preload, trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
    let err = stderr(&out);
    assert!(
        err.contains("cannot write the trace to /proc/accprof-cannot-write-here/t.trace"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
