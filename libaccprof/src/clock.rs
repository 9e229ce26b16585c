//! The clock every timestamp in a trace comes from.
//!
//! Traces hold CLOCK_MONOTONIC nanoseconds: the clock runtimes and CUDA tools use on Linux, so
//! events compare across threads and with other tools, and wall-clock steps do not bend
//! durations. Reading it costs about 20 ns through the vDSO, a third of our budget per event.
//! When the kernel itself keeps time with the TSC (clocksource "tsc": synchronised across cores,
//! constant rate), callbacks read the TSC instead (about 7 ns) and the writer thread converts
//! ticks to CLOCK_MONOTONIC with anchors, pairs of (ticks, nanoseconds) read back to back. A
//! tick between two anchors is interpolated linearly, so conversion is monotonic and exact to
//! the jitter of reading the two clocks. Otherwise callbacks read CLOCK_MONOTONIC directly and
//! conversion is the identity.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// CLOCK_MONOTONIC in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own; CLOCK_MONOTONIC cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Wall-clock time, nanoseconds since the Unix epoch (for the trace header only).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

static USE_TSC: AtomicBool = AtomicBool::new(false);
static DECIDED: OnceLock<()> = OnceLock::new();

/// Chooses the clock once, before the first event is timed.
pub fn init() {
    DECIDED.get_or_init(|| {
        let tsc = cfg!(target_arch = "x86_64")
            && crate::config::clock_setting() != Some(true)
            && std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|s| s.trim() == "tsc");
        USE_TSC.store(tsc, Ordering::Relaxed);
        crate::hot::set(crate::hot::TSC, tsc);
    });
}

/// Whether [`now`] reads TSC ticks (else CLOCK_MONOTONIC ns), for the live file's header.
pub fn uses_ticks() -> bool {
    init();
    USE_TSC.load(Ordering::Relaxed)
}

/// A timestamp in the hot path's unit: TSC ticks or nanoseconds (see module docs). Convert with
/// [`Converter`] before writing.
#[inline]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Ordering::Relaxed) {
        // SAFETY: rdtsc has no preconditions on x86-64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// [`now`] for a callback that has read the hot word already: TSC ticks when its TSC bit is
