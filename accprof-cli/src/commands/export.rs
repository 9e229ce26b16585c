//! `accprof export`: a trace as Chrome Trace Event JSON, for Perfetto UI, chrome://tracing and
//! the Chrome DevTools Performance panel.
//!
//! Written to a file, the traces are streamed once ([`stream`]): each event is cut down to a
//! compact [`slice::Slice`] (what the JSON shows of it), placed on a track, put in start order by
//! the track's bounded window, given a lane so that every slice nests strictly (see [`tracks`]),
//! and written out by a second thread while the rest is read; memory does not grow with events.
//! Device records wait, laid out, for the host slice that issued them ([`issuers`]). Small
//! traces, standard output and input the windows cannot order are read whole instead ([`collect_with_progress`]: every slice held, then sorted per track).

pub(crate) mod chrome;
pub(crate) mod counters;
pub(crate) mod device;
pub(crate) mod flows;
mod issuers;
mod json;
mod perfetto;
pub(crate) mod slice;
mod stream;
mod strings;
pub(crate) mod tracks;

use crate::error::CliError;
use crate::progress::Progress;
use accprof_analysis::{Profile, ProfileBuilder};
use accprof_symbols::ResolvingReader;
use accprof_trace::{device as device_kind, Field, Header};
use chrome::{ChromeWriter, Process};
use counters::Counters;
use device::DeviceInfo;
use slice::Slice;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tracks::{TrackKey, TrackKind, TrackTable};

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
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| args.traces[0].with_extension(ext));
    let mut progress = Progress::new(args.quiet);
    let summary = if output.as_os_str() == "-" {
        // Standard output cannot be emptied and written again when the streamed export gives
        // up, so the export goes to an unnamed temporary file first and is copied out: memory
        // stays bounded as it does for a file.
        let tmp = tempfile::tempfile().map_err(|e| {
            CliError::new(format!(
                "cannot make a temporary file for standard output (TMPDIR): {e}"
            ))
        })?;
        let summary =
            export_streamed(&args.traces, format, &tmp, "standard output", &mut progress)?;
        copy_to_stdout(&tmp).map_err(|e| write_error("standard output", e))?;
        summary
    } else {
        let name = output.display().to_string();
        write_file_atomically(&output, |f| {
            export_streamed(&args.traces, format, f, &name, &mut progress)
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

fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("accprof: warning: {w}");
    }
}

/// Reads every trace whole (for several traces, standard output, or a trace the streaming
/// export cannot order), printing the readers' warnings.
fn collect_and_warn(traces: &[PathBuf], progress: &mut Progress) -> Result<Collected, CliError> {
    let collected = collect_with_progress(traces, false, progress)?.0;
    print_warnings(&collected.warnings);
    Ok(collected)
}

fn write_collected(
    format: Format,
    c: Collected,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> io::Result<Summary> {
    match format {
        Format::Chrome => write_chrome(c, out),
        Format::Perfetto => write_perfetto(c, out, progress),
    }
}

/// Exports `traces` into `file` (named `name` in messages), streamed when the traces allow it,
/// else laid out whole (which needs memory for every event).
fn export_streamed(
    traces: &[PathBuf],
    format: Format,
    file: &File,
    name: &str,
    progress: &mut Progress,
) -> Result<Summary, CliError> {
    let out = BufWriter::with_capacity(1 << 20, file);
    // The whole-trace path on request: the reference the streamed export is tested against.
    let outcome = if std::env::var_os("ACCPROF_EXPORT_WHOLE").is_some_and(|v| v == "1") {
        stream::Outcome::Unordered {
            out,
            why: "ACCPROF_EXPORT_WHOLE=1".into(),
        }
    } else {
        stream::export(traces, format, out, name, progress)?
    };
    match outcome {
        stream::Outcome::Written { summary, warnings } => {
            print_warnings(&warnings);
            Ok(summary)
        }
        stream::Outcome::Unordered { out, why } => {
            if std::env::var_os("ACCPROF_EXPORT_DEBUG").is_some() {
                eprintln!("accprof: export: not streamed: {why}");
            }
            let file = restart(out).map_err(|e| write_error(name, e))?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            let collected = collect_and_warn(traces, progress)?;
            let summary = write_collected(format, collected, &mut out, progress)
                .and_then(|s| out.flush().map(|()| s))
                .map_err(|e| write_error(name, e))?;
            Ok(summary)
        }
    }
}

/// The output file emptied, to be written again from its start.
fn restart(out: BufWriter<&File>) -> io::Result<&File> {
    use std::io::Seek;
    let mut file = out.into_inner().map_err(|e| e.into_error())?;
    file.set_len(0)?;
    file.rewind()?;
    Ok(file)
}

/// Copies the whole of `file` to standard output.
fn copy_to_stdout(mut file: &File) -> io::Result<()> {
    use std::io::Seek;
    file.rewind()?;
    let mut stdout = io::stdout().lock();
    io::copy(&mut file, &mut stdout)?;
    stdout.flush()
}

/// Everything read from the traces, ready to be laid out (also the input of `accprof plot`'s
/// timeline).
pub(crate) struct Collected {
    pub processes: Vec<Process>,
    pub slices: Vec<Slice>,
    pub tracks: TrackTable,
    /// What device records have beyond their slice, indexed by [`Slice::device`].
    pub device: Vec<DeviceInfo>,
    pub counters: Counters,
    pub warnings: Vec<String>,
}

struct Summary {
    events: usize,
    tracks: usize,
}

/// Streams every trace into compact slices, building in the same pass each trace's [`Profile`]
/// when `profiles` is set (in the order of `paths`), so that a view needing both reads every
/// trace once. Traces are ordered by MPI rank when they have one. `progress` shows how much of
/// the traces was read.
pub(crate) fn collect_with_progress(
    paths: &[PathBuf],
    profiles: bool,
    progress: &mut Progress,
) -> Result<(Collected, Vec<Profile>), CliError> {
    let total_bytes: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.phase("reading", total_bytes, true);
    let mut bytes_before = 0u64;
    let mut readers = Vec::with_capacity(paths.len());
    for p in paths {
        readers.push(ResolvingReader::open(p)?);
    }
    let mut order: Vec<usize> = (0..readers.len()).collect();
    order.sort_by_key(|&i| {
        (
            readers[i].header().mpi_rank.is_none(),
            readers[i].header().mpi_rank,
            i,
        )
    });
    if paths.len() > u16::MAX as usize {
        return Err(CliError::new(format!(
            "too many traces ({}) for one export",
            paths.len()
        )));
    }
    let mut c = Collected {
        processes: Vec::new(),
        slices: Vec::new(),
        tracks: TrackTable::default(),
        device: Vec::new(),
        counters: Counters::default(),
        warnings: Vec::new(),
    };
    let mut readers: Vec<Option<_>> = readers.into_iter().map(Some).collect();
    let mut built: Vec<Option<Profile>> = vec![None; paths.len()];
    for (trace, &i) in order.iter().enumerate() {
        let r = readers[i].take().expect("each trace is read once");
        let trace = trace as u16;
        let clock = wall_clock(r.header());
        let mut builder = profiles.then(|| ProfileBuilder::for_header(r.header()));
        // Decoding runs on a second thread while this one cuts slices.
        let r = r.for_each_batch(|events, read| {
            progress.set(bytes_before + read);
            for ev in events {
                if let Some(b) = builder.as_mut() {
                    b.feed(ev);
                }
                if accprof_trace::nvtx::is_name(ev.kind) {
                    continue;
                }
                let stream = ev.get(Field::AsyncHandle);
                let mut s = Slice::from_event(ev, trace, 0, clock);
                if device_kind::is_device_record(ev.kind) {
                    s.device = c.device.len() as u32;
                    c.device.push(DeviceInfo::from_event(ev, clock));
                } else if let (Some(h), Some(q)) = (stream, ev.async_queue()) {
                    // An OpenACC event says which async queue this stream serves.
                    c.tracks.note_stream_queue(trace, h, q);
                }
                s.track = c.tracks.intern(TrackKey {
                    trace,
                    kind: TrackKind::of_event(ev),
                });
                c.counters.add(ev, trace, s.start, s.end);
                c.slices.push(s);
            }
        })?;
        bytes_before += std::fs::metadata(&paths[i]).map_or(0, |m| m.len());
        c.warnings.extend(r.truncation_warning());
        c.warnings.extend(r.loss_warning());
        c.warnings.extend(r.warnings().iter().cloned());
        if r.dropped_total() > 0 {
            c.warnings.push(format!(
                "{}: the tool dropped {} events while recording; the timeline has gaps",
                paths[i].display(),
                r.dropped_total()
            ));
        }
        let label = paths[i].display().to_string();
        if let Some(b) = builder {
            built[i] = Some(Profile::finish_read(label.clone(), b, &r));
        }
        c.processes.push(Process {
            pid: trace as u32 + 1,
            name: Process::name_from(r.header(), &label),
            strings: r.strings().clone(),
        });
    }
    Ok((c, built.into_iter().flatten().collect()))
}

/// Maps a trace's monotonic timestamps to wall-clock nanoseconds, so that traces of different
/// ranks (different hosts, different monotonic clocks) line up.
fn wall_clock(h: &Header) -> impl Fn(u64) -> u64 + Copy {
    let offset = i128::from(h.start_unix_ns) - i128::from(h.start_monotonic_ns);
    move |t: u64| (i128::from(t) + offset).clamp(0, i128::from(u64::MAX)) as u64
}

/// The Perfetto export: the same lanes and flows as [`write_chrome`], device memory in use and
/// bytes moved (where the JSON has bytes in flight), through [`perfetto::write`].
fn write_perfetto<W: Write>(
    mut c: Collected,
    out: W,
    progress: &mut Progress,
) -> io::Result<Summary> {
    tracks::assign_lanes(&mut c.slices, &mut c.tracks);
    let tids = c.tracks.thread_ids();
    flows::link(&c.slices, &c.tracks, &tids, &mut c.device);
    let memory = Counters::series(&mut c.counters.memory);
    // Bytes moved, not bytes in flight: two points per transfer instead of one, a fifth of
    // the file for a transfer-heavy trace, to show what the slices of the copies already show.
    let moved = perfetto::bytes_moved(&c.counters.in_flight());
    let zero = c
        .slices
        .iter()
        .map(|s| s.start)
        .chain(memory.first().map(|m| m.0))
        .min()
        .unwrap_or(0);
    let counters = [
        ("device memory in use", &memory),
        (perfetto::BYTES_MOVED, &moved),
    ];
    progress.phase("writing", c.slices.len() as u64, false);
    let written = perfetto::write(&c, &tids, &counters, zero, out, &mut |n| {
        progress.set(n as u64)
    })?;
    Ok(Summary {
        events: written.events,
        tracks: written.tracks,
    })
}

fn write_chrome<W: Write>(mut c: Collected, out: W) -> io::Result<Summary> {
    tracks::assign_lanes(&mut c.slices, &mut c.tracks);
    let tids = c.tracks.thread_ids();
    let flows = flows::link(&c.slices, &c.tracks, &tids, &mut c.device);
    let memory = Counters::series(&mut c.counters.memory);
    let in_flight = Counters::series(&mut c.counters.in_flight());
    let zero = c
        .slices
        .iter()
        .map(|s| s.start)
        .chain(memory.first().map(|m| m.0))
        .min()
        .unwrap_or(0);
    let mut w = ChromeWriter::new(out, zero)?;
    w.metadata(&c.processes, &c.tracks, &tids)?;
    write_slices(&mut w, &c, &tids, zero)?;
    for f in &flows {
        w.flow(f, &c.processes)?;
    }
    w.counter("device memory in use", &memory, &c.processes)?;
    w.counter("bytes in flight", &in_flight, &c.processes)?;
    w.finish()?;
    Ok(Summary {
        events: c.slices.len(),
        tracks: c.tracks.len(),
    })
}

/// Slices formatted per batch.
const FORMAT_CHUNK: usize = 1 << 15;

/// Writes every slice, formatting every other batch on a second thread (formatting is most of
/// an export's time); the batches are written in order, so the file is the same either way.
fn write_slices<W: Write>(
    w: &mut ChromeWriter<W>,
    c: &Collected,
    tids: &tracks::ThreadIds,
    zero: u64,
) -> io::Result<()> {
    let dev_of = |s: &Slice| {
        s.device_index().map(|k| {
            let d = &c.device[k];
            (d, d.issued_by.map(|h| &c.slices[h as usize]))
        })
    };
    let format = |range: std::ops::Range<usize>, out: &mut Vec<u8>| {
        out.clear();
        for s in &c.slices[range] {
            out.extend_from_slice(b",\n");
            let p = &c.processes[s.trace as usize];
            chrome::put_slice(
                out,
                zero,
                s,
                p.pid,
                &p.strings,
                tids.tid(s.track, s.lane),
                dev_of(s),
            );
        }
    };
    let chunks = c.slices.len().div_ceil(FORMAT_CHUNK);
    let range = |i: usize| i * FORMAT_CHUNK..((i + 1) * FORMAT_CHUNK).min(c.slices.len());
    if w.is_empty() || chunks < 2 {
        for s in &c.slices {
            let p = &c.processes[s.trace as usize];
            w.slice(s, p.pid, &p.strings, tids.tid(s.track, s.lane), dev_of(s))?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        // Buffers come back to be reused: a fresh one per batch costs page faults.
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        scope.spawn(move || {
            for i in (1..chunks).step_by(2) {
                let mut out = back_rx.try_recv().unwrap_or_default();
                format(range(i), &mut out);
                if tx.send(out).is_err() {
                    return;
                }
            }
        });
        let mut mine = Vec::new();
        for i in 0..chunks {
            if i % 2 == 0 {
                format(range(i), &mut mine);
                w.preformatted(&mine)?;
            } else {
                let theirs = rx
                    .recv()
                    .map_err(|_| io::Error::other("the formatting thread stopped"))?;
                w.preformatted(&theirs)?;
                // The worker may be done; then the buffer is dropped.
                let _ = back_tx.send(theirs);
            }
        }
        Ok(())
    })
}

/// Writes `path` through a temporary file beside it, so that a failed export leaves no
/// half-written JSON behind.
fn write_file_atomically<T>(
    path: &Path,
    write: impl FnOnce(&File) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let tmp = temporary_beside(path, "")?;
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

/// A temporary name in `path`'s directory (so that renaming it into place is atomic), hidden
/// and naming this process, ending with `suffix`.
pub(crate) fn temporary_beside(path: &Path, suffix: &str) -> Result<PathBuf, CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| CliError::new(format!("{}: not a file name", path.display())))?;
    Ok(dir.join(format!(
        ".{}.accprof-{}.tmp{suffix}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

fn write_error(what: &str, e: io::Error) -> CliError {
    CliError::new(format!("{what}: cannot write: {e}"))
}
