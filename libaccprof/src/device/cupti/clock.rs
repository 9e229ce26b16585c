//! CUPTI's timestamps on the trace's clock (CLOCK_MONOTONIC).
//!
//! Where CUPTI takes a timestamp function (`cuptiActivityRegisterTimestampCallback`, CUDA 12.6
//! and later), accprof hands it CLOCK_MONOTONIC and no conversion is needed. Older CUPTIs use
//! CLOCK_REALTIME on Linux, which can be stepped and slewed: there, pairs of (CUPTI timestamp,
//! CLOCK_MONOTONIC) read back to back are kept as anchors, at start and at every delivered
//! buffer, and a timestamp is interpolated between the anchors around it (extrapolated with the
//! nearest pair's offset outside them), as libaccprof's TSC conversion does.

/// Anchors (cupti_ns, monotonic_ns), in increasing CUPTI time.
#[derive(Debug, Default, Clone)]
pub struct Anchors {
    pts: Vec<(u64, u64)>,
}

impl Anchors {
    /// Adds a pair; pairs out of order (a stepped wall clock) start a new segment only when
    /// they move forward.
    pub fn push(&mut self, cupti: u64, mono: u64) {
        if self.pts.last().is_none_or(|&(c, m)| cupti > c && mono > m) {
            self.pts.push((cupti, mono));
        }
    }

    #[cfg(test)]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.pts.len()
    }

    /// The monotonic time of CUPTI timestamp `t`.
    pub fn to_ns(&self, t: u64) -> u64 {
        let a = &self.pts;
        match a.len() {
            0 => t,
            1 => offset(a[0], t),
            _ => {
                let i = a.partition_point(|&(c, _)| c <= t);
                if i == 0 {
                    return offset(a[0], t);
                }
                if i == a.len() {
                    return offset(a[a.len() - 1], t);
                }
                let ((c0, m0), (c1, m1)) = (a[i - 1], a[i]);
                let rate = (m1 - m0) as f64 / (c1 - c0) as f64;
                m0 + ((t - c0) as f64 * rate) as u64
            }
        }
    }
}

fn offset((c, m): (u64, u64), t: u64) -> u64 {
    (t as i128 - c as i128 + m as i128).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_anchor_shifts() {
        let mut a = Anchors::default();
        a.push(1_000_000, 50);
        assert_eq!(a.to_ns(1_000_100), 150);
        assert_eq!(a.to_ns(999_990), 40);
    }

    #[test]
    fn between_anchors_interpolates_and_stays_monotonic() {
        let mut a = Anchors::default();
        a.push(1_000, 10_000);
        // The wall clock ran 1% fast against the monotonic clock.
        a.push(101_000, 109_000);
        assert_eq!(a.to_ns(51_000), 59_500);
        let mut last = 0;
        for t in (0..200_000).step_by(997) {
            let n = a.to_ns(t);
            assert!(n >= last, "monotonic at {t}");
            last = n;
        }
    }

    #[test]
    fn a_clock_stepped_backwards_is_ignored() {
        let mut a = Anchors::default();
        a.push(1_000, 10);
        a.push(500, 20);
        assert_eq!(a.len(), 1);
    }
}
