//! Device records (kinds 1001-1003, from CUPTI) in `accprof export` and `accprof plot`: one track
//! per CUDA stream in the rank's process, slices named after the kernel or the copy, device
//! args, flow arrows from the host slice that issued them, and bytes in flight from the device's
//! copies. Checked on the traces recorded on a real GPU (traces/gpu/) and on synthetic ones.

mod tools;

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::device::{self, COPY_DTOH, COPY_HTOD};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use tools::chrome_validator::{validate, Summary};
use tools::synth::{construct, Synth};
use tools::{run, stderr};

fn gpu_trace(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/gpu")
        .join(format!("{name}.trace"));
    assert!(p.exists(), "{} is missing", p.display());
    p
}

/// The export of `traces` as parsed JSON events, with the validator's summary.
fn export(traces: &[&Path], dir: &Path) -> (Vec<Value>, Summary) {
    let out = dir.join("out.json");
    let mut args = vec!["export", "-o", out.to_str().unwrap()];
    args.extend(traces.iter().map(|p| p.to_str().unwrap()));
    let o = run(&args);
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    let json = std::fs::read_to_string(&out).unwrap();
    let sum = validate(&json).unwrap_or_else(|e| panic!("invalid export: {e}"));
    let v: Value = serde_json::from_str(&json).unwrap();
    (v["traceEvents"].as_array().unwrap().clone(), sum)
}

fn track_of(sum: &Summary, e: &Value) -> String {
    sum.threads[&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap())].clone()
}

fn device_slices(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["ph"] == "X" && e["cat"].as_str().is_some_and(|c| c.starts_with("device,")))
        .collect()
}

/// Per flow id, its start and finish events.
fn flows(evs: &[Value]) -> BTreeMap<u64, (Value, Value)> {
    let mut starts = BTreeMap::new();
    let mut ends = BTreeMap::new();
    for e in evs {
        match e["ph"].as_str() {
            Some("s") => starts.insert(e["id"].as_u64().unwrap(), e.clone()),
            Some("f") => ends.insert(e["id"].as_u64().unwrap(), e.clone()),
            _ => None,
        };
    }
    starts
        .into_iter()
        .map(|(id, s)| {
            (
                id,
                (
                    s,
                    ends.remove(&id)
                        .expect("validated: every start has a finish"),
                ),
            )
        })
        .collect()
}

/// The device slice of `pid`/`tid` whose span holds `ts` (microseconds).
fn slice_at<'a>(evs: &'a [Value], pid: &Value, tid: &Value, ts: f64) -> Vec<&'a Value> {
    evs.iter()
        .filter(|e| e["ph"] == "X" && &e["pid"] == pid && &e["tid"] == tid)
        .filter(|e| {
            let (s, d) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
            s <= ts && ts <= s + d
        })
        .collect()
}

