//! `accprof plot`: in progress.

use crate::error::CliError;

/// In progress.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trace files.
    pub traces: Vec<std::path::PathBuf>,
}

pub fn run(_args: Args) -> Result<(), CliError> {
    Err(CliError::new("accprof plot is not built yet"))
}
