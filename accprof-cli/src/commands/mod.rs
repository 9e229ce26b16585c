//! One module per subcommand: `Args` (its flags, with `--help` text) and `run`.

pub mod advise;
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
