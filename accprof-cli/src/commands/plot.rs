//! `accprof plot`: a picture of where the time went, as SVG or PNG.
//!
//! Two panels: the per-construct breakdown (the longest constructs, split into kernels, data,
//! wait, init and host, from accprof-analysis's `Profile`; kernels and data in device time where
//! the trace has device records, and labelled "[device]" then) and a timeline with one lane per
//! host thread, synchronous device track, async queue and CUDA stream (the tracks of
//! `accprof export`).

mod breakdown;
mod category;
mod draw;
mod timeline;

use crate::error::CliError;
use accprof_analysis::Profile;
use accprof_symbols::ResolvingReader;
use accprof_timeline::layout::Stop;
use accprof_timeline::{Late, Layout, LayoutConfig, TrackTable};
use draw::Figure;
use plotters::prelude::*;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Draw a trace: time per construct (kernels, data, wait, init, host) and a timeline.
///
/// The first panel shows the constructs that took the most host time, longest first, each bar
/// split into kernel launches, data movement, waiting, device initialization and the host's own
/// time in the construct; when the trace has device records (CUPTI), kernels and data are the
/// device's times and are labelled [device]. The second shows the run over time, one lane per
/// host thread, per thread's synchronous device work, per async queue and per CUDA stream. SVG by default; PNG when the output
/// ends in .png or with --format png (text drawn with a bundled font).
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    accprof plot accprof.laplace.1234.trace -o laplace.svg\n  \
    accprof plot accprof.laplace.1234.trace -o laplace.png\n  \
    accprof plot accprof.app.*.trace -o ranks.svg      (several MPI ranks: summed breakdown, one timeline per rank)")]
pub struct Args {
    /// Trace files; several (one per MPI rank) are summed in the breakdown and get lanes each.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output file. Default: the first trace's name with .svg (or .png with --format png).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Image format. Default: from the output's extension, else SVG.
    #[arg(long, value_enum)]
    pub format: Option<ImageFormat>,
    /// Title of the figure. Default: the program and the trace's name.
    #[arg(long)]
    pub title: Option<String>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Svg,
    Png,
}

impl ImageFormat {
    /// The format an output's extension names (SVG when it has none); an extension plot
    /// cannot write is an error, rather than an SVG under a misleading name.
    fn of_path(path: &Path) -> Result<ImageFormat, CliError> {
        let Some(ext) = path.extension() else {
            return Ok(ImageFormat::Svg);
        };
        let ext = ext.to_string_lossy();
        if ext.eq_ignore_ascii_case("svg") {
            Ok(ImageFormat::Svg)
        } else if ext.eq_ignore_ascii_case("png") {
            Ok(ImageFormat::Png)
        } else {
            Err(CliError::new(format!(
                "{}: plot writes .svg or .png, not .{ext} (or give --format svg|png)",
                path.display()
            )))
        }
    }

    fn extension(self) -> &'static str {
        match self {
            ImageFormat::Svg => "svg",
            ImageFormat::Png => "png",
        }
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    let format = match (args.format, &args.output) {
        (Some(f), _) => f,
        (None, Some(p)) => ImageFormat::of_path(p)?,
        (None, None) => ImageFormat::Svg,
    };
    let traces = super::traces_given(&args.traces)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| traces[0].with_extension(format.extension()));
    let fig = figure(&args, &traces)?;
    write_image(&output, format, &fig)?;
    eprintln!("accprof: wrote {}", output.display());
    Ok(())
}

