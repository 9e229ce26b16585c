//! `accprof advise`: what to change in the program, largest saving first.

use crate::commands::report::{load_profiles, write_output};
use crate::error::CliError;
use accprof_analysis::advise;
use accprof_analysis::report::advice::render_text;
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
#[command(
    after_help = "Examples:\n  accprof advise accprof.laplace.1234.trace\n  accprof advise --format json accprof.laplace.1234.trace"
)]
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
    let text = render(&args)?;
    write_output(args.output.as_deref(), &text)
}

/// The advice `args` ask for, as text (`run --advise` writes it where the program's output is not).
pub fn render(args: &Args) -> Result<String, CliError> {
    let profiles = load_profiles(&args.traces, args.quiet)?;
    let profile = if profiles.len() == 1 {
        profiles.into_iter().next().expect("one profile")
    } else {
        accprof_analysis::report::ranks::merge_ranks(&profiles)
    };
    let mut findings = advise(&profile);
    if let [trace] = args.traces.as_slice() {
        crate::commands::check::advise_notes::annotate(trace, &profile, &mut findings);
    }
    let text = match args.format {
        Format::Text => render_text(&profile, &findings),
        Format::Json => {
            let names: Vec<String> = args
                .traces
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            accprof_analysis::report::json::render_findings(&names, &findings) + "\n"
        }
    };
    Ok(text)
}
