//! `accprof export`: the Chrome Trace Event JSON it writes, checked structurally and by snapshot,
//! and its answers to bad input.

mod tools;

use accprof_abi::{acc_construct_t, acc_event_t};
use serde_json::Value;
use std::path::Path;
use tools::chrome_validator::validate;
use tools::synth::{construct, laplace_like, Synth};
use tools::{assert_one_line_failure, run, stderr};

fn laplace_trace(dir: &Path, iters: u64) -> std::path::PathBuf {
    let mut s = Synth::new("/home/user/laplace", 4242, None);
    laplace_like(&mut s, iters);
    let p = dir.join("laplace.trace");
    s.write(&p);
    p
}

/// Exports `trace` to a file and returns the JSON text, asserting success.
fn export(traces: &[&Path], dir: &Path) -> String {
    let out = dir.join("out.json");
    let mut args = vec!["export", "--format", "chrome", "-o", out.to_str().unwrap()];
    args.extend(traces.iter().map(|p| p.to_str().unwrap()));
    let o = run(&args);
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    std::fs::read_to_string(out).unwrap()
}

fn events(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["traceEvents"].as_array().unwrap().clone()
}

fn find<'a>(evs: &'a [Value], name: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["name"] == name).collect()
}

#[test]
fn laplace_like_trace_exports_valid_nested_tracks() {
    let dir = tempfile::tempdir().unwrap();
    let json = export(&[&laplace_trace(dir.path(), 3)], dir.path());
    let sum = validate(&json).unwrap_or_else(|e| panic!("invalid export: {e}"));
    assert_eq!(
        sum.processes.values().collect::<Vec<_>>(),
        ["laplace (pid 4242)"]
    );
    let threads: Vec<&str> = sum.shown.iter().map(String::as_str).collect();
    assert_eq!(
        threads,
        [
            "host thread 0",
            "host thread 0: device (synchronous)",
            "host thread 1",
            "host thread 1: device (synchronous)",
            "device: async queue 1"
        ]
    );
    // 3 iterations x 5; init; region entry + 2 uploads; update + download; async upload, launch
    // and wait; the 2nd thread's construct + launch; region exit + download.
    assert_eq!(sum.complete, 3 * 5 + 1 + 3 + 2 + 3 + 2 + 2);
    assert_eq!(sum.instants, 6);
    // compute construct > implicit exit data is the deepest host nesting.
    assert_eq!(sum.max_depth, 2);

    let evs = events(&json);
    let compute = find(&evs, "parallel laplace.c:42");
    assert_eq!(compute.len(), 3);
    assert_eq!(compute[0]["cat"], "compute");
    assert_eq!(compute[0]["args"]["src_file"], "/src/laplace.c");
    assert_eq!(compute[0]["args"]["line"], 42);
    assert_eq!(compute[0]["args"]["func"], "main");
    let kernel = find(&evs, "main_42_gpu");
    assert_eq!(kernel[0]["args"]["num_gangs"], 256);
    assert_eq!(kernel[0]["args"]["vector_length"], 128);
    assert_eq!(kernel[0]["args"]["kernel"], "main_42_gpu");
    let upload = find(&evs, "upload 8 MiB A");
    assert_eq!(upload[0]["args"]["bytes"], 8 << 20);
    assert_eq!(upload[0]["args"]["var"], "A");
    assert_eq!(upload[0]["cat"], "transfer");
    // Kernels of the main thread run on its synchronous device track, not on the host track.
    let track_of =
        |e: &Value| sum.threads[&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())].clone();
    assert_eq!(track_of(kernel[0]), "host thread 0: device (synchronous)");
    assert_eq!(track_of(compute[0]), "host thread 0");
    assert_eq!(
        track_of(find(&evs, "pipeline_72_gpu")[0]),
        "device: async queue 1"
    );
    // Times start at 0 (the device init) and are microseconds: init lasts 50 us.
    let init = find(&evs, "device init")[0];
    assert_eq!(init["ts"], 0);
    assert_eq!(init["dur"], 50);
    // The implicit data events of a compute construct say so.
    let implicit = find(&evs, "enter data (parallel) laplace.c:42");
    assert_eq!(implicit[0]["args"]["implicit"], true);
}

