//! The streaming export: memory grows with tracks, strings and nesting, not with events.
//!
//! Traces are read one after another (several traces: one process per MPI rank, in rank order),
//! events in each trace's order (per thread, the order they ended), cut to compact
//! slices and put in start order per track by a bounded window
//! ([`accprof_timeline::order::StartWindow`]); each slice leaving its window gets its lane
//! ([`tracks::place`]) and goes, in batches, to a second thread that writes it (JSON or
//! Perfetto). The counters go through windows of their own ([`StepWindow`]). Thread names, which
//! need every track's lanes, are written last (JSON allows metadata anywhere; Perfetto's track
//! descriptors are written as tracks first appear).
//!
//! The time zero is the earliest start among the first [`PREFIX`] events (of every trace, when
//! there are several: those are read once before). A trace (or set of traces) with fewer events
//! is laid out whole by [`super::collect_with_progress`] (it is held in full before anything is
//! written anyway), which keeps small exports exactly as they always were.
//!
//! Device records (CUPTI's kernels and copies) go on their streams' tracks through windows like
//! any other. Their host slice (the innermost open on the issuing thread at the host call, as
//! [`super::flows::link`] finds it) was usually written before they arrive: each host track
//! keeps its last slices ([`Issuers`]), and a device slice waits, laid out, until its thread's
//! tracks have written a slice starting after the call, then is written with its flow (JSON
//! order is free). A Perfetto export names a flow on the host slice's own packet, so there host
//! slices are held back in [`Issuers`] and written as they leave it, with the flows found for
//! them by then (trace_processor orders packets by time; each track's stay in order). A record
//! whose issuer was let go gets no flow and is counted in a warning. The header says whether a
//! trace was recorded with device activity; one that was not, and has records after host
//! slices were written, is laid out whole.
//!
//! When the input does not fit the windows (a slice arrives after a later-starting one of its
//! track has been written, the first events do not hold the earliest start, a slice names a
//! string defined later in the file, a host slice comes after device records it may have
//! issued were linked, a record was issued on a thread with no OpenACC events, an async queue is
//! named for a device stream after its track was written), the export is given up and
//! [`Outcome::Unordered`] hands the output back, to be written again by the whole-trace path
//! ([`super::collect_with_progress`]). Nothing is ever written out of order or dropped.

use super::chrome::{ChromeWriter, Process};
use super::counters::{Counters, StepWindow};
use super::device::DeviceInfo;
use super::flows::{self, Flow};
use super::issuers::{Found, Issuers, Kept};
use super::perfetto::{self, Names, Placed};
use super::slice::Slice;
use super::strings::{Shipped, Shipping};
use super::tracks::{self, TrackKey, TrackKind, TrackTable};
use super::{wall_clock, Format, Summary};
use crate::error::CliError;
use crate::progress::Progress;
use accprof_abi::acc_event_t;
use accprof_perfetto::{FlowId, PerfettoWriter, TrackId};
use accprof_symbols::ResolvingReader;
use accprof_timeline::order::StartWindow;
use accprof_timeline::DeviceOp;
use accprof_trace::{device as device_kind, Field, StringTable};
use std::cmp::Reverse;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc;

/// Slices each track's window holds before it lets the earliest go: deeper than any nesting
/// of host events a runtime reports (a construct holds its data events, launches and waits).
const WINDOW: usize = 8192;
/// Counter steps held per counter before the earliest timestamp's value is written.
const STEP_WINDOW: usize = 8192;
/// Events read before anything is written: the earliest start among them is the export's time
/// zero (each thread's first events come early in the file).
const PREFIX: usize = 1 << 16;
/// Slices per batch handed to the writing thread.
const BATCH: usize = 1 << 14;
/// Host slices kept per host track for the device records they may have issued: CUPTI hands
/// records over up to a second after the call.
const ISSUERS: usize = 1 << 16;
/// Device records waiting for their issuing thread's slices to be written before the export is
/// given up (a thread that issued work and then wrote nothing for a long time).
const PENDING: usize = 1 << 18;

/// The window sizes: `(per-track window, counter window, events read before the start)`.
/// `ACCPROF_EXPORT_WINDOW=N` makes all three N, so that tests can stream small traces and
/// push the windows to their limits.
fn sizes() -> (usize, usize, usize) {
    match std::env::var("ACCPROF_EXPORT_WINDOW")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(n) => (n.max(1), n.max(1), n.max(1)),
        None => (WINDOW, STEP_WINDOW, PREFIX),
    }
}

/// How a streaming export ended.
pub(super) enum Outcome<W> {
    Written {
        summary: Summary,
        warnings: Vec<String>,
    },
    /// The trace must be exported by the whole-trace path; `out` is the output, with whatever
    /// was written to it.
    Unordered { out: W, why: String },
}

/// The counters a slice stream carries, one value per timestamp.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Counter {
    /// Device memory in use (both formats).
    Memory,
    /// Bytes in flight (JSON).
    InFlight,
    /// Bytes moved so far (Perfetto).
    Moved,
}

