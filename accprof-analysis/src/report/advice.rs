//! The advice as text (`accprof advise`); its JSON is [`super::json::render_findings`].

use crate::advise::Finding;
use crate::format::{bytes, duration, percent};
use crate::model::Profile;
use std::fmt::Write;

/// The findings as text, one numbered block each.
pub fn render_text(p: &Profile, findings: &[Finding]) -> String {
    let mut out = String::new();
    let wall = p.summary.wall_ns;
    if p.is_empty() {
        out.push_str("The trace holds no OpenACC events: nothing to advise.\n");
        return out;
    }
    if crate::host_fallback::ran_on_host(p) {
        let _ = writeln!(
            out,
            "Host fallback: {}.\n",
            crate::host_fallback::EXPLANATION
        );
    }
    if findings.is_empty() {
        let _ = writeln!(
            out,
            "No findings: none of the rules matched this run ({} of host time, {} in transfers).",
            duration(wall),
            duration(p.summary.transfers_ns())
        );
        return out;
    }
    // Savings that overlap can add up past the run; none can save more than the run took.
    let sum: u64 = findings.iter().map(|f| f.estimated_saving_ns).sum();
    let total = if wall > 0 { sum.min(wall) } else { sum };
    let _ = writeln!(
        out,
        "{} finding(s), ordered by the time they would save (estimates from host-side times; wall time {}).\n",
        findings.len(),
        duration(wall)
    );
    for (i, f) in findings.iter().enumerate() {
        let _ = writeln!(out, "{}. {} [{}]", i + 1, f.title, f.rule.id());
        let _ = writeln!(out, "   at:       {}", f.location.display());
        let _ = writeln!(
            out,
            "   evidence: {} occurrence(s){}, {} host time",
            f.evidence.count,
            if f.evidence.bytes > 0 {
                format!(", {}", bytes(f.evidence.bytes))
            } else {
                String::new()
            },
            duration(f.evidence.time_ns)
        );
        for d in &f.evidence.details {
            let _ = writeln!(out, "             {d}");
        }
        if f.estimated_saving_ns == 0 {
            let why = match f.rule {
                crate::advise::Rule::InitEarly => {
                    "a note: the change moves time, it does not remove it"
                }
                _ => "the trace does not measure what the change removes",
            };
            let _ = writeln!(out, "   saving:   none estimated ({why})");
        } else {
            let _ = writeln!(
                out,
                "   saving:   about {} ({} of the run)",
                duration(f.estimated_saving_ns),
                percent(f.estimated_saving_ns, wall)
            );
        }
        let _ = writeln!(out, "   change:   {}", f.change);
        if let Some(e) = f.events.first() {
            let trace = match p.sources.as_slice() {
                [one] => format!(" {}", one.path),
                _ => String::new(),
            };
            let more = match f.events.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            let _ = writeln!(
                out,
                "   see:      event #{}{more}: `accprof tui --event {}{trace}`",
                e.index, e.index
            );
        }
        out.push('\n');
    }
    if total < sum {
        let _ = writeln!(
            out,
            "Together at most the run's {}: the savings overlap (they add up to {}).",
            duration(total),
            duration(sum)
        );
    } else {
        let _ = writeln!(
            out,
            "Together about {} ({}) if the savings do not overlap.",
            duration(total),
            percent(total, wall)
        );
    }
    out
}
