//! Putting CUDA event times on CLOCK_MONOTONIC.
//!
//! `cuEventElapsedTime` only gives the time between two events of one context, as a float of
//! milliseconds. An anchor is an event recorded on an idle stream of our own and waited for,
//! with CLOCK_MONOTONIC read just before the record and just after the event is seen done: the
//! device passed it between the two reads, so its time is taken as their midpoint (off by at
//! most half the gap, a few microseconds; durations do not depend on it). Any other event X of
//! the context is then at `anchor_host_ns + elapsed(anchor, X)`.
//!
//! The collector takes a fresh anchor at every sweep (~200 ms) that has completed work to
//! place. That keeps `elapsed(anchor, X)` small: an f32 has 24 bits of mantissa, so at 200 ms
//! its step is about 15 ns, while 100 s from the anchor it would be about 8 us. Durations are
//! read directly as `elapsed(start, end)` of the operation's own pair, which is as precise as
//! CUDA events get (the driver documents about 0.5 us resolution).

use super::driver::{Driver, Handle, Query};
use std::time::{Duration, Instant};

/// Milliseconds (f32, as the driver gives them) to whole nanoseconds.
pub fn ms_to_ns(ms: f32) -> i64 {
    (f64::from(ms) * 1e6).round() as i64
}

/// CLOCK_MONOTONIC of an event `elapsed_ms` after (before, if negative) an anchor at `host_ns`.
pub fn place(host_ns: u64, elapsed_ms: f32) -> u64 {
    (host_ns as i128 + i128::from(ms_to_ns(elapsed_ms))).max(0) as u64
}

/// An event whose device time is known on CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub event: Handle,
    pub host_ns: u64,
}

/// Where an operation's pair of events lies on CLOCK_MONOTONIC: `(start_ns, end_ns)`.
pub fn span(d: &dyn Driver, anchor: Anchor, start: Handle, end: Handle) -> Option<(u64, u64)> {
    let from_anchor = d.elapsed_ms(anchor.event, start).ok()?;
    let dur = d.elapsed_ms(start, end).ok()?;
    let s = place(anchor.host_ns, from_anchor);
    Some((s, s + ms_to_ns(dur).max(0) as u64))
}

/// A gap between the two clock reads small enough to stop retrying.
const GOOD_GAP_NS: u64 = 20_000;
/// How long to wait for an anchor event on an idle stream before giving up for this sweep.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Records `event` on `stream` (ours, idle) and waits for it, up to three times until the gap
/// between the clock reads around it is small. Spins on cuEventQuery rather than blocking in
/// cuEventSynchronize: a blocking wake-up takes tens of microseconds, which would widen the
/// gap. Runs on the collector thread with the context current.
pub fn take(
    d: &dyn Driver,
    stream: Handle,
    event: Handle,
    clock: impl Fn() -> u64,
) -> Option<Anchor> {
    let mut got = None;
    for _ in 0..3 {
        let t0 = clock();
        d.event_record(event, stream).ok()?;
        let deadline = Instant::now() + MAX_WAIT;
        loop {
            match d.event_query(event) {
                Query::Done => break,
                Query::NotReady if Instant::now() < deadline => std::hint::spin_loop(),
                _ => return None,
            }
        }
        let t1 = clock();
        got = Some(Anchor {
            event,
            host_ns: t0 + (t1 - t0) / 2,
        });
        if t1 - t0 <= GOOD_GAP_NS {
            break;
        }
    }
    got
}

#[cfg(test)]
mod tests {
    use super::super::fake::Fake;
    use super::*;
    use std::cell::Cell;

    #[test]
    fn milliseconds_become_nanoseconds_rounded() {
        assert_eq!(ms_to_ns(1.0), 1_000_000);
        assert_eq!(ms_to_ns(0.0005), 500);
        assert_eq!(ms_to_ns(-0.25), -250_000);
        assert_eq!(place(1_000_000, 0.5), 1_500_000);
        assert_eq!(place(1_000_000, -0.5), 500_000);
        assert_eq!(place(100, -1.0), 0, "never below zero");
    }

    #[test]
    fn near_the_anchor_a_float_keeps_nanoseconds() {
        // 200 ms after the anchor (one sweep), 12 300 ns apart: still told apart to ~15 ns.
        let a = place(0, 200.0);
        let b = place(0, 200.0123);
        assert!((b - a).abs_diff(12_300) <= 16, "{}", b - a);
    }

    #[test]
    fn events_are_placed_from_the_anchor_and_durations_from_their_pair() {
        let d = Fake::default();
        let (anchor, s, e) = (
            d.event_create().unwrap(),
            d.event_create().unwrap(),
            d.event_create().unwrap(),
        );
        d.set_device_ms(10.0);
        d.event_record(anchor, 1).unwrap();
        d.set_device_ms(10.25);
        d.event_record(s, 2).unwrap();
        d.set_device_ms(10.75);
        d.event_record(e, 2).unwrap();
        let got = span(
            &d,
            Anchor {
                event: anchor,
                host_ns: 5_000_000_000,
            },
            s,
            e,
        )
        .unwrap();
        assert_eq!(got, (5_000_250_000, 5_000_750_000));
        // An event recorded before the anchor lands before it.
        let got = span(
            &d,
            Anchor {
                event: e,
                host_ns: 5_000_000_000,
            },
            s,
            e,
        )
        .unwrap();
        assert_eq!(got, (4_999_500_000, 5_000_000_000));
    }

    #[test]
    fn the_anchor_is_the_midpoint_of_the_clock_reads_around_it() {
        let d = Fake::default();
        let ev = d.event_create().unwrap();
        let t = Cell::new(1_000u64);
        let clock = || {
            t.set(t.get() + 4_000);
            t.get()
        };
        let a = take(&d, 9, ev, clock).unwrap();
        assert_eq!(
            a,
            Anchor {
                event: ev,
                host_ns: 7_000
            },
            "between 5000 and 9000"
        );
        assert_eq!(d.records(), 1, "a small gap needs no retry");
        d.hold(9);
        assert_eq!(
            take(&d, 9, ev, || 0),
            None,
            "a busy stream gives no anchor, after a bounded wait"
        );
    }
}
