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
