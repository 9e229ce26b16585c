//! `accprof dump`: in progress.

use crate::error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub trace: std::path::PathBuf,
}

pub fn run(_args: Args) -> Result<(), CliError> {
    Err(CliError::new("accprof dump is not built yet"))
}
