//! The bundled runtime finds the tool itself (acc_register_library): every loading path
//! records the same complete event stream, once, with what the runtime reports.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use accprof_trace::{EventFlags, Field};
use std::collections::BTreeMap;

fn counts(t: &accprof_trace::Trace) -> BTreeMap<i32, usize> {
    let mut m = BTreeMap::new();
    for e in &t.events {
        *m.entry(e.kind.0).or_default() += 1;
    }
    m
}

#[test]
fn shim_examples_record_once_under_every_loading_path() {
    let dir = scratch("shim");
    let saxpy = artifact("examples/saxpy");
    let mut first: Option<BTreeMap<i32, usize>> = None;
    for load in ALL_LOADS {
        let trace = dir.join(format!("{load:?}.trace"));
        let out = run_profiled(&saxpy, &["--n", "4096", "--reps", "5"], load, &trace, &[]);
        assert!(out.status.success(), "{load:?}: {}", stderr(&out));
        let t = load_trace(&trace);
        assert_eq!(
            t.header.registration, "acc_register_library",
            "{load:?}: the shim calls the tool's entry point"
        );
        let c = counts(&t);
        // 5 repetitions, each a compute construct with one launch and its uploads/downloads.
        assert_eq!(
            c.get(&acc_event_t::COMPUTE_CONSTRUCT_START.0),
            Some(&5),
            "{load:?}: {c:?}"
        );
        assert_eq!(
            c.get(&acc_event_t::ENQUEUE_LAUNCH_START.0),
            Some(&5),
            "{load:?}: {c:?}"
        );
        assert!(
            c.get(&acc_event_t::ENQUEUE_UPLOAD_START.0)
                .copied()
                .unwrap_or(0)
                >= 10,
            "{load:?}: {c:?}"
        );
        assert!(
            c.get(&acc_event_t::ENQUEUE_DOWNLOAD_START.0)
                .copied()
                .unwrap_or(0)
                >= 5,
            "{load:?}: {c:?}"
        );
        assert!(
            c.contains_key(&acc_event_t::RUNTIME_SHUTDOWN.0),
            "{load:?}: {c:?}"
        );
        match &first {
            None => first = Some(c),
            Some(f) => assert_eq!(
                f, &c,
                "{load:?} records what the first loading path recorded"
            ),
        }
        // The shim reports source locations itself: nothing is attributed.
        for e in &t.events {
            assert!(
                !e.flags().contains(EventFlags::ATTRIBUTED_LOCATION),
                "{e:?}"
            );
            assert!(
                !e.flags().contains(EventFlags::NO_START)
                    && !e.flags().contains(EventFlags::NO_END),
                "{load:?}: {e:?}"
            );
        }
        let upload = t
            .events
            .iter()
            .find(|e| e.kind == acc_event_t::ENQUEUE_UPLOAD_START)
            .unwrap();
        assert!(
            t.str(upload.var_name())
                .is_some_and(|v| v.starts_with('x') || v.starts_with('y')),
            "{:?}",
            t.str(upload.var_name())
        );
        assert_eq!(upload.bytes(), Some(4096 * 8));
        assert!(t
            .str(upload.src_file())
            .is_some_and(|f| f.ends_with("saxpy.rs")));
        assert!(upload.line_no().is_some());
        let launch = t
            .events
            .iter()
            .find(|e| e.kind == acc_event_t::ENQUEUE_LAUNCH_START)
            .unwrap();
        assert!(t.str(launch.kernel_name()).is_some());
        assert!(launch.get(Field::NumGangs).is_some());
    }
}

fn load_trace(p: &std::path::Path) -> accprof_trace::Trace {
    load(p)
}