#[test]
fn counters_track_device_memory_and_bytes_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let evs = events(&export(&[&laplace_trace(dir.path(), 1)], dir.path()));
    let memory: Vec<i64> = find(&evs, "device memory in use")
        .iter()
        .map(|e| e["args"]["bytes"].as_i64().unwrap())
        .collect();
    let mib = 1 << 20;
    // alloc A, alloc Anew, free A (size from its alloc), free Anew.
    assert_eq!(memory, [8 * mib, 16 * mib, 8 * mib, 0]);
    let in_flight: Vec<i64> = find(&evs, "bytes in flight")
        .iter()
        .map(|e| e["args"]["bytes"].as_i64().unwrap())
        .collect();
    assert_eq!(in_flight.first(), Some(&(8 * mib)));
    assert_eq!(in_flight.last(), Some(&0));
    assert!(in_flight.iter().all(|&b| b >= 0));
}

#[test]
fn crossing_slices_on_one_track_move_to_a_second_lane() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/bin/app", 7, None);
    // Two launches on queue 2 that overlap without nesting, and a third after both.
    s.launch(1_000, 5_000, 0, "k1", (1, 1, 1), Some(2));
    s.launch(3_000, 8_000, 0, "k2", (1, 1, 1), Some(2));
    s.launch(9_000, 9_500, 0, "k3", (1, 1, 1), Some(2));
    let p = dir.path().join("x.trace");
    s.write(&p);
    let json = export(&[&p], dir.path());
    let sum = validate(&json).unwrap_or_else(|e| panic!("invalid export: {e}"));
    assert_eq!(sum.complete, 3);
    let names: Vec<&str> = sum.shown.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "device: async queue 2",
            "device: async queue 2 (overlapping, lane 2)"
        ]
    );
    // Durations are kept, not clipped.
    let evs = events(&json);
    assert_eq!(find(&evs, "k2")[0]["dur"], 5);
}

#[test]
fn the_validator_rejects_crossing_slices_and_missing_metadata() {
    let crossing = r#"{"traceEvents":[
        {"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},
        {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},
        {"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"a"},
        {"ph":"X","pid":1,"tid":1,"ts":5,"dur":10,"name":"b"}]}"#;
    assert!(validate(crossing).unwrap_err().contains("crosses"));
    let unnamed = r#"{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"a"}]}"#;
    assert!(validate(unnamed).unwrap_err().contains("process_name"));
    let backwards = r#"{"traceEvents":[
        {"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},
        {"ph":"C","pid":1,"ts":5,"name":"c","args":{"v":1}},
        {"ph":"C","pid":1,"ts":4,"name":"c","args":{"v":2}}]}"#;
    assert!(validate(backwards).unwrap_err().contains("back in time"));
    let unbalanced = r#"{"traceEvents":[
        {"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},
        {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},
        {"ph":"B","pid":1,"tid":1,"ts":0,"name":"a"}]}"#;
    assert!(validate(unbalanced).unwrap_err().contains("never ends"));
}

#[test]
fn ranks_become_processes_aligned_on_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for rank in [1u32, 0] {
        let mut s = Synth::new("/bin/mpi_app", 100 + rank, Some(rank));
        // Rank 1's monotonic clock started 1 s later, but at the same wall-clock time.
        s.header.start_monotonic_ns += u64::from(rank) * 1_000_000_000;
        let shift = u64::from(rank) * 1_000_000_000;
        construct(
            s.ev(
                acc_event_t::COMPUTE_CONSTRUCT_START,
                shift + 1_000,
                shift + 2_000,
                0,
            ),
            acc_construct_t::PARALLEL,
        );
        let p = dir.path().join(format!("r{rank}.trace"));
        s.write(&p);
        paths.push(p);
    }
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let json = export(&refs, dir.path());
    let sum = validate(&json).unwrap();
    let procs: Vec<(i64, &str)> = sum
        .processes
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    assert_eq!(
        procs,
        [
            (1, "rank 0: mpi_app (pid 100)"),
            (2, "rank 1: mpi_app (pid 101)")
        ]
    );
    let evs = events(&json);
    let slices: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 2);
    assert!(
        slices.iter().all(|e| e["ts"] == 0),
        "both ranks start together: {slices:?}"
    );
}

#[test]
fn small_export_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let json = export(&[&laplace_trace(dir.path(), 1)], dir.path());
    insta::assert_snapshot!("laplace_1_iteration", json);
}

#[test]
fn empty_trace_gives_a_valid_export_with_no_slices() {
    let dir = tempfile::tempdir().unwrap();
    let s = Synth::new("/bin/idle", 9, None);
    let p = dir.path().join("empty.trace");
    s.write(&p);
    let json = export(&[&p], dir.path());
    let sum = validate(&json).unwrap();
    assert_eq!(sum.complete + sum.instants + sum.counters, 0);
    assert_eq!(sum.processes.len(), 1);
}

