//! The export's layout through small windows (`ACCPROF_EXPORT_WINDOW=64`) against one window
//! holding everything (`ACCPROF_EXPORT_WHOLE=1`): the same events on the same named tracks, in
//! the same display order, with the same flows and counters, for JSON and for Perfetto (decoded
//! with Perfetto's own protos), over every shape of trace once (nested constructs on two
//! threads with an async queue, operations outside constructs, CUPTI records with and without
//! their issuing call, recorded GPU traces, several ranks). Also input the windows cannot order
//! (a construct wider than a window), which is laid out again, right.

mod tools;

use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use tools::stderr;
use tools::synth::{laplace_like, Synth};

/// Slices each window holds in the small-window exports.
const WINDOW: &str = "64";

/// Exports `traces` to `out` in `format`, with `env` set; what it said on stderr (with
/// `ACCPROF_EXPORT_DEBUG`, whether it laid the traces out again).
fn export(traces: &[&Path], out: &Path, format: &str, env: (&str, &str)) -> String {
    let o = tools::accprof()
        .env(env.0, env.1)
        .env("ACCPROF_EXPORT_DEBUG", "1")
        .args(["export", "-q", "--format", format, "-o"])
        .arg(out)
        .args(traces)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

fn small(traces: &[&Path], out: &Path, format: &str) -> String {
    export(traces, out, format, ("ACCPROF_EXPORT_WINDOW", WINDOW))
}

fn whole(traces: &[&Path], out: &Path, format: &str) -> String {
    export(traces, out, format, ("ACCPROF_EXPORT_WHOLE", "1"))
}

/// A trace of each shape, a few thousand events each (those with device records more than
/// the 64 x 64 records that may wait for their issuer, so that waiting too long shows).
fn shapes(dir: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let synth = |name: &str, cfg: SynthConfig| {
        let trace = dir.join(format!("{name}.trace"));
        let events = if cfg.cupti { 15_000 } else { 2_000 };
        write_trace(&cfg.with_event_target(events), &trace).unwrap();
        trace
    };
    let mut laplace = Synth::new("/bench/laplace", 1, None);
    laplace_like(&mut laplace, 40);
    let nested = dir.join("nested.trace");
    laplace.write(&nested);
    let gpu = |name: &str| tools::workspace_root().join(format!("traces/gpu/{name}.trace"));
    let ranks: Vec<PathBuf> = [1, 0]
        .into_iter()
        .map(|r| {
            synth(
                &format!("rank{r}"),
                SynthConfig::new(Shape::LaplaceNaive).rank(r),
            )
        })
        .collect();
    vec![
        ("nested, two threads, async queue".into(), vec![nested]),
        (
            "outside constructs, two threads".into(),
            vec![synth("loose", SynthConfig::new(Shape::LooseOps).threads(2))],
        ),
        (
            "CUPTI records".into(),
            vec![synth(
                "cupti",
                SynthConfig::new(Shape::LaplaceNaive).with_cupti(),
            )],
        ),
        (
            "CUPTI kernels without their call".into(),
            vec![synth(
                "by_name",
                SynthConfig::new(Shape::LooseOps).with_cupti_kernels_by_name(),
            )],
        ),
        ("gcc_naive".into(), vec![gpu("gcc_naive")]),
        ("gcc_heap".into(), vec![gpu("gcc_heap")]),
        ("shim_naive".into(), vec![gpu("shim_naive")]),
        (
            "shim_naive_cudaevents".into(),
            vec![gpu("shim_naive_cudaevents")],
        ),
        ("two ranks".into(), ranks),
    ]
}

#[test]
fn small_windows_give_the_json_of_one_window_holding_everything() {
    let dir = tempfile::tempdir().unwrap();
    let mut flows = 0;
    for (shape, traces) in shapes(dir.path()) {
        let traces: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
        let (s, w) = (dir.path().join("s.json"), dir.path().join("w.json"));
        let said = small(&traces, &s, "chrome");
        assert!(!said.contains("warning"), "{shape}: {said}");
        whole(&traces, &w, "chrome");
        tools::chrome_validator::validate(&std::fs::read_to_string(&s).unwrap())
            .unwrap_or_else(|e| panic!("{shape}: {e}"));
        let (s, w) = (json_meaning(&s), json_meaning(&w));
        assert_eq!(s.1, w.1, "{shape}: tracks in display order");
        assert_eq!(s.0.len(), w.0.len(), "{shape}");
        for (a, b) in s.0.iter().zip(&w.0) {
            assert_eq!(a, b, "{shape}: first differing event");
        }
        flows += s.0.iter().filter(|e| e.contains(r#""ph":"s""#)).count();
    }
    assert!(flows > 100, "{flows} flows");
}

#[test]
fn small_windows_give_the_perfetto_trace_of_one_window_holding_everything() {
    let dir = tempfile::tempdir().unwrap();
    // The layout is the JSON test's; here what Perfetto adds: slices held back for the flows
    // they start, tracks made as they come, counters. (Decoding in Python is slow: a few.)
    let decoded = [
        "nested",
        "CUPTI records",
        "shim_naive_cudaevents",
        "two ranks",
    ];
    for (shape, traces) in shapes(dir.path()) {
        if !decoded.iter().any(|d| shape.starts_with(d)) {
            continue;
        }
        let traces: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
        let (s, w) = (dir.path().join("s.pftrace"), dir.path().join("w.pftrace"));
        small(&traces, &s, "perfetto");
        whole(&traces, &w, "perfetto");
        let (Some(s), Some(w)) = (decode(&s), decode(&w)) else {
            return;
        };
        assert_eq!(perfetto_flows(&s), perfetto_flows(&w), "{shape}: flows");
        let (s, w) = (perfetto_meaning(&s), perfetto_meaning(&w));
        assert_eq!(s.1, w.1, "{shape}: counters");
        assert_eq!(s.0.len(), w.0.len(), "{shape}");
        for (a, b) in s.0.iter().zip(&w.0) {
            assert_eq!(a, b, "{shape}: first differing slice");
        }
    }
}

/// A trace the windows cannot order: a construct holding more operations than a window is
/// read after all of them. The export notices and lays it out again with larger windows.
#[test]
fn a_construct_wider_than_the_window_is_laid_out_again_right() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/bench/deep", 1, None);
    let end = laplace_like(&mut s, 20);
    let start = end + 10_000;
    let n = 300u64;
    for i in 0..n {
        let t = start + 10 + i * 100;
        s.ev(accprof_abi::acc_event_t::UPDATE_START, t, t + 50, 0);
    }
    s.ev(
        accprof_abi::acc_event_t::COMPUTE_CONSTRUCT_START,
        start,
        start + n * 100 + 50,
        0,
    );
    let trace = dir.path().join("deep.trace");
    s.write(&trace);
    let (file, all) = (dir.path().join("f.json"), dir.path().join("w.json"));
    let said = small(&[&trace], &file, "chrome");
    assert!(said.contains("laid out again"), "{said}");
    whole(&[&trace], &all, "chrome");
    assert_eq!(json_meaning(&file), json_meaning(&all));
    let sum = tools::chrome_validator::validate(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(sum.complete + sum.instants, s.events.len());
}

#[test]
fn standard_output_gets_the_file_export_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("naive.trace");
    write_trace(
        &SynthConfig::new(Shape::LaplaceNaive).with_event_target(2_000),
        &trace,
    )
    .unwrap();
    for format in ["chrome", "perfetto"] {
        let file = dir.path().join(format!("file.{format}"));
        small(&[&trace], &file, format);
        let o = tools::accprof()
            .env("ACCPROF_EXPORT_WINDOW", WINDOW)
            .args(["export", "-q", "--format", format, "-o", "-"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            std::fs::read(&file).unwrap() == o.stdout,
            "{format}: standard output differs from the file export"
        );
    }
}

/// A device record whose issuing host slice was let go (more were laid out on its track since
/// than the export keeps) gets no flow, and the export says how many did not.
#[test]
fn a_device_record_later_than_its_kept_issuer_is_counted_not_linked() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/home/user/late", 9, None);
    s.header
        .extra
        .push(("device_activity".into(), "cupti".into()));
    // The export keeps 64 x 64 slices for device records to find their issuer in.
    let launches = 5_000u64;
    for i in 0..launches {
        s.launch(i * 100, i * 100 + 50, 0, "k", (1, 1, 1), None);
    }
    let end = launches * 100;
    s.device_kernel(end, end + 10, Some(0x42), Some((0, 20)), "k");
    s.device_kernel(end + 20, end + 30, Some(0x42), Some((0, end - 80)), "k");
    let trace = dir.path().join("late.trace");
    s.write(&trace);
    let (streamed, all) = (dir.path().join("s.json"), dir.path().join("w.json"));
    let said = small(&[&trace], &streamed, "chrome");
    assert!(
        said.contains("warning: 1 device records have no flow arrow"),
        "{said}"
    );
    whole(&[&trace], &all, "chrome");
    let flows = |p: &Path| {
        json_meaning(p)
            .0
            .iter()
            .filter(|e| e.contains(r#""ph":"s""#))
            .count()
    };
    assert_eq!((flows(&streamed), flows(&all)), (1, 2));
}

/// A JSON export as what it means: every non-metadata event with its thread id replaced by
/// the thread's name (ids are only handles), sorted; and the thread names in display order.
fn json_meaning(path: &Path) -> (Vec<String>, Vec<String>) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let mut names: HashMap<(u64, u64), String> = HashMap::new();
    let mut order: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let (Some(pid), Some(tid)) = (e["pid"].as_u64(), e["tid"].as_u64()) else {
            continue;
        };
        match e["name"].as_str().unwrap() {
            "thread_name" => {
                names.insert((pid, tid), e["args"]["name"].as_str().unwrap().to_string());
            }
            "thread_sort_index" => {
                let index = e["args"]["sort_index"].as_u64().unwrap();
                order.insert((pid, index), format!("{pid}/{tid}"));
            }
            _ => {}
        }
    }
    let display: Vec<String> = order
        .values()
        .map(|key| {
            let (pid, tid) = key.split_once('/').unwrap();
            names[&(pid.parse().unwrap(), tid.parse().unwrap())].clone()
        })
        .collect();
    let track =
        |e: &Value| names[&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())].clone();
    // A flow's id is only a handle: each end is named by both ends' tracks and times.
    let mut flows: HashMap<u64, BTreeMap<String, String>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        flows.entry(e["id"].as_u64().unwrap()).or_default().insert(
            e["ph"].as_str().unwrap().to_string(),
            format!("{}@{}", track(e), e["ts"]),
        );
    }
    let mut meaning: Vec<String> = events
        .iter()
        .filter(|e| e["ph"] != "M")
        .map(|e| {
            let mut e = e.clone();
            if e["tid"].is_u64() {
                e["tid"] = Value::String(track(&e));
            }
            if let Some(ends) = e["id"].as_u64().and_then(|id| flows.get(&id)) {
                e["id"] = Value::String(format!("{ends:?}"));
            }
            e.to_string()
        })
        .collect();
    meaning.sort();
    (meaning, display)
}

