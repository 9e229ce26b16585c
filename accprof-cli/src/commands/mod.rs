//! One module per subcommand: `Args` (its flags, with `--help` text) and `run`.

pub mod advise;
pub mod check;
pub mod diff;
pub mod dump;
pub mod export;
pub mod plot;
pub mod report;
pub mod run;
pub mod symbolize;
pub mod tui;

use crate::error::CliError;
use std::path::{Path, PathBuf};

/// A temporary name in `path`'s directory (so that renaming it into place is atomic), hidden
/// and naming this process, ending with `suffix`.
pub(crate) fn temporary_beside(path: &Path, suffix: &str) -> Result<PathBuf, CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| CliError::new(format!("{}: not a file name", path.display())))?;
    Ok(dir.join(format!(
        ".{}.accprof-{}.tmp{suffix}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// The traces among the files a command was given: live files (a `dir/*` glob takes the
/// `T.live` of a killed run beside its `T`) are set aside, with one line each.
pub(crate) fn traces_given(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let (traces, notes) = accprof_trace::live::traces_given(paths);
    for n in notes {
        eprintln!("accprof: note: {n}");
    }
    if traces.is_empty() {
        return Err(CliError::new(
            "no trace among the files given (only live files)",
        ));
    }
    Ok(traces)
}
