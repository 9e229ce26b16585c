//! `accprof diff`: two runs side by side, to see what a change bought.

use crate::commands::report::{load_profile, write_output};
use crate::error::CliError;
use accprof_analysis::diff::diff_runs;
use accprof_analysis::report::diff::render_text;
use std::path::PathBuf;

/// Compare two traces of the same program: the same constructs side by side with the change in
/// host time, transfers and bytes, so that you see what your data region bought.
///
/// Constructs are matched by kind, source file, function and line; a construct present in only
/// one run shows "-" on the other side. All times are host-side ([host]; see `accprof report
/// --help`).
///
/// Times vary from run to run. Give several traces of each side, before and after `--`, and the
/// summary shows each time's median and range and says when a change is within that noise; the
/// constructs and variables are those of each side's run of median wall time.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  accprof diff naive.trace data-region.trace\n  accprof diff naive1.trace naive2.trace naive3.trace -- data1.trace data2.trace data3.trace"
)]
pub struct Args {
    /// The trace before the change and the trace after it; or, with `--`, every trace before it
    /// (several runs of the program before the change).
    #[arg(value_name = "BEFORE", required = true)]
    pub traces: Vec<PathBuf>,
    /// With `--`: the traces after the change.
    #[arg(last = true, value_name = "AFTER")]
    pub after: Vec<PathBuf>,
    /// Output format: text, or JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the comparison to FILE instead of standard output.
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
    let (before, after): (&[PathBuf], &[PathBuf]) = match (args.traces.as_slice(), args.after.is_empty()) {
        ([b, a], true) => (std::slice::from_ref(b), std::slice::from_ref(a)),
        (_, true) => {
            return Err(CliError::new(format!(
                "accprof diff takes two traces (before, after), or several before and several after `--`; got {}",
                args.traces.len()
            )))
        }
        (b, false) => (b, args.after.as_slice()),
    };
    let load = |paths: &[PathBuf]| -> Result<Vec<_>, CliError> {
        paths.iter().map(|p| load_profile(p, args.quiet)).collect()
    };
    let (bp, ap) = (load(before)?, load(after)?);
    for w in bp.iter().chain(&ap).flat_map(|p| &p.warnings) {
        eprintln!("accprof: warning: {w}");
    }
    let d = diff_runs(&bp, &ap).expect("each side has a trace");
    let label = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = match args.format {
        Format::Text => render_text(&label(before), &label(after), &d),
        Format::Json => {
            let doc = serde_json::json!({
                "schema_version": accprof_analysis::report::json::SCHEMA_VERSION,
                "kind": "accprof-diff",
                "time_unit": "ns",
                "before": label(before),
                "after": label(after),
                "diff": d,
            });
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::new(e.to_string()))? + "\n"
        }
    };
    write_output(args.output.as_deref(), &text)
}