fn decode(path: &Path) -> Option<Value> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../accprof-perfetto/tests/decode_trace.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .ok()?;
    match out.status.code() {
        Some(0) => Some(serde_json::from_slice(&out.stdout).unwrap()),
        Some(3) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("note: python3 has no perfetto package; the Perfetto check did not run");
            None
        }
        _ => panic!(
            "{} does not decode: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A decoded Perfetto trace as what it means: every slice with its process's and track's
/// names, name, category, times, depth, args and whether it is an instant; and each counter's
/// values, by process and name.
fn perfetto_meaning(decoded: &Value) -> (Vec<String>, BTreeMap<(String, String), Value>) {
    let tracks: HashMap<u64, &Value> = decoded["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["uuid"].as_u64().unwrap(), t))
        .collect();
    let by_pid: HashMap<i64, String> = tracks
        .values()
        .filter(|t| t["kind"] == "process")
        .map(|t| {
            (
                t["pid"].as_i64().unwrap(),
                t["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let process_of = |mut uuid: u64| loop {
        let t = tracks[&uuid];
        if t["kind"] == "process" {
            return t["name"].as_str().unwrap().to_string();
        }
        if t["kind"] == "thread" && t["parent"].is_null() {
            return by_pid[&t["pid"].as_i64().unwrap()].clone();
        }
        uuid = t["parent"].as_u64().unwrap();
    };
    let mut slices: Vec<String> = decoded["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let uuid = s["track"].as_u64().unwrap();
            s["track"] = serde_json::json!([process_of(uuid), tracks[&uuid]["name"]]);
            s.to_string()
        })
        .collect();
    slices.sort();
    let counters = decoded["counters"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(uuid, v)| {
            let uuid = uuid.parse::<u64>().unwrap();
            let name = tracks[&uuid]["name"].as_str().unwrap().to_string();
            ((process_of(uuid), name), v.clone())
        })
        .collect();
    (slices, counters)
}

/// A decoded Perfetto trace's flows as what they mean: each (host slice, device slice) pair,
/// the slices named as [`perfetto_meaning`] names them.
fn perfetto_flows(decoded: &Value) -> Vec<(String, String)> {
    let tracks: HashMap<u64, &Value> = decoded["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["uuid"].as_u64().unwrap(), t))
        .collect();
    let slices = decoded["slices"].as_array().unwrap();
    let named = |i: &Value| {
        let mut s = slices[i.as_u64().unwrap() as usize].clone();
        let uuid = s["track"].as_u64().unwrap();
        s["track"] = tracks[&uuid]["name"].clone();
        s.to_string()
    };
    let mut flows: Vec<(String, String)> = decoded["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (named(&f[1]), named(&f[2])))
        .collect();
    flows.sort();
    flows
}
