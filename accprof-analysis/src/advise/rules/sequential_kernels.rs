//! Kernels running on one gang or one vector lane (tips 1, 3, 5).

use crate::advise::*;
use crate::format::{duration, percent};
use crate::model::*;
use crate::source::directive;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct SequentialKernel;

impl AdviceRule for SequentialKernel {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::SequentialKernel]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        sequential_kernels(p, out);
    }
}

/// Kernels a runtime launches on one gang by design, to finish a reduction: the shim's store of
/// the result into host memory, and NVHPC's `<kernel>__red` (PGI's naming). They are no
/// sequential user loop, and charging their construct's time to them would be wrong.
fn finishes_a_reduction(kernel: &str) -> bool {
    kernel == "accshim_store_reduction" || kernel.ends_with("__red")
}

fn sequential_kernels(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns.max(1);
    for k in &p.kernels {
        if finishes_a_reduction(&k.name) {
            continue;
        }
        let Some(c) = p.construct(k.construct) else {
            continue;
        };
        if c.construct_type.as_deref() == Some("serial") {
            continue;
        }
        let one = |r: Option<ValueRange>| r.is_some_and(|r| r.max <= 1);
        let (g1, v1) = (one(k.num_gangs), one(k.vector_length));
        let share_needed = if g1 && v1 { 100 } else { 20 };
        if !(g1 || v1) || c.time.total_ns * share_needed < wall {
            continue;
        }
        let what = match (g1, v1) {
            (true, true) => "one gang and one vector lane",
            (true, false) => "one gang",
            _ => "one vector lane",
        };
        out.push(Finding {
            rule: Rule::SequentialKernel,
            title: format!("kernel {} ran on {what}", k.name),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: k.launches,
                bytes: 0,
                time_ns: c.time.total_ns,
                details: vec![format!(
                    "{} launches with num_gangs {} vector_length {}; the construct took {} ({} of the run)",
                    k.launches,
                    range_text(k.num_gangs),
                    range_text(k.vector_length),
                    duration(c.time.total_ns),
                    percent(c.time.total_ns, wall)
                )],
            },
            // Assumes the parallel loop runs at least 10x faster; the real gain depends on the loop.
            estimated_saving_ns: c.time.total_ns / 10 * 9,
            change: format!(
                "make the loop at {} parallel: privatize the arrays and scalars it writes (`private(...)`, tips 1 and 5), make the loop rectangular (tip 3), then `{}`",
                c.location.short(),
                directive(c.location.file.as_deref(), "parallel loop gang vector")
            ),
            events: k.samples.clone(),
            time_ranges: vec![(k.first_ns, k.last_ns)],
        });
    }
}

fn range_text(r: Option<ValueRange>) -> String {
    match r {
        Some(r) if r.min == r.max => r.min.to_string(),
        Some(r) => format!("{}-{}", r.min, r.max),
        None => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;

    fn run(gangs: u64, vector: u64) -> Vec<Finding> {
        let mut r = Run::new();
        r.compute(42, 50 * MS, 50 * MS, |r, t| {
            vec![r.launch(t + US, t + 3 * US, 42, "main_42_gpu", gangs, vector)]
        });
        let wall = r.now;
        findings(&SequentialKernel, &r.profile(wall))
    }

    #[test]
    fn fires_on_one_gang_taking_half_the_run() {
        let f = run(1, 128);
        assert_eq!(rules_of(&f), [Rule::SequentialKernel]);
        assert!(
            f[0].title.contains("one gang") || f[0].evidence.details[0].contains("num_gangs 1"),
            "{f:?}"
        );
    }

    #[test]
    fn silent_on_many_gangs() {
        assert!(run(256, 128).is_empty());
    }
}
