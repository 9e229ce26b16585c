//! `accprof advise`: what to change in the program, largest saving first.

use crate::commands::report::{load_profiles, write_output};
use crate::error::CliError;
use accprof_analysis::format::{bytes, duration, percent};
use accprof_analysis::{advise, merge, Finding, Profile};
use std::fmt::Write;
use std::path::PathBuf;

/// Tell what to change in an OpenACC program, from its trace.
///
/// Each finding names the source location (file:line, function), the evidence (counts, bytes,
/// host time), an estimate of the time the change would save and the change itself, ordered by
/// that saving. The rules follow the "11 Tips for Maximizing Performance with OpenACC
/// Directives" and the data-locality guide: arrays copied on every iteration (add a data region,
/// or enter data / exit data across functions), arrays copied out and back in unchanged
/// (create / present), many small slice transfers (copy the whole array), update directives in a
/// loop, repeated allocations, kernels dominated by launch overhead or running on one gang, host
/// waits that async queues could overlap, and device initialization dominating a short run.
///
/// Savings are estimated from host-side times: the transfer time a data region removes, for
/// example, is every transfer but the first upload and last download of each array.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  accprof advise accprof.laplace.1234.trace\n  accprof advise --format json accprof.laplace.1234.trace")]
pub struct Args {
    /// Trace files; several (the ranks of an MPI job) are merged first.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output format: text, or JSON (schema in docs/report-json-schema.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the advice to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let profiles = load_profiles(&args.traces, args.quiet)?;
    let profile = if profiles.len() == 1 { profiles.into_iter().next().expect("one profile") } else { merge(&profiles) };
    let findings = advise(&profile);
    let text = match args.format {
        Format::Text => render_text(&profile, &findings),
        Format::Json => {
            let names: Vec<String> = args.traces.iter().map(|p| p.display().to_string()).collect();
            accprof_analysis::report::json::render_findings(&names, &findings) + "\n"
        }
    };
    write_output(args.output.as_deref(), &text)
}

/// The findings as text, one numbered block each.
pub fn render_text(p: &Profile, findings: &[Finding]) -> String {
    let mut out = String::new();
    let wall = p.summary.wall_ns;
    if p.is_empty() {
        out.push_str("The trace holds no OpenACC events: nothing to advise.\n");
        return out;
    }
    if findings.is_empty() {
        let _ = writeln!(out, "No findings: none of the rules matched this run ({} of host time, {} in transfers).", duration(wall), duration(p.summary.transfers_ns()));
        return out;
    }
    let total: u64 = findings.iter().map(|f| f.estimated_saving_ns).sum();
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
            if f.evidence.bytes > 0 { format!(", {}", bytes(f.evidence.bytes)) } else { String::new() },
            duration(f.evidence.time_ns)
        );
        for d in &f.evidence.details {
            let _ = writeln!(out, "             {d}");
        }
        let _ = writeln!(out, "   saving:   about {} ({} of the run)", duration(f.estimated_saving_ns), percent(f.estimated_saving_ns, wall));
        let _ = writeln!(out, "   change:   {}", f.change);
        if let Some(e) = f.events.first() {
            let _ = writeln!(out, "   see:      event #{} (and {} more) in `accprof tui`", e.index, f.events.len() - 1);
        }
        out.push('\n');
    }
    let _ = writeln!(out, "Together about {} ({}) if the savings do not overlap.", duration(total), percent(total, wall));
    out
}
