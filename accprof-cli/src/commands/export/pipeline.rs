//! The export's one pipeline: memory grows with tracks, strings and nesting, not with events.
//!
//! Traces are read one after another (several traces: one process per MPI rank, in rank
//! order), decoded on a second thread which also sends along the strings each event is the
//! first to name ([`Shipping`]). Each event goes through the timeline's [`Layout`] (tracks,
//! lanes, start order through bounded windows, device records tied to their issuers) and its
//! counter steps through windows of their own ([`TraceCounters`]); what comes out is batched
//! ([`Batch`]) to a third thread that writes it ([`JsonOutput`], [`PerfettoOutput`]).
//!
//! When the input does not fit what the pipeline assumed (a construct wider than the windows,
//! an event before the time zero, device copies where the header announced none), the output is
//! emptied and the traces exported again with what was learned ([`Plan`]): slower, never wrong,
//! and memory still bounded by the input's own nesting.

use super::batch::{Batch, Output, Placed, Process, Summary};
use super::chrome::JsonOutput;
use super::counters::{CounterStop, TraceCounters};
use super::perfetto::PerfettoOutput;
use super::strings::Shipping;
use super::Format;
use crate::error::CliError;
use crate::progress::ProgressBar;
use accprof_analysis::load::DEVICE_ACTIVITY_KEY;
use accprof_analysis::KernelNameNotes;
use accprof_symbols::ResolvingReader;
use accprof_timeline::compact::NONE_U32;
use accprof_timeline::layout::{shifted, wall_clock_shift, Stop};
use accprof_timeline::{
    CompactEvent, DeviceSlice, Late, Layout, LayoutConfig, NameStyle, Sink, TrackId, TrackTable,
};
use accprof_trace::Header;
use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc;

/// Slices per batch handed to the writing thread.
const BATCH: usize = 1 << 14;
/// Counter steps held per counter before the earliest timestamp's value is written.
const STEP_WINDOW: usize = 8192;
/// Tries before the export gives up (each retry grows what did not fit).
const TRIES: usize = 6;

/// What an export assumes about its input; a retry knows more.
#[derive(Clone, Debug)]
struct Plan {
    layout: LayoutConfig,
    steps: usize,
    /// Per trace (in the order given), whether its bytes in flight come from device copies.
    from_device: Vec<bool>,
}

/// Why one try stopped.
enum Retry {
    Late(Late),
    /// A counter step came after later ones were written.
    Steps,
    /// Trace `i`'s bytes in flight come from elsewhere.
    Counters(usize, bool),
}

impl Retry {
    fn why(&self) -> String {
        match self {
            Retry::Late(l) => l.why().to_string(),
            Retry::Steps => "a counter step arrived after later ones were written".into(),
            Retry::Counters(i, true) => format!("trace {i} has device copies after all"),
            Retry::Counters(i, false) => format!("trace {i}'s device recorded no copies"),
        }
    }
}

/// Exports the traces at `paths` (one process each, in MPI rank order) into `file`; `output`
/// names it in messages.
pub(super) fn export(
    paths: &[PathBuf],
    format: Format,
    file: &File,
    output: &str,
    progress: &mut ProgressBar,
) -> Result<Summary, CliError> {
    if paths.len() > usize::from(u16::MAX) {
        return Err(CliError::new(format!(
            "too many traces ({}) for one export",
            paths.len()
        )));
    }
    let mut headers = Vec::with_capacity(paths.len());
    for p in paths {
        headers.push(ResolvingReader::open(p)?.header().clone());
    }
    let mut order: Vec<usize> = (0..paths.len()).collect();
    order.sort_by_key(|&i| (headers[i].mpi_rank.is_none(), headers[i].mpi_rank, i));
    let mut plan = first_plan(paths, &headers, format)?;
    let debug = std::env::var_os("ACCPROF_EXPORT_DEBUG").is_some();
    for _ in 0..TRIES {
        let out = BufWriter::with_capacity(1 << 20, file);
        let (summary, warnings) = match attempt(paths, &order, format, out, &plan, progress)? {
            Ok(done) => done,
            Err(retry) => {
                if debug {
                    eprintln!("accprof: export: laid out again: {}", retry.why());
                }
                plan = next_plan(plan, retry, paths, &order)?;
                empty(file).map_err(|e| CliError::new(format!("{output}: cannot write: {e}")))?;
                continue;
            }
        };
        for w in warnings {
            eprintln!("accprof: warning: {w}");
        }
        return Ok(summary);
    }
    Err(CliError::new(format!(
        "{output}: the traces could not be laid out in {TRIES} tries"
    )))
}

