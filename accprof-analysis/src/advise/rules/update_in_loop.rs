//! An update directive inside a loop moving whole arrays.

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::directive;
use std::collections::BTreeSet;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct UpdateInLoop;

impl AdviceRule for UpdateInLoop {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::UpdateInLoop]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        update_in_loop(p, out);
    }
}

fn update_in_loop(p: &Profile, out: &mut Vec<Finding>) {
    for (ci, c) in p.constructs.iter().enumerate() {
        if c.kind != ConstructKind::Update || c.reached < 3 {
            continue;
        }
        let sites: Vec<&TransferSite> = p
            .transfer_sites
            .iter()
            .filter(|s| s.construct == Some(ci) && s.max_bytes >= 64 * 1024 && s.same_range)
            .collect();
        if sites.is_empty() {
            continue;
        }
        let names: Vec<String> = sites
            .iter()
            .map(|s| p.variables[s.variable].name.clone())
            .collect();
        let count: u64 = sites.iter().map(|s| s.count).sum();
        let xbytes: u64 = sites.iter().map(|s| s.bytes).sum();
        let time: u64 = sites.iter().map(|s| s.time.total_ns).sum();
        let saving = time - time / c.reached.max(1);
        let dirs: BTreeSet<&str> = sites
            .iter()
            .map(|s| {
                if s.direction == Direction::HostToDevice {
                    "device"
                } else {
                    "self"
                }
            })
            .collect();
        out.push(Finding {
            rule: Rule::UpdateInLoop,
            title: format!("update of whole {} on every iteration", names.join(", ")),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count,
                bytes: xbytes,
                time_ns: time,
                details: vec![format!(
                    "the update at {} ran {} times, moving {} ({} each time) in {}",
                    c.location.short(),
                    c.reached,
                    bytes(xbytes),
                    bytes(xbytes / c.reached.max(1)),
                    duration(time)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "move `{}` out of the loop (once after it, where the host needs the data), or update only the part the host reads each iteration, e.g. `update self({}[0:k])`",
                directive(c.location.file.as_deref(), &format!("update {} ({})", dirs.into_iter().collect::<Vec<_>>().join("/"), names.join(", "))),
                names.first().map(|n| n.split('[').next().unwrap_or(n)).unwrap_or("a")
            ),
            events: c.samples.clone(),
            time_ranges: vec![(c.first_ns, c.last_ns)],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::{acc_construct_t, acc_event_t};

    fn run(times: u64) -> Vec<Finding> {
        let mut r = Run::new();
        for _ in 0..times {
            r.construct(
                acc_event_t::UPDATE_START,
                acc_construct_t::UPDATE,
                60,
                MS,
                MS,
                |r, t| {
                    vec![r.transfer(
                        acc_event_t::ENQUEUE_DOWNLOAD_START,
                        t + US,
                        t + MS - US,
                        60,
                        "A",
                        1 << 20,
                        0x7f00_0000,
                    )]
                },
            );
        }
        let wall = r.now;
        findings(&UpdateInLoop, &r.profile(wall))
    }

    #[test]
    fn fires_on_an_update_of_a_whole_array_every_iteration() {
        let f = run(3);
        assert_eq!(rules_of(&f), [Rule::UpdateInLoop]);
        assert!(f[0].change.contains("update self (A)"), "{}", f[0].change);
    }

    #[test]
    fn silent_on_an_update_reached_twice() {
        assert!(run(2).is_empty());
    }
}
