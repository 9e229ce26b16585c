//! The streaming export (one trace of 65,536 events or more) against the whole-trace export of
//! the same trace (`ACCPROF_EXPORT_WHOLE=1`): the same events on the same named tracks, in the same display order, with
//! the same counters, for JSON and for Perfetto (decoded with Perfetto's own protos). Also for
//! input the streaming windows cannot order (a construct holding more operations than a window),
//! which must still come out right.

mod tools;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use tools::stderr;
use tools::synth::{laplace_like, write_repeated, Synth};

/// Events enough to stream (the streaming export lays traces under 65,536 events out whole).
const STREAMED: u64 = 80_000;

fn laplace(dir: &Path, events: u64) -> PathBuf {
    laplace_rank(dir, events, None)
}

fn laplace_rank(dir: &Path, events: u64, rank: Option<u32>) -> PathBuf {
    let mut template = Synth::new("/bench/laplace", 1 + rank.unwrap_or(0), rank);
    laplace_like(&mut template, 200 + 7 * u64::from(rank.unwrap_or(0)));
    let trace = dir.join(format!(
        "big{}.trace",
        rank.map_or(String::new(), |r| r.to_string())
    ));
    let n = write_repeated(
        &template,
        events.div_ceil(template.events.len() as u64),
        &trace,
    );
    assert!(n >= events);
    trace
}

/// Exports `trace` to `out` (a file: streamed when it can be, through windows of `window`
/// slices if given) and returns what the export said with `ACCPROF_EXPORT_DEBUG` set (whether
/// it streamed).
fn export_file(trace: &Path, out: &Path, format: &str, window: Option<usize>) -> String {
    export_files(&[trace], out, format, window)
}