/// The plan before anything is known: windows from `ACCPROF_EXPORT_WINDOW` (tests make them
/// small; the slices kept for device records, and the records that may wait for them, are 64
/// times as many) or the defaults, everything in one memory for `ACCPROF_EXPORT_WHOLE=1` (the
/// reference small windows are tested against), the time zero of several traces found first.
fn first_plan(paths: &[PathBuf], headers: &[Header], format: Format) -> Result<Plan, CliError> {
    let mut layout = LayoutConfig {
        hold_issuers: format == Format::Perfetto,
        ..LayoutConfig::default()
    };
    let mut steps = STEP_WINDOW;
    if let Some(n) = std::env::var("ACCPROF_EXPORT_WINDOW")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        (layout.window, layout.prefix, steps) = (n.max(1), n.max(1), n.max(1));
        layout.issuer_budget = n.saturating_mul(64);
        layout.pending = n.saturating_mul(64);
    }
    if std::env::var_os("ACCPROF_EXPORT_WHOLE").is_some_and(|v| v == "1") {
        (layout.window, layout.prefix, steps) = (usize::MAX, usize::MAX, usize::MAX);
        layout.issuer_budget = usize::MAX;
        layout.pending = usize::MAX;
    }
    if paths.len() > 1 && layout.prefix != usize::MAX {
        layout.zero = earliest_starts(paths, layout.prefix)?;
    }
    Ok(Plan {
        layout,
        steps,
        from_device: headers
            .iter()
            .map(|h| h.extra.iter().any(|(k, _)| k == DEVICE_ACTIVITY_KEY))
            .collect(),
    })
}

fn next_plan(
    mut plan: Plan,
    retry: Retry,
    paths: &[PathBuf],
    order: &[usize],
) -> Result<Plan, CliError> {
    match retry {
        Retry::Late(Late::BeforeZero(_)) => {
            plan.layout.zero = Some(earliest_start(paths, order)?);
        }
        Retry::Late(late) => plan.layout = late.retry(&plan.layout, || 0),
        Retry::Steps => plan.steps = plan.steps.saturating_mul(16),
        Retry::Counters(i, from_device) => plan.from_device[order[i]] = from_device,
    }
    Ok(plan)
}

/// The output file emptied, to be written again from its start.
fn empty(mut file: &File) -> io::Result<()> {
    file.set_len(0)?;
    file.rewind()
}

/// The earliest start among the first `prefix` events of every trace (on the wall clock), or
/// `None` when every trace is shorter than that (then each is laid out whole anyway).
fn earliest_starts(paths: &[PathBuf], prefix: usize) -> Result<Option<u64>, CliError> {
    let mut earliest = u64::MAX;
    let mut long = false;
    for p in paths {
        let mut r = ResolvingReader::open(p)?;
        let shift = wall_clock_shift(r.header());
        let mut n = 0;
        while n < prefix && r.advance()? {
            earliest = earliest.min(shifted(r.event().start_ns, shift));
            n += 1;
        }
        long |= n == prefix;
    }
    Ok(long.then_some(if earliest == u64::MAX { 0 } else { earliest }))
}

/// The earliest start of all events of all traces (on the wall clock).
fn earliest_start(paths: &[PathBuf], order: &[usize]) -> Result<u64, CliError> {
    let mut earliest = u64::MAX;
    for &i in order {
        let r = ResolvingReader::open(&paths[i])?;
        let shift = wall_clock_shift(r.header());
        r.for_each_batch(|events, _| {
            for ev in events {
                earliest = earliest.min(shifted(ev.start_ns, shift));
            }
        })?;
    }
    Ok(if earliest == u64::MAX { 0 } else { earliest })
}

