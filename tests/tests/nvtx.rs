//! A program's NVTX ranges, marks and domains, through NVIDIA's real nvtx3 headers (the
//! nvidia-nvtx wheel, header-only: `pip install nvidia-nvtx`; NVTX_INCLUDE may name another
//! include directory), are recorded with plain LD_PRELOAD, with ACC_PROFLIB, and with
//! `accprof run`, without rebuilding the program: libaccprof is the NVTX tool the headers load.

use accprof_integration_tests::*;
use accprof_trace::{nvtx, EventFlags, Field, Trace};
use std::path::PathBuf;
use std::process::Command;

/// The directory holding `nvtx3/nvToolsExt.h`.
fn nvtx_include() -> PathBuf {
    if let Some(dir) = std::env::var_os("NVTX_INCLUDE") {
        return PathBuf::from(dir);
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("python3 runs");
    let site = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let found = std::fs::read_dir(site.join("nvidia"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("include"))
        .find(|inc| inc.join("nvtx3/nvToolsExt.h").is_file());
    found.unwrap_or_else(|| {
        panic!(
            "NVIDIA's nvtx3 headers are not installed: `pip install nvidia-nvtx` (scripts/test.sh \
             and .ci/run do), or set NVTX_INCLUDE to the directory holding nvtx3/"
        )
    })
}

fn compile(dir: &std::path::Path) -> PathBuf {
    let inc = format!("-I{}", nvtx_include().display());
    compile_c("nvtx_phases.c", dir, &["-g", &inc, "-ldl", "-lpthread"])
}

fn message<'a>(t: &'a Trace, e: &accprof_trace::Event) -> &'a str {
    str_field(t, e, Field::NvtxMessage).unwrap_or("?")
}

/// The range events named `name`.
fn ranges<'a>(t: &'a Trace, name: &str) -> Vec<&'a accprof_trace::Event> {
    t.events
        .iter()
        .filter(|e| nvtx::is_range(e.kind) && message(t, e) == name)
        .collect()
}

fn check(t: &Trace, iterations: usize, how: &str) {
    let setup = ranges(t, "setup");
    let solve = ranges(t, "solve");
    let iters = ranges(t, "iteration");
    let sweep = ranges(t, "sweep");
    let whole = ranges(t, "whole run");
    assert_eq!(
        (
            setup.len(),
            solve.len(),
            iters.len(),
            sweep.len(),
            whole.len()
        ),
        (1, 1, iterations, 1, 1),
        "{how}: one range per push (and the start/end range once)"
    );
    let (solve, whole) = (solve[0], whole[0]);
    assert_eq!(whole.kind, nvtx::START_END, "{how}");
    // Nesting: each iteration inside "solve", by instance number and by time.
    let solve_id = solve.get(Field::NvtxRange).expect("instance");
    for (n, it) in iters.iter().enumerate() {
        assert_eq!(it.kind, nvtx::RANGE);
        assert_eq!(
            it.get(Field::NvtxParent),
            Some(solve_id),
            "{how}: iteration {n}"
        );
        assert!(
            it.start_ns >= solve.start_ns && it.end_ns <= solve.end_ns,
            "{how}"
        );
        assert_eq!(it.get(Field::NvtxCategory), Some(7));
        assert_eq!(it.get(Field::NvtxColor), Some(0xff00_ff00));
        assert_eq!(
            it.get(Field::NvtxPayload),
            Some(n as u64),
            "{how}: the payload"
        );
    }
    assert_eq!(
        solve.get(Field::NvtxParent),
        None,
        "{how}: solve is outermost"
    );
    assert!(whole.start_ns <= setup[0].start_ns && whole.end_ns >= sweep[0].end_ns);
    // A domain and a registered message.
    assert_eq!(
        str_field(t, sweep[0], Field::NvtxDomain),
        Some("solver"),
        "{how}"
    );
    assert_eq!(str_field(t, solve, Field::NvtxDomain), None, "{how}");
    // Marks: one per iteration, inside it.
    let marks: Vec<_> = t.events.iter().filter(|e| e.kind == nvtx::MARK).collect();
    assert_eq!(marks.len(), iterations, "{how}");
    for m in &marks {
        assert_eq!(message(t, m), "iteration done");
        assert!(iters
            .iter()
            .any(|i| i.start_ns <= m.start_ns && m.start_ns <= i.end_ns));
    }
    // Names given to a category and a thread.
    let named = |kind| {
        t.events
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| message(t, e).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(named(nvtx::CATEGORY_NAME), ["stencil"], "{how}");
    assert_eq!(named(nvtx::THREAD_NAME), ["main thread"], "{how}");
    // The OpenACC constructs carry the innermost range open around them: each iteration's
    // compute construct its iteration, the sum's the domain range.
    let computes: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START)
        .collect();
    assert_eq!(computes.len(), iterations + 2, "{how}");
    let range_of = |r: &accprof_trace::Event| r.get(Field::NvtxRange);
    assert_eq!(
        computes[0].get(Field::NvtxRange),
        range_of(setup[0]),
        "{how}"
    );
    for (c, it) in computes[1..=iterations].iter().zip(&iters) {
        assert_eq!(c.get(Field::NvtxRange), range_of(it), "{how}");
    }
    assert_eq!(
        computes[iterations + 1].get(Field::NvtxRange),
        range_of(sweep[0])
    );
    assert!(
        t.events
            .iter()
            .all(|e| !e.flags().contains(EventFlags::NO_END)),
        "{how}: every range ended"
    );
}

