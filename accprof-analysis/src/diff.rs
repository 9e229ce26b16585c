//! Two profiles side by side: the same constructs and variables before and after a change.

use crate::model::*;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One construct in both profiles, paired across an edit of the source (see [`pair_constructs`]),
/// or in one of them only.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ConstructDiff {
    pub kind: ConstructKind,
    /// Where it is before the change (after it, for a construct the change added).
    pub location: Location,
    /// Where it is after the change, when it is in both runs and moved (another line or file).
    pub moved_to: Option<Location>,
    /// Index into each profile's constructs; `None` where the construct does not appear.
    pub before: Option<usize>,
    pub after: Option<usize>,
    /// The row is a data region's exit on a line of its own ([`Construct::is_exit_only`]):
    /// `reached` then counts its exits.
    pub exit_only: bool,
    pub reached: (u64, u64),
    pub time_ns: (u64, u64),
    pub transfers: (u64, u64),
    pub bytes: (u64, u64),
    pub transfer_ns: (u64, u64),
}

impl ConstructDiff {
    /// What tables call the row (see [`Construct::label`]).
    pub fn label(&self) -> &'static str {
        if self.exit_only {
            EXIT_ONLY_LABEL
        } else {
            self.kind.label()
        }
    }
}

/// One variable and direction in both profiles.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct VariableDiff {
    pub name: String,
    pub direction: Direction,
    pub count: (u64, u64),
    pub bytes: (u64, u64),
    pub time_ns: (u64, u64),
}

/// Totals before and after.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct SummaryDiff {
    pub wall_ns: (u64, u64),
    pub compute_ns: (u64, u64),
    pub kernel_ns: (u64, u64),
    pub transfers: (u64, u64),
    pub transfer_bytes: (u64, u64),
    pub transfer_ns: (u64, u64),
    pub wait_ns: (u64, u64),
    pub device_init_ns: (u64, u64),
    pub untracked_ns: (u64, u64),
}

/// One time over every run of one side: its median and range.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct Runs {
    pub runs: usize,
    pub median: u64,
    pub min: u64,
    pub max: u64,
}

impl Runs {
    pub fn of(values: &[u64]) -> Runs {
        let mut v = values.to_vec();
        v.sort_unstable();
        Runs {
            runs: v.len(),
            median: v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0),
            min: v.first().copied().unwrap_or(0),
            max: v.last().copied().unwrap_or(0),
        }
    }

    /// Whether the change from `before` to `after` is inside the spread of the runs: their
    /// ranges overlap. Unknown (`None`) with one run on a side.
    pub fn within_noise(before: &Runs, after: &Runs) -> Option<bool> {
        (before.runs > 1 && after.runs > 1)
            .then_some(before.min <= after.max && after.min <= before.max)
    }
}

/// The summary's times over every trace of each side (the same program run several times),
/// to tell a change from run-to-run noise.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Spread {
    pub wall_ns: (Runs, Runs),
    pub compute_ns: (Runs, Runs),
    pub kernel_ns: (Runs, Runs),
    pub transfer_ns: (Runs, Runs),
    pub wait_ns: (Runs, Runs),
    pub device_init_ns: (Runs, Runs),
    pub untracked_ns: (Runs, Runs),
}

#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ProfileDiff {
    /// With several traces per side, the medians of the times (counts and bytes of the
    /// representative runs, below).
    pub summary: SummaryDiff,
    /// The spread of the times over each side's traces.
    pub spread: Spread,
    /// Matched constructs, largest change in host time first.
    pub constructs: Vec<ConstructDiff>,
    pub variables: Vec<VariableDiff>,
}

/// The file's name without its directories: a copy of the source elsewhere is the same file.
fn base_name(l: &Location) -> Option<&str> {
    l.file.as_deref().map(|f| f.rsplit('/').next().unwrap_or(f))
}

/// Each construct's position among the constructs of its kind in its function and file, by line:
/// inserting lines above a construct moves its line but not its position.
fn ordinals(cs: &[Construct]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..cs.len()).collect();
    idx.sort_by(|&a, &b| {
        cs[a]
            .location
            .line
            .cmp(&cs[b].location.line)
            .then(a.cmp(&b))
    });
    let mut seen: BTreeMap<(ConstructKind, Option<&str>, Option<&str>), usize> = BTreeMap::new();
    let mut out = vec![0; cs.len()];
    for i in idx {
        let c = &cs[i];
        let n = seen
            .entry((
                c.kind,
                base_name(&c.location),
                c.location.function.as_deref(),
            ))
            .or_default();
        out[i] = *n;
        *n += 1;
    }
    out
}

