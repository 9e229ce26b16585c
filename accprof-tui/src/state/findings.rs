//! Advice findings shown in the findings panel, each pointing at the event that shows it.

/// One piece of advice with its evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// One line: what is wrong and what to change.
    pub title: String,
    /// Further lines of explanation.
    pub detail: String,
    /// The record id of the evidence event, when the finding has one on the timeline.
    pub evidence: Option<u32>,
}
