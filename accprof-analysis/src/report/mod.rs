//! Rendering profiles: the text report (NV_ACC_TIME's layout plus accprof's sections), the
//! JSON document (schema in docs/report-json-schema.md) and CSV; the advice ([`advice`]) and
//! the comparison of two runs ([`diff`]) as text, beside them.
//!
//! A report covers one or more traces: with several (the ranks of an MPI job) it has one
//! section per trace and then the merged totals.

pub mod advice;
pub mod csv;
pub mod diff;
pub mod json;
pub mod ranks;
pub mod text;

use crate::model::Profile;

/// One trace's profile with the label its section gets ("rank 3", "pid 1234").
#[derive(Clone, Debug)]
pub struct Section {
    pub label: String,
    pub profile: Profile,
}

/// What a report shows.
#[derive(Clone, Copy, Debug)]
pub struct ReportOptions {
    /// How many constructs the "top constructs" table lists.
    pub top: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { top: 10 }
    }
}

/// The sections of a report of `profiles` (in the order given) and, when there are several,
/// their merge.
pub fn sections(profiles: Vec<Profile>) -> (Vec<Section>, Option<Profile>) {
    let merged = (profiles.len() > 1).then(|| ranks::merge_ranks(&profiles));
    let sections = profiles
        .into_iter()
        .map(|p| Section {
            label: p
                .sources
                .first()
                .map(|s| s.rank_label())
                .unwrap_or_default(),
            profile: p,
        })
        .collect();
    (sections, merged)
}
