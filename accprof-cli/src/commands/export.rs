//! `accprof export`: a trace as Chrome Trace Event JSON, for Perfetto UI, chrome://tracing and
//! the Chrome DevTools Performance panel, or as Perfetto's native protobuf format.
//!
//! One pipeline ([`pipeline`]) streams the traces through accprof-timeline's layout and writes
//! what it hands out ([`chrome`], [`perfetto`]) on a second thread; memory does not grow with
//! events.

mod batch;
mod chrome;
mod counters;
mod json;
mod perfetto;
mod pipeline;
mod strings;

use crate::error::CliError;
use crate::progress::ProgressBar;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Convert traces to Chrome Trace Event JSON, to open in ui.perfetto.dev, chrome://tracing or
/// the Chrome DevTools Performance panel.
///
/// Each host thread gets a track with its compute constructs, data directives, updates and waits;
/// uploads, downloads and kernel launches go on device tracks (one per async queue, and one per
/// host thread for synchronous work). Device records (CUPTI's kernels, copies and memsets, with
/// device times) go on one track per CUDA stream, with a flow arrow from the host slice that
/// issued each. Slices are named after the construct and source line, the variable or the kernel
/// ("memcpy HtoD 128 MiB A" for device copies), and carry bytes, kernel geometry, source
/// location and device times as args. Counter tracks show device memory in use and bytes in
/// flight (from the device's copies when the trace has them). Several traces (one per MPI rank) become
/// one process each, aligned on the wall clock.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    accprof export --format chrome -o laplace.json accprof.laplace.1234.trace\n  \
    accprof export -o ranks.json accprof.app.*.trace      (one process per MPI rank)\n  \
    accprof export -o - app.trace | gzip > app.json.gz\n  \
    accprof export -o laplace.pftrace accprof.laplace.1234.trace   (Perfetto's native format)\n\n\
    Open the file at https://ui.perfetto.dev (Open trace file), in chrome://tracing (Load), or in \
    the Chrome DevTools Performance panel (Load profile). A .pftrace opens in ui.perfetto.dev and \
    trace_processor (SQL), and is several times smaller and faster to load than the JSON.")]
pub struct Args {
    /// Trace files; several (one per MPI rank) become one process each.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output format. Default: perfetto when the output ends in .pftrace or .perfetto-trace,
    /// else chrome.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Output file, or `-` for standard output. Default: the first trace's name with `.json`
    /// (`.pftrace` for `--format perfetto`).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Chrome Trace Event JSON (Perfetto UI, chrome://tracing, DevTools).
    Chrome,
    /// Perfetto's native protobuf trace (TrackEvent, interned strings): ui.perfetto.dev and
    /// trace_processor read it best.
    Perfetto,
}

impl Format {
    /// The format an output file's extension asks for, if it names one.
    fn of_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy();
        (name.ends_with(".pftrace") || name.ends_with(".perfetto-trace"))
            .then_some(Format::Perfetto)
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(Format::of_path))
        .unwrap_or(Format::Chrome);
    let ext = if format == Format::Perfetto {
        "pftrace"
    } else {
        "json"
    };
    let traces = super::traces_given(&args.traces)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| traces[0].with_extension(ext));
    let mut progress = ProgressBar::new(args.quiet);
    let summary = if output.as_os_str() == "-" {
        // The export may have to empty its output and write it again (when the traces do not
        // fit what it first assumed), which standard output cannot do: it goes to an unnamed
        // temporary file first and is copied out, in bounded memory as for a file.
        let tmp = tempfile::tempfile().map_err(|e| {
            CliError::new(format!(
                "cannot make a temporary file for standard output (TMPDIR): {e}"
            ))
        })?;
        let summary = pipeline::export(&traces, format, &tmp, "standard output", &mut progress)?;
        copy_to_stdout(&tmp).map_err(|e| write_error("standard output", e))?;
        summary
    } else {
        let name = output.display().to_string();
        write_file_atomically(&output, |f| {
            pipeline::export(&traces, format, f, &name, &mut progress)
        })?
    };
    progress.finish();
    if output.as_os_str() != "-" {
        eprintln!(
            "accprof: wrote {}: {} events on {} tracks; open it at https://ui.perfetto.dev",
            output.display(),
            summary.events,
            summary.tracks
        );
    }
    Ok(())
}

/// Copies the whole of `file` to standard output.
fn copy_to_stdout(mut file: &File) -> io::Result<()> {
    use std::io::Seek;
    file.rewind()?;
    let mut stdout = io::stdout().lock();
    io::copy(&mut file, &mut stdout)?;
    stdout.flush()
}

/// Writes `path` through a temporary file beside it, so that a failed export leaves no
/// half-written JSON behind.
fn write_file_atomically<T>(
    path: &Path,
    write: impl FnOnce(&File) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let tmp = super::temporary_beside(path, "")?;
    let file = File::create(&tmp).map_err(|e| write_error(&path.display().to_string(), e))?;
    let result = write(&file).and_then(|t| {
        std::fs::rename(&tmp, path).map_err(|e| write_error(&path.display().to_string(), e))?;
        Ok(t)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_error(what: &str, e: io::Error) -> CliError {
    CliError::new(format!("{what}: cannot write: {e}"))
}