/// `accprof report`: a table of the ranges, each with the OpenACC time inside it, an outer
/// range holding its inner ones'.
fn check_report(trace: &std::path::Path, iterations: u64) {
    let out = Command::new(accprof_cli())
        .args(["report", "--format", "json"])
        .arg(trace)
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = json["traces"][0]["profile"]["nvtx_ranges"]
        .as_array()
        .expect("an nvtx_ranges table")
        .clone();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}: {rows:?}"))
            .clone()
    };
    let (solve, iteration, sweep) = (row("solve"), row("iteration"), row("sweep"));
    assert_eq!(iteration["time"]["count"], iterations);
    assert_eq!(sweep["domain"], "solver");
    assert_eq!(row("whole run")["start_end"], true);
    let acc = |r: &serde_json::Value| r["inside"]["openacc_ns"].as_u64().unwrap();
    assert!(
        acc(&iteration) > 0,
        "the iterations' compute constructs: {iteration}"
    );
    assert_eq!(
        acc(&solve),
        acc(&iteration),
        "solve holds nothing but its iterations"
    );
    assert!(acc(&solve) <= solve["time"]["total_ns"].as_u64().unwrap());
    let marks = &json["traces"][0]["profile"]["nvtx_marks"];
    assert_eq!(marks[0]["name"], "iteration done");
    assert_eq!(marks[0]["count"], iterations);
    let text = Command::new(accprof_cli())
        .arg("report")
        .arg(trace)
        .output()
        .expect("accprof runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("NVTX ranges")
            && text.contains("solver: sweep")
            && text.contains("whole run (start/end)"),
        "{text}"
    );
}

/// Both exports and the TUI: a track of the ranges per thread, its slices named by the program.
fn check_timelines(trace: &std::path::Path, iterations: usize) {
    let dir = trace.parent().expect("a directory");
    let json = dir.join("n.json");
    let out = Command::new(accprof_cli())
        .args(["export", "-q", "-o"])
        .arg(&json)
        .arg(trace)
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("written")).expect("json");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let track = events
        .iter()
        .find(|e| {
            e["ph"] == "M"
                && e["args"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("NVTX ranges"))
        })
        .unwrap_or_else(|| panic!("no NVTX track among {} events", events.len()));
    let on_track: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == track["tid"] && e["pid"] == track["pid"])
        .collect();
    let named = |n: &str| on_track.iter().filter(|e| e["name"] == n).count();
    assert_eq!(
        (
            named("iteration"),
            named("solve"),
            named("sweep"),
            named("iteration done")
        ),
        (iterations, 1, 1, iterations),
        "{on_track:?}"
    );
    assert!(on_track.iter().all(|e| e["cat"] == "nvtx"));
    let pf = dir.join("n.pftrace");
    let out = Command::new(accprof_cli())
        .args(["export", "-q", "-o"])
        .arg(&pf)
        .arg(trace)
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&pf).expect("written");
    let has = |s: &[u8]| bytes.windows(s.len()).any(|w| w == s);
    assert!(
        has(b"NVTX ranges") && has(b"iteration"),
        "the Perfetto track and its slices"
    );
    // The TUI, in tmux: a lane of the thread's ranges above the thread's own.
    let socket = format!("accprof-nvtx-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux must be installed for this test (apt-get install tmux)")
    };
    let tui = workspace_root().join("target/release/accprof-tui");
    let cmd = format!("{} {}", tui.display(), trace.display());
    assert!(tmux(&["new-session", "-d", "-x", "140", "-y", "20", &cmd])
        .status
        .success());
    let start = std::time::Instant::now();
    let screen = loop {
        let s =
            String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "0"]).stdout).into_owned();
        if s.contains("whole run") || start.elapsed() > std::time::Duration::from_secs(20) {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = tmux(&["kill-server"]);
    let lanes: Vec<&str> = screen
        .lines()
        .filter_map(|l| l.split('│').next())
        .map(str::trim)
        .filter(|l| l.starts_with("thread"))
        .collect();
    assert!(
        lanes.len() >= 2 && lanes[0].ends_with("NVTX") && !lanes[1].ends_with("NVTX"),
        "the ranges' lane first, then the thread's: {lanes:?}\n{screen}"
    );
    // The range's bar, titled by its name (as the exports title it), on the ranges' lane.
    assert!(
        screen.lines().any(|l| l
            .split('│')
            .next()
            .is_some_and(|lane| lane.trim_end().ends_with("NVTX"))
            && l.contains("whole run")),
        "{screen}"
    );
}

#[test]
fn nvtx_ranges_marks_and_domains_are_recorded_without_a_rebuild() {
    let dir = scratch("nvtx");
    let exe = compile(&dir);
    for how in ALL_LOADS {
        let trace = dir.join(format!("{how:?}.trace"));
        let out = run_profiled(&exe, &["4"], how, &trace, &[]);
        assert!(out.status.success(), "{how:?}: {}", stderr(&out));
        check(&load(&trace), 4, &format!("{how:?}"));
    }
    check_report(&dir.join("Preload.trace"), 4);
    check_timelines(&dir.join("Preload.trace"), 4);
    // `accprof run`, and a tool the user named for NVTX is left alone.
    let trace = dir.join("run.trace");
    let out = Command::new(accprof_cli())
        .args(["run", "-q", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .arg("2")
        .env_remove("NVTX_INJECTION64_PATH")
        .env("ACCPROF_LIB", libaccprof())
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "{}", stderr(&out));
    check(&load(&trace), 2, "accprof run");
    let out = run_profiled(
        &exe,
        &["2"],
        Load::Preload,
        &trace,
        &[("NVTX_INJECTION64_PATH", "/nonexistent/other_tool.so")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let t = load(&trace);
    assert!(
        !t.events.iter().any(|e| nvtx::is_nvtx(e.kind)),
        "another tool was named: accprof records no NVTX"
    );
    assert!(
        t.events
            .iter()
            .any(|e| e.kind == accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START),
        "the OpenACC events are still recorded"
    );
}
