//! `accprof`: profile OpenACC programs and read what they did.
//!
//! Each subcommand lives in `commands/<name>.rs` with its own `Args` and `run`. Every failure is
//! a [`CliError`]: one line on stderr and a non-zero exit, never a panic or a backtrace.

#![warn(clippy::undocumented_unsafe_blocks)]
// Doc comments of the commands are also their --help, where "[host]" and "[device]" are
// the labels the output prints, not links.
#![allow(rustdoc::broken_intra_doc_links)]

mod commands;
mod error;
mod progress;

use clap::{Parser, Subcommand};
use error::CliError;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "accprof",
    version,
    about = "Shows where an OpenACC program's GPU time goes, and what to change",
    long_about = "Shows where an OpenACC program's GPU time goes, and what to change.\n\n\
        Record a trace with `accprof run -- ./app`, or by loading the tool library yourself \
        (LD_PRELOAD=/path/libaccprof.so ./app, or ACC_PROFLIB=/path/libaccprof.so ./app). \
        Then read it with `accprof report`, `accprof advise`, `accprof tui` and the other commands.",
    after_help = "Examples:\n  accprof run --report -- ./laplace 4096\n  accprof report accprof.laplace.1234.trace\n  accprof advise accprof.laplace.1234.trace"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Run(commands::run::Args),
    Report(commands::report::Args),
    Advise(commands::advise::Args),
    Check(commands::check::Args),
    Export(commands::export::Args),
    Plot(commands::plot::Args),
    Diff(commands::diff::Args),
    Dump(commands::dump::Args),
    Symbolize(commands::symbolize::Args),
    Tui(commands::tui::Args),
}

fn main() -> ExitCode {
    error::install_panic_hook();
    // Let `accprof dump | head` end quietly instead of failing on a closed pipe.
    // SAFETY: setting a signal disposition to its default before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let result: Result<(), CliError> = match cli.command {
        Command::Run(a) => commands::run::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Advise(a) => commands::advise::run(a),
        Command::Check(a) => commands::check::run(a),
        Command::Export(a) => commands::export::run(a),
        Command::Plot(a) => commands::plot::run(a),
        Command::Diff(a) => commands::diff::run(a),
        Command::Dump(a) => commands::dump::run(a),
        Command::Symbolize(a) => commands::symbolize::run(a),
        Command::Tui(a) => commands::tui::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("accprof: {e}");
            ExitCode::from(e.exit_code)
        }
    }
}
