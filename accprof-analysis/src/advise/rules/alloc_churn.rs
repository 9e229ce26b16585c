//! Repeated allocation and free of the same size on the device.

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::directive;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct AllocChurn;

impl AdviceRule for AllocChurn {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::AllocChurn]
    }

    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>) {
        alloc_churn(p, claimed, out);
    }
}

fn alloc_churn(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    for a in &p.allocs {
        let Some(b) = a.bytes else { continue };
        if a.allocs < 3
            || a.frees < 3
            || b < MIN_ARRAY_BYTES
            || a.construct.is_some_and(|c| claimed.constructs.contains(&c))
        {
            continue;
        }
        let c = p.construct(a.construct);
        // Churn is the same allocation made again each time the construct runs. A construct
        // reached once that allocates many arrays of one size (a data region mapping a code's
        // fields, as CloverLeaf's start does) allocates each once: nothing to keep.
        let instances = c.map_or(a.allocs, |c| c.times().min(a.allocs));
        if instances < 3 {
            continue;
        }
        let loc = c.map(FindingLocation::of).unwrap_or_default();
        // Kept across instances, the arrays of one instance are still allocated once.
        let per_instance = a.allocs.div_ceil(instances);
        let saving = a.overhead_ns - a.overhead_ns * per_instance / a.allocs.max(1);
        let at = c.map(|c| c.location.short()).unwrap_or_else(|| "?".into());
        out.push(Finding {
            rule: Rule::AllocChurn,
            title: format!("{} allocated and freed {} times at {}", bytes(b), a.allocs, at),
            location: loc,
            evidence: Evidence {
                count: a.allocs + a.frees,
                bytes: b * a.allocs,
                time_ns: a.overhead_ns,
                details: vec![format!(
                    "{} device allocations and {} frees of {} at {}; the data operations around them spent {} besides transfers",
                    a.allocs,
                    a.frees,
                    bytes(b),
                    at,
                    duration(a.overhead_ns)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "keep the allocation: `{}` the {} array once before the loop, `present(...)` on the construct at {at}, and `{}` after the loop",
                directive(c.and_then(|c| c.location.file.as_deref()), "enter data create(...)"),
                bytes(b),
                directive(c.and_then(|c| c.location.file.as_deref()), "exit data delete(...)")
            ),
            events: a.samples.clone(),
            time_ranges: vec![(a.first_ns, a.last_ns)],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::Field;

    fn run(times: u64, claimed: &mut Claimed) -> Vec<Finding> {
        let mut r = Run::new();
        for i in 0..times {
            let t = MS + i * MS;
            for kind in [acc_event_t::ALLOC, acc_event_t::FREE] {
                let mut e = r.ev(kind, t, t, 30);
                e.set(Field::Bytes, 1 << 20);
                e.set(Field::DevicePtr, 0xd000);
                r.feed(e);
            }
        }
        let p = r.profile(10 * MS);
        let mut out = Vec::new();
        AllocChurn.check(&p, claimed, &mut out);
        out
    }

    #[test]
    fn fires_on_three_allocations_and_frees_of_one_size() {
        let f = run(3, &mut Claimed::default());
        assert_eq!(rules_of(&f), [Rule::AllocChurn]);
        assert_eq!(f[0].evidence.count, 6);
    }

    #[test]
    fn silent_on_two() {
        assert!(run(2, &mut Claimed::default()).is_empty());
    }

    /// A data region at line 40 reached `reached` times, allocating and freeing `arrays`
    /// arrays of one size each time.
    fn region(reached: u64, arrays: u64) -> Vec<Finding> {
        let mut r = Run::new();
        for _ in 0..reached {
            r.construct(
                acc_event_t::ENTER_DATA_START,
                accprof_abi::acc_construct_t::DATA,
                40,
                MS,
                MS,
                |r, start| {
                    (0..arrays)
                        .flat_map(|i| {
                            let t = start + 10 + i * 100;
                            [acc_event_t::ALLOC, acc_event_t::FREE].map(|kind| {
                                let mut e = r.ev(kind, t, t, 40);
                                e.set(Field::Bytes, 1 << 20);
                                e.set(Field::DevicePtr, 0xd000 + i * 0x1000);
                                e
                            })
                        })
                        .collect()
                },
            );
        }
        let p = r.profile(100 * MS);
        findings(&AllocChurn, &p)
    }

    #[test]
    fn many_arrays_of_one_size_allocated_once_are_not_churn() {
        assert!(region(1, 44).is_empty());
    }

    #[test]
    fn arrays_allocated_again_at_each_instance_are_churn() {
        let f = region(4, 2);
        assert_eq!(rules_of(&f), [Rule::AllocChurn]);
        assert!(f[0].title.contains("8 times"), "{}", f[0].title);
        // Kept, the two arrays are allocated once: 6 of 8 allocations saved.
        let overhead = f[0].evidence.time_ns;
        assert_eq!(f[0].estimated_saving_ns, overhead - overhead * 2 / 8);
    }
}