/// What the reading thread hands the writing thread.
#[derive(Default)]
struct Batch {
    /// Tracks first met since the last batch, in the order of their index, each with whether
    /// it goes under its host thread's track (a synchronous device track whose thread has host
    /// slices, as [`perfetto::write`] lays them out).
    tracks: Vec<(TrackKey, bool)>,
    /// Traces (processes) begun since the last batch, in order.
    processes: Vec<Process>,
    /// Strings first named since the last batch: (trace, id, text).
    strings: Vec<(u16, u32, Box<str>)>,
    slices: Vec<Slice>,
    /// What device records have beyond their slice (indexed by [`Slice::device`] of the
    /// batch's slices), with the host slice that issued each and the flow from it, if known.
    device: Vec<DeviceSide>,
    /// Arrows from issuing host slices to device slices.
    flows: Vec<LaneFlow>,
    /// Host slices a Perfetto export held back (see [`Issuers`]), with the flows they start.
    issuers: Vec<Kept>,
    /// The names of device stream tracks, given when their first slice is sent (they name the
    /// async queues known to use the stream).
    labels: Vec<(u32, String)>,
    /// Counter values: (counter, trace, time, value).
    counters: Vec<(Counter, u16, u64, i64)>,
}

/// A device record's details in a batch.
struct DeviceSide {
    info: DeviceInfo,
    issuer: Option<Slice>,
    flow: Option<u64>,
}

/// A flow arrow between two laid-out slices of one trace: `(track, lane)` and time of each end.
struct LaneFlow {
    id: u64,
    trace: u16,
    src: (u32, u16),
    src_ts: u64,
    dst: (u32, u16),
    dst_ts: u64,
}

/// A device slice laid out on its track, waiting for the slice that issued it.
struct Pending {
    s: Slice,
    info: DeviceInfo,
}

enum Message {
    /// The export's time zero: the writer can start.
    Start(u64),
    Batch(Batch),
    /// Everything was sent; the tracks with their lanes, for the thread names.
    End(TrackTable),
    /// The export is given up.
    Abort,
}

/// A writer of the stream, on the writing thread.
trait Sink<W> {
    fn batch(&mut self, b: &mut Batch) -> io::Result<()>;
    fn finish(self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)>;
}

/// Exports the traces at `paths` (one process each, in MPI rank order) to `out`, streaming;
/// `output` names the output in messages.
pub(super) fn export<W: Write + Send>(
    paths: &[PathBuf],
    format: Format,
    out: W,
    output: &str,
    progress: &mut Progress,
) -> Result<Outcome<W>, CliError> {
    let mut readers = Vec::with_capacity(paths.len());
    for p in paths {
        readers.push(Some(ResolvingReader::open(p)?));
    }
    if paths.len() > usize::from(u16::MAX) {
        return Err(CliError::new(format!(
            "too many traces ({}) for one export",
            paths.len()
        )));
    }
    let mut order: Vec<usize> = (0..readers.len()).collect();
    order.sort_by_key(|&i| {
        let h = readers[i].as_ref().expect("opened above").header();
        (h.mpi_rank.is_none(), h.mpi_rank, i)
    });
    // Several traces: the time zero is the earliest start among each one's first events.
    let zero = if paths.len() > 1 {
        match earliest_starts(paths)? {
            Some(zero) => Some(zero),
            None => {
                return Ok(Outcome::Unordered {
                    out,
                    why: "the traces are small enough to be laid out whole".into(),
                })
            }
        }
    } else {
        None
    };
    let total: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.phase("exporting", total, true);
    let (tx, rx) = mpsc::sync_channel::<Message>(2);
    let (back_tx, back_rx) = mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_stream(format, out, rx, back_tx));
        let mut st = Stream::new(tx, back_rx, zero, format);
        let mut warnings = Vec::new();
        let mut read_before = 0u64;
        let mut ended = Ok(());
        for (trace, &i) in order.iter().enumerate() {
            let mut r = readers[i].take().expect("each trace is read once");
            let label = paths[i].display().to_string();
            let process = Process {
                pid: trace as u32 + 1,
                name: Process::name_from(r.header(), &label),
                strings: StringTable::default(),
            };
            let clock = wall_clock(r.header());
            ended = st.read(&mut r, trace as u16, process, clock, &mut |done| {
                progress.set(read_before + done)
            });
            if ended.is_err() {
                break;
            }
            read_before += std::fs::metadata(&paths[i]).map_or(0, |m| m.len());
            warnings.extend(r.truncation_warning());
            warnings.extend(r.loss_warning());
            warnings.extend(r.warnings().iter().cloned());
            if r.dropped_total() > 0 {
                warnings.push(format!(
                    "{label}: the tool dropped {} events while recording; the timeline has gaps",
                    r.dropped_total()
                ));
            }
        }
        let ended = ended.and_then(|()| st.end());
        if st.lost > 0 {
            warnings.push(format!(
                "{} device records have no flow arrow: the host slice that issued them had left \
                 the export's window (export to standard output to link every one)",
                st.lost
            ));
        }
        match ended {
            Ok(()) | Err(Stop::Write) => {}
            Err(Stop::Late(why)) => {
                let _ = st.tx.send(Message::Abort);
                drop(st);
                let (out, _) = join(writer, output)?;
                return Ok(Outcome::Unordered { out, why });
            }
            Err(Stop::Read(e)) => {
                let _ = st.tx.send(Message::Abort);
                drop(st);
                let _ = join(writer, output);
                return Err(e.into());
            }
        }
        drop(st);
        // After a write error, the writer's error is the one to report.
        let (_, summary) = join(writer, output)?;
        Ok(Outcome::Written { summary, warnings })
    })
}

