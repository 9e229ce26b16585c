//! Several traces of one job (the ranks of an MPI run): merged totals that add up, and each
//! construct's time across the ranks (total, max, mean, imbalance = max / mean).
//!
//! The merge sums every time over the traces, so its wall time and untracked host time are
//! summed too: percentages are shares of the job's rank-time, never a sum of ranks set against
//! one rank's wall time (which gave compute constructs 179% of the run).

use super::Section;
use crate::format::{duration, percent};
use crate::model::{ConstructKind, Location, Profile};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The merge of `profiles` with wall time and untracked host time summed over them, like every
/// other time in it.
pub fn merge_ranks(profiles: &[Profile]) -> Profile {
    let mut m = crate::load::merge(profiles);
    m.summary.wall_ns = profiles.iter().map(|p| p.summary.wall_ns).sum();
    m.summary.untracked_ns = profiles.iter().map(|p| p.summary.untracked_ns).sum();
    m
}

/// One construct's host time on each trace.
#[derive(Clone, Debug, PartialEq)]
pub struct RankStats {
    pub kind: ConstructKind,
    pub location: Location,
    /// Host time per section, in section order (0 where the construct did not run).
    pub per_rank_ns: Vec<u64>,
}

impl RankStats {
    pub fn total_ns(&self) -> u64 {
        self.per_rank_ns.iter().sum()
    }
    pub fn max_ns(&self) -> u64 {
        self.per_rank_ns.iter().copied().max().unwrap_or(0)
    }
    pub fn mean_ns(&self) -> u64 {
        self.total_ns() / self.per_rank_ns.len().max(1) as u64
    }
    /// max / mean: 1.0 when every rank spent the same time.
    pub fn imbalance(&self) -> f64 {
        let mean = self.total_ns() as f64 / self.per_rank_ns.len().max(1) as f64;
        if mean > 0.0 {
            self.max_ns() as f64 / mean
        } else {
            1.0
        }
    }
}

/// Every construct's time on each section, largest total first (constructs matched as the merge
/// matches them: kind, construct type and location without the end line).
pub fn rank_stats(sections: &[Section]) -> Vec<RankStats> {
    type Key = (ConstructKind, Option<String>, Location);
    let mut rows: BTreeMap<Key, RankStats> = BTreeMap::new();
    for (i, s) in sections.iter().enumerate() {
        for c in &s.profile.constructs {
            let mut loc = c.location.clone();
            loc.end_line = None;
            let row = rows
                .entry((c.kind, c.construct_type.clone(), loc.clone()))
                .or_insert_with(|| RankStats {
                    kind: c.kind,
                    location: loc,
                    per_rank_ns: vec![0; sections.len()],
                });
            row.per_rank_ns[i] += c.time.total_ns;
        }
    }
    let mut out: Vec<RankStats> = rows.into_values().collect();
    out.sort_by(|a, b| {
        b.total_ns()
            .cmp(&a.total_ns())
            .then(a.location.cmp(&b.location))
    });
    out
}

/// The header of the merged section: which files, and how its times add up.
pub fn render_merged_header(out: &mut String, sections: &[Section], merged: &Profile) {
    let _ = writeln!(out, "==== all {} traces merged ====", sections.len());
    for s in sections {
        let _ = writeln!(
            out,
            "  {}: {}",
            s.label,
            s.profile
                .sources
                .first()
                .map(|x| x.path.as_str())
                .unwrap_or("?")
        );
    }
    let wall: Vec<String> = sections
        .iter()
        .map(|s| duration(s.profile.summary.wall_ns))
        .collect();
    let _ = writeln!(
        out,
        "(every time is summed over the traces, wall time too: {} = {}; percentages are shares of that rank-time)",
        duration(merged.summary.wall_ns),
        wall.join(" + ")
    );
}

/// The per-construct table across ranks.
pub fn render_rank_stats(out: &mut String, sections: &[Section], top: usize) {
    let stats = rank_stats(sections);
    if stats.is_empty() {
        return;
    }
    let job: u64 = sections.iter().map(|s| s.profile.summary.wall_ns).sum();
    let _ = writeln!(
        out,
        "\nConstructs across the {} traces [host] (imbalance = max / mean; 1.00 is even)",
        sections.len()
    );
    let _ = writeln!(
        out,
        "  {:<32} {:<16} {:>12} {:>7} {:>12} {:>12} {:>9}",
        "location", "construct", "total", "%job", "max", "mean", "imbalance"
    );
    for r in stats.iter().take(top) {
        let loc = format!(
            "{} {}",
            r.location.short(),
            r.location.function.as_deref().unwrap_or("")
        );
        let _ = writeln!(
            out,
            "  {:<32} {:<16} {:>12} {:>7} {:>12} {:>12} {:>9.2}",
            loc.trim_end(),
            r.kind.label(),
            duration(r.total_ns()),
            percent(r.total_ns(), job),
            duration(r.max_ns()),
            duration(r.mean_ns()),
            r.imbalance()
        );
    }
}
