//! The export as the Chrome DevTools Performance panel reads it: loaded with its trace engine
//! (@paulirish/trace_engine) through tests/tools/node/check-chrome-trace.mjs, every slice must
//! be kept, on a track with the name the export gave it, nested as the export nested it.
//!
//! Runs when `node` is on PATH. The engine is installed with
//!     npm ci --prefix accprof-cli/tests/tools/node
//! and the test fails, naming that command, when node is there but the engine is not.

mod tools;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use tools::chrome_validator::validate;

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn devtools_trace_engine_keeps_every_slice_on_its_named_track() {
    if !node_available() {
        // Allowed by the project's test conventions for this one check: node is optional.
        eprintln!("note: node is not installed; the DevTools trace engine check did not run");
        return;
    }
    let tool_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/node");
    assert!(
        tool_dir.join("node_modules/@paulirish/trace_engine").is_dir(),
        "the DevTools trace engine is not installed: run `npm ci --prefix accprof-cli/tests/tools/node`"
    );
    let dir = tempfile::tempdir().unwrap();
    let trace = tools::laplace_with_lanes_and_streams(dir.path());
    let json_path = dir.path().join("laplace.json");
    let o = tools::run(&[
        "export",
        "-o",
        json_path.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", tools::stderr(&o));
    let ours = validate(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    let out = Command::new("node")
        .arg(tool_dir.join("check-chrome-trace.mjs"))
        .arg(&json_path)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "trace engine failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the check prints JSON");
    let processes = seen["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1);
    let threads = processes[0]["threads"].as_array().unwrap();
    let names: Vec<&str> = threads
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = ours.threads.values().map(String::as_str).collect();
    assert_eq!(names, expected);
    let kept: u64 = threads.iter().map(|t| t["entries"].as_u64().unwrap()).sum();
    assert_eq!(
        kept as usize, ours.complete,
        "the engine dropped slices: {seen}"
    );
    assert_eq!(ours.flows, 3);
    assert!(
        names.contains(&"device stream 0x7f10 (overlapping, lane 2)"),
        "{names:?}"
    );
    // Four parallel constructs each hold their implicit enter and exit data: 4 x 2 children.
    let host = threads
        .iter()
        .find(|t| t["name"] == "host thread 0")
        .unwrap();
    assert_eq!(
        host["entries"].as_u64().unwrap() - host["roots"].as_u64().unwrap(),
        8
    );
}