/// set.
#[inline(always)]
pub fn now_for(hot_word: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if hot_word & crate::hot::TSC != 0 {
        // SAFETY: rdtsc has no preconditions on x86-64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    let _ = hot_word;
    monotonic_ns()
}

/// Turns [`now`] values into CLOCK_MONOTONIC nanoseconds. Owned by the writer thread.
#[derive(Debug)]
pub struct Converter {
    tsc: bool,
    /// (ticks, ns), increasing in both.
    anchors: Vec<(u64, u64)>,
    /// The segment between two anchors that the last conversion used: the writer converts
    /// two timestamps per event, nearly all in the same segment.
    segment: Option<Segment>,
}

/// Ticks `t0..=t1` map to `n0 + (t - t0) * rate` nanoseconds, the rate in 32-bit fixed point
/// (integer arithmetic: two float conversions per timestamp were a tenth of the writer's time).
#[derive(Clone, Copy, Debug)]
struct Segment {
    t0: u64,
    t1: u64,
    n0: u64,
    /// Nanoseconds per tick, times 2^32.
    rate: u64,
}

impl Segment {
    #[inline]
    fn at(&self, t: u64) -> u64 {
        let dt = u128::from(t - self.t0);
        self.n0 + ((dt * u128::from(self.rate)) >> 32) as u64
    }
}

impl Default for Converter {
    fn default() -> Self {
        Self::new()
    }
}

impl Converter {
    pub fn new() -> Self {
        init();
        let mut c = Self {
            tsc: USE_TSC.load(Ordering::Relaxed),
            anchors: Vec::new(),
            segment: None,
        };
        c.anchor();
        c
    }

    /// Records a fresh (ticks, ns) pair. Called on every sweep and before converting ticks
    /// newer than the last anchor.
    pub fn anchor(&mut self) {
        if !self.tsc {
            return;
        }
        // The pair with the smallest gap between its two tick reads is the most exact.
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..3 {
            let t0 = now();
            let ns = monotonic_ns();
            let t1 = now();
            if t1.wrapping_sub(t0) < best.0 {
                best = (t1.wrapping_sub(t0), t0 / 2 + t1 / 2, ns);
            }
        }
        let (_, ticks, ns) = best;
        if self
            .anchors
            .last()
            .is_none_or(|&(t, n)| ticks > t && ns > n)
        {
            self.anchors.push((ticks, ns));
        }
    }

    /// Nanoseconds for a hot-path timestamp. Takes `&mut self`: it re-anchors as it goes.
    #[allow(clippy::wrong_self_convention)]
    pub fn to_ns(&mut self, t: u64) -> u64 {
        if !self.tsc {
            return t;
        }
        match self.segment {
            // Anchors are only ever added after the last one: a segment between two of them
            // never changes.
            Some(s) if (s.t0..=s.t1).contains(&t) => s.at(t),
            _ => self.convert_searched(t),
        }
    }

    #[cold]
    fn convert_searched(&mut self, t: u64) -> u64 {
        if self.anchors.last().is_some_and(|&(last, _)| t > last) || self.anchors.len() < 2 {
            self.anchor();
        }
        let a = &self.anchors;
        // The segment containing t; before the first anchor or after the last, extend the
        // nearest segment. Batches arrive in time order, so t is nearly always in the last
        // segment: checked first, before searching all anchors (one per sweep, growing).
        let last = a.len().max(2) - 1;
        let i = if a.len() >= 2 && a[last - 1].0 <= t {
            last
        } else {
            a.partition_point(|&(ticks, _)| ticks <= t).clamp(1, last)
        };
        let (Some(&(t0, n0)), Some(&(t1, n1))) = (a.get(i - 1), a.get(i)) else {
            return a.first().map_or(t, |&(_, n)| n);
        };
        let dt = t1.saturating_sub(t0).max(1);
        let rate = n1.saturating_sub(n0) as f64 / dt as f64;
        let fixed = u64::try_from((u128::from(n1.saturating_sub(n0)) << 32) / u128::from(dt));
        if let (true, Ok(rate)) = ((t0..=t1).contains(&t), fixed) {
            self.segment = Some(Segment { t0, t1, n0, rate });
        }
        let ns = n0 as f64 + (t as f64 - t0 as f64) * rate;
        ns.max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_on_the_segment_that_holds_them() {
        let mut c = Converter {
            tsc: true,
            anchors: vec![(100, 1000), (200, 2000), (300, 4000)],
            segment: None,
        };
        assert_eq!(c.to_ns(250), 3000, "last segment");
        assert_eq!(c.to_ns(300), 4000);
        assert_eq!(c.to_ns(150), 1500, "an older segment");
        assert_eq!(c.to_ns(200), 2000);
        assert_eq!(
            c.to_ns(50),
            500,
            "before the first anchor: the first segment extended"
        );
    }

    #[test]
    fn the_remembered_segment_converts_as_the_search_does() {
        // A 2.4 GHz TSC, anchors 200 ms apart, well into a long run.
        let (t0, n0) = (9_000_000_000_000u64, 3_750_000_000_000u64);
        let anchors = vec![(t0, n0), (t0 + 480_000_000, n0 + 200_000_000)];
        let mut fast = Converter {
            tsc: true,
            anchors: anchors.clone(),
            segment: None,
        };
        for k in 0..1000u64 {
            let t = t0 + k * 479_999;
            // A fresh converter searches every time; `fast` keeps the segment after the first.
            let mut searched = Converter {
                tsc: true,
                anchors: anchors.clone(),
                segment: None,
            };
            let (a, b) = (fast.to_ns(t), searched.to_ns(t));
            assert!(a.abs_diff(b) <= 1, "{t}: {a} vs {b}");
        }
        assert!(fast.segment.is_some());
    }

    #[test]
    fn converted_ticks_fall_between_the_clock_reads_around_them() {
        let mut c = Converter::new();
        // A tick read bracketed by two clock reads close together (retry if preempted).
        let (before, t, after) = (0..1000)
            .map(|_| (monotonic_ns(), now(), monotonic_ns()))
            .find(|(a, _, b)| b - a < 20_000)
            .expect("an undisturbed read");
        std::thread::sleep(std::time::Duration::from_millis(20));
        c.anchor();
        let got = c.to_ns(t);
        // Interpolation error is a few anchor-read jitters: allow 20 us either side.
        assert!(
            got + 20_000 >= before && got <= after + 20_000,
            "{before} <= {got} <= {after}"
        );
        let later = now();
        assert!(c.to_ns(later) >= got, "conversion is monotonic");
    }
}
