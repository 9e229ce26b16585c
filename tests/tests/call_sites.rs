//! Constructs get their source line from the stack when the runtime gives none (GCC), and
//! libaccprof skips most stack walks by remembering where it found the call site
//! (libaccprof/src/unwind.rs). Whatever the order and the stack depth the constructs are reached
//! at, every event must carry its own construct's line.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use std::collections::BTreeMap;

#[test]
fn every_construct_keeps_its_own_line_whatever_the_stack() {
    let dir = scratch("call-sites");
    let src = program_source("call_sites.c");
    let iters = 1000usize;
    let third = iters.div_ceil(3);
    let expect: Vec<(acc_event_t, &str, usize)> = vec![
        (acc_event_t::COMPUTE_CONSTRUCT_START, "/* first */", third),
        (
            acc_event_t::COMPUTE_CONSTRUCT_START,
            "/* second */",
            iters - third,
        ),
        (acc_event_t::COMPUTE_CONSTRUCT_START, "/* nested */", iters),
        (acc_event_t::COMPUTE_CONSTRUCT_START, "/* inline */", iters),
        (acc_event_t::ENTER_DATA_START, "/* enter-odd */", iters / 2),
        (acc_event_t::EXIT_DATA_START, "/* exit-odd */", iters / 2),
        (
            acc_event_t::UPDATE_START,
            "/* update-even */",
            iters - iters / 2,
        ),
    ];
    for flags in [&["-g"][..], &["-g", "-O2"][..], &["-g", "-O0"][..]] {
        let exe = compile_c("call_sites.c", &dir, flags);
        let trace = dir.join("t.trace");
        let out = run_profiled(
            &exe,
            &[&iters.to_string()],
            Load::Preload,
            &trace,
            &[("ACCPROF_QUIET", "1")],
        );
        assert!(out.status.success(), "{flags:?}: {}", stderr(&out));
        let t = load(&trace);
        let mut got: BTreeMap<(i32, Option<i64>), usize> = BTreeMap::new();
        for e in t
            .events
            .iter()
            .filter(|e| expect.iter().any(|(k, ..)| e.kind == *k) && !e.implicit())
        {
            *got.entry((e.kind.0, e.line_no())).or_default() += 1;
        }
        let mut want: BTreeMap<(i32, Option<i64>), usize> = BTreeMap::new();
        for (kind, marker, n) in &expect {
            *want
                .entry((kind.0, Some(pragma_line(&src, marker))))
                .or_default() += n;
        }
        assert_eq!(got, want, "{flags:?}: (event kind, line) -> count");
    }
}
