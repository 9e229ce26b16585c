//! A trace written by libaccprof in format version 1 (traces/gpu/shim_naive_cudaevents.trace,
//! recorded on a GPU, see traces/gpu/README.md), frozen here: every later reader must still open
//! it and read the same events.

use accprof_trace::{Field, Trace, TraceReader};
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1_shim_naive_cudaevents.trace")
}

#[test]
fn the_frozen_v1_trace_opens_and_reads_whole() {
    let bytes = std::fs::read(fixture()).expect("fixture present");
    assert_eq!(
        u16::from_le_bytes([bytes[8], bytes[9]]),
        1,
        "the fixture is a version 1 file"
    );
    let t = Trace::load(fixture()).expect("a v1 trace opens");
    assert!(t.truncation_warning.is_none());
    let footer = t.footer.as_ref().expect("the v1 trace ended cleanly");
    assert_eq!(
        t.events.len() as u64,
        footer.events_recorded,
        "every event the footer counts is read"
    );
    assert_eq!(t.events.len(), EVENTS);
    assert_eq!(t.dropped_total, 0);
    assert!(t.header.exe.ends_with("shim_laplace"), "{}", t.header.exe);
    let kernels = t
        .events
        .iter()
        .filter(|e| e.get(Field::KernelName).is_some())
        .count();
    assert_eq!(kernels, KERNEL_EVENTS);
    // Every string an event names is defined.
    for e in &t.events {
        for f in [
            Field::KernelName,
            Field::SrcFile,
            Field::FuncName,
            Field::VarName,
        ] {
            if let Some(id) = e.get(f) {
                assert!(
                    t.strings.get(accprof_trace::StrId(id as u32)).is_some(),
                    "{f:?} {id} undefined"
                );
            }
        }
    }
}

#[test]
fn the_frozen_v1_trace_streams_the_same_events() {
    let mut r = TraceReader::open(fixture()).unwrap();
    let mut n = 0;
    while r.next_event().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, EVENTS);
    assert_eq!(r.truncated_bytes(), 0);
}

const EVENTS: usize = 107;
const KERNEL_EVENTS: usize = 16;
