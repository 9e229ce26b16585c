//! `ACCPROF_SELF_TIME=1`: how long the application's threads spent inside accprof, printed at
//! exit. Whole-run overhead measurements on a GPU machine spread by several percent from run to
//! run; this says directly what the tool itself took on the threads it slows down: in the
//! OpenACC callbacks (including the call-site walks) and in CUPTI's driver-call callback. Costs
//! two clock reads per callback when on, one relaxed load when off.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// 0: not read yet (the first callback reads ACCPROF_SELF_TIME, so that it is measured too),
/// 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);
static OPENACC_NS: AtomicU64 = AtomicU64::new(0);
static OPENACC_CALLS: AtomicU64 = AtomicU64::new(0);
static DRIVER_NS: AtomicU64 = AtomicU64::new(0);
static DRIVER_CALLS: AtomicU64 = AtomicU64::new(0);

fn on() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = crate::config::flag_value("ACCPROF_SELF_TIME", false);
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

/// The start time of a callback to be measured, when measuring.
#[inline]
pub fn begin() -> Option<u64> {
    on().then(crate::clock::monotonic_ns)
}

/// Adds an OpenACC callback that began at `t0`.
#[inline]
pub fn end_openacc(t0: Option<u64>) {
    if let Some(t0) = t0 {
        OPENACC_NS.fetch_add(
            crate::clock::monotonic_ns().saturating_sub(t0),
            Ordering::Relaxed,
        );
        OPENACC_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Adds a CUPTI driver-call callback that began at `t0`.
#[inline]
pub fn end_driver(t0: Option<u64>) {
    if let Some(t0) = t0 {
        DRIVER_NS.fetch_add(
            crate::clock::monotonic_ns().saturating_sub(t0),
            Ordering::Relaxed,
        );
        DRIVER_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The exit line, when measuring: totals and means per callback.
pub fn line() -> Option<String> {
    if !on() {
        return None;
    }
    let part = |ns: &AtomicU64, n: &AtomicU64, what: &str| {
        let (ns, n) = (ns.load(Ordering::Relaxed), n.load(Ordering::Relaxed));
        format!(
            "{:.3} ms in {n} {what} ({:.0} ns each)",
            ns as f64 / 1e6,
            ns as f64 / n.max(1) as f64
        )
    };
    Some(format!(
        "accprof: time inside accprof on the application's threads: {}, {}",
        part(&OPENACC_NS, &OPENACC_CALLS, "OpenACC callbacks"),
        part(&DRIVER_NS, &DRIVER_CALLS, "CUDA driver callbacks")
    ))
}
