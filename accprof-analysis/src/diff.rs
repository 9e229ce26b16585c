//! Two profiles side by side: the same constructs and variables before and after a change.

use crate::model::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// One construct (matched by kind, file, function and line) in both profiles.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ConstructDiff {
    pub kind: ConstructKind,
    pub location: Location,
    /// Index into each profile's constructs; `None` where the construct does not appear.
    pub before: Option<usize>,
    pub after: Option<usize>,
    pub reached: (u64, u64),
    pub time_ns: (u64, u64),
    pub transfers: (u64, u64),
    pub bytes: (u64, u64),
    pub transfer_ns: (u64, u64),
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

#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ProfileDiff {
    pub summary: SummaryDiff,
    /// Matched constructs, largest change in host time first.
    pub constructs: Vec<ConstructDiff>,
    pub variables: Vec<VariableDiff>,
}

fn key(c: &Construct) -> (ConstructKind, Option<String>, Option<String>, Option<i64>) {
    (c.kind, c.location.file.clone(), c.location.function.clone(), c.location.line)
}

fn transfers(c: &Construct) -> (u64, u64, u64) {
    let (n1, b1, t1) = c.child_total(ChildKind::Upload);
    let (n2, b2, t2) = c.child_total(ChildKind::Download);
    (n1 + n2, b1 + b2, t1 + t2)
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
    let mut matched: BTreeMap<_, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, c) in before.constructs.iter().enumerate() {
        matched.entry(key(c)).or_default().0 = Some(i);
    }
    for (i, c) in after.constructs.iter().enumerate() {
        matched.entry(key(c)).or_default().1 = Some(i);
    }
    let mut constructs: Vec<ConstructDiff> = matched
        .into_values()
        .map(|(bi, ai)| {
            let bc = bi.map(|i| &before.constructs[i]);
            let ac = ai.map(|i| &after.constructs[i]);
            let any = bc.or(ac).expect("one side matched");
            let pick = |c: Option<&Construct>, f: &dyn Fn(&Construct) -> u64| c.map(f).unwrap_or(0);
            ConstructDiff {
                kind: any.kind,
                location: any.location.clone(),
                before: bi,
                after: ai,
                reached: (pick(bc, &|c| c.reached), pick(ac, &|c| c.reached)),
                time_ns: (pick(bc, &|c| c.time.total_ns), pick(ac, &|c| c.time.total_ns)),
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
        for v in &p.variables {
            let e = vars.entry((v.name.clone(), v.direction)).or_insert_with(|| VariableDiff {
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
    variables.sort_by(|x, y| y.time_ns.0.max(y.time_ns.1).cmp(&x.time_ns.0.max(x.time_ns.1)).then(x.name.cmp(&y.name)));
    ProfileDiff { summary, constructs, variables }
}