/// What the reading thread sends the writing thread.
enum Message {
    /// The export's time zero: the writer can start.
    Start(u64),
    Batch(Batch),
    /// Everything was sent; the tracks with their lanes.
    End(TrackTable),
}

/// One try: the traces read, laid out and written to `out`. The outer error is the user's
/// (an unreadable trace, an output that cannot be written); the inner one asks for a retry.
#[allow(clippy::type_complexity)]
fn attempt<W: Write + Send>(
    paths: &[PathBuf],
    order: &[usize],
    format: Format,
    out: W,
    plan: &Plan,
    progress: &mut ProgressBar,
) -> Result<Result<(Summary, Vec<String>), Retry>, CliError> {
    let total: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.phase("exporting", total, true);
    let (tx, rx) = mpsc::sync_channel::<Message>(2);
    let (back_tx, back_rx) = mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let steps = plan.steps;
        let writer = scope.spawn(move || write(format, out, rx, back_tx, steps));
        let mut outbox = Outbox {
            tx,
            back: back_rx,
            batch: Batch::default(),
            named: Vec::new(),
            counters: Vec::new(),
            zero: None,
        };
        let mut layout = Layout::new(plan.layout.clone());
        let mut warnings = Vec::new();
        let mut read_before = 0u64;
        let mut ended: Result<(), Retry> = Ok(());
        let mut failed: Option<CliError> = None;
        for (trace, &i) in order.iter().enumerate() {
            match read_trace(
                &paths[i],
                trace as u16,
                plan,
                plan.from_device[i],
                &mut layout,
                &mut outbox,
                &mut |done| progress.set(read_before + done),
            ) {
                Ok(TraceEnd::Read(w)) => warnings.extend(w),
                Ok(TraceEnd::Retry(retry)) => {
                    ended = Err(retry);
                    break;
                }
                Ok(TraceEnd::WriterGone) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            read_before += std::fs::metadata(&paths[i]).map_or(0, |m| m.len());
        }
        let complete = failed.is_none() && ended.is_ok() && outbox.counters.len() == order.len();
        if complete {
            match layout.finish(&mut outbox) {
                Ok((tracks, stats)) => {
                    if stats.issuer_gone > 0 {
                        warnings.push(format!(
                            "{} device records have no flow arrow: the host slice that issued \
                             them had left the export's window",
                            stats.issuer_gone
                        ));
                    }
                    if stats.forced > 0 {
                        warnings.push(format!(
                            "{} device records were tied to their issuing slices before all \
                             of their thread's slices around the call were read; a flow may \
                             start at an enclosing slice",
                            stats.forced
                        ));
                    }
                    if outbox.release_counters(true).is_ok() && outbox.send().is_ok() {
                        let _ = outbox.tx.send(Message::End(tracks));
                    }
                }
                Err(Stop::Late(late)) => ended = Err(Retry::Late(late)),
                Err(Stop::Sink(WriterGone)) => {}
            }
        }
        drop(outbox);
        // After a write error, the writer's error is the one to report.
        let written = match writer.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if let Some(e) = failed {
            return Err(e);
        }
        if let Err(retry) = ended {
            return Ok(Err(retry));
        }
        let (_, summary) =
            written.map_err(|e| CliError::new(format!("cannot write the export: {e}")))?;
        Ok(Ok((summary, warnings)))
    })
}

/// How reading one trace ended.
enum TraceEnd {
    /// Read to its end: its warnings.
    Read(Vec<String>),
    Retry(Retry),
    /// The writing thread stopped; it says why.
    WriterGone,
}

