//! `accprof check`: run a program on the bundled runtime's emulated device with its data-clause
//! checker on (runtime-shim/src/check), and say what a discrete GPU would have shown wrong.
//!
//! The program runs with libaccshim.so (check mode, ACCSHIM_CHECK) and libaccprof.so (its
//! trace, which names the arrays as `accprof report` and `advise` do) preloaded; its input,
//! output and exit status are its own. The findings ([`findings`]) are printed after it ends
//! ([`render`]); the exit status is the program's, or 1 when it exited 0 but a bug was found.

pub mod advise_notes;
mod clauses;
mod findings;
mod names;
mod render;
mod source;

use crate::commands::run::{find_library, find_shim, keep_source_lines, prepend, resolve_program};
use crate::error::CliError;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Run a program on the emulated device with the data-clause checker, and report the bugs a
/// discrete GPU would expose.
///
/// The program (a `gcc -fopenacc` build, `-g` for source lines) runs on accprof's bundled
/// runtime, whose emulated device keeps separate host and device copies of every array, as a
/// GPU does. The checker watches both: a host read of data a kernel changed without `update
/// self` (stale_host_read), a kernel using data the host changed without `update device`
/// (stale_device_read), results released without a copy back (results_dropped), a kernel given
/// a host address (host_memory_in_kernel), data left mapped at exit (leak_at_exit), and
/// transfers that moved what the destination already held (redundant_transfer) or that nobody
/// read before they went back (unused_transfer). Each finding names the array, the line and the
/// directive that fixes it.
///
/// Errors (the first four kinds) make the exit status non-zero, so CI can run it like a
/// sanitizer; leaks are warnings and wasted transfers notes (--fail-on sets the level).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  accprof check -- ./laplace 1024 20\n  accprof check --format sarif -o check.sarif -- ./app\n  accprof check --trace app.trace -- ./app && accprof advise app.trace"
)]
pub struct Args {
    /// Output format: text (one block per finding), json, or sarif (SARIF 2.1.0, for code
    /// scanning and editors).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the findings to FILE instead of standard error (text) or standard output (json,
    /// sarif).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the run's trace in TRACE: `accprof advise TRACE` then says whether the data
    /// regions it suggests are safe for this program.
    #[arg(long, value_name = "TRACE")]
    pub trace: Option<PathBuf>,
    /// The lowest level that makes the exit status non-zero: error, warning or note.
    #[arg(long, value_enum, default_value_t = Level::Error)]
    pub fail_on: Level,
    /// The program to run and its arguments.
    #[arg(
        trailing_var_arg = true,
        required = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub command: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Sarif,
}

/// How much a finding matters: SARIF's levels.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Note,
    Warning,
    Error,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Note => "note",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    let exe = resolve_program(&args.command[0])?;
    let (shim, lib) = (find_shim()?, find_library()?);
    let dir = tempfile::tempdir()?;
    let report_path = dir.path().join("check.json");
    let trace = match &args.trace {
        Some(t) => t.clone(),
        None => dir.path().join("check.trace"),
    };
    let mut cmd = Command::new(&exe);
    cmd.args(&args.command[1..]);
    let preload = prepend(&lib, std::env::var("LD_PRELOAD").ok(), ':');
    cmd.env("LD_PRELOAD", prepend(&shim, Some(preload), ':'));
    cmd.env(
        "ACC_PROFLIB",
        prepend(&lib, std::env::var("ACC_PROFLIB").ok(), ';'),
    );
    cmd.env("ACCPROF_OUT", &trace);
    cmd.env("ACCPROF_QUIET", "1");
    cmd.env_remove("ACCPROF_REPORT");
    cmd.env("ACCSHIM_CHECK", &report_path);
    cmd.env("ACC_DEVICE_TYPE", "emulated");
    cmd.env("ACCSHIM_QUIET", "1");
    let started = std::time::SystemTime::now();
    let status = cmd
        .status()
        .map_err(|e| CliError::new(format!("cannot start {}: {e}", exe.display())))?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    };
    if code == 0 && !report_path.exists() {
        // A program that ran no construct on the device (only runtime routines, or its host
        // path) has nothing to check: that is no failure of the program's.
        eprintln!(
            "accprof check: {}: nothing checked (no OpenACC construct ran on the emulated device, or the program ended without exit())",
            exe.display()
        );
        return Ok(());
    }
    let text = std::fs::read_to_string(&report_path).map_err(|_| {
        let how = match status.signal() {
            Some(s) => format!("was killed by signal {s}"),
            None => format!("exited with status {code}"),
        };
        CliError::with_code(
            format!(
                "{} {how} before the checker could report (no OpenACC construct ran on the bundled runtime, or the program ended without exit())",
                exe.display()
            ),
            code.clamp(1, 255) as u8,
        )
    })?;
    let trace = rank_trace(&trace, started);
    let have_trace = trace.exists();
    if have_trace {
        keep_source_lines(&trace, true);
    }
    let report = findings::Report::read(&text, have_trace.then_some(trace.as_path()))?;
    if have_trace {
        findings::keep_beside(&trace, &text)?;
    }
    let out = match args.format {
        Format::Text => render::text(&report),
        Format::Json => render::json(&report),
        Format::Sarif => render::sarif(&report),
    };
    write(args.output.as_ref(), args.format, &out)?;
    let failed = report.findings.iter().any(|f| f.level() >= args.fail_on);
    if code != 0 {
        std::process::exit(code);
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

/// The run's trace: `trace`, or, for a program that started MPI (libaccprof then names the
/// trace `NAME.rankR.trace` so ranks do not overwrite each other), the newest such file this
/// run wrote beside it.
fn rank_trace(trace: &Path, started: std::time::SystemTime) -> PathBuf {
    if trace.exists() {
        return trace.to_path_buf();
    }
    let (Some(dir), Some(stem)) = (trace.parent(), trace.file_stem()) else {
        return trace.to_path_buf();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.rank", stem.to_string_lossy());
    let ext = trace
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let newest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&prefix) && n.ends_with(&ext)
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(t, _)| *t >= started)
        .max();
    newest.map_or_else(|| trace.to_path_buf(), |(_, p)| p)
}

/// Text goes to standard error (the program's output is on standard output), JSON and SARIF
/// to standard output, either to FILE with -o.
fn write(to: Option<&PathBuf>, format: Format, out: &str) -> Result<(), CliError> {
    use std::io::Write;
    match to {
        Some(p) => std::fs::write(p, out)
            .map_err(|e| CliError::new(format!("{}: cannot write: {e}", p.display()))),
        None if format == Format::Text => {
            let mut err = std::io::stderr().lock();
            err.write_all(out.as_bytes())?;
            Ok(err.flush()?)
        }
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(out.as_bytes())?;
            Ok(o.flush()?)
        }
    }
}