fn figure(args: &Args, traces: &[PathBuf]) -> Result<Figure, CliError> {
    let mut progress = crate::progress::ProgressBar::new(args.quiet);
    // One pass over each trace gives both the breakdown's profile and the timeline.
    let mut cfg = LayoutConfig::default();
    let read = loop {
        match read(traces, &cfg, &mut progress)? {
            Ok(read) => break read,
            Err(late) => cfg = late.retry(&cfg, || 0),
        }
    };
    progress.finish();
    let Read {
        mut profiles,
        processes,
        bins,
        tracks,
        warnings: read_warnings,
    } = read;
    let profile = if profiles.len() == 1 {
        profiles.pop().unwrap_or_default()
    } else {
        accprof_analysis::merge(&profiles)
    };
    // The profile repeats the reader's warnings (truncation, drops) with its own; say each once.
    let mut warnings: Vec<String> = read_warnings;
    for w in &profile.warnings {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    for w in &warnings {
        eprintln!("accprof: warning: {w}");
    }
    let title = args.title.clone().unwrap_or_else(|| {
        let names: Vec<&str> = processes.iter().map(String::as_str).collect();
        match names.as_slice() {
            [one] => format!("accprof: {one}"),
            many => format!("accprof: {} processes", many.len()),
        }
    });
    let mut notes = Vec::new();
    if profile.is_empty() {
        notes.push("The trace holds no OpenACC events.".to_string());
    }
    if !warnings.is_empty() {
        notes.push(format!(
            "{} warning(s): see the command's output.",
            warnings.len()
        ));
    }
    let sources = breakdown::Sources::of(&profile);
    if sources.any_device() {
        notes.push("Breakdown: kernels and copies as the device timed them [device]; the rest is host time inside each construct. Timeline: what each thread, queue and CUDA stream was doing, per pixel the kind that took most of it.".into());
    } else {
        notes.push("Breakdown: host time inside each construct. Timeline: what each thread and queue was doing, per pixel the kind that took most of it.".into());
    }
    Ok(Figure {
        title,
        rows: breakdown::rows(&profile),
        sources,
        timeline: {
            let name = |trace: u16| processes[usize::from(trace)].clone();
            let several = (processes.len() > 1).then_some(&name as &dyn Fn(u16) -> String);
            bins.into_timeline(&tracks, draw::PLOT_W, several)
        },
        notes,
    })
}

/// What one pass over the traces gave.
struct Read {
    /// Per trace, in the order given.
    profiles: Vec<Profile>,
    /// Per trace in rank order (the layout's numbering), its process's name.
    processes: Vec<String>,
    bins: timeline::Bins,
    tracks: TrackTable,
    warnings: Vec<String>,
}

/// Reads every trace (in MPI rank order) into its profile and the timeline's bins; a layout
/// that did not fit asks to be read again ([`Late`]).
fn read(
    paths: &[PathBuf],
    cfg: &LayoutConfig,
    progress: &mut crate::progress::ProgressBar,
) -> Result<Result<Read, Late>, CliError> {
    let total: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.phase("reading", total, true);
    let mut readers = Vec::with_capacity(paths.len());
    for p in paths {
        readers.push(Some(ResolvingReader::open(p)?));
    }
    let mut order: Vec<usize> = (0..readers.len()).collect();
    order.sort_by_key(|&i| {
        let h = readers[i].as_ref().map(|r| r.header().mpi_rank);
        (h.flatten().is_none(), h.flatten(), i)
    });
    let mut layout = Layout::new(cfg.clone());
    let mut bins = timeline::Bins::new(draw::PLOT_W);
    let mut profiles: Vec<Option<Profile>> = vec![None; paths.len()];
    let mut processes = Vec::new();
    let mut warnings = Vec::new();
    let mut bytes_before = 0;
    for &i in &order {
        let Some(r) = readers[i].take() else { continue };
        let label = paths[i].display().to_string();
        processes.push(accprof_timeline::track::process_name(r.header(), &label));
        layout.begin_trace(r.header());
        let mut late = None;
        let (profile, _) = Profile::read_beside(
            label,
            r,
            0,
            |_| {},
            |events, bytes| {
                progress.set(bytes_before + bytes);
                for ev in events {
                    if let Err(Stop::Late(l)) = layout.push(ev, &mut bins) {
                        late = Some(l);
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            },
        )?;
        if let Some(l) = late {
            return Ok(Err(l));
        }
        if let Err(Stop::Late(l)) = layout.end_trace(&mut bins) {
            return Ok(Err(l));
        }
        bytes_before += std::fs::metadata(&paths[i]).map_or(0, |m| m.len());
        warnings.extend(profile.warnings.iter().cloned());
        profiles[i] = Some(profile);
    }
    let (tracks, _) = match layout.finish(&mut bins) {
        Ok(done) => done,
        Err(Stop::Late(l)) => return Ok(Err(l)),
        Err(Stop::Sink(never)) => match never {},
    };
    Ok(Ok(Read {
        profiles: profiles.into_iter().flatten().collect(),
        processes,
        bins,
        tracks,
        warnings,
    }))
}

/// Draws to a temporary file beside `path` and renames it, so a failure leaves nothing behind.
fn write_image(path: &Path, format: ImageFormat, fig: &Figure) -> Result<(), CliError> {
    register_font();
    // The bitmap backend picks its encoder from the extension, so the temporary keeps it.
    let tmp = crate::commands::temporary_beside(path, &format!(".{}", format.extension()))?;
    let size = (draw::WIDTH, fig.height());
    let drawn = match format {
        ImageFormat::Svg => {
            let area = SVGBackend::new(&tmp, size).into_drawing_area();
            draw::draw(&area, fig)
                .and_then(|()| area.present())
                .map_err(|e| e.to_string())
        }
        ImageFormat::Png => {
            let area = BitMapBackend::new(&tmp, size).into_drawing_area();
            draw::draw(&area, fig)
                .and_then(|()| area.present())
                .map_err(|e| e.to_string())
        }
    };
    let result = drawn.and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError::new(format!("{}: cannot write: {e}", path.display()))
    })
}

/// PNG text is rasterized by ab_glyph from a font we ship: the machine may have none.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        // The font is ours and known good; failing to parse it would be a build defect.
        plotters::style::register_font("sans-serif", FontStyle::Normal, font)
            .unwrap_or_else(|_| panic!("the bundled font does not parse"));
    });
}
