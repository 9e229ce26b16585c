//! Kernels so short that the launch overhead dominates.

use crate::advise::*;
use crate::format::{duration, percent};
use crate::model::*;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct ShortKernels;

impl AdviceRule for ShortKernels {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::ShortKernels]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        short_kernels(p, out);
    }
}

fn short_kernels(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns;
    for k in &p.kernels {
        let Some(c) = p.construct(k.construct) else {
            continue;
        };
        if k.launches < 1000 || c.reached == 0 {
            continue;
        }
        let per_construct = c.time.total_ns / c.reached;
        if per_construct > 20_000 || c.time.total_ns * 10 < wall {
            continue;
        }
        // The launch call's host time: with device records `time` is the kernel's run instead.
        let overhead = if k.time.source == TimeSource::Device {
            k.host_time.min_ns
        } else {
            k.time.min_ns
        };
        let saving = (k.launches - k.async_launches) * overhead;
        if saving == 0 {
            continue;
        }
        out.push(Finding {
            rule: Rule::ShortKernels,
            title: format!("kernel {} is so short that launching it dominates", k.name),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: k.launches,
                bytes: 0,
                time_ns: c.time.total_ns,
                details: vec![format!(
                    "{} launches, {} per construct on average, of which the launch call alone takes at least {} ({} of the run in this construct)",
                    k.launches,
                    duration(per_construct),
                    duration(overhead),
                    percent(c.time.total_ns, wall)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "give each launch more work (fuse the loop at {} with its neighbours, or `collapse` nested loops), or add `async` so launches overlap",
                c.location.short()
            ),
            events: k.samples.clone(),
            time_ranges: vec![(k.first_ns, k.last_ns)],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;

    fn run(launches: u64) -> Vec<Finding> {
        let mut r = Run::new();
        for _ in 0..launches {
            r.compute(42, 10 * US, 0, |r, t| {
                vec![r.launch(t + US, t + 3 * US, 42, "main_42_gpu", 256, 128)]
            });
        }
        let wall = r.now;
        findings(&ShortKernels, &r.profile(wall))
    }

    #[test]
    fn fires_on_a_thousand_launches_of_ten_microseconds() {
        let f = run(1000);
        assert_eq!(rules_of(&f), [Rule::ShortKernels]);
        assert_eq!(f[0].evidence.count, 1000);
        assert_eq!(
            f[0].estimated_saving_ns,
            1000 * 2 * US,
            "every launch call's cost"
        );
    }

    #[test]
    fn silent_below_a_thousand_launches() {
        assert!(run(999).is_empty());
    }
}
