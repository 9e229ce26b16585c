//! `accprof report`: the NV_ACC_TIME-style report of one or more traces, as text, JSON or CSV.

use crate::error::CliError;
use accprof_analysis::report::{self, ReportOptions};
use accprof_analysis::Profile;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Print where the time of an OpenACC run went, per source file, function and line.
///
/// The text report follows NV_ACC_TIME's layout ("N: compute region reached K times",
/// "data copyin transfers: K", "kernel launched K times" with grid and block), after a summary
/// (wall time, compute constructs, kernel launches, transfers with bytes and GB/s, waits, device
/// initialization, untracked host time), the top constructs and a table of transfers per
/// variable.
///
/// What the times measure: every time is marked [host] or [device]. [host] times are measured on
/// the host thread between the OpenACC runtime's start and end callbacks: a compute region's time
/// includes its data movement and, when synchronous, waiting for its kernels; "kernel launched"
/// times are the launch call only, not the kernel's run on the device; transfer times are the
/// enqueue_upload / enqueue_download calls. [device] times, when a trace has them, are measured
/// on the device. NV_ACC_TIME prints device times from CUPTI.
///
/// Several traces (the ranks of one MPI job) give one section per trace (by MPI rank, else pid)
/// and then their merged totals.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  accprof report accprof.laplace.1234.trace\n  accprof report --format json -o report.json accprof.laplace.1234.trace\n  accprof report accprof.app.*.trace        # one section per MPI rank, then merged"
)]
pub struct Args {
    /// Trace files written by libaccprof (one per process).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output format. The JSON schema is documented in docs/report-json-schema.md.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many constructs the "top constructs" table lists.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// No progress bar, even on a terminal.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let text = render(&args)?;
    write_output(args.output.as_deref(), &text)
}

/// The report `args` ask for, as text (`run --report` writes it where the program's output is not).
pub fn render(args: &Args) -> Result<String, CliError> {
    let profiles = load_profiles(&args.traces, args.quiet)?;
    let (sections, merged) = report::sections(profiles);
    Ok(match args.format {
        Format::Text => {
            report::text::render(&sections, merged.as_ref(), ReportOptions { top: args.top })
        }
        Format::Json => report::json::render(&sections, merged.as_ref()) + "\n",
        Format::Csv => report::csv::render(&sections, merged.as_ref()),
    })
}

/// Writes `text` to `path`, or to standard output.
pub fn write_output(path: Option<&Path>, text: &str) -> Result<(), CliError> {
    match path {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| CliError::new(format!("{}: cannot write: {e}", p.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .map_err(|e| CliError::new(format!("cannot write the report: {e}")))
        }
    }
}

/// Reads every trace into a profile, printing each trace's warnings on stderr once.
pub fn load_profiles(paths: &[PathBuf], quiet: bool) -> Result<Vec<Profile>, CliError> {
    let paths = super::traces_given(paths)?;
    let mut out = Vec::with_capacity(paths.len());
    for path in &paths {
        let p = load_profile(path, quiet)?;
        for w in &p.warnings {
            eprintln!("accprof: warning: {w}");
        }
        out.push(p);
    }
    Ok(out)
}

/// Reads one trace, with a progress bar on a terminal when it takes more than a moment.
pub fn load_profile(path: &Path, quiet: bool) -> Result<Profile, CliError> {
    let show = !quiet && std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let result = Profile::from_path_with_progress(path, |p| {
        if !show || started.elapsed() < Duration::from_millis(500) {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::with_draw_target(
                Some(p.total_bytes),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b.set_message(format!("reading {}", path.display()));
            b
        });
        b.set_position(p.bytes_read);
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(result?)
}