/// The named variables each construct of `p` moves.
fn moved_variables(p: &Profile) -> Vec<BTreeSet<&str>> {
    let mut out = vec![BTreeSet::new(); p.constructs.len()];
    for s in &p.transfer_sites {
        if let (Some(c), Some(v)) = (s.construct, p.variables.get(s.variable)) {
            if v.named {
                out[c].insert(v.name.as_str());
            }
        }
    }
    out
}

/// How alike two constructs of the same kind are, or `None` when they cannot be the same construct.
/// Function and file name count most, then the position among the function's constructs of that
/// kind, then the variables they move, the construct type, and how close the lines are.
fn likeness(
    b: &Construct,
    bo: usize,
    bv: &BTreeSet<&str>,
    a: &Construct,
    ao: usize,
    av: &BTreeSet<&str>,
) -> Option<u32> {
    if b.kind != a.kind {
        return None;
    }
    let (bl, al) = (&b.location, &a.location);
    let mut score = 0;
    match (bl.function.as_deref(), al.function.as_deref()) {
        (Some(x), Some(y)) if x == y => score += 40,
        (None, None) => score += 20,
        _ => {}
    }
    if base_name(bl) == base_name(al) {
        score += 20;
    }
    if bo == ao {
        score += 20;
    }
    if b.construct_type == a.construct_type {
        score += 10;
    }
    // The same arrays outweigh the position: a construct inserted above moves every position.
    if !bv.is_empty() && bv == av {
        score += 30;
    } else if bv.intersection(av).next().is_some() {
        score += 10;
    }
    if let (Some(x), Some(y)) = (bl.line, al.line) {
        score += 10u32.saturating_sub(x.abs_diff(y).min(10) as u32);
    }
    // At least the same function and position, or the same function a few lines away.
    (score >= 60).then_some(score)
}

