//! The device idles between constructs while the host works (nsys analyze's gpu_gaps and
//! gpu_time_util): the host code between two constructs keeps the device waiting. Needs device
//! records, which say when the device itself was busy.

use crate::advise::*;
use crate::format::{duration, percent};
use crate::model::*;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct DeviceIdleGaps;

/// Gaps between one pair of constructs matter from this much in total...
const MIN_TOTAL_NS: u64 = 1_000_000;
/// ...and from this share of the run (1/20).
const MIN_SHARE_DIV: u64 = 20;
/// Findings at most: the largest pairs.
const MAX_FINDINGS: usize = 3;

impl AdviceRule for DeviceIdleGaps {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::DeviceIdleGaps]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        device_idle_gaps(p, out);
    }
}

fn line_of(c: Option<&Construct>) -> String {
    match c.and_then(|c| c.location.line) {
        Some(l) => format!("line {l}"),
        None => "device work no construct issued".to_string(),
    }
}

fn device_idle_gaps(p: &Profile, out: &mut Vec<Finding>) {
    let g = &p.device_gaps;
    let run = p.summary.wall_ns.max(g.span_ns);
    if run == 0 {
        return;
    }
    for site in g.sites.iter().take(MAX_FINDINGS) {
        if site.total_ns < MIN_TOTAL_NS || site.total_ns * MIN_SHARE_DIV < run {
            continue;
        }
        let (before, after) = (p.construct(site.before), p.construct(site.after));
        let (from, to) = (line_of(before), line_of(after));
        let between = if site.before == site.after && before.is_some() {
            format!("between one run of the construct at {from} and the next")
        } else {
            format!("between the device work of {from} and that of {to}")
        };
        out.push(Finding {
            rule: Rule::DeviceIdleGaps,
            title: "the device sits idle while the host works between constructs".into(),
            location: after.or(before).map(FindingLocation::of).unwrap_or_default(),
            evidence: Evidence {
                count: site.count,
                bytes: 0,
                time_ns: site.total_ns,
                details: vec![
                    format!(
                        "the device was idle {} time(s) {between}: {} in all ({} of the run), the longest {}",
                        site.count,
                        duration(site.total_ns),
                        percent(site.total_ns, run),
                        duration(site.max_ns)
                    ),
                    format!("the device was busy {} of the {} from its first to its last work", percent(g.busy_ns, g.span_ns), duration(g.span_ns)),
                ],
            },
            estimated_saving_ns: site.total_ns,
            change: format!(
                "the host code that runs {between} keeps the device waiting: move it onto the device (a `#pragma acc parallel loop` of its own, inside the data region), or overlap it: give the constructs `async(1)` and put `#pragma acc wait(1)` only where the host needs their results"
            ),
            events: site.longest.into_iter().collect(),
            time_ranges: vec![(site.first_ns, site.last_ns)],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;

    /// `n` compute constructs at line 40, each running a kernel on the device for most of its
    /// `MS`, with `host` of host work after each.
    fn run(n: u64, host: u64, device_records: bool) -> Vec<Finding> {
        let mut r = if device_records {
            Run::with_device_records()
        } else {
            Run::new()
        };
        for _ in 0..n {
            r.compute(40, MS, host, |r, start| {
                let launch = r.launch(
                    start + 10 * US,
                    start + 20 * US,
                    40,
                    "main_40_gpu",
                    256,
                    128,
                );
                let mut evs = vec![launch];
                if device_records {
                    evs.push(r.device_kernel(
                        start + 30 * US,
                        start + 990 * US,
                        start + 15 * US,
                        "main_40_gpu",
                    ));
                }
                evs
            });
        }
        let wall = r.now;
        findings(&DeviceIdleGaps, &r.profile(wall))
    }

    #[test]
    fn fires_when_host_work_between_constructs_leaves_the_device_idle() {
        let f = run(20, 3 * MS, true);
        assert_eq!(rules_of(&f), [Rule::DeviceIdleGaps]);
        let f = &f[0];
        assert_eq!(f.location.line, Some(40));
        // 19 gaps of 3.04 ms between one kernel's end and the next one's start.
        assert_eq!(f.evidence.count, 19);
        assert_eq!(f.evidence.time_ns, 19 * (3 * MS + 40 * US));
        assert!(
            f.evidence.details[0]
                .contains("between one run of the construct at line 40 and the next"),
            "{:?}",
            f.evidence.details
        );
        assert!(f.change.contains("async(1)"));
        assert_eq!(f.events.len(), 1);
    }

    #[test]
    fn stays_silent_when_the_host_hardly_works_between_constructs() {
        // 19 gaps of 45 us (5 us of host work and the constructs' own edges): under 1 ms.
        assert!(run(20, 5 * US, true).is_empty());
        // More of the same gaps (past 1 ms in all) are still under a twentieth of the run.
        assert!(run(200, 5 * US, true).is_empty());
        // One construct alone leaves no gap between constructs, however long the host works.
        assert!(run(1, 3 * MS, true).is_empty());
    }

    #[test]
    fn stays_silent_without_device_records() {
        assert!(run(20, 3 * MS, false).is_empty());
    }
}
