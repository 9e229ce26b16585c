//! End to end: a tool written in C against the system's acc_prof.h, loaded through ACC_PROFLIB
//! (and LD_PRELOAD), receives the complete event stream from real programs: the Rust examples
//! and the C Laplace example linked against libaccshim.so.

mod common;
use common::*;

fn check_common_fields(evs: &[Event]) {
    assert!(!evs.is_empty());
    for e in evs {
        assert_eq!(e["version"], "201711", "{e:?}");
        assert_eq!(e["vb"], "72", "{e:?}");
        assert_eq!(e["avb"], "40", "{e:?}");
        assert_eq!(
            e["devtype"], "3",
            "emulated device reports acc_device_host_nonshm: {e:?}"
        );
        assert_eq!(e["apidevtype"], e["devtype"]);
        assert!(
            e["thread"].parse::<i32>().unwrap() >= 0,
            "thread_id filled: {e:?}"
        );
        let evb = e["evb"].as_str();
        match e["ev"].as_str() {
            "enqueue_launch_start" | "enqueue_launch_end" => assert_eq!(evb, "56"),
            "create"
            | "delete"
            | "alloc"
            | "free"
            | "enqueue_upload_start"
            | "enqueue_upload_end"
            | "enqueue_download_start"
            | "enqueue_download_end" => assert_eq!(evb, "56"),
            _ => assert_eq!(evb, "24"),
        }
        if e["ev"].ends_with("_end") {
            assert!(
                e.get("tool_info").is_some_and(|t| t == "ok"),
                "tool_info handed from start to end: {e:?}"
            );
        }
        if e["ev"].ends_with("_start") {
            assert!(
                e.get("tool_info").is_none(),
                "start events get tool_info NULL: {e:?}"
            );
        }
    }
}