fn device_record_count(trace: &Path) -> usize {
    let o = run(&["dump", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    tools::stdout(&o)
        .lines()
        .filter(|l| l.contains("\"event_type\":100"))
        .count()
}

#[test]
fn gpu_traces_put_every_device_record_on_a_stream_track_with_a_flow_from_its_host_slice() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["gcc_naive", "gcc_data", "shim_naive", "shim_data"] {
        let trace = gpu_trace(name);
        let (evs, sum) = export(&[&trace], dir.path());
        let dev = device_slices(&evs);
        assert_eq!(
            dev.len(),
            device_record_count(&trace),
            "{name}: one slice per device record"
        );
        assert!(
            !evs.iter().any(|e| e["name"]
                .as_str()
                .is_some_and(|n| n.contains("unknown event"))),
            "{name}"
        );
        for e in &dev {
            let track = track_of(&sum, e);
            assert!(
                track.starts_with("device stream 0x"),
                "{name}: {e} on {track}"
            );
            let a = &e["args"];
            for key in [
                "device_start_ns",
                "device_end_ns",
                "correlation_id",
                "host_call_ns",
                "host_thread",
                "stream",
            ] {
                assert!(!a[key].is_null(), "{name}: no {key} in {e}");
            }
            // ts and dur are the device's times, on the export's clock.
            let dur_ns =
                a["device_end_ns"].as_u64().unwrap() - a["device_start_ns"].as_u64().unwrap();
            assert_eq!(
                (e["dur"].as_f64().unwrap() * 1000.0).round() as u64,
                dur_ns,
                "{name}: {e}"
            );
            assert!(
                track.contains(a["stream"].as_str().unwrap()),
                "{name}: {track} vs {e}"
            );
        }
        // The device tracks sit in the rank's one process, beside its host threads.
        assert_eq!(sum.processes.len(), 1, "{name}");
        // Every record knows its host call, and each gets an arrow from a host slice.
        let fl = flows(&evs);
        assert_eq!(fl.len(), dev.len(), "{name}: a flow per device record");
        assert_eq!(sum.flows, dev.len());
        for (s, f) in fl.values() {
            assert!(
                track_of(&sum, s).starts_with("host thread"),
                "{name}: flow starts on {}",
                track_of(&sum, s)
            );
            let ends = slice_at(&evs, &f["pid"], &f["tid"], f["ts"].as_f64().unwrap());
            assert_eq!(
                ends.len(),
                1,
                "{name}: the finish of {f} binds to one device slice"
            );
            assert!(
                ends[0]["args"]["issued_by"].is_string(),
                "{name}: {}",
                ends[0]
            );
        }
    }
}

#[test]
fn gcc_naive_names_copies_by_direction_size_and_array_and_ties_them_to_the_pragma_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (evs, sum) = export(&[&gpu_trace("gcc_naive")], dir.path());
    let threads: Vec<&str> = sum.shown.iter().map(String::as_str).collect();
    assert_eq!(
        threads,
        [
            "host thread 2540",
            "host thread 2540: device (synchronous)",
            "device stream 0x7"
        ]
    );
    let dev = device_slices(&evs);
    let names: BTreeSet<&str> = dev.iter().map(|e| e["name"].as_str().unwrap()).collect();
    for n in [
        "memcpy HtoD 128 MiB A",
        "memcpy HtoD 128 MiB Anew",
        "memcpy DtoH 128 MiB A",
        "memcpy HtoD 12 B",
    ] {
        assert!(names.contains(n), "no {n:?} in {names:?}");
    }
    // Kernels by their device function's name.
    let kernels: Vec<&&Value> = dev.iter().filter(|e| e["cat"] == "device,kernel").collect();
    assert_eq!(kernels.len(), 8);
    assert!(
        kernels
            .iter()
            .all(|k| k["name"].as_str().unwrap().starts_with("main$_omp_fn$")),
        "{kernels:?}"
    );
    assert_eq!(kernels[0]["args"]["event"], "device kernel");
    let up = dev
        .iter()
        .find(|e| e["name"] == "memcpy HtoD 128 MiB A")
        .unwrap();
    let a = &up["args"];
    assert_eq!(
        (a["bytes"].as_u64(), a["direction"].as_str()),
        (Some(128 << 20), Some("host to device"))
    );
    assert_eq!(
        (a["src_memory"].as_str(), a["dst_memory"].as_str()),
        (Some("pageable"), Some("device"))
    );
    assert_eq!(a["var"], "A");
    assert_eq!(a["stream"], "0x7");
    assert_eq!(a["host_thread"], 2540);
    // 128 MiB in ~16 ms: a pageable copy at a few GB/s, from the slice's own numbers.
    let gbs = a["GB_per_s"].as_f64().unwrap();
    let expect = (128u64 << 20) as f64
        / (a["device_end_ns"].as_u64().unwrap() - a["device_start_ns"].as_u64().unwrap()) as f64;
    assert!((gbs - expect).abs() < 0.01, "{gbs} vs {expect}");
    // The copy was issued inside a compute construct's implicit data entry at a pragma line of
    // scripts/gpu/laplace.c, and its flow starts there, on the host thread's track.
    let src = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/gpu/laplace.c"),
    )
    .unwrap();
    let pragmas: Vec<String> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with("#pragma acc parallel loop"))
        .map(|(i, _)| format!("laplace.c:{}", i + 1))
        .collect();
    let issued = a["issued_by"].as_str().unwrap();
    assert!(
        issued.starts_with("enter data (parallel)")
            && pragmas.iter().any(|p| issued.ends_with(p.as_str())),
        "{issued} vs {pragmas:?}"
    );
    let (s, _) = flows(&evs)
        .into_values()
        .find(|(_, f)| {
            slice_at(&evs, &f["pid"], &f["tid"], f["ts"].as_f64().unwrap())[0]["args"]
                ["correlation_id"]
                == a["correlation_id"]
        })
        .unwrap();
    assert_eq!(track_of(&sum, &s), "host thread 2540");
    let host = slice_at(&evs, &s["pid"], &s["tid"], s["ts"].as_f64().unwrap());
    assert!(host.iter().any(|h| h["name"] == issued), "{host:?}");
    // The flow starts at the host call, which comes before the copy starts on the device.
    let before_us = (a["device_start_ns"].as_u64().unwrap() - a["host_call_ns"].as_u64().unwrap())
        as f64
        / 1000.0;
    assert_eq!(a["call_to_start_ns"].as_f64().unwrap() / 1000.0, before_us);
    assert!(
        (s["ts"].as_f64().unwrap() - (up["ts"].as_f64().unwrap() - before_us)).abs() < 0.002,
        "{s} vs {up}"
    );
}