/// Reads trace number `trace` (at `path`) into the layout.
fn read_trace(
    path: &PathBuf,
    trace: u16,
    plan: &Plan,
    from_device: bool,
    layout: &mut Layout,
    outbox: &mut Outbox,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceEnd, CliError> {
    let r = ResolvingReader::open(path)?;
    let label = path.display().to_string();
    let header = r.header().clone();
    let t = layout.begin_trace(&header);
    debug_assert_eq!(t, trace);
    let shift = wall_clock_shift(&header);
    outbox.batch.processes.push((
        trace,
        Process {
            pid: u32::from(trace) + 1,
            name: accprof_timeline::track::process_name(&header, &label),
        },
    ));
    outbox
        .counters
        .push(TraceCounters::new(from_device, plan.steps));
    let mut shipping = Shipping::default();
    let mut undefined = 0;
    let mut stop: Option<Result<Retry, WriterGone>> = None;
    // Kernel names' texts, for the layout to tie kernel records without their call to a
    // launch of their kernel.
    let mut kernels = KernelNameNotes::default();
    let r = r.try_for_each_batch_noting(
        |ev, strings| {
            let new = shipping.ship(ev, strings);
            undefined = shipping.undefined;
            let kernel = kernels.note(ev, strings);
            (new.is_some() || kernel.is_some()).then_some((new, kernel))
        },
        |events, names, bytes| {
            for (list, kernel) in names {
                for (id, text) in list.iter().flatten() {
                    outbox.batch.strings.push((trace, *id, text.clone()));
                }
                if let Some((id, text)) = kernel {
                    layout.name_kernel(*id, text);
                }
            }
            for ev in events {
                let (start, end) = (
                    shifted(ev.start_ns, shift),
                    shifted(ev.end_ns.max(ev.start_ns), shift),
                );
                let counters = &mut outbox.counters[usize::from(trace)];
                match counters.add(ev, start, end) {
                    Ok(()) => {}
                    Err(CounterStop::Late) => {
                        stop = Some(Ok(Retry::Steps));
                        return ControlFlow::Break(());
                    }
                    Err(CounterStop::Switch(s)) => {
                        stop = Some(Ok(Retry::Counters(usize::from(trace), s.0)));
                        return ControlFlow::Break(());
                    }
                }
                match layout.push(ev, outbox) {
                    Ok(()) => {}
                    Err(Stop::Late(late)) => {
                        stop = Some(Ok(Retry::Late(late)));
                        return ControlFlow::Break(());
                    }
                    Err(Stop::Sink(gone)) => {
                        stop = Some(Err(gone));
                        return ControlFlow::Break(());
                    }
                }
            }
            if outbox.release_counters(false).is_err() {
                stop = Some(Err(WriterGone));
                return ControlFlow::Break(());
            }
            progress(bytes);
            ControlFlow::Continue(())
        },
    )?;
    match stop {
        Some(Ok(retry)) => return Ok(TraceEnd::Retry(retry)),
        Some(Err(WriterGone)) => return Ok(TraceEnd::WriterGone),
        None => {}
    }
    if let Err(s) = outbox.counters[usize::from(trace)].check_end() {
        return Ok(TraceEnd::Retry(Retry::Counters(usize::from(trace), s.0)));
    }
    match layout.end_trace(outbox) {
        Ok(()) => {}
        Err(Stop::Late(late)) => return Ok(TraceEnd::Retry(Retry::Late(late))),
        Err(Stop::Sink(WriterGone)) => return Ok(TraceEnd::WriterGone),
    }
    let mut warnings = Vec::new();
    warnings.extend(r.end_warning());
    warnings.extend(r.loss_warning());
    warnings.extend(r.warnings().iter().cloned());
    if r.dropped_total() > 0 {
        warnings.push(format!(
            "{label}: the tool dropped {} events while recording; the timeline has gaps",
            r.dropped_total()
        ));
    }
    if undefined > 0 {
        warnings.push(format!(
            "{label}: {undefined} events name strings the trace had not defined before them (it \
             is damaged); they are shown without those names"
        ));
    }
    Ok(TraceEnd::Read(warnings))
}

/// The writing thread stopped (an output error, which it reports).
#[derive(Debug)]
struct WriterGone;

/// The reading side's end of the pipeline: the layout's sink, filling batches.
struct Outbox {
    tx: mpsc::SyncSender<Message>,
    back: mpsc::Receiver<Batch>,
    batch: Batch,
    /// Per track, whether it was named to the writer yet.
    named: Vec<bool>,
    /// Per trace, its counters.
    counters: Vec<TraceCounters>,
    zero: Option<u64>,
}

impl Outbox {
    /// Names `track` to the writer the first time a slice of it is sent.
    fn name(&mut self, tracks: &TrackTable, track: TrackId) {
        let t = track as usize;
        if self.named.len() <= t {
            self.named.resize(t + 1, false);
        }
        if !self.named[t] {
            self.named[t] = true;
            self.batch.tracks.push((
                track,
                tracks.key(track),
                tracks.name(track, NameStyle::Full),
            ));
        }
    }

    fn push(&mut self, s: &CompactEvent, device: Option<&DeviceSlice>, flows: &[u64]) {
        let from = self.batch.flows_out.len() as u32;
        self.batch.flows_out.extend_from_slice(flows);
        let device = match device {
            Some(d) => {
                self.batch.devices.push(*d);
                (self.batch.devices.len() - 1) as u32
            }
            None => NONE_U32,
        };
        self.batch.slices.push(Placed {
            s: *s,
            device,
            flows: (from, self.batch.flows_out.len() as u32),
        });
    }

    fn send_if_full(&mut self) -> Result<(), WriterGone> {
        if self.batch.slices.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    /// Hands the batch to the writer (once it knows the time zero).
    fn send(&mut self) -> Result<(), WriterGone> {
        if self.zero.is_none() {
            return Ok(());
        }
        let mut next = self.back.try_recv().unwrap_or_default();
        next.clear();
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(Message::Batch(full)).map_err(|_| WriterGone)
    }

    /// Adds the counter values that are final to the batch (all of them when `all`).
    fn release_counters(&mut self, all: bool) -> Result<(), WriterGone> {
        if self.zero.is_none() {
            return Ok(());
        }
        let mut values = Vec::new();
        for (trace, c) in self.counters.iter_mut().enumerate() {
            values.clear();
            c.release(all, &mut values);
            self.batch.counters.extend(
                values
                    .iter()
                    .map(|&(counter, ts, v)| (trace as u16, counter, ts, v)),
            );
        }
        if self.batch.counters.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }
}

impl Sink for Outbox {
    type Error = WriterGone;

    fn start(&mut self, zero: u64) -> Result<(), WriterGone> {
        self.zero = Some(zero);
        self.tx.send(Message::Start(zero)).map_err(|_| WriterGone)
    }

    fn slice(
        &mut self,
        tracks: &TrackTable,
        s: &CompactEvent,
        flows_out: &[u64],
    ) -> Result<(), WriterGone> {
        self.name(tracks, s.track);
        self.push(s, None, flows_out);
        self.send_if_full()
    }

    fn device(
        &mut self,
        tracks: &TrackTable,
        s: &CompactEvent,
        d: &DeviceSlice,
    ) -> Result<(), WriterGone> {
        self.name(tracks, s.track);
        self.push(s, Some(d), &[]);
        self.send_if_full()
    }
}

/// The writing thread: waits for the time zero, then writes every batch. `steps` is the
/// counters' window, which decides how long Perfetto holds slices for their values.
fn write<W: Write>(
    format: Format,
    out: W,
    rx: mpsc::Receiver<Message>,
    back: mpsc::Sender<Batch>,
    steps: usize,
) -> io::Result<(W, Summary)> {
    let zero = match rx.recv() {
        Ok(Message::Start(zero)) => zero,
        // Given up before anything was written.
        _ => 0,
    };
    match format {
        Format::Chrome => drive(JsonOutput::new(out, zero)?, rx, back),
        Format::Perfetto => drive(PerfettoOutput::new(out, zero, steps), rx, back),
    }
}

fn drive<W, O: Output<W>>(
    mut output: O,
    rx: mpsc::Receiver<Message>,
    back: mpsc::Sender<Batch>,
) -> io::Result<(W, Summary)> {
    for m in rx {
        match m {
            Message::Batch(b) => {
                output.batch(&b)?;
                // The reader may be done; then the batch is dropped.
                let _ = back.send(b);
            }
            Message::End(tracks) => return output.finish(Some(&tracks)),
            Message::Start(_) => break,
        }
    }
    output.finish(None)
}
