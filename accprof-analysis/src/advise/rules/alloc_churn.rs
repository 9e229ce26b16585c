//! Repeated allocation and free on the device: of a construct's arrays each time it runs (keep
//! them with enter/exit data), or of a block the program allocates itself with `acc_malloc`
//! in a loop (allocate it once).

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::directive;
use std::collections::BTreeMap;

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

fn churns(a: &AllocSite) -> bool {
    a.allocs >= 3 && a.frees >= 3 && a.bytes.is_some_and(|b| b >= MIN_ARRAY_BYTES)
}

fn alloc_churn(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    // The arrays of one construct are one finding: one region keeps them all.
    let mut by_construct: BTreeMap<usize, Vec<&AllocSite>> = BTreeMap::new();
    // The program's own allocations, per function (one acc_malloc line allocating a block of
    // another size per multigrid level, and the function's other acc_mallocs, are one finding).
    let mut by_call: Vec<(&Location, Vec<&AllocSite>)> = Vec::new();
    for a in p.allocs.iter().filter(|a| churns(a)) {
        match (a.construct, &a.call) {
            (Some(c), _) if !claimed.constructs.contains(&c) => {
                by_construct.entry(c).or_default().push(a)
            }
            (None, Some(call)) => match by_call
                .iter_mut()
                .find(|(l, _)| (&l.file, &l.function) == (&call.file, &call.function))
            {
                Some((_, sites)) => sites.push(a),
                None => by_call.push((call, vec![a])),
            },
            _ => {}
        }
    }
    for (call, sites) in by_call {
        out.push(api_churn(p, &sites, call));
    }
    for (ci, sites) in by_construct {
        let c = &p.constructs[ci];
        let allocs: u64 = sites.iter().map(|a| a.allocs).sum();
        let frees: u64 = sites.iter().map(|a| a.frees).sum();
        let overhead: u64 = sites.iter().map(|a| a.overhead_ns).sum();
        let total_bytes: u64 = sites.iter().map(|a| a.bytes.unwrap_or(0) * a.allocs).sum();
        // Churn is the same allocation made again each time the construct runs. A construct
        // reached once that allocates many arrays of one size (a data region mapping a code's
        // fields, as CloverLeaf's start does) allocates each once: nothing to keep.
        let instances = c.times().min(allocs);
        if instances < 3 {
            continue;
        }
        // Kept across instances, the arrays of one instance are still allocated once.
        let per_instance = allocs.div_ceil(instances);
        let saving = overhead - overhead * per_instance / allocs.max(1);
        let at = c.location.short();
        let what = match sites.as_slice() {
            [one] => bytes(one.bytes.unwrap_or(0)),
            many => format!("{} arrays", many.len()),
        };
        let first_ns = sites.iter().map(|a| a.first_ns).min().unwrap_or(0);
        let last_ns = sites.iter().map(|a| a.last_ns).max().unwrap_or(0);
        let mut events: Vec<EventRef> = sites.iter().flat_map(|a| a.samples.clone()).collect();
        events.sort_by_key(|e| e.start_ns);
        events.truncate(MAX_SAMPLES);
        let file = c.location.file.as_deref();
        out.push(Finding {
            rule: Rule::AllocChurn,
            title: format!("{what} allocated and freed at each of the {instances} runs of {at}"),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: allocs + frees,
                bytes: total_bytes,
                time_ns: overhead,
                details: vec![format!(
                    "{allocs} device allocations and {frees} frees ({}) at {at}; the data operations around them spent {} besides transfers",
                    bytes(total_bytes),
                    duration(overhead)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "keep the allocations: `{}` the arrays once before the loop, `present(...)` on the construct at {at}, and `{}` after the loop",
                directive(file, "enter data create(...)"),
                directive(file, "exit data delete(...)")
            ),
            events,
            time_ranges: vec![(first_ns, last_ns)],
        });
    }
}

/// A block the program allocates with `acc_malloc` and frees with `acc_free` again and again:
/// no directive maps it, so no data clause keeps it; the program allocates it once instead.
fn api_churn(p: &Profile, sites: &[&AllocSite], call: &Location) -> Finding {
    let mut names: Vec<String> = Vec::new();
    let mut lines: Vec<i64> = Vec::new();
    for a in sites {
        if let Some(n) = &a.name {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        if let Some(l) = a.call.as_ref().and_then(|c| c.line) {
            if !lines.contains(&l) {
                lines.push(l);
            }
        }
    }
    lines.sort_unstable();
    let file = call
        .file
        .as_deref()
        .map(|f| f.rsplit('/').next().unwrap_or(f))
        .unwrap_or("?");
    let at = match lines.as_slice() {
        [] => call.short(),
        [one] => format!("{file}:{one}"),
        many => format!(
            "{file}:{}",
            many.iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let name = if names.is_empty() {
        "the block".to_string()
    } else {
        names.join(", ")
    };
    let each = if names.len() > 1 { " each" } else { "" };
    let deviceptr = if names.is_empty() {
        "deviceptr(...)".to_string()
    } else {
        format!("deviceptr({})", names.join(", "))
    };
    let the_loop = match (call.file.as_deref(), call.line) {
        (Some(f), Some(l)) => crate::source::read(p, f).and_then(|s| s.enclosing_loop(l, l)),
        _ => None,
    };
    let place = match the_loop {
        Some(l) => format!("before the loop at lines {}-{}", l.start, l.end),
        None => format!(
            "outside the loop that calls {}",
            call.function.as_deref().unwrap_or("it")
        ),
    };
    let allocs: u64 = sites.iter().map(|a| a.allocs).sum();
    let frees: u64 = sites.iter().map(|a| a.frees).sum();
    let sizes: Vec<u64> = sites.iter().filter_map(|a| a.bytes).collect();
    let (lo, hi) = (
        sizes.iter().copied().min().unwrap_or(0),
        sizes.iter().copied().max().unwrap_or(0),
    );
    let size = if lo == hi {
        bytes(hi)
    } else {
        format!("{}-{}", bytes(lo), bytes(hi))
    };
    let total: u64 = sites.iter().map(|a| a.bytes.unwrap_or(0) * a.allocs).sum();
    let mut events: Vec<EventRef> = sites.iter().flat_map(|a| a.samples.clone()).collect();
    events.sort_by_key(|e| e.start_ns);
    events.truncate(MAX_SAMPLES);
    let first_ns = sites.iter().map(|a| a.first_ns).min().unwrap_or(0);
    let last_ns = sites.iter().map(|a| a.last_ns).max().unwrap_or(0);
    let largest = if lo == hi {
        ""
    } else {
        " (of the largest size)"
    };
    Finding {
        rule: Rule::AllocChurn,
        title: format!(
            "{name} ({size}) allocated with acc_malloc and freed {} times{each} at {at}",
            allocs / names.len().max(1) as u64
        ),
        location: FindingLocation {
            file: call.file.clone(),
            line: the_loop.map(|l| l.start).or(call.line),
            end_line: the_loop.map(|l| l.end),
            function: call.function.clone(),
        },
        evidence: Evidence {
            count: allocs + frees,
            bytes: total,
            time_ns: 0,
            details: vec![format!(
                "{allocs} acc_malloc and {frees} acc_free calls of {size} at {at}; the runtime reports them as point events, without a duration, so their cost is not in this trace"
            )],
        },
        estimated_saving_ns: 0,
        change: format!(
            "allocate {name} once{largest}, {place}, and free {} after that loop: the constructs that take {} with `{deviceptr}` keep using the same device memory (a data clause does not apply to acc_malloc memory)",
            if names.len() > 1 { "them" } else { "it" },
            if names.len() > 1 { "them" } else { "it" }
        ),
        events,
        time_ranges: vec![(first_ns, last_ns)],
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
            // `double *tmp = acc_malloc(...)` at line 30, `acc_free(tmp)` after.
            for kind in [acc_event_t::ALLOC, acc_event_t::FREE] {
                let mut e = r.ev(kind, t, t, 30);
                e.set(Field::Bytes, 1 << 20);
                e.set(Field::DevicePtr, 0xd000);
                e.set_i64(
                    Field::ParentConstruct,
                    i64::from(accprof_abi::acc_construct_t::RUNTIME_API.0),
                );
                let name = r.intern("tmp");
                e.set(Field::VarName, u64::from(name.0));
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
        // acc_malloc memory: named by its pointer, placed at its call, no data clause advised.
        assert!(
            f[0].title
                .starts_with("tmp (1 MiB) allocated with acc_malloc and freed 3 times at app.c:30"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].location.line, Some(30));
        assert!(f[0].change.contains("deviceptr(tmp)"), "{}", f[0].change);
        assert!(!f[0].change.contains("enter data"), "{}", f[0].change);
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
                                e.set(Field::HostPtr, 0x7f00_0000 + i * 0x10_0000);
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
        // NPB SP's region: one finding for its arrays, not one per array each claiming the
        // region's whole saving.
        assert!(
            f[0].title
                .starts_with("2 arrays allocated and freed at each of the 4 runs of app.c:40"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].evidence.details[0].starts_with("8 device allocations"),
            "{:?}",
            f[0].evidence
        );
        // Kept, the two arrays are allocated once: 6 of 8 allocations saved.
        let overhead = f[0].evidence.time_ns;
        assert_eq!(f[0].estimated_saving_ns, overhead - overhead * 2 / 8);
    }
}