#[test]
fn gcc_bytes_in_flight_come_from_the_device_copies_only() {
    let dir = tempfile::tempdir().unwrap();
    let (evs, _) = export(&[&gpu_trace("gcc_naive")], dir.path());
    let counter: Vec<(f64, u64)> = evs
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "bytes in flight")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["args"]["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let copies: Vec<&Value> = device_slices(&evs)
        .into_iter()
        .filter(|e| e["cat"] == "device,transfer")
        .collect();
    // Each copy raises the counter at its device start and lowers it at its device end; the
    // copies run one at a time on stream 0x7, so the peak is the largest copy (not twice it,
    // as counting GCC's own data events as well would give).
    let first = copies
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(f64::MAX, f64::min);
    assert_eq!(counter.first().map(|c| c.0), Some(first));
    let largest = copies
        .iter()
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(counter.iter().map(|c| c.1).max(), Some(largest));
    assert_eq!(counter.last().map(|c| c.1), Some(0));
    let starts: BTreeSet<String> = copies.iter().map(|e| e["ts"].to_string()).collect();
    let ends: BTreeSet<String> = copies
        .iter()
        .map(|e| {
            let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64
                + (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
            serde_json::to_string(&serde_json::Number::from_f64(ns as f64 / 1000.0).unwrap())
                .unwrap()
        })
        .collect();
    for (ts, _) in &counter {
        let t = serde_json::Number::from_f64(*ts).unwrap().to_string();
        assert!(
            starts.contains(&t) || ends.contains(&t),
            "counter step at {t} is no copy's start or end"
        );
    }
}

#[test]
fn shim_staged_copies_on_helper_threads_flow_from_the_upload_that_staged_them() {
    let dir = tempfile::tempdir().unwrap();
    let (evs, sum) = export(&[&gpu_trace("shim_naive")], dir.path());
    let fl = flows(&evs);
    // The shim uploads through 2 MiB pinned chunks copied by helper threads that report no
    // OpenACC events: 512 copies, each flowing from the upload on the main thread.
    let staged: Vec<&(Value, Value)> = fl
        .values()
        .filter(|(_, f)| {
            let d = slice_at(&evs, &f["pid"], &f["tid"], f["ts"].as_f64().unwrap())[0];
            d["name"].as_str().unwrap().starts_with("memcpy HtoD 2 MiB")
        })
        .collect();
    assert_eq!(staged.len(), 512);
    for (s, _) in staged {
        assert_eq!(track_of(&sum, s), "host thread 0: device (synchronous)");
        let host = slice_at(&evs, &s["pid"], &s["tid"], s["ts"].as_f64().unwrap());
        assert!(
            host.iter().any(|h| {
                // "upload 128 MiB A[0:n*m]": the upload of A or Anew.
                h["name"].as_str().unwrap().starts_with("upload ")
                    && h["args"]["var"]
                        .as_str()
                        .is_some_and(|v| v.starts_with('A'))
            }),
            "{host:?}"
        );
    }
    let streams = sum
        .threads
        .values()
        .filter(|n| n.starts_with("device stream 0x"))
        .count();
    assert!(
        streams > 30,
        "the shim's staging streams each get a track: {streams}"
    );
}

/// A trace with device records: an async construct on queue 1 whose OpenACC events name the
/// stream, two kernels on it that overlap (device clocks may say so), a copy on an unnamed
/// stream and one with no stream, a memset, and a record whose host call is unknown.
fn synthetic_device_trace(dir: &Path) -> PathBuf {
    const STREAM: u64 = 0x7f00_1000;
    let mut s = Synth::new("/home/user/pipeline", 77, None);
    s.header
        .extra
        .push(("device_activity".into(), "cupti".into()));
    construct(
        s.ev(acc_event_t::COMPUTE_CONSTRUCT_START, 1_000, 20_000, 0),
        acc_construct_t::PARALLEL,
    );
    s.at("/src/pipe.c", "main", 10);
    s.launch(2_000, 4_000, 0, "k_10", (64, 1, 128), Some(1));
    s.events
        .last_mut()
        .unwrap()
        .set(accprof_trace::Field::AsyncHandle, STREAM);
    s.at("/src/pipe.c", "main", 10);
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        5_000,
        9_000,
        0,
        "B",
        1 << 20,
        None,
    );
    s.at("/src/pipe.c", "main", 10);
    s.device_kernel(6_000, 16_000, Some(STREAM), Some((0, 3_000)), "k_10");
    s.device_kernel(15_000, 18_000, Some(STREAM), Some((0, 3_500)), "k_10b");
    s.device_copy(
        6_500,
        8_500,
        Some(0x42),
        Some((0, 6_000)),
        COPY_HTOD,
        1 << 20,
        Some("B"),
    );
    s.device_copy(
        21_000,
        22_000,
        None,
        Some((0, 20_500)),
        COPY_DTOH,
        4096,
        None,
    )
    .set_i64(accprof_trace::Field::LineNo, 12);
    let src = s.str("/src/pipe.c");
    s.events
        .last_mut()
        .unwrap()
        .set(accprof_trace::Field::SrcFile, u64::from(src.0));
    s.device_record(
        device::MEMSET,
        23_000,
        23_100,
        Some(0x42),
        Some((0, 20_600)),
    )
    .set(accprof_trace::Field::Bytes, 256);
    s.device_kernel(30_000, 31_000, Some(0x42), None, "orphan");
    let p = dir.join("pipeline.trace");
    s.write(&p);
    p
}

