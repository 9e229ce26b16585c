//! What a checked run adds to `accprof advise`: whether a data region it suggests is safe.
//!
//! A data region keeps arrays on the device across a loop, so the host must not touch them
//! inside it, or needs an update where it does. A run under `accprof check --trace TRACE`
//! leaves the checker's report beside the trace (TRACE.check.json) with the host's first
//! access to each array after each release and sync, timed on the trace's clock; a data-region
//! finding whose loop saw none of its arrays touched is safe, else it needs the updates named.

use accprof_analysis::{Finding, Profile, Rule};
use serde_json::Value;
use std::path::Path;

/// One host access from the checker's report.
struct Access {
    host: u64,
    bytes: u64,
    line: Option<u32>,
    write: bool,
    time_ns: u64,
}

fn accesses(report: &Value) -> Vec<Access> {
    report
        .get("host_accesses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| {
            Some(Access {
                host: u64::from_str_radix(a.get("host")?.as_str()?.trim_start_matches("0x"), 16)
                    .ok()?,
                bytes: a.get("bytes")?.as_u64()?,
                line: a
                    .get("at")
                    .and_then(|at| at.get("line"))
                    .and_then(Value::as_u64)
                    .map(|l| l as u32),
                write: a.get("write")?.as_bool()?,
                time_ns: a.get("time_ns")?.as_u64()?,
            })
        })
        .collect()
}

/// Adds to each data-region finding of `trace`'s advice whether the region is safe, when the
/// trace comes from `accprof check --trace` (its report lies beside it).
pub fn annotate(trace: &Path, profile: &Profile, findings: &mut [Finding]) {
    let Ok(text) = std::fs::read_to_string(super::findings::beside(trace)) else {
        return;
    };
    let Ok(report) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let seen = accesses(&report);
    for f in findings
        .iter_mut()
        .filter(|f| matches!(f.rule, Rule::DataRegion | Rule::EnterExitData))
    {
        // The region's arrays: the variables its change names.
        let arrays: Vec<(u64, String)> = profile
            .variables
            .iter()
            .filter(|v| f.change.contains(&v.name))
            .filter_map(|v| Some((v.host_ptr?, v.name.clone())))
            .collect();
        let inside = |t: u64| f.time_ranges.iter().any(|&(a, b)| t >= a && t <= b);
        let mut needs: Vec<String> = Vec::new();
        for a in &seen {
            let Some((_, name)) = arrays
                .iter()
                .find(|(h, _)| *h >= a.host && *h < a.host + a.bytes.max(1))
            else {
                continue;
            };
            if !inside(a.time_ns) {
                continue;
            }
            let line = a
                .line
                .map_or("an unknown line".to_string(), |l| format!("line {l}"));
            let need = if a.write {
                format!("update device({name}) after the host writes it at {line}")
            } else {
                format!("update self({name}) before the host reads it at {line}")
            };
            if !needs.contains(&need) {
                needs.push(need);
            }
        }
        let mut names: Vec<&str> = arrays.iter().map(|(_, n)| n.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let note =
            if needs.is_empty() {
                format!(
                "checked run (accprof check): safe, the host touched none of {} inside the loop",
                if names.is_empty() { "its arrays".to_string() } else { names.join(", ") }
            )
            } else {
                format!(
                    "checked run (accprof check): not safe as it stands; inside the region add {}",
                    needs.join("; ")
                )
            };
        f.evidence.details.push(note);
    }
}