fn export_files(traces: &[&Path], out: &Path, format: &str, window: Option<usize>) -> String {
    let mut cmd = tools::accprof();
    if let Some(n) = window {
        cmd.env("ACCPROF_EXPORT_WINDOW", n.to_string());
    }
    let o = cmd
        .env("ACCPROF_EXPORT_DEBUG", "1")
        .args(["export", "-q", "--format", format, "-o"])
        .arg(out)
        .args(traces)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

/// The whole-trace export of `trace`.
fn export_whole(trace: &Path, out: &Path, format: &str) {
    export_whole_of(&[trace], out, format)
}

fn export_whole_of(traces: &[&Path], out: &Path, format: &str) {
    let o = tools::accprof()
        .env("ACCPROF_EXPORT_WHOLE", "1")
        .args(["export", "-q", "--format", format, "-o"])
        .arg(out)
        .args(traces)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn standard_output_gets_the_streamed_export_byte_for_byte() {
    // Standard output cannot be rewound, so the export streams into a temporary file and
    // copies it out: the same bytes as a file, in bounded memory.
    let dir = tempfile::tempdir().unwrap();
    let trace = laplace(dir.path(), STREAMED);
    for format in ["chrome", "perfetto"] {
        let file = dir.path().join(format!("file.{format}"));
        let said = export_file(&trace, &file, format, None);
        assert!(!said.contains("not streamed"), "{said}");
        let o = tools::accprof()
            .env("ACCPROF_EXPORT_DEBUG", "1")
            .args(["export", "-q", "--format", format, "-o", "-"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("not streamed"), "{}", stderr(&o));
        assert!(
            std::fs::read(&file).unwrap() == o.stdout,
            "{format}: standard output differs from the file export"
        );
    }
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

#[test]
fn a_streamed_json_export_means_what_the_whole_trace_export_means() {
    let dir = tempfile::tempdir().unwrap();
    let trace = laplace(dir.path(), STREAMED);
    let (streamed, whole) = (dir.path().join("s.json"), dir.path().join("w.json"));
    let said = export_file(&trace, &streamed, "chrome", None);
    assert!(!said.contains("not streamed"), "{said}");
    export_whole(&trace, &whole, "chrome");
    tools::chrome_validator::validate(&std::fs::read_to_string(&streamed).unwrap()).unwrap();
    let (s, w) = (json_meaning(&streamed), json_meaning(&whole));
    assert_eq!(s.1, w.1, "tracks in display order");
    assert_eq!(s.0.len(), w.0.len());
    assert!(s.0.len() as u64 >= STREAMED);
    for (a, b) in s.0.iter().zip(&w.0) {
        assert_eq!(a, b, "first differing event");
    }
}

/// Several traces (MPI ranks, given out of rank order) stream into one process each, as the
/// whole-trace export lays them out. (Windows of 256 slices, so that small traces stream.)
#[test]
fn several_ranks_stream_into_one_process_each() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r0) = (
        laplace_rank(dir.path(), 3_000, Some(1)),
        laplace_rank(dir.path(), 2_000, Some(0)),
    );
    let (streamed, whole) = (dir.path().join("s.json"), dir.path().join("w.json"));
    let said = export_files(&[&r1, &r0], &streamed, "chrome", Some(256));
    assert!(!said.contains("not streamed"), "{said}");
    export_whole_of(&[&r1, &r0], &whole, "chrome");
    let sum =
        tools::chrome_validator::validate(&std::fs::read_to_string(&streamed).unwrap()).unwrap();
    assert_eq!(
        sum.processes.values().collect::<Vec<_>>(),
        ["rank 0: laplace (pid 1)", "rank 1: laplace (pid 2)"]
    );
    let (s, w) = (json_meaning(&streamed), json_meaning(&whole));
    assert_eq!(s.1, w.1, "tracks in display order");
    assert_eq!(s.0, w.0);
    // And the Perfetto export of the same ranks.
    let (sp, wp) = (dir.path().join("s.pftrace"), dir.path().join("w.pftrace"));
    let said = export_files(&[&r1, &r0], &sp, "perfetto", Some(256));
    assert!(!said.contains("not streamed"), "{said}");
    export_whole_of(&[&r1, &r0], &wp, "perfetto");
    let Some(s) = decode(&sp) else { return };
    let w = decode(&wp).unwrap();
    let (s, w) = (perfetto_meaning(&s), perfetto_meaning(&w));
    assert_eq!(s.1, w.1, "counters");
    assert!(s.0 == w.0, "the slices differ");
}

/// A trace the windows cannot order: a construct holding more operations than a window is
/// read after all of them. The export must notice and lay the trace out whole. (Windows of
/// 256 slices; the same holds for the default 8192.)
#[test]
fn a_construct_wider_than_the_window_is_exported_whole_and_right() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/bench/deep", 1, None);
    let end = laplace_like(&mut s, 200);
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
    let (file, whole) = (dir.path().join("f.json"), dir.path().join("w.json"));
    // With a window wider than the construct, it streams.
    let said = export_file(&trace, &file, "chrome", Some(512));
    assert!(!said.contains("not streamed"), "{said}");
    let said = export_file(&trace, &file, "chrome", Some(256));
    assert!(said.contains("not streamed"), "{said}");
    export_whole(&trace, &whole, "chrome");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(&whole).unwrap(),
        "the file is the whole-trace export"
    );
    let sum = tools::chrome_validator::validate(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(sum.complete + sum.instants, s.events.len());
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

#[test]
fn a_streamed_perfetto_export_means_what_the_whole_trace_export_means() {
    let dir = tempfile::tempdir().unwrap();
    // Small windows, so that a trace small enough to decode in Python streams.
    let trace = laplace(dir.path(), 6_000);
    let (streamed, whole) = (dir.path().join("s.pftrace"), dir.path().join("w.pftrace"));
    let said = export_file(&trace, &streamed, "perfetto", Some(64));
    assert!(!said.contains("not streamed"), "{said}");
    export_whole(&trace, &whole, "perfetto");
    let Some(decoded) = decode(&streamed) else {
        return;
    };
    let w = decode(&whole).unwrap();
    let (s, w) = (perfetto_meaning(&decoded), perfetto_meaning(&w));
    assert_eq!(s.1, w.1, "counters");
    assert_eq!(s.0.len(), w.0.len());
    for (a, b) in s.0.iter().zip(&w.0) {
        assert_eq!(a, b, "first differing slice");
    }
    // Launch geometry is written when it changes for a kernel on its track: carried forward,
    // it is every launch's geometry in the JSON export.
    let json = dir.path().join("w.json");
    export_whole(&trace, &json, "chrome");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut expected: Vec<(u64, String, Value)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["args"]["num_gangs"].is_u64())
        .map(|e| {
            let ts = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
            let a = &e["args"];
            let geometry =
                serde_json::json!([a["num_gangs"], a["num_workers"], a["vector_length"]]);
            (ts, e["name"].as_str().unwrap().to_string(), geometry)
        })
        .collect();
    expected.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut launches: Vec<&Value> = decoded["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] == "kernel")
        .collect();
    launches.sort_by_key(|s| s["start"].as_u64().unwrap());
    let mut last: HashMap<(u64, String), Value> = HashMap::new();
    let mut got: Vec<(u64, String, Value)> = Vec::new();
    for s in launches {
        let key = (
            s["track"].as_u64().unwrap(),
            s["name"].as_str().unwrap().to_string(),
        );
        let args = &s["args"];
        if args["num_gangs"].is_u64() {
            last.insert(
                key.clone(),
                serde_json::json!([
                    args["num_gangs"],
                    args["num_workers"],
                    args["vector_length"]
                ]),
            );
        }
        let geometry = last
            .get(&key)
            .cloned()
            .expect("a kernel's first launch has its geometry");
        got.push((s["start"].as_u64().unwrap(), key.1, geometry));
    }
    got.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    assert!(!expected.is_empty());
    assert_eq!(got, expected);
}

/// A CUPTI-shaped trace (every launch and copy also has its device record, handed over in
/// batches after the host events, as libaccprof flushes CUPTI): streamed, its device slices,
/// their args and their flows from the issuing host slices are those of the whole-trace export.
#[test]
fn a_streamed_json_export_with_device_records_means_what_the_whole_trace_export_means() {
    use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("cupti.trace");
    let cfg = SynthConfig::new(Shape::LaplaceNaive)
        .with_cupti()
        .with_event_target(STREAMED);
    write_trace(&cfg, &trace).unwrap();
    let (streamed, whole) = (dir.path().join("s.json"), dir.path().join("w.json"));
    let said = export_file(&trace, &streamed, "chrome", None);
    assert!(!said.contains("not streamed"), "{said}");
    assert!(!said.contains("warning"), "{said}");
    export_whole(&trace, &whole, "chrome");
    tools::chrome_validator::validate(&std::fs::read_to_string(&streamed).unwrap()).unwrap();
    let (s, w) = (json_meaning(&streamed), json_meaning(&whole));
    assert_eq!(s.1, w.1, "tracks in display order");
    assert!(
        s.1.iter().any(|t| t.starts_with("device stream")),
        "{:?}",
        s.1
    );
    let flows = |m: &[String]| m.iter().filter(|e| e.contains(r#""ph":"s""#)).count();
    assert!(
        flows(&s.0) * 4 > s.0.len() / 4,
        "most device slices have a flow"
    );
    assert_eq!(flows(&s.0), flows(&w.0));
    assert_eq!(s.0.len(), w.0.len());
    for (a, b) in s.0.iter().zip(&w.0) {
        assert_eq!(a, b, "first differing event");
    }
}

/// The recorded GPU traces (real CUPTI records from gcc's runtime and the bundled one), pushed
/// through windows of 64 slices so that they stream: the same events and flows as the
/// whole-trace export. One of them does not fit so small a window (its counter steps) and is
/// exported whole, which must come out the same too.
#[test]
fn recorded_gpu_traces_stream_with_their_device_flows() {
    let dir = tempfile::tempdir().unwrap();
    let mut streamed_any = 0;
    for name in [
        "gcc_naive",
        "gcc_data",
        "gcc_heap",
        "shim_naive_cudaevents",
        "shim_naive",
    ] {
        let trace = tools::workspace_root().join(format!("traces/gpu/{name}.trace"));
        let (streamed, whole) = (dir.path().join("s.json"), dir.path().join("w.json"));
        let said = export_file(&trace, &streamed, "chrome", Some(64));
        if !said.contains("not streamed") {
            streamed_any += 1;
        }
        export_whole(&trace, &whole, "chrome");
        let (s, w) = (json_meaning(&streamed), json_meaning(&whole));
        assert_eq!(s.1, w.1, "{name}: tracks in display order");
        assert!(s.0.iter().any(|e| e.contains(r#""ph":"s""#)), "{name}");
        assert_eq!(s.0, w.0, "{name}: events");
    }
    assert!(streamed_any >= 4, "{streamed_any} traces streamed");
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

/// Streamed to Perfetto, a trace with device records holds back its host slices until the
/// device records they issued have come (the flows are named on the host slice's packet):
/// the same slices, counters and flows (host slice, device slice) as the whole-trace export,
/// for a CUPTI-shaped trace and for recorded GPU traces pushed through small windows.
#[test]
fn a_streamed_perfetto_export_with_device_records_has_the_same_flows() {
    use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};
    let dir = tempfile::tempdir().unwrap();
    let synth = |shape, cupti: bool, name: &str| {
        let trace = dir.path().join(name);
        let mut cfg = SynthConfig::new(shape).with_event_target(STREAMED);
        if cupti {
            cfg = cfg.with_cupti();
        }
        write_trace(&cfg, &trace).unwrap();
        trace
    };
    let gpu = |name: &str| tools::workspace_root().join(format!("traces/gpu/{name}.trace"));
    // Launches and copies outside constructs: synchronous device tracks of threads with no
    // host slices, which go under the process, as the whole-trace export lays them out.
    let loose = synth(Shape::LooseOps, false, "loose.trace");
    let (s, w) = (dir.path().join("s.pftrace"), dir.path().join("w.pftrace"));
    let said = export_file(&loose, &s, "perfetto", None);
    assert!(!said.contains("not streamed"), "{said}");
    export_whole(&loose, &w, "perfetto");
    if let (Some(s), Some(w)) = (decode(&s), decode(&w)) {
        assert_eq!(
            perfetto_meaning(&s),
            perfetto_meaning(&w),
            "loose operations"
        );
    }
    for (trace, window) in [
        (synth(Shape::LaplaceNaive, true, "cupti.trace"), None),
        (synth(Shape::LooseOps, true, "loose_cupti.trace"), None),
        (gpu("gcc_naive"), Some(64)),
        (gpu("gcc_data"), Some(64)),
        (gpu("shim_naive_cudaevents"), Some(64)),
    ] {
        let (streamed, whole) = (dir.path().join("s.pftrace"), dir.path().join("w.pftrace"));
        let said = export_file(&trace, &streamed, "perfetto", window);
        assert!(
            !said.contains("not streamed"),
            "{}: {said}",
            trace.display()
        );
        export_whole(&trace, &whole, "perfetto");
        let (Some(s), Some(w)) = (decode(&streamed), decode(&whole)) else {
            return;
        };
        let (sf, wf) = (perfetto_flows(&s), perfetto_flows(&w));
        assert!(!sf.is_empty(), "{}", trace.display());
        assert_eq!(sf, wf, "{}: flows", trace.display());
        assert_eq!(
            perfetto_meaning(&s),
            perfetto_meaning(&w),
            "{}",
            trace.display()
        );
    }
}

/// A device record whose issuing host slice has left the kept host slices (more than 65,536
/// written on its track since) gets no flow in a streamed export, and the export says how many
/// did not, where the whole-trace export links it.
#[test]
fn a_device_record_later_than_its_kept_issuer_is_counted_not_linked() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Synth::new("/home/user/late", 9, None);
    s.header
        .extra
        .push(("device_activity".into(), "cupti".into()));
    let launches = 70_000u64;
    for i in 0..launches {
        s.launch(i * 100, i * 100 + 50, 0, "k", (1, 1, 1), None);
    }
    let end = launches * 100;
    s.device_kernel(end, end + 10, Some(0x42), Some((0, 20)), "k");
    s.device_kernel(end + 20, end + 30, Some(0x42), Some((0, end - 80)), "k");
    let trace = dir.path().join("late.trace");
    s.write(&trace);
    let (streamed, whole) = (dir.path().join("s.json"), dir.path().join("w.json"));
    let said = export_file(&trace, &streamed, "chrome", None);
    assert!(!said.contains("not streamed"), "{said}");
    assert!(
        said.contains("warning: 1 device records have no flow arrow"),
        "{said}"
    );
    export_whole(&trace, &whole, "chrome");
    let flows = |p: &Path| {
        json_meaning(p)
            .0
            .iter()
            .filter(|e| e.contains(r#""ph":"s""#))
            .count()
    };
    assert_eq!((flows(&streamed), flows(&whole)), (1, 2));
}