#[test]
fn synthetic_device_records_get_stream_tracks_names_args_lanes_and_flows() {
    let dir = tempfile::tempdir().unwrap();
    let (evs, sum) = export(&[&synthetic_device_trace(dir.path())], dir.path());
    let threads: Vec<&str> = sum.shown.iter().map(String::as_str).collect();
    assert_eq!(
        threads,
        [
            "host thread 0",
            "host thread 0: device (synchronous)",
            "device: async queue 1",
            "device (no stream)",
            "device stream 0x42",
            "device stream 0x7f001000 (queue 1)",
            "device stream 0x7f001000 (queue 1) (overlapping, lane 2)",
        ]
    );
    let dev = device_slices(&evs);
    let by_name = |n: &str| {
        *dev.iter()
            .find(|e| e["name"] == n)
            .unwrap_or_else(|| panic!("no slice {n:?}"))
    };
    // The two kernels overlap on their stream: the second moves to a lane of its own, whole.
    assert_eq!(
        track_of(&sum, by_name("k_10")),
        "device stream 0x7f001000 (queue 1)"
    );
    assert_eq!(
        track_of(&sum, by_name("k_10b")),
        "device stream 0x7f001000 (queue 1) (overlapping, lane 2)"
    );
    assert_eq!(by_name("k_10b")["dur"], 3);
    assert_eq!(by_name("k_10")["args"]["kernel"], "k_10");
    let copy = by_name("memcpy HtoD 1 MiB B");
    assert_eq!(track_of(&sum, copy), "device stream 0x42");
    assert_eq!(copy["args"]["GB_per_s"], 524.29);
    assert_eq!(copy["args"]["call_to_start_ns"], 500);
    // A record that carries a source location shows it; one with no stream has its own track.
    let down = by_name("memcpy DtoH 4 KiB");
    assert_eq!(track_of(&sum, down), "device (no stream)");
    assert_eq!(
        (
            down["args"]["src_file"].as_str(),
            down["args"]["line"].as_i64()
        ),
        (Some("/src/pipe.c"), Some(12))
    );
    assert_eq!(down["args"]["stream"], "none");
    let memset = by_name("memset");
    assert_eq!(
        (memset["args"]["bytes"].as_u64(), memset["cat"].as_str()),
        (Some(256), Some("device,memset"))
    );
    // Flows: the kernels from the construct (their async launch sits on the queue's track, not
    // the thread's), the copy from the upload (the innermost host slice at its call), the late
    // copy and memset from nothing (their calls fall outside every slice), the orphan from
    // nothing (no host call).
    let fl = flows(&evs);
    let issued: BTreeMap<String, String> = fl
        .values()
        .map(|(s, f)| {
            let d = slice_at(&evs, &f["pid"], &f["tid"], f["ts"].as_f64().unwrap());
            assert_eq!(d.len(), 1);
            let h = slice_at(&evs, &s["pid"], &s["tid"], s["ts"].as_f64().unwrap());
            let inner = h
                .iter()
                .max_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap())
                .unwrap();
            assert_eq!(d[0]["args"]["issued_by"], inner["name"]);
            (
                d[0]["name"].as_str().unwrap().to_string(),
                inner["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeMap<String, String> = [
        ("k_10", "parallel pipe.c:10"),
        ("k_10b", "parallel pipe.c:10"),
        ("memcpy HtoD 1 MiB B", "upload 1 MiB B"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(issued, expected);
    assert!(by_name("orphan")["args"]["issued_by"].is_null());
    // Bytes in flight: the device copies only (1 MiB, then 4 KiB), not the runtime's upload.
    let in_flight: Vec<u64> = evs
        .iter()
        .filter(|e| e["name"] == "bytes in flight")
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(in_flight, [1 << 20, 0, 4096, 0]);
}

#[test]
fn plot_shows_device_stream_lanes_and_labels_device_times() {
    let dir = tempfile::tempdir().unwrap();
    for (trace, stream) in [
        (gpu_trace("gcc_naive"), "device stream 0x7"),
        (synthetic_device_trace(dir.path()), "device stream 0x42"),
    ] {
        let out = dir.path().join("p.svg");
        let o = run(&["plot", trace.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let svg = std::fs::read_to_string(&out).unwrap();
        let texts: Vec<String> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect();
        for expected in [stream, "kernels [device]", "data [device]"] {
            assert!(
                texts.iter().any(|t| t == expected),
                "no {expected:?} in {texts:?}"
            );
        }
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("Time per construct") && t.contains("[device]")),
            "{texts:?}"
        );
    }
}

#[test]
fn the_validator_checks_flows() {
    let head = r#"{"traceEvents":[
        {"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},
        {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"host"}},
        {"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"device"}},
        {"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"construct"},
        {"ph":"X","pid":1,"tid":2,"ts":20,"dur":10,"name":"kernel"},"#;
    let with = |tail: &str| format!("{head}{tail}]}}");
    let good = with(
        r#"{"ph":"s","id":1,"pid":1,"tid":1,"ts":5,"name":"issued","cat":"device"},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":21,"name":"issued","cat":"device"}"#,
    );
    assert_eq!(validate(&good).unwrap().flows, 1);
    let unfinished =
        with(r#"{"ph":"s","id":1,"pid":1,"tid":1,"ts":5,"name":"issued","cat":"device"}"#);
    assert!(validate(&unfinished).unwrap_err().contains("no finish"));
    let outside = with(
        r#"{"ph":"s","id":1,"pid":1,"tid":1,"ts":5,"name":"issued","cat":"device"},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":35,"name":"issued","cat":"device"}"#,
    );
    assert!(validate(&outside).unwrap_err().contains("within no slice"));
    let unstarted = with(
        r#"{"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":21,"name":"issued","cat":"device"}"#,
    );
    assert!(validate(&unstarted).unwrap_err().contains("no start"));
    let backwards = with(
        r#"{"ph":"s","id":1,"pid":1,"tid":2,"ts":25,"name":"issued","cat":"device"},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":1,"ts":5,"name":"issued","cat":"device"}"#,
    );
    assert!(validate(&backwards)
        .unwrap_err()
        .contains("before its start"));
}
