//! `accprof symbolize`: keep the source lines and names of a trace's addresses in the trace.

use crate::error::CliError;
use std::path::{Path, PathBuf};

/// Keep source lines in a trace, so that it outlives its binary.
///
/// Resolves the call sites and variables the trace's events use from the binaries that ran
/// (which must still be on disk, unchanged) and appends them to the trace as its symbols chunk.
/// A killed run's `<trace>.live` file is folded into the trace first (then removed), so that
/// the trace alone holds every event it recorded.
/// The tool library does this itself when a program exits normally, and `accprof run` when a
/// program it ran was killed; this is for traces recorded otherwise (LD_PRELOAD, killed) before
/// the program is rebuilt, or before the trace is copied to another machine. A trace that has
/// its symbols already is left as it is.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  accprof symbolize accprof.laplace.1234.trace")]
pub struct Args {
    /// The traces (of programs that have ended).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: Args) -> Result<(), CliError> {
    for trace in &args.traces {
        let line = symbolize(trace)?;
        if !args.quiet {
            eprintln!("accprof: {line}");
        }
    }
    Ok(())
}

/// Adds the symbols chunk to `trace`; says in one line what it did, warnings included.
pub fn symbolize(trace: &Path) -> Result<String, CliError> {
    let done = accprof_symbols::symbolize_file(trace)?;
    let mut line = if done.already {
        format!("{}: its source lines are kept already", trace.display())
    } else if done.entries == 0 {
        format!(
            "{}: nothing to keep (no call sites or variables resolved)",
            trace.display()
        )
    } else {
        format!(
            "{}: kept {} call sites and variables",
            trace.display(),
            done.entries
        )
    };
    if done.upgraded {
        line.push_str("; the version 1 trace was written again as version 2 to take them (same events, same numbers)");
    }
    if done.folded > 0 {
        line.push_str(&format!(
            "; {} events of the killed run folded in from its live file, which is removed",
            done.folded
        ));
    }
    if done.cut_bytes > 0 {
        line.push_str(&format!(
            " (dropped a chunk of {} bytes cut short at the end)",
            done.cut_bytes
        ));
    }
    for w in &done.warnings {
        line.push_str(&format!("; {w}"));
    }
    Ok(line)
}
