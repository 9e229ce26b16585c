//! `accprof run`: in progress.

use crate::error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(trailing_var_arg = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(_args: Args) -> Result<(), CliError> {
    Err(CliError::new("accprof run is not built yet"))
}