#[test]
fn truncated_trace_exports_what_it_holds_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/home/user/laplace", 4242, None);
    s.footer = false;
    laplace_like(&mut s, 2);
    let p = dir.path().join("cut.trace");
    s.write(&p);
    // Add half a chunk, as a program killed mid-write leaves.
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(b"CK\x04\x00\x00\x01\x00\x00\x00\x00\x00\x00partial");
    std::fs::write(&p, &bytes).unwrap();
    let out = dir.path().join("cut.json");
    let o = run(&["export", "-o", out.to_str().unwrap(), p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning:") && stderr(&o).contains("ends in the middle of a chunk"),
        "{}",
        stderr(&o)
    );
    let sum = validate(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert!(sum.complete > 10);
}

#[test]
fn bad_inputs_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.json");
    let out = out.to_str().unwrap();
    let missing = d.join("missing.trace");
    assert_one_line_failure(
        &run(&["export", "-o", out, missing.to_str().unwrap()]),
        "missing.trace",
    );
    let empty = d.join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    assert_one_line_failure(
        &run(&["export", "-o", out, empty.to_str().unwrap()]),
        "empty",
    );
    let foreign = d.join("foreign.trace");
    std::fs::write(&foreign, b"{\"traceEvents\":[]}").unwrap();
    assert_one_line_failure(
        &run(&["export", "-o", out, foreign.to_str().unwrap()]),
        "not an accprof trace",
    );
    let good = laplace_trace(d, 1);
    let mut bytes = std::fs::read(&good).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    let corrupt = d.join("corrupt.trace");
    std::fs::write(&corrupt, &bytes).unwrap();
    assert_one_line_failure(
        &run(&["export", "-o", out, corrupt.to_str().unwrap()]),
        "corrupt",
    );
    // No output is left behind by a failed export.
    assert!(!Path::new(out).exists());
    let unwritable = d.join("no/such/dir/o.json");
    assert_one_line_failure(
        &run(&[
            "export",
            "-o",
            unwritable.to_str().unwrap(),
            good.to_str().unwrap(),
        ]),
        "cannot write",
    );
}

#[test]
fn dash_writes_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = laplace_trace(dir.path(), 1);
    let o = run(&["export", "-o", "-", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    validate(&tools::stdout(&o)).unwrap();
    assert_eq!(stderr(&o), "");
}

#[test]
fn default_output_is_next_to_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let p = laplace_trace(dir.path(), 1);
    let o = run(&["export", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("laplace.json"), "{}", stderr(&o));
    validate(&std::fs::read_to_string(dir.path().join("laplace.json")).unwrap()).unwrap();
}

#[test]
fn help_explains_with_an_example() {
    let o = run(&["export", "--help"]);
    assert!(o.status.success());
    let help = tools::stdout(&o);
    assert!(help.contains("Chrome Trace Event"), "{help}");
    assert!(help.contains("accprof export --format chrome -o"), "{help}");
    assert!(help.contains("ui.perfetto.dev"), "{help}");
}

/// Past 32,768 slices the export formats every other batch on a second thread: the batches
/// must come out in order, each once, and the file must match what one thread writes.
#[test]
fn a_large_export_is_written_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut template = Synth::new("/bench/laplace", 1, None);
    laplace_like(&mut template, 100);
    let trace = dir.path().join("big.trace");
    let n = tools::synth::write_repeated(
        &template,
        100_000u64.div_ceil(template.events.len() as u64),
        &trace,
    );
    assert!(n >= 100_000);
    let out = dir.path().join("big.json");
    let o = run(&[
        "export",
        "-o",
        out.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = std::fs::read_to_string(&out).unwrap();
    let sum = validate(&json).unwrap_or_else(|e| panic!("invalid export: {e}"));
    assert_eq!(sum.complete + sum.instants, n as usize);
    // Per thread, slices come sorted by start: batches written out of order would break that.
    let doc: Value = serde_json::from_str(&json).unwrap();
    let mut last: std::collections::HashMap<(u64, u64), f64> = std::collections::HashMap::new();
    for e in doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
    {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = e["ts"].as_f64().unwrap();
        let prev = last.insert(key, ts).unwrap_or(f64::MIN);
        assert!(
            ts >= prev,
            "slices of {key:?} out of order: {prev} then {ts}"
        );
    }
}
