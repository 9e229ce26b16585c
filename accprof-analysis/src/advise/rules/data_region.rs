//! Arrays copied in and out by the compute constructs of a loop: a data region around it
//! (`data_region`), or enter/exit data when the constructs lie in different functions
//! (`enter_exit_data`). Claims the variables and constructs it advises on.

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::{directive, Language};
use std::collections::{BTreeMap, BTreeSet};

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct DataRegion;

impl AdviceRule for DataRegion {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::DataRegion, Rule::EnterExitData]
    }

    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>) {
        claimed.merge(data_region_rules(p, out));
    }
}

fn data_region_rules(p: &Profile, out: &mut Vec<Finding>) -> Claimed {
    let mut claimed = Claimed::default();
    // Transfers of arrays by compute constructs, per variable name.
    let mut by_var: BTreeMap<String, Vec<&TransferSite>> = BTreeMap::new();
    for s in &p.transfer_sites {
        let Some(c) = p.construct(s.construct) else {
            continue;
        };
        if c.kind != ConstructKind::Compute || s.max_bytes < MIN_ARRAY_BYTES || !s.same_range {
            continue;
        }
        by_var
            .entry(p.variables[s.variable].name.clone())
            .or_default()
            .push(s);
    }
    // Repeated: moved again and again (a loop around the constructs).
    let repeated: Vec<VarTraffic> = by_var
        .into_iter()
        .map(|(name, sites)| VarTraffic { name, sites })
        .filter(|v| v.count(Direction::HostToDevice) >= 2 || v.count(Direction::DeviceToHost) >= 2)
        .collect();
    // Group by the function(s) of the constructs that move each variable.
    let mut per_function: BTreeMap<Option<String>, Vec<&VarTraffic>> = BTreeMap::new();
    let mut across: Vec<&VarTraffic> = Vec::new();
    for v in &repeated {
        let funcs: BTreeSet<Option<(Option<String>, Option<String>)>> = v
            .sites
            .iter()
            .map(|s| {
                p.construct(s.construct)
                    .map(|c| (c.location.file.clone(), c.location.function.clone()))
            })
            .collect();
        if funcs.len() == 1 {
            let f = v
                .sites
                .first()
                .and_then(|s| p.construct(s.construct))
                .and_then(|c| c.location.function.clone());
            per_function.entry(f).or_default().push(v);
        } else {
            across.push(v);
        }
    }
    for (_, vars) in per_function {
        let constructs: BTreeSet<usize> = vars
            .iter()
            .flat_map(|v| v.sites.iter().filter_map(|s| s.construct))
            .collect();
        let cs: Vec<&Construct> = constructs.iter().map(|&i| &p.constructs[i]).collect();
        let first_line = cs.iter().filter_map(|c| c.location.line).min();
        let last_line = cs
            .iter()
            .filter_map(|c| c.location.end_line.or(c.location.line))
            .max();
        let first = cs
            .iter()
            .min_by_key(|c| c.location.line)
            .copied()
            .expect("a variable has sites");
        let mut clauses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for v in &vars {
            clauses.entry(v.clause()).or_default().push(v.name.clone());
        }
        let pragma = clause_text(&clauses);
        let saving: u64 = vars.iter().map(|v| v.saving()).sum();
        let count: u64 = vars
            .iter()
            .map(|v| v.sites.iter().map(|s| s.count).sum::<u64>())
            .sum();
        let xbytes: u64 = vars.iter().map(|v| v.bytes()).sum();
        let time: u64 = vars
            .iter()
            .map(|v| v.time(Direction::HostToDevice) + v.time(Direction::DeviceToHost))
            .sum();
        let lines = match (first_line, last_line) {
            (Some(a), Some(b)) if cs.len() > 1 && b > a => format!("lines {a}-{b}"),
            (Some(a), Some(b)) if b > a => format!("the loop around lines {a}-{b}"),
            (Some(a), _) => format!("the loop around line {a}"),
            _ => "the loop around these constructs".into(),
        };
        // With the source at hand: the innermost loop around every construct that moved the
        // arrays (a region inside it would still copy them on every iteration).
        let file = first.location.file.as_deref();
        let lang = Language::of(file.unwrap_or(""));
        let last_start = cs.iter().filter_map(|c| c.location.line).max();
        let starts: Vec<i64> = cs.iter().filter_map(|c| c.location.line).collect();
        let the_loop = match (
            file.and_then(|f| crate::source::read_matching(p, f, &starts)),
            first_line,
            last_start,
        ) {
            (Some(src), Some(a), Some(b)) => src.enclosing_loop(a, b),
            _ => None,
        };
        let names: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
        let mut details = vec![format!(
            "{} moved {} times ({}) by the compute constructs at {}, costing {} of host time",
            names.join(", "),
            count,
            bytes(xbytes),
            construct_lines(&cs),
            duration(time)
        )];
        for v in &vars {
            details.push(format!(
                "{}: {} uploads, {} downloads; first moved {} -> {}",
                v.name,
                v.count(Direction::HostToDevice),
                v.count(Direction::DeviceToHost),
                v.sites
                    .iter()
                    .min_by_key(|s| s.first_ns)
                    .map(|s| s.direction.label())
                    .unwrap_or("?"),
                v.clause()
            ));
        }
        let mut loc = FindingLocation::of(first);
        loc.line = the_loop.map(|l| l.start).or(first_line);
        loc.end_line = the_loop.map(|l| l.end).or(last_line);
        let open = lang.directive(&format!("data {pragma}"));
        let wrap = match (the_loop, lang) {
            (Some(l), Language::Fortran) => format!(
                "put `{open}` before the loop at lines {}-{} and `{}` after its `end do`",
                l.start,
                l.end,
                lang.directive("end data")
            ),
            (Some(l), Language::C) => format!(
                "wrap the loop at lines {}-{} in `{open}` (the loop is the region's block)",
                l.start, l.end
            ),
            (None, Language::Fortran) => format!(
                "wrap {lines} in `{open}` ... `{}` (a data region around the loop)",
                lang.directive("end data")
            ),
            (None, Language::C) => {
                format!("wrap {lines} in `{open}` (a data region around the loop)")
            }
        };
        let span = vars
            .iter()
            .map(|v| v.span())
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let mut events: Vec<EventRef> = vars.iter().flat_map(|v| v.events()).collect();
        events.sort_by_key(|r| r.start_ns);
        events.truncate(MAX_SAMPLES);
        out.push(Finding {
            rule: Rule::DataRegion,
            title: format!("{} copied to and from the device on every iteration", names.join(", ")),
            location: loc,
            evidence: Evidence { count, bytes: xbytes, time_ns: time, details },
            estimated_saving_ns: saving,
            change: format!(
                "{wrap} and use `present({})` on the compute constructs, so the arrays stay on the device between them{}{}",
                names.join(", "),
                if clauses.contains_key("copy") && !clauses.contains_key("create") {
                    "; an array that only holds intermediate results can be `create` instead of `copy`"
                } else {
                    ""
                },
                if names.iter().any(|n| n.starts_with("heap@")) {
                    // The runtime named nothing and no symbol holds a heap block: the name is the
                    // allocation line, which the user has to turn back into the pointer's name.
                    "; heap@FILE:LINE is the array allocated at that line (#N: the N-th allocation on it, in code order): write its pointer and section (A[0:n]) in the clauses"
                } else {
                    ""
                }
            ),
            events,
            time_ranges: vec![span],
        });
        claimed.variables.extend(names);
        claimed.constructs.extend(constructs);
    }
    if !across.is_empty() {
        let constructs: BTreeSet<usize> = across
            .iter()
            .flat_map(|v| v.sites.iter().filter_map(|s| s.construct))
            .collect();
        let cs: Vec<&Construct> = constructs.iter().map(|&i| &p.constructs[i]).collect();
        let first = cs
            .iter()
            .min_by_key(|c| c.first_ns)
            .copied()
            .expect("a variable has sites");
        let mut enter: Vec<String> = Vec::new();
        let mut exit: Vec<String> = Vec::new();
        for v in &across {
            match v.clause() {
                "copy" => {
                    enter.push(format!("copyin({})", v.name));
                    exit.push(format!("copyout({})", v.name));
                }
                "copyin" => {
                    enter.push(format!("copyin({})", v.name));
                    exit.push(format!("delete({})", v.name));
                }
                "copyout" => {
                    enter.push(format!("create({})", v.name));
                    exit.push(format!("copyout({})", v.name));
                }
                _ => {
                    enter.push(format!("create({})", v.name));
                    exit.push(format!("delete({})", v.name));
                }
            }
        }
        let names: Vec<String> = across.iter().map(|v| v.name.clone()).collect();
        let funcs: BTreeSet<String> = cs
            .iter()
            .map(|c| c.location.function.clone().unwrap_or_else(|| "?".into()))
            .collect();
        let count: u64 = across
            .iter()
            .map(|v| v.sites.iter().map(|s| s.count).sum::<u64>())
            .sum();
        let xbytes: u64 = across.iter().map(|v| v.bytes()).sum();
        let time: u64 = across
            .iter()
            .map(|v| v.time(Direction::HostToDevice) + v.time(Direction::DeviceToHost))
            .sum();
        let span = across
            .iter()
            .map(|v| v.span())
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let mut events: Vec<EventRef> = across.iter().flat_map(|v| v.events()).collect();
        events.sort_by_key(|r| r.start_ns);
        events.truncate(MAX_SAMPLES);
        out.push(Finding {
            rule: Rule::EnterExitData,
            title: format!("{} copied again by each call of {}", names.join(", "), funcs.iter().cloned().collect::<Vec<_>>().join(", ")),
            location: FindingLocation::of(first),
            evidence: Evidence {
                count,
                bytes: xbytes,
                time_ns: time,
                details: vec![format!(
                    "{} moved {} times ({}) by the compute constructs at {} in {} functions, costing {}",
                    names.join(", "),
                    count,
                    bytes(xbytes),
                    construct_lines(&cs),
                    funcs.len(),
                    duration(time)
                )],
            },
            estimated_saving_ns: across.iter().map(|v| v.saving()).sum(),
            change: format!(
                "add `{}` before the first call and `{}` after the last one, and `present({})` on the constructs at {}",
                directive(first.location.file.as_deref(), &format!("enter data {}", enter.join(" "))),
                directive(first.location.file.as_deref(), &format!("exit data {}", exit.join(" "))),
                names.join(", "),
                construct_lines(&cs)
            ),
            events,
            time_ranges: vec![span],
        });
        claimed.variables.extend(names);
        claimed.constructs.extend(constructs);
    }
    claimed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;

    /// `iterations` of a compute construct at line 57 copying A in and out.
    fn profile(iterations: u64) -> Profile {
        let mut r = Run::new();
        let (u, d) = (
            acc_event_t::ENQUEUE_UPLOAD_START,
            acc_event_t::ENQUEUE_DOWNLOAD_START,
        );
        for _ in 0..iterations {
            r.compute(57, MS, MS, |r, t| {
                vec![
                    r.transfer(u, t + US, t + MS / 4, 57, "A", 1 << 20, 0x7f00_0000),
                    r.transfer(d, t + MS / 2, t + MS - US, 57, "A", 1 << 20, 0x7f00_0000),
                ]
            });
        }
        let wall = r.now;
        r.profile(wall)
    }

    #[test]
    fn fires_on_an_array_moved_every_iteration_and_claims_it() {
        let p = profile(3);
        let (mut claimed, mut out) = (Claimed::default(), Vec::new());
        DataRegion.check(&p, &mut claimed, &mut out);
        assert_eq!(rules_of(&out), [Rule::DataRegion]);
        assert!(out[0].change.contains("copy(A)"), "{}", out[0].change);
        assert!(claimed.variables.contains("A"));
    }

    #[test]
    fn silent_when_the_array_moves_once() {
        assert!(findings(&DataRegion, &profile(1)).is_empty());
    }
}
