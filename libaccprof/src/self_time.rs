//! `ACCPROF_SELF_TIME=1`: how long the application's threads spent inside accprof, printed at
//! exit. Whole-run overhead measurements on a GPU machine spread by several percent from run to
//! run; this says directly what the tool itself took on the threads it slows down: in the
//! OpenACC callbacks (including the call-site walks) and in CUPTI's driver-call callback.
//!
//! Each measured callback reads the hot path's clock twice (the TSC where the kernel keeps
//! time with it: a few nanoseconds, where CLOCK_MONOTONIC through the vDSO costs 20-40 and
//! would be counted as the tool's); the ticks become nanoseconds at exit, at the rate seen
//! between the first measurement and then. Off, it costs nothing: the callback's first test
//! (crate::hot) sends it to the measured path only when on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

static READ: AtomicBool = AtomicBool::new(false);
static OPENACC_TICKS: AtomicU64 = AtomicU64::new(0);
static OPENACC_CALLS: AtomicU64 = AtomicU64::new(0);
static DRIVER_TICKS: AtomicU64 = AtomicU64::new(0);
static DRIVER_CALLS: AtomicU64 = AtomicU64::new(0);
/// The callback that started recording (creating the trace, its live file and the writer
/// thread): once per run, said apart so that it does not blur the per-callback figure.
static START_TICKS: AtomicU64 = AtomicU64::new(0);
/// A (clock, CLOCK_MONOTONIC ns) pair from the first measurement, for the rate at exit.
static FIRST: OnceLock<(u64, u64)> = OnceLock::new();

/// Reads ACCPROF_SELF_TIME once (at the first callback, or registration); sets the hot bit.
pub fn init() {
    if READ.swap(true, Ordering::AcqRel) {
        return;
    }
    let on = crate::config::flag_value("ACCPROF_SELF_TIME", false);
    crate::hot::set(crate::hot::SELF_TIME, on);
}

fn on() -> bool {
    init();
    crate::hot::load() & crate::hot::SELF_TIME != 0
}

/// The start of a callback to be measured, when measuring.
#[inline]
pub fn begin() -> Option<u64> {
    if !on() {
        return None;
    }
    let t = crate::clock::now();
    FIRST.get_or_init(|| (t, crate::clock::monotonic_ns()));
    Some(t)
}

/// Adds an OpenACC callback that began at `t0`.
#[inline]
pub fn end_openacc(t0: Option<u64>) {
    if let Some(t0) = t0 {
        OPENACC_TICKS.fetch_add(crate::clock::now().saturating_sub(t0), Ordering::Relaxed);
        OPENACC_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The callback that began at `t0` started recording.
pub fn end_start(t0: Option<u64>) {
    if let Some(t0) = t0 {
        START_TICKS.fetch_add(crate::clock::now().saturating_sub(t0), Ordering::Relaxed);
    }
}

/// Adds a CUPTI driver-call callback that began at `t0`.
#[inline]
pub fn end_driver(t0: Option<u64>) {
    if let Some(t0) = t0 {
        DRIVER_TICKS.fetch_add(crate::clock::now().saturating_sub(t0), Ordering::Relaxed);
        DRIVER_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Nanoseconds per clock unit, from the first measurement to now (1 when the clock is
/// CLOCK_MONOTONIC itself).
fn ns_per_unit() -> f64 {
    if !crate::clock::uses_ticks() {
        return 1.0;
    }
    match FIRST.get() {
        Some(&(t0, n0)) => {
            let (t1, n1) = (crate::clock::now(), crate::clock::monotonic_ns());
            if t1 > t0 && n1 > n0 {
                (n1 - n0) as f64 / (t1 - t0) as f64
            } else {
                1.0
            }
        }
        None => 1.0,
    }
}

/// The exit line, when measuring: totals and means per callback.
pub fn line() -> Option<String> {
    if !on() {
        return None;
    }
    let rate = ns_per_unit();
    let part = |ticks: &AtomicU64, n: &AtomicU64, what: &str| {
        let (ns, n) = (
            ticks.load(Ordering::Relaxed) as f64 * rate,
            n.load(Ordering::Relaxed),
        );
        format!(
            "{:.3} ms in {n} {what} ({:.0} ns each)",
            ns / 1e6,
            ns / n.max(1) as f64
        )
    };
    Some(format!(
        "accprof: time inside accprof on the application's threads: {}, {}; starting (the first event: trace, live file, writer thread) {:.3} ms",
        part(&OPENACC_TICKS, &OPENACC_CALLS, "OpenACC callbacks"),
        part(&DRIVER_TICKS, &DRIVER_CALLS, "CUDA driver callbacks"),
        START_TICKS.load(Ordering::Relaxed) as f64 * rate / 1e6
    ))
}
