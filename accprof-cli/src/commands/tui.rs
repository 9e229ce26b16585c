//! `accprof tui`: opens the interactive timeline (the `accprof-tui` program next to `accprof`).

use crate::error::CliError;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// Open the interactive terminal timeline of one or more traces.
///
/// Runs the `accprof-tui` program installed next to `accprof` with the same arguments; see
/// `accprof-tui --help` for its keys.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  accprof tui accprof.laplace.1234.trace\n  accprof tui traces/*.trace              # one group of lanes per MPI rank\n  accprof tui --follow run.trace          # while the program is still writing it"
)]
pub struct Args {
    /// Arguments passed to accprof-tui (trace files, --follow).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot find accprof-tui: {e}")))?;
    let tui: PathBuf = exe.with_file_name("accprof-tui");
    if !tui.exists() {
        return Err(CliError::new(format!(
            "cannot find {} (build it with `cargo build --release -p accprof-tui`)",
            tui.display()
        )));
    }
    let err = std::process::Command::new(&tui).args(&args.args).exec();
    Err(CliError::new(format!(
        "cannot start {}: {err}",
        tui.display()
    )))
}