/// Start/end events nest properly (a stack), per thread.
fn check_nesting(evs: &[Event]) {
    let mut stack: Vec<&str> = Vec::new();
    for e in evs {
        let n = e["ev"].as_str();
        if let Some(base) = n.strip_suffix("_start") {
            stack.push(base);
        } else if let Some(base) = n.strip_suffix("_end") {
            assert_eq!(stack.pop(), Some(base), "unbalanced at {e:?}");
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn laplace_data_region_stream() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let (evs, out) = run_with_logger(
        dir.path(),
        &logger,
        &example("laplace"),
        &["--version", "data", "--n", "32", "--iters", "5"],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Jacobi relaxation Calculation: 32 x 32 mesh"));
    check_common_fields(&evs);
    check_nesting(&evs);
    let n = names(&evs);
    assert_eq!(&n[..2], &["device_init_start", "device_init_end"]);
    assert_eq!(
        &n[n.len() - 3..],
        &[
            "device_shutdown_start",
            "device_shutdown_end",
            "runtime_shutdown"
        ]
    );
    // The example calls acc_init before its timer (as the seed does): parent runtime_api (15).
    assert_eq!(evs[0]["construct"], "15");
    assert_eq!(evs[0]["implicit"], "0");
    // Data region entry: alloc/create/upload for A, alloc/create for Anew, no upload.
    let entry: Vec<&str> =
        n[2..n.iter().position(|e| *e == "enter_data_end").unwrap() + 1].to_vec();
    assert_eq!(
        entry,
        [
            "enter_data_start",
            "alloc",
            "create",
            "enqueue_upload_start",
            "enqueue_upload_end",
            "alloc",
            "create",
            "enter_data_end"
        ]
    );
    let up = evs
        .iter()
        .find(|e| e["ev"] == "enqueue_upload_start")
        .unwrap();
    assert_eq!(up["var"], "A[0:n*m]");
    assert_eq!(up["bytes"], (32 * 32 * 8).to_string());
    assert_ne!(up["host"], "(nil)");
    assert_ne!(up["dev"], "(nil)");
    assert_ne!(up["host"], up["dev"], "emulated device memory is separate");
    // 5 iterations, one kernels construct each, no array transfers inside; three launches
    // each: the two loops, then the runtime's store of the reduction result.
    assert_eq!(count(&evs, "compute_construct_start"), 5);
    assert_eq!(count(&evs, "enqueue_launch_start"), 15);
    assert_eq!(count(&evs, "enqueue_upload_start"), 1);
    // Downloads: the error reduction (5) and A at the end (1).
    assert_eq!(count(&evs, "enqueue_download_start"), 6);
    let cc: Vec<&Event> = evs
        .iter()
        .filter(|e| e["ev"] == "compute_construct_start")
        .collect();
    for c in &cc {
        assert_eq!(c["construct"], "1", "kernels construct");
        assert_eq!(c["implicit"], "0");
        assert!(c["file"].ends_with("examples/laplace.rs"), "{c:?}");
        assert_eq!(c["func"], "main");
        let (l, e) = (
            c["line"].parse::<i32>().unwrap(),
            c["end"].parse::<i32>().unwrap(),
        );
        assert!(l > 0 && e > l, "construct line range {l}..{e}");
    }
    let launches: Vec<&Event> = evs
        .iter()
        .filter(|e| e["ev"] == "enqueue_launch_start")
        .collect();
    assert_eq!(launches[0]["kernel"], "laplace_stencil");
    assert_eq!(launches[1]["kernel"], "laplace_copy");
    // The emulated device reports the store of the error reduction as a launch, as the CUDA
    // backend does (a one-thread kernel on the GPU), between the loops and the error's copy back.
    assert_eq!(launches[2]["kernel"], "accshim_store_reduction");
    assert_eq!(
        (
            launches[2]["gangs"].as_str(),
            launches[2]["workers"].as_str(),
            launches[2]["vector"].as_str()
        ),
        ("1", "1", "1")
    );
    let store_at = evs
        .iter()
        .position(|e| e["ev"] == "enqueue_launch_start" && e["kernel"] == "accshim_store_reduction")
        .unwrap();
    assert_eq!(
        evs[store_at + 2]["ev"],
        "enqueue_download_start",
        "the result then comes back: {:?}",
        evs[store_at + 2]
    );
    assert_eq!(evs[store_at + 2]["var"], "error");
    assert_eq!(evs[store_at + 2]["bytes"], "8");
    // Source and destination of the result's copy back: the device cell and the variable.
    assert_ne!(
        evs[store_at + 2]["dev"],
        "(nil)",
        "the reduction's device cell: {:?}",
        evs[store_at + 2]
    );
    assert_ne!(evs[store_at + 2]["host"], "(nil)");
    assert_ne!(evs[store_at + 2]["dev"], evs[store_at + 2]["host"]);
    for l in launches
        .iter()
        .filter(|l| l["kernel"] != "accshim_store_reduction")
    {
        assert_eq!(l["implicit"], "1");
        assert!(l["gangs"].parse::<usize>().unwrap() >= 1);
        assert_eq!(l["workers"], "1");
        assert_eq!(
            l["vector"], "256",
            "the example's vector_length(256) reaches the event"
        );
    }
    // Implicit data region and wait inside every compute construct.
    let ed: Vec<&Event> = evs
        .iter()
        .filter(|e| e["ev"] == "enter_data_start" && e["construct"] == "1")
        .collect();
    assert_eq!(ed.len(), 5);
    assert!(ed.iter().all(|e| e["implicit"] == "1"));
    assert_eq!(
        evs.iter()
            .filter(|e| e["ev"] == "wait_start" && e["implicit"] == "1")
            .count(),
        5
    );
    // Region exit: download of A, then delete and free, for both arrays.
    let exit_at = n.iter().rposition(|e| *e == "exit_data_start").unwrap();
    let exit: Vec<&str> = n[exit_at..]
        .iter()
        .take_while(|e| **e != "exit_data_end")
        .copied()
        .collect();
    assert_eq!(
        exit,
        [
            "exit_data_start",
            "delete",
            "free",
            "enqueue_download_start",
            "enqueue_download_end",
            "delete",
            "free"
        ]
    );
    assert_eq!(evs[exit_at]["construct"], "3");
    let end_line: i32 = evs[exit_at]["end"].parse().unwrap();
    assert!(
        end_line > evs[exit_at]["line"].parse::<i32>().unwrap(),
        "data region end line is its end"
    );
}

#[test]
fn laplace_naive_copies_every_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let (evs, _) = run_with_logger(
        dir.path(),
        &logger,
        &example("laplace"),
        &["--version", "naive", "--n", "16", "--iters", "4"],
        &[],
    );
    check_common_fields(&evs);
    check_nesting(&evs);
    assert_eq!(count(&evs, "compute_construct_start"), 4);
    // A and Anew go up and come back every iteration (plus the error value).
    assert_eq!(count(&evs, "enqueue_upload_start"), 8);
    assert_eq!(count(&evs, "enqueue_download_start"), 12);
    assert_eq!(count(&evs, "alloc"), 8);
    assert_eq!(count(&evs, "free"), 8);
    for e in evs.iter().filter(|e| e["ev"] == "enqueue_upload_start") {
        assert_eq!(e["implicit"], "1", "implicitly determined copies: {e:?}");
        assert_eq!(e["construct"], "1");
        assert!(e["var"] == "A[0:n*m]" || e["var"] == "Anew[0:n*m]");
    }
}

#[test]
fn c_program_with_c_tool() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let src = crate_dir().join("examples/c/laplace.c");
    let prog = dir.path().join("laplace_c");
    gcc(&src, &prog, false);
    let (evs, out) = run_with_logger(dir.path(), &logger, &prog, &["data", "24", "3"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("iterations: 3"));
    check_common_fields(&evs);
    check_nesting(&evs);
    let source = std::fs::read_to_string(&src).unwrap();
    let kernels_line = source
        .lines()
        .position(|l| l.contains("ACC_KERNELS (k, 2"))
        .unwrap()
        + 1;
    let data_line = source
        .lines()
        .position(|l| l.contains("ACC_DATA_BEGIN (ACC_COPY"))
        .unwrap()
        + 1;
    let end_line = source
        .lines()
        .position(|l| l.contains("ACC_DATA_END (region)"))
        .unwrap()
        + 1;
    let cc = evs
        .iter()
        .find(|e| e["ev"] == "compute_construct_start")
        .unwrap();
    assert!(cc["file"].ends_with("laplace.c"));
    assert_eq!(cc["func"], "main");
    assert_eq!(cc["line"], kernels_line.to_string());
    assert_eq!(cc["end"], (kernels_line + 1).to_string());
    let enter = evs.iter().find(|e| e["ev"] == "enter_data_start").unwrap();
    assert_eq!(enter["line"], data_line.to_string());
    let exit = evs
        .iter()
        .rfind(|e| e["ev"] == "exit_data_start" && e["construct"] == "3")
        .unwrap();
    assert_eq!(exit["end"], end_line.to_string());
    let up = evs
        .iter()
        .find(|e| e["ev"] == "enqueue_upload_start")
        .unwrap();
    assert_eq!(up["var"], "A[0:n*m]", "clause text from the macro");
    let l = evs
        .iter()
        .find(|e| e["ev"] == "enqueue_launch_start")
        .unwrap();
    assert_eq!(l["kernel"], "laplace_stencil_c");
}

#[test]
fn preloaded_tool_is_found_and_registered_once() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let log = dir.path().join("preload.txt");
    // LD_PRELOAD alone: found through dlsym(RTLD_DEFAULT, "acc_register_library").
    let out = std::process::Command::new(example("saxpy"))
        .args(["--n", "1000", "--reps", "2"])
        .env("LD_PRELOAD", &logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .env_remove("ACC_PROFLIB")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(count(&parse_log(&text), "compute_construct_start"), 2);
    // Preloaded and named in ACC_PROFLIB: the same acc_register_library is called once.
    let (evs, _) = run_with_logger(
        dir.path(),
        &logger,
        &example("saxpy"),
        &["--n", "1000", "--reps", "2"],
        &[("LD_PRELOAD", logger.to_str().unwrap())],
    );
    assert_eq!(
        count(&evs, "compute_construct_start"),
        2,
        "each callback called once per event"
    );
}

#[test]
fn async_pipeline_reports_queues() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let (evs, _) = run_with_logger(
        dir.path(),
        &logger,
        &example("async_pipeline"),
        &["--n", "4000", "--chunks", "8", "--queues", "3"],
        &[],
    );
    check_common_fields(&evs);
    check_nesting(&evs);
    let launches: Vec<&Event> = evs
        .iter()
        .filter(|e| e["ev"] == "enqueue_launch_start")
        .collect();
    assert_eq!(launches.len(), 8);
    for (c, l) in launches.iter().enumerate() {
        assert_eq!(l["async"], (c % 3).to_string());
        assert_eq!(l["queue"], (c % 3).to_string());
    }
    // Async operations do not wait inside the construct; the wait directive waits for each queue.
    let waits: Vec<&Event> = evs.iter().filter(|e| e["ev"] == "wait_start").collect();
    assert_eq!(waits.len(), 3);
    assert!(waits
        .iter()
        .all(|w| w["construct"] == "14" && w["implicit"] == "0"));
    let ups = evs
        .iter()
        .filter(|e| e["ev"] == "enqueue_upload_start" && e["construct"] == "12")
        .count();
    assert_eq!(ups, 8);
}

#[test]
fn every_mistake_example_runs_with_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let logger = event_logger(dir.path());
    let small = ["--n", "2000", "--iters", "3"];
    let cases: [(&str, &[&str]); 6] = [
        ("mistake_copies_in_loop", &small),
        ("mistake_slice_copies", &["--n", "20", "--m", "30"]),
        ("mistake_temp_roundtrip", &small),
        ("mistake_update_in_loop", &small),
        ("mistake_alloc_churn", &small),
        ("mistake_no_present_across_calls", &small),
    ];
    for (name, args) in cases {
        let (evs, _) = run_with_logger(dir.path(), &logger, &example(name), args, &[]);
        check_common_fields(&evs);
        check_nesting(&evs);
        let ups = count(&evs, "enqueue_upload_start");
        let downs = count(&evs, "enqueue_download_start");
        let allocs = count(&evs, "alloc");
        match name {
            "mistake_copies_in_loop" => assert_eq!((ups, downs), (3, 3)),
            "mistake_slice_copies" => assert_eq!((ups, downs), (1, 18), "18 row slices"),
            "mistake_temp_roundtrip" => {
                assert_eq!((ups, downs), (9, 6), "tmp goes out and comes back")
            }
            "mistake_update_in_loop" => assert_eq!((ups, downs), (4, 4)),
            "mistake_alloc_churn" => assert_eq!((allocs, count(&evs, "free")), (3, 3)),
            "mistake_no_present_across_calls" => assert_eq!((ups, downs), (6, 6)),
            _ => unreachable!(),
        }
    }
}

#[test]
fn tool_registering_from_its_constructor_before_init() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("ctor_tool.so");
    gcc(&crate_dir().join("tests/c/ctor_tool.c"), &so, true);
    let out_file = dir.path().join("ctor.txt");
    for (prog, count) in [
        (example("saxpy"), "--reps"),
        (example("mistake_copies_in_loop"), "--iters"),
    ] {
        let out = std::process::Command::new(&prog)
            .args(["--n", "100", count, "3"])
            .env("LD_PRELOAD", &so)
            .env("CTOR_TOOL_OUT", &out_file)
            .env_remove("ACC_PROFLIB")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            prog.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&out_file).unwrap();
        assert_eq!(
            text.trim(),
            "constructs=3 shutdowns=1",
            "{}",
            prog.display()
        );
    }
}