/// The earliest start among the first [`PREFIX`] events of every trace (on the wall clock),
/// or `None` when every trace is shorter than that (then nothing needs streaming).
fn earliest_starts(paths: &[PathBuf]) -> Result<Option<u64>, CliError> {
    let (_, _, prefix) = sizes();
    let mut earliest = u64::MAX;
    let mut long = false;
    for p in paths {
        let mut r = ResolvingReader::open(p)?;
        let clock = wall_clock(r.header());
        let mut n = 0;
        while n < prefix && r.advance()? {
            earliest = earliest.min(clock(r.event().start_ns));
            n += 1;
        }
        long |= n == prefix;
    }
    Ok(long.then_some(if earliest == u64::MAX { 0 } else { earliest }))
}

fn join<W>(
    writer: std::thread::ScopedJoinHandle<'_, io::Result<(W, Summary)>>,
    output: &str,
) -> Result<(W, Summary), CliError> {
    match writer.join() {
        Ok(r) => r.map_err(|e| CliError::new(format!("{output}: cannot write: {e}"))),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Why reading stopped early.
enum Stop {
    /// The input does not fit the windows (the reason, for the log).
    Late(String),
    Read(accprof_trace::TraceError),
    /// The writing thread stopped (an output error, which it reports).
    Write,
}

/// The reading side: windows, lanes, counters and the batch being filled.
struct Stream {
    tx: mpsc::SyncSender<Message>,
    back: mpsc::Receiver<Batch>,
    tracks: TrackTable,
    windows: Vec<StartWindow<Slice>>,
    /// Per track, per lane, the ends of the slices still open (see [`tracks::place`]).
    lanes: Vec<Vec<Vec<u64>>>,
    counters: Counters,
    memory: StepWindow,
    in_flight: StepWindow,
    moved: StepWindow,
    /// Slices each track's window holds, and events read before the start.
    window: usize,
    prefix: usize,
    zero: Option<u64>,
    earliest: u64,
    read: usize,
    /// The trace being read.
    trace: u16,
    batch: Batch,
    shipping: Shipping,
    tracks_sent: usize,
    format: Format,
    /// Device records' details while their slices are in a window; free slots.
    device: Vec<DeviceInfo>,
    device_free: Vec<u32>,
    issuers: Issuers,
    pending: Vec<Pending>,
    /// Per host thread, the latest host call time of a device record linked so far: a slice of
    /// the thread written later and starting before it might have been the issuer.
    linked_up_to: rustc_hash::FxHashMap<(u16, Option<i64>), u64>,
    /// Device records whose issuing slice had left [`Issuers`].
    lost: u64,
    /// Whether the trace being read has shown a device record, and whether values of its
    /// bytes in flight (which come from device copies when it has them) were released.
    device_seen: bool,
    in_flight_released: bool,
    /// Whether host slices are noted in [`Issuers`] (the trace has device records), and held
    /// back there until they leave (a Perfetto export of such a trace).
    noting: bool,
    holding: bool,
    host_written: bool,
    flows: u64,
    /// Device stream tracks named so far, with the name given.
    labeled: rustc_hash::FxHashMap<u32, String>,
    /// Synchronous device tracks sent as having no host thread track to go under.
    sync_alone: Vec<u32>,
}

impl Stream {
    fn new(
        tx: mpsc::SyncSender<Message>,
        back: mpsc::Receiver<Batch>,
        zero: Option<u64>,
        format: Format,
    ) -> Self {
        let (window, steps, prefix) = sizes();
        if let Some(zero) = zero {
            // Known before reading (several traces): the writer can start at once.
            let _ = tx.send(Message::Start(zero));
        }
        Stream {
            trace: 0,
            window,
            prefix,
            tx,
            back,
            tracks: TrackTable::default(),
            windows: Vec::new(),
            lanes: Vec::new(),
            counters: Counters::default(),
            memory: StepWindow::new(steps),
            in_flight: StepWindow::new(steps),
            moved: StepWindow::new(steps),
            zero,
            earliest: u64::MAX,
            read: 0,
            batch: Batch::default(),
            shipping: Shipping::default(),
            tracks_sent: 0,
            format,
            device: Vec::new(),
            device_free: Vec::new(),
            issuers: Issuers::new(ISSUERS),
            pending: Vec::new(),
            linked_up_to: Default::default(),
            lost: 0,
            device_seen: false,
            in_flight_released: false,
            noting: false,
            holding: false,
            host_written: false,
            flows: 0,
            labeled: Default::default(),
            sync_alone: Vec::new(),
        }
    }

    /// Reads trace number `trace` (the process `process`) to its end; `progress` is told the
    /// bytes read.
    fn read<R: io::Read>(
        &mut self,
        r: &mut ResolvingReader<R>,
        trace: u16,
        process: Process,
        clock: impl Fn(u64) -> u64 + Copy,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), Stop> {
        let (_, steps, _) = sizes();
        self.trace = trace;
        self.shipping = Shipping::default();
        self.memory = StepWindow::new(steps);
        self.in_flight = StepWindow::new(steps);
        self.moved = StepWindow::new(steps);
        self.in_flight_released = false;
        // A trace recorded with device activity says so: its bytes in flight come from the
        // device's copies from the start (see Counters), though the records come late.
        self.device_seen = r
            .header()
            .extra
            .iter()
            .any(|(k, _)| k == accprof_analysis::load::DEVICE_ACTIVITY_KEY);
        let mut device_records = false;
        let mut host_transfers = false;
        if self.device_seen {
            self.counters.expect_device_records(trace);
        }
        self.noting = self.device_seen;
        self.holding = self.device_seen && self.format == Format::Perfetto;
        self.host_written = false;
        self.batch.processes.push(process);
        while r.advance().map_err(Stop::Read)? {
            let ev = r.event();
            if accprof_trace::nvtx::is_name(ev.kind) {
                // Names the program gave: no slice.
                continue;
            }
            let is_device = device_kind::is_device_record(ev.kind);
            if is_device && !self.noting {
                // Not announced by the header: host slices written so far were not kept.
                if self.host_written {
                    return Err(Stop::Late(
                        "device records in a trace whose header does not announce them".into(),
                    ));
                }
                self.noting = true;
                self.holding = self.format == Format::Perfetto;
            }
            device_records |= is_device;
            host_transfers |= matches!(
                ev.kind,
                acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START
            );
            if is_device && !self.device_seen {
                // Bytes in flight come from the device's copies from now on (see Counters).
                if self.in_flight_released {
                    return Err(Stop::Late(
                        "the first device record came after bytes in flight were written".into(),
                    ));
                }
                self.device_seen = true;
                self.in_flight = StepWindow::new(steps);
                self.moved = StepWindow::new(steps);
            }
            let mut s = Slice::from_event(ev, trace, 0, clock);
            if is_device {
                s.device = self.keep_device(DeviceInfo::from_event(ev, clock));
            } else if let (Some(h), Some(q)) = (ev.get(Field::AsyncHandle), ev.async_queue()) {
                // An OpenACC event says which async queue this stream serves.
                self.tracks.note_stream_queue(trace, h, q);
            }
            s.track = self.tracks.intern(TrackKey {
                trace,
                kind: TrackKind::of_event(ev),
            });
            if self.windows.len() < self.tracks.len() {
                self.windows.push(StartWindow::new(self.window));
                self.lanes.push(Vec::new());
            }
            self.counters.add(ev, trace, s.start, s.end);
            self.take_steps()?;
            if self.zero.is_some_and(|z| s.start < z) {
                return Err(Stop::Late(
                    "an event starts before the first ones read".into(),
                ));
            }
            self.earliest = self.earliest.min(s.start);
            let track = s.track as usize;
            self.windows[track]
                .push(s)
                .map_err(|_| Stop::Late("an event is nested deeper than the window".into()))?;
            self.read += 1;
            match self.zero {
                Some(_) => {
                    if let Some(s) = self.windows[track].pop_over() {
                        self.emit(s, r.strings())?;
                    }
                    self.release_steps(false)?;
                }
                None if self.read >= self.prefix => self.start(r.strings())?,
                None => {}
            }
            if self.read.is_multiple_of(4096) {
                progress(r.bytes_read());
            }
        }
        if self.zero.is_none() {
            // Everything is still held: the whole-trace path lays it out in the same memory, in
            // the order it always has (metadata first, each track's slices together).
            return Err(Stop::Late(
                "the trace is small enough to be laid out whole".into(),
            ));
        }
        for t in 0..self.windows.len() {
            while let Some(s) = self.windows[t].pop() {
                self.emit(s, r.strings())?;
            }
        }
        if self.device_seen && !device_records && host_transfers {
            // Its bytes in flight were the runtime's transfers after all.
            return Err(Stop::Late(
                "a trace recorded with device activity has no device records".into(),
            ));
        }
        self.link_pending(true)?;
        let held: Vec<Kept> = self.issuers.drain().collect();
        if self.holding {
            self.batch.issuers.extend(held);
        }
        for &t in &self.sync_alone {
            let key = self.tracks.key(t);
            if let TrackKind::DeviceSync { thread } = key.kind {
                let host = TrackKey {
                    trace: key.trace,
                    kind: TrackKind::Host { thread },
                };
                if key.trace == trace && self.tracks.get(&host).is_some() {
                    return Err(Stop::Late(
                        "a thread's host slices came after its synchronous device track".into(),
                    ));
                }
            }
        }
        for (&t, label) in &self.labeled {
            if self.tracks.key(t).trace == trace && self.tracks.label(t) != *label {
                return Err(Stop::Late(
                    "an async queue was named for a device stream after its track".into(),
                ));
            }
        }
        self.release_steps(true)?;
        self.send()
    }

    /// Holds a device record's details while its slice is in a window; its index.
    fn keep_device(&mut self, info: DeviceInfo) -> u32 {
        match self.device_free.pop() {
            Some(k) => {
                self.device[k as usize] = info;
                k
            }
            None => {
                self.device.push(info);
                self.device.len() as u32 - 1
            }
        }
    }

    /// Adds to the batch every pending device slice whose issuer can be told now (all of them
    /// at the `end` of a trace).
    fn link_pending(&mut self, end: bool) -> Result<(), Stop> {
        let pending = std::mem::take(&mut self.pending);
        // A track's slices go out in order: behind one that waits, the rest wait too.
        let mut waiting: Vec<u32> = Vec::new();
        for p in pending {
            let found = if waiting.contains(&p.s.track) {
                None
            } else {
                self.issuer(&p, end)?
            };
            match found {
                None => {
                    if !waiting.contains(&p.s.track) {
                        waiting.push(p.s.track);
                    }
                    self.pending.push(p);
                }
                Some((issuer, flow)) => {
                    let mut s = p.s;
                    s.device = self.batch.device.len() as u32;
                    if !self.labeled.contains_key(&s.track) {
                        let label = self.tracks.label(s.track);
                        self.batch.labels.push((s.track, label.clone()));
                        self.labeled.insert(s.track, label);
                    }
                    self.batch.device.push(DeviceSide {
                        info: p.info,
                        issuer,
                        flow: flow.as_ref().map(|f| f.id),
                    });
                    self.batch.slices.push(s);
                    self.batch.flows.extend(flow);
                }
            }
        }
        if self.pending.len() > PENDING {
            return Err(Stop::Late(
                "too many device records wait for their issuing host slices".into(),
            ));
        }
        Ok(())
    }

    /// The host slice that issued `p` and the arrow from it, as [`flows::link`] finds them
    /// over the whole trace; `None` while slices that may have issued it are still to be
    /// written.
    #[allow(clippy::type_complexity)]
    fn issuer(
        &mut self,
        p: &Pending,
        end: bool,
    ) -> Result<Option<(Option<Slice>, Option<LaneFlow>)>, Stop> {
        let d = &p.info;
        let Some(t) = d.host_call else {
            return Ok(Some((None, None)));
        };
        let own: Vec<u32> = match d.thread {
            Some(thread) => [
                TrackKind::Host {
                    thread: Some(thread),
                },
                TrackKind::DeviceSync {
                    thread: Some(thread),
                },
            ]
            .into_iter()
            .filter_map(|kind| {
                self.tracks.get(&TrackKey {
                    trace: p.s.trace,
                    kind,
                })
            })
            .collect(),
            None => Vec::new(),
        };
        if own.is_empty() {
            if d.op.and_then(DeviceOp::enqueue_event).is_none() {
                return Ok(Some((None, None)));
            }
            if end || d.thread.is_none() {
                // Issued on a runtime's helper thread: matched against every thread's
                // transfers, which the whole trace has.
                return Err(Stop::Late(
                    "a device record was issued on a thread without OpenACC events".into(),
                ));
            }
            return Ok(None);
        }
        if !end && !own.iter().all(|&track| self.issuers.passed(track, t)) {
            return Ok(None);
        }
        let up_to = self.linked_up_to.entry((p.s.trace, d.thread)).or_insert(t);
        *up_to = (*up_to).max(t);
        let mut best: Option<(Slice, usize)> = None;
        let mut gone = false;
        for track in own {
            match self.issuers.innermost(track, t) {
                Found::Slice(h, at) => {
                    let key = |s: &Slice| (s.start, Reverse(s.end));
                    if best.is_none_or(|(b, _)| key(&h) > key(&b)) {
                        best = Some((h, at));
                    }
                }
                Found::Gone => gone = true,
                Found::None => {}
            }
        }
        if gone {
            self.lost += 1;
            return Ok(Some((None, None)));
        }
        let Some((h, at)) = best else {
            return Ok(Some((None, None)));
        };
        let src_ts = flows::inside(&h, t);
        let (lo, hi) = flows::interior(&p.s);
        let dst_ts = src_ts.max(lo);
        if dst_ts > hi {
            return Ok(Some((None, None)));
        }
        self.flows += 1;
        self.issuers.add_flow(h.track, at, self.flows);
        let flow = LaneFlow {
            id: self.flows,
            trace: p.s.trace,
            src: (h.track, h.lane),
            src_ts,
            dst: (p.s.track, p.s.lane),
            dst_ts,
        };
        Ok(Some((Some(h), Some(flow))))
    }

    /// Fixes the time zero, tells the writer, and lets go what the windows hold beyond their
    /// capacity.
    fn start(&mut self, strings: &StringTable) -> Result<(), Stop> {
        let zero = if self.earliest == u64::MAX {
            0
        } else {
            self.earliest
        };
        self.zero = Some(zero);
        self.tx
            .send(Message::Start(zero))
            .map_err(|_| Stop::Write)?;
        for t in 0..self.windows.len() {
            while let Some(s) = self.windows[t].pop_over() {
                self.emit(s, strings)?;
            }
        }
        self.release_steps(false)
    }

    /// Moves the counter steps of the last event into their windows.
    fn take_steps(&mut self) -> Result<(), Stop> {
        let late = |_| Stop::Late("a counter step arrived after later ones were written".into());
        for step in self.counters.memory.drain(..) {
            self.memory.push(step.ts, step.delta).map_err(late)?;
        }
        for step in self.counters.in_flight() {
            self.in_flight.push(step.ts, step.delta).map_err(late)?;
            if step.delta > 0 {
                self.moved.push(step.ts, step.delta).map_err(late)?;
            }
        }
        Ok(())
    }

    /// Hands the writer the counter values that are final (all of them at the `end`).
    fn release_steps(&mut self, end: bool) -> Result<(), Stop> {
        if self.zero.is_none() {
            return Ok(());
        }
        for (counter, window) in [
            (Counter::Memory, &mut self.memory),
            (Counter::InFlight, &mut self.in_flight),
            (Counter::Moved, &mut self.moved),
        ] {
            loop {
                let next = if end { window.pop() } else { window.pop_over() };
                let Some((ts, value)) = next else { break };
                self.in_flight_released |= counter != Counter::Memory;
                self.batch.counters.push((counter, self.trace, ts, value));
            }
        }
        Ok(())
    }

    /// Lays out `s` (the next of its track in start order) and adds it to the batch.
    fn emit(&mut self, mut s: Slice, strings: &StringTable) -> Result<(), Stop> {
        if !s.is_point() {
            s.lane = tracks::place(&mut self.lanes[s.track as usize], s.start, s.end);
            self.tracks.note_lane(s.track, s.lane);
        }
        self.shipping
            .ship(&s, strings, &mut self.batch.strings)
            .map_err(|u| Stop::Late(format!("string {} is defined after its first use", u.0)))?;
        if let TrackKind::Host { thread } | TrackKind::DeviceSync { thread } =
            self.tracks.key(s.track).kind
        {
            if self
                .linked_up_to
                .get(&(s.trace, thread))
                .is_some_and(|&t| s.start <= t)
            {
                return Err(Stop::Late(
                    "a host slice came after device records it may have issued were linked".into(),
                ));
            }
            if self.noting {
                let left = self.issuers.note(&s);
                if self.holding {
                    self.batch.issuers.extend(left);
                    return self.send_if_full();
                }
            }
            self.host_written = true;
        }
        if let Some(k) = s.device_index() {
            let info = self.device[k];
            self.device_free.push(k as u32);
            self.pending.push(Pending { s, info });
            if self.pending.len() >= BATCH {
                self.link_pending(false)?;
                if self.batch.slices.len() >= BATCH {
                    self.send()?;
                }
            }
            return Ok(());
        }
        self.batch.slices.push(s);
        self.send_if_full()
    }

    fn send_if_full(&mut self) -> Result<(), Stop> {
        if self.batch.slices.len() + self.batch.issuers.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<(), Stop> {
        if !self.pending.is_empty() {
            self.link_pending(false)?;
        }
        while self.tracks_sent < self.tracks.len() {
            let t = self.tracks_sent as u32;
            let key = self.tracks.key(t);
            let under = match key.kind {
                TrackKind::DeviceSync { thread } => {
                    let host = TrackKey {
                        trace: key.trace,
                        kind: TrackKind::Host { thread },
                    };
                    let under = self.tracks.get(&host).is_some();
                    if !under {
                        self.sync_alone.push(t);
                    }
                    under
                }
                _ => true,
            };
            self.batch.tracks.push((key, under));
            self.tracks_sent += 1;
        }
        let mut next = self.back.try_recv().unwrap_or_default();
        next.slices.reserve(BATCH);
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(Message::Batch(full)).map_err(|_| Stop::Write)
    }

    /// Hands the writer the tracks with their lanes, once every slice was sent.
    fn end(&mut self) -> Result<(), Stop> {
        let tracks = std::mem::take(&mut self.tracks);
        self.tx.send(Message::End(tracks)).map_err(|_| Stop::Write)
    }
}

/// The writing thread: waits for the time zero, then writes every batch.
fn write_stream<W: Write>(
    format: Format,
    out: W,
    rx: mpsc::Receiver<Message>,
    back: mpsc::Sender<Batch>,
) -> io::Result<(W, Summary)> {
    let zero = match rx.recv() {
        Ok(Message::Start(zero)) => zero,
        // Given up before anything was written.
        _ => 0,
    };
    match format {
        Format::Chrome => drive(JsonSink::new(out, zero)?, rx, back),
        Format::Perfetto => drive(PerfettoSink::new(out, zero), rx, back),
    }
}

fn drive<W, S: Sink<W>>(
    mut sink: S,
    rx: mpsc::Receiver<Message>,
    back: mpsc::Sender<Batch>,
) -> io::Result<(W, Summary)> {
    for m in rx {
        match m {
            Message::Batch(mut b) => {
                sink.batch(&mut b)?;
                b.tracks.clear();
                b.processes.clear();
                b.strings.clear();
                b.slices.clear();
                b.device.clear();
                b.flows.clear();
                b.issuers.clear();
                b.labels.clear();
                b.counters.clear();
                // The reader may be done; then the batch is dropped.
                let _ = back.send(b);
            }
            Message::End(tracks) => return sink.finish(Some(&tracks)),
            Message::Start(_) | Message::Abort => break,
        }
    }
    sink.finish(None)
}

/// Chrome JSON: slices and counter values as they come, thread names at the end.
struct JsonSink<W: Write> {
    w: ChromeWriter<W>,
    processes: Vec<Process>,
    /// Per trace, the strings shipped so far.
    strings: Vec<Shipped>,
    /// Per track, the tid of each lane, given on first use.
    tids: Vec<Vec<u32>>,
    slices: usize,
}

impl<W: Write> JsonSink<W> {
    fn new(out: W, zero: u64) -> io::Result<Self> {
        Ok(JsonSink {
            w: ChromeWriter::new(out, zero)?,
            processes: Vec::new(),
            strings: Vec::new(),
            tids: Vec::new(),
            slices: 0,
        })
    }

    fn tid(&mut self, track: u32, lane: u16) -> u32 {
        tid_of(&mut self.tids, track, lane)
    }
}

/// The tid of (track, lane): dense from 1 in order of first use.
fn tid_of(tids: &mut Vec<Vec<u32>>, track: u32, lane: u16) -> u32 {
    let (t, l) = (track as usize, usize::from(lane));
    if let Some(&tid) = tids.get(t).and_then(|lanes| lanes.get(l)) {
        return tid;
    }
    let mut next = tids.iter().map(Vec::len).sum::<usize>() as u32 + 1;
    if tids.len() <= t {
        tids.resize_with(t + 1, Vec::new);
    }
    let lanes = &mut tids[t];
    // Lanes open one after another, so this is lane `len` (a skipped one gets an id too).
    while lanes.len() <= l {
        lanes.push(next);
        next += 1;
    }
    lanes[l]
}

impl<W: Write> Sink<W> for JsonSink<W> {
    fn batch(&mut self, b: &mut Batch) -> io::Result<()> {
        for p in b.processes.drain(..) {
            self.processes.push(p);
            self.strings.push(Shipped::default());
        }
        for (trace, id, text) in b.strings.drain(..) {
            self.strings[usize::from(trace)].add(id, text);
        }
        for s in &b.slices {
            let tid = self.tid(s.track, s.lane);
            let t = usize::from(s.trace);
            let dev = s.device_index().map(|k| {
                let d = &b.device[k];
                (&d.info, d.issuer.as_ref())
            });
            self.w
                .slice(s, self.processes[t].pid, &self.strings[t], tid, dev)?;
        }
        self.slices += b.slices.len();
        for f in &b.flows {
            let flow = Flow {
                id: f.id,
                trace: f.trace,
                src_tid: self.tid(f.src.0, f.src.1),
                src_ts: f.src_ts,
                dst_tid: self.tid(f.dst.0, f.dst.1),
                dst_ts: f.dst_ts,
            };
            self.w.flow(&flow, &self.processes)?;
        }
        for &(counter, trace, ts, value) in &b.counters {
            let name = match counter {
                Counter::Memory => "device memory in use",
                Counter::InFlight => "bytes in flight",
                Counter::Moved => continue,
            };
            let pid = self.processes[usize::from(trace)].pid;
            self.w.counter_point(name, pid, ts, value)?;
        }
        Ok(())
    }

    fn finish(mut self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)> {
        let n = tracks.map_or(0, TrackTable::len);
        if let Some(tracks) = tracks {
            let order = tracks.thread_ids();
            let tids = &mut self.tids;
            self.w
                .metadata_with(&self.processes, tracks, &order, |t, l| tid_of(tids, t, l))?;
        }
        let out = self.w.finish()?;
        Ok((
            out,
            Summary {
                events: self.slices,
                tracks: n,
            },
        ))
    }
}

/// Perfetto: tracks made as they first appear, slices and counter values as they come.
struct PerfettoSink<W: Write> {
    w: PerfettoWriter<W>,
    zero: u64,
    processes: Vec<Process>,
    /// Per trace, its process track once made.
    process_tracks: Vec<Option<TrackId>>,
    names: Names,
    /// Per trace, the strings shipped so far.
    strings: Vec<Shipped>,
    keys: Vec<TrackKey>,
    /// Per export track, whether a synchronous device track goes under its thread's track.
    under: Vec<bool>,
    /// Per export track, its parent and the Perfetto track of each lane.
    lanes: Vec<Option<(TrackId, Vec<TrackId>)>>,
    /// Host threads' tracks, the parents of their synchronous device tracks.
    threads: rustc_hash::FxHashMap<(u16, Option<i64>), TrackId>,
    /// Per trace, the group of its device stream tracks.
    devices: rustc_hash::FxHashMap<u16, TrackId>,
    /// Names of device stream tracks, by export track.
    labels: rustc_hash::FxHashMap<u32, String>,
    /// Flows with one end written: the reader's number and the id given.
    open_flows: rustc_hash::FxHashMap<u64, FlowId>,
    outs: Vec<FlowId>,
    /// Per trace, its counter tracks (memory in use, bytes moved) and the bytes moved so far,
    /// as last written.
    counters: Vec<([Option<TrackId>; 2], i64)>,
    name_buf: Vec<u8>,
    slices: usize,
}

impl<W: Write> PerfettoSink<W> {
    fn new(out: W, zero: u64) -> Self {
        let mut w = PerfettoWriter::new(out);
        let names = Names::new(&mut w);
        PerfettoSink {
            w,
            zero,
            processes: Vec::new(),
            process_tracks: Vec::new(),
            names,
            strings: Vec::new(),
            keys: Vec::new(),
            under: Vec::new(),
            lanes: Vec::new(),
            threads: Default::default(),
            devices: Default::default(),
            labels: Default::default(),
            open_flows: Default::default(),
            outs: Vec::new(),
            counters: Vec::new(),
            name_buf: Vec::new(),
            slices: 0,
        }
    }

    fn process(&mut self, trace: u16) -> io::Result<TrackId> {
        let t = usize::from(trace);
        if let Some(p) = self.process_tracks[t] {
            return Ok(p);
        }
        let p = &self.processes[t];
        let track = self.w.process(p.pid as i32, &p.name, &[])?;
        self.process_tracks[t] = Some(track);
        Ok(track)
    }

    /// The track of a host thread (made when first needed, by its slices or by its
    /// synchronous device track's).
    fn thread(&mut self, trace: u16, thread: Option<i64>) -> io::Result<TrackId> {
        if let Some(&t) = self.threads.get(&(trace, thread)) {
            return Ok(t);
        }
        let process = self.process(trace)?;
        let label = TrackKind::Host { thread }.label(&Default::default());
        let t = match thread {
            Some(tid) => self.w.thread(process, tid, &label)?,
            None => self.w.slice_track(process, &label)?,
        };
        self.threads.insert((trace, thread), t);
        Ok(t)
    }

    /// The Perfetto track of `lane` of export track `track`, made on first use, as
    /// [`perfetto::write`] lays tracks out.
    fn track(&mut self, track: u32, lane: u16) -> io::Result<TrackId> {
        let t = track as usize;
        if self.lanes.len() <= t {
            self.lanes.resize_with(t + 1, || None);
        }
        let key = self.keys[t];
        let named = self.labels.get(&track).cloned();
        let label = || {
            named
                .clone()
                .unwrap_or_else(|| key.kind.label(&Default::default()))
        };
        if self.lanes[t].is_none() {
            let label = label();
            let (parent, first) = match key.kind {
                TrackKind::Host { thread } => {
                    let process = self.process(key.trace)?;
                    (process, self.thread(key.trace, thread)?)
                }
                TrackKind::DeviceSync { thread } => {
                    let parent = if self.under[t] {
                        self.thread(key.trace, thread)?
                    } else {
                        self.process(key.trace)?
                    };
                    (parent, self.w.slice_track(parent, &label)?)
                }
                TrackKind::Nvtx { thread } => {
                    let parent = self.thread(key.trace, thread)?;
                    (parent, self.w.slice_track(parent, &label)?)
                }
                TrackKind::DeviceQueue { .. } => {
                    let process = self.process(key.trace)?;
                    (process, self.w.slice_track(process, &label)?)
                }
                TrackKind::DeviceStream { .. } => {
                    let group = match self.devices.get(&key.trace) {
                        Some(&g) => g,
                        None => {
                            let process = self.process(key.trace)?;
                            let g = self.w.slice_track(process, "device")?;
                            self.devices.insert(key.trace, g);
                            g
                        }
                    };
                    (group, self.w.slice_track(group, &label)?)
                }
            };
            self.lanes[t] = Some((parent, vec![first]));
        }
        let Some((parent, lanes)) = &mut self.lanes[t] else {
            unreachable!("made above")
        };
        while lanes.len() <= usize::from(lane) {
            let name = format!("{} (overlapping, lane {})", label(), lanes.len() + 1);
            lanes.push(self.w.slice_track(*parent, &name)?);
        }
        Ok(lanes[usize::from(lane)])
    }

    /// The id of the reader's flow `n`: given at its first end, forgotten at its second.
    fn flow(&mut self, n: u64) -> FlowId {
        match self.open_flows.remove(&n) {
            Some(f) => f,
            None => {
                let f = self.w.new_flow();
                self.open_flows.insert(n, f);
                f
            }
        }
    }

    fn counter(&mut self, trace: u16, which: usize, name: &str) -> io::Result<TrackId> {
        if let Some(t) = self.counters[usize::from(trace)].0[which] {
            return Ok(t);
        }
        let process = self.process(trace)?;
        let t = perfetto::counter_track(&mut self.w, process, name)?;
        self.counters[usize::from(trace)].0[which] = Some(t);
        Ok(t)
    }
}

impl<W: Write> Sink<W> for PerfettoSink<W> {
    fn batch(&mut self, b: &mut Batch) -> io::Result<()> {
        for (key, under) in b.tracks.drain(..) {
            self.keys.push(key);
            self.under.push(under);
        }
        for p in b.processes.drain(..) {
            self.processes.push(p);
            self.process_tracks.push(None);
            self.strings.push(Shipped::default());
            self.counters.push(([None; 2], 0));
        }
        for (trace, id, text) in b.strings.drain(..) {
            self.strings[usize::from(trace)].add(id, text);
        }
        self.labels.extend(b.labels.drain(..));
        for s in &b.slices {
            let track = self.track(s.track, s.lane)?;
            let d = s.device_index().map(|k| &b.device[k]);
            let ins = match d.and_then(|d| d.flow) {
                Some(n) => vec![self.flow(n)],
                None => Vec::new(),
            };
            let at = Placed {
                s,
                dev: d.map(|d| &d.info),
                track,
                zero: self.zero,
            };
            perfetto::put_slice(
                &mut self.w,
                &mut self.names,
                at,
                &self.strings[usize::from(s.trace)],
                &[],
                &ins,
                &mut self.name_buf,
            )?;
        }
        for k in &b.issuers {
            let s = &k.s;
            let track = self.track(s.track, s.lane)?;
            let mut outs = std::mem::take(&mut self.outs);
            outs.clear();
            outs.extend(k.flows.iter().map(|&n| self.flow(n)));
            let at = Placed {
                s,
                dev: None,
                track,
                zero: self.zero,
            };
            perfetto::put_slice(
                &mut self.w,
                &mut self.names,
                at,
                &self.strings[usize::from(s.trace)],
                &outs,
                &[],
                &mut self.name_buf,
            )?;
            self.outs = outs;
        }
        self.slices += b.slices.len() + b.issuers.len();
        for &(counter, trace, ts, value) in &b.counters {
            let (which, name, value) = match counter {
                Counter::Memory => (0, "device memory in use", value),
                Counter::Moved => {
                    // Written as what each transfer moved (see perfetto::BYTES_MOVED).
                    let moved = &mut self.counters[usize::from(trace)].1;
                    let step = value - *moved;
                    *moved = value;
                    (1, perfetto::BYTES_MOVED, step)
                }
                Counter::InFlight => continue,
            };
            let track = self.counter(trace, which, name)?;
            self.w.counter(track, ts.saturating_sub(self.zero), value)?;
        }
        Ok(())
    }

    fn finish(mut self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)> {
        if tracks.is_some() {
            // A trace with no events still names its process.
            for trace in 0..self.processes.len() {
                self.process(trace as u16)?;
            }
        }
        let count = self.lanes.iter().flatten().map(|l| l.1.len()).sum();
        let (mut out, _) = self.w.finish()?;
        out.flush()?;
        Ok((
            out,
            Summary {
                events: self.slices,
                tracks: count,
            },
        ))
    }
}
