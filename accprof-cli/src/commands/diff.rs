//! `accprof diff`: two runs side by side, to see what a change bought.

use crate::commands::report::{load_profile, write_output};
use crate::error::CliError;
use accprof_analysis::diff::diff;
use accprof_analysis::report::diff::render_text;
use std::path::PathBuf;

/// Compare two traces of the same program: the same constructs side by side with the change in
/// host time, transfers and bytes, so that you see what your data region bought.
///
/// Constructs are matched by kind, source file, function and line; a construct present in only
/// one run shows "-" on the other side. All times are host-side ([host]; see `accprof report
/// --help`).
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  accprof diff naive.trace data-region.trace")]
pub struct Args {
    /// The trace before the change.
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// The trace after the change.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
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
    let before = load_profile(&args.before, args.quiet)?;
    let after = load_profile(&args.after, args.quiet)?;
    for w in before.warnings.iter().chain(&after.warnings) {
        eprintln!("accprof: warning: {w}");
    }
    let d = diff(&before, &after);
    let text = match args.format {
        Format::Text => render_text(
            &args.before.display().to_string(),
            &args.after.display().to_string(),
            &d,
        ),
        Format::Json => {
            let doc = serde_json::json!({
                "schema_version": accprof_analysis::report::json::SCHEMA_VERSION,
                "kind": "accprof-diff",
                "time_unit": "ns",
                "before": args.before.display().to_string(),
                "after": args.after.display().to_string(),
                "diff": d,
            });
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::new(e.to_string()))? + "\n"
        }
    };
    write_output(args.output.as_deref(), &text)
}
