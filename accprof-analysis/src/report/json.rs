//! The JSON report. Its schema is documented in docs/report-json-schema.md; `SCHEMA_VERSION`
//! changes only when a field is removed or changes meaning (new fields may appear at any time).

use super::Section;
use crate::advise::Finding;
use crate::model::Profile;
use serde::Serialize;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Report<'a> {
    schema_version: u32,
    kind: &'static str,
    time_unit: &'static str,
    traces: Vec<Entry<'a>>,
    merged: Option<&'a Profile>,
}

#[derive(Serialize)]
struct Entry<'a> {
    label: &'a str,
    profile: &'a Profile,
}

/// `accprof report --format json`.
pub fn render(sections: &[Section], merged: Option<&Profile>) -> String {
    let r = Report {
        schema_version: SCHEMA_VERSION,
        kind: "accprof-report",
        time_unit: "ns",
        traces: sections
            .iter()
            .map(|s| Entry {
                label: &s.label,
                profile: &s.profile,
            })
            .collect(),
        merged,
    };
    serde_json::to_string_pretty(&r).expect("serializing plain data cannot fail")
}

#[derive(Serialize)]
struct Advice<'a> {
    schema_version: u32,
    kind: &'static str,
    time_unit: &'static str,
    traces: Vec<&'a str>,
    findings: &'a [Finding],
}

/// `accprof advise --format json`.
pub fn render_findings(traces: &[String], findings: &[Finding]) -> String {
    let a = Advice {
        schema_version: SCHEMA_VERSION,
        kind: "accprof-advice",
        time_unit: "ns",
        traces: traces.iter().map(String::as_str).collect(),
        findings,
    };
    serde_json::to_string_pretty(&a).expect("serializing plain data cannot fail")
}