/// Pairs the constructs of `before` with those of `after`, most alike first, each at most once: a
/// construct whose line moved because lines were inserted above it is still the same construct.
/// Returns `(before index, after index)` pairs with `None` on the side a construct is missing from.
pub fn pair_constructs(
    before_profile: &Profile,
    after_profile: &Profile,
) -> Vec<(Option<usize>, Option<usize>)> {
    let (before, after) = (&before_profile.constructs, &after_profile.constructs);
    let (bo, ao) = (ordinals(before), ordinals(after));
    let (bv, av) = (
        moved_variables(before_profile),
        moved_variables(after_profile),
    );
    let mut candidates = Vec::new();
    for (i, b) in before.iter().enumerate() {
        for (j, a) in after.iter().enumerate() {
            if let Some(s) = likeness(b, bo[i], &bv[i], a, ao[j], &av[j]) {
                candidates.push((s, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let (mut used_b, mut used_a) = (vec![false; before.len()], vec![false; after.len()]);
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !used_b[i] && !used_a[j] {
            used_b[i] = true;
            used_a[j] = true;
            pairs.push((Some(i), Some(j)));
        }
    }
    pairs.extend(
        (0..before.len())
            .filter(|&i| !used_b[i])
            .map(|i| (Some(i), None)),
    );
    pairs.extend(
        (0..after.len())
            .filter(|&j| !used_a[j])
            .map(|j| (None, Some(j))),
    );
    pairs
}

fn transfers(c: &Construct) -> (u64, u64, u64) {
    let (n1, b1, t1) = c.child_total(ChildKind::Upload);
    let (n2, b2, t2) = c.child_total(ChildKind::Download);
    (n1 + n2, b1 + b2, t1 + t2)
}

/// Compares several runs of each side: the summary's times are the medians over each side's
/// traces, with their spread; constructs and variables are those of each side's run of median
/// wall time.
pub fn diff_runs(before: &[Profile], after: &[Profile]) -> Option<ProfileDiff> {
    let median_run = |side: &[Profile]| -> Option<usize> {
        let mut idx: Vec<usize> = (0..side.len()).collect();
        idx.sort_by_key(|&i| side[i].summary.wall_ns);
        idx.get(idx.len().checked_sub(1)? / 2).copied()
    };
    let (bi, ai) = (median_run(before)?, median_run(after)?);
    let mut d = diff(&before[bi], &after[ai]);
    let runs = |f: &dyn Fn(&Profile) -> u64| {
        (
            Runs::of(&before.iter().map(f).collect::<Vec<_>>()),
            Runs::of(&after.iter().map(f).collect::<Vec<_>>()),
        )
    };
    d.spread = Spread {
        wall_ns: runs(&|p| p.summary.wall_ns),
        compute_ns: runs(&|p| p.summary.compute.total_ns),
        kernel_ns: runs(&|p| p.summary.kernels.total_ns),
        transfer_ns: runs(&|p| p.summary.transfers_ns()),
        wait_ns: runs(&|p| p.summary.waits.total_ns),
        device_init_ns: runs(&|p| p.summary.device_init.total_ns),
        untracked_ns: runs(&|p| p.summary.untracked_ns),
    };
    let m = |r: &(Runs, Runs)| (r.0.median, r.1.median);
    let sp = &d.spread;
    d.summary.wall_ns = m(&sp.wall_ns);
    d.summary.compute_ns = m(&sp.compute_ns);
    d.summary.kernel_ns = m(&sp.kernel_ns);
    d.summary.transfer_ns = m(&sp.transfer_ns);
    d.summary.wait_ns = m(&sp.wait_ns);
    d.summary.device_init_ns = m(&sp.device_init_ns);
    d.summary.untracked_ns = m(&sp.untracked_ns);
    Some(d)
}

/// Matches the constructs and variables of `before` and `after`.
pub fn diff(before: &Profile, after: &Profile) -> ProfileDiff {
    let s = |p: &Profile| {
        (
            p.summary.wall_ns,
            p.summary.compute.total_ns,
            p.summary.kernels.total_ns,
            p.summary.uploads.count + p.summary.downloads.count,
            p.summary.transfer_bytes(),
            p.summary.transfers_ns(),
            p.summary.waits.total_ns,
            p.summary.device_init.total_ns,
            p.summary.untracked_ns,
        )
    };
    let (b, a) = (s(before), s(after));
    let summary = SummaryDiff {
        wall_ns: (b.0, a.0),
        compute_ns: (b.1, a.1),
        kernel_ns: (b.2, a.2),
        transfers: (b.3, a.3),
        transfer_bytes: (b.4, a.4),
        transfer_ns: (b.5, a.5),
        wait_ns: (b.6, a.6),
        device_init_ns: (b.7, a.7),
        untracked_ns: (b.8, a.8),
    };
    let mut constructs: Vec<ConstructDiff> = pair_constructs(before, after)
        .into_iter()
        .map(|(bi, ai)| {
            let bc = bi.map(|i| &before.constructs[i]);
            let ac = ai.map(|i| &after.constructs[i]);
            let any = bc.or(ac).expect("one side matched");
            let pick = |c: Option<&Construct>, f: &dyn Fn(&Construct) -> u64| c.map(f).unwrap_or(0);
            let moved_to = match (bc, ac) {
                (Some(b), Some(a))
                    if (base_name(&b.location), b.location.line)
                        != (base_name(&a.location), a.location.line) =>
                {
                    Some(a.location.clone())
                }
                _ => None,
            };
            ConstructDiff {
                kind: any.kind,
                location: any.location.clone(),
                moved_to,
                before: bi,
                after: ai,
                exit_only: any.is_exit_only(),
                reached: (pick(bc, &|c| c.times()), pick(ac, &|c| c.times())),
                time_ns: (
                    pick(bc, &|c| c.time.total_ns),
                    pick(ac, &|c| c.time.total_ns),
                ),
                transfers: (pick(bc, &|c| transfers(c).0), pick(ac, &|c| transfers(c).0)),
                bytes: (pick(bc, &|c| transfers(c).1), pick(ac, &|c| transfers(c).1)),
                transfer_ns: (pick(bc, &|c| transfers(c).2), pick(ac, &|c| transfers(c).2)),
            }
        })
        .collect();
    constructs.sort_by(|x, y| {
        let d = |c: &ConstructDiff| c.time_ns.0.abs_diff(c.time_ns.1);
        d(y).cmp(&d(x)).then(x.location.cmp(&y.location))
    });
    let mut vars: BTreeMap<(String, Direction), VariableDiff> = BTreeMap::new();
    for (side, p) in [(0, before), (1, after)] {
        for v in &crate::runtime_internal::fold(&p.variables) {
            let e = vars
                .entry((v.name.clone(), v.direction))
                .or_insert_with(|| VariableDiff {
                    name: v.name.clone(),
                    direction: v.direction,
                    count: (0, 0),
                    bytes: (0, 0),
                    time_ns: (0, 0),
                });
            let set = |t: &mut (u64, u64), x: u64| if side == 0 { t.0 += x } else { t.1 += x };
            set(&mut e.count, v.count);
            set(&mut e.bytes, v.bytes);
            set(&mut e.time_ns, v.time.total_ns);
        }
    }
    let mut variables: Vec<VariableDiff> = vars.into_values().collect();
    variables.sort_by(|x, y| {
        y.time_ns
            .0
            .max(y.time_ns.1)
            .cmp(&x.time_ns.0.max(x.time_ns.1))
            .then(x.name.cmp(&y.name))
    });
    let one = |v: u64| Runs::of(&[v]);
    let pair = |t: (u64, u64)| (one(t.0), one(t.1));
    let spread = Spread {
        wall_ns: pair(summary.wall_ns),
        compute_ns: pair(summary.compute_ns),
        kernel_ns: pair(summary.kernel_ns),
        transfer_ns: pair(summary.transfer_ns),
        wait_ns: pair(summary.wait_ns),
        device_init_ns: pair(summary.device_init_ns),
        untracked_ns: pair(summary.untracked_ns),
    };
    ProfileDiff {
        summary,
        spread,
        constructs,
        variables,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile of compute constructs in main at `lines`, each moving the named array.
    fn profile(constructs: &[(i64, &str)]) -> Profile {
        let mut p = Profile::default();
        for (i, &(line, var)) in constructs.iter().enumerate() {
            p.constructs.push(Construct {
                kind: ConstructKind::Compute,
                construct_type: Some("parallel".into()),
                location: Location {
                    file: Some("/src/app.c".into()),
                    function: Some("main".into()),
                    line: Some(line),
                    ..Location::default()
                },
                reached: 10,
                time: Timing::host(),
                async_count: 0,
                first_ns: 0,
                last_ns: 0,
                children: Vec::new(),
                samples: Vec::new(),
            });
            p.variables.push(Variable {
                name: var.into(),
                named: true,
                alloc_site: None,
                host_ptr: None,
                direction: Direction::HostToDevice,
                count: 10,
                bytes: 10 << 20,
                time: Timing::host(),
                host_time: Timing::host(),
                samples: Vec::new(),
                content: None,
            });
            p.transfer_sites.push(TransferSite {
                construct: Some(i),
                variable: i,
                direction: Direction::HostToDevice,
                count: 10,
                bytes: 10 << 20,
                max_bytes: 1 << 20,
                host_ptr: None,
                same_range: true,
                time: Timing::host(),
                host_time: Timing::host(),
                first_ns: 0,
                last_ns: 0,
                samples: Vec::new(),
            });
        }
        p
    }

    #[test]
    fn constructs_moved_by_inserted_lines_pair_by_position() {
        let pairs = pair_constructs(
            &profile(&[(10, "A"), (20, "B")]),
            &profile(&[(11, "A"), (21, "B")]),
        );
        assert!(
            pairs.contains(&(Some(0), Some(0))) && pairs.contains(&(Some(1), Some(1))),
            "{pairs:?}"
        );
        assert_eq!(pairs.len(), 2);
    }

    #[test]
    fn a_construct_inserted_above_pairs_the_others_by_their_variables() {
        // A construct moving C inserted at line 12 shifts every position below it.
        let pairs = pair_constructs(
            &profile(&[(10, "A"), (20, "B")]),
            &profile(&[(12, "C"), (14, "A"), (24, "B")]),
        );
        assert!(
            pairs.contains(&(Some(0), Some(1))),
            "A pairs with A: {pairs:?}"
        );
        assert!(
            pairs.contains(&(Some(1), Some(2))),
            "B pairs with B: {pairs:?}"
        );
        assert!(pairs.contains(&(None, Some(0))), "C is added: {pairs:?}");
    }
}
