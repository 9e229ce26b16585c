//! The layout of a trace: its events, as they stream out of a reader, placed on tracks and lanes
//! in start order, each device record tied to the slice that issued it. JSON and Perfetto
//! export and `accprof plot` draw what it hands out; the TUI, which keeps every event, places
//! them by the same rules ([`crate::lanes`], [`crate::track`], [`crate::device`]).
//!
//! Modelled on Perfetto's trace processor: one store of tracks ([`TrackTable`]), and trackers
//! that each apply one rule while events stream in: [`Lanes`] stacks a track's slices,
//! [`Issuers`] keeps the recent slices a device record may have been issued by.
//!
//! A trace holds each host thread's events in the order they *ended* (an enclosing construct
//! after what it contains); a track's slices come out in the order they *start*, through a
//! bounded window per track ([`StartWindow`]). Memory grows with tracks, strings and nesting,
//! not with events.
//!
//! The layout's time zero (the earliest start) is taken from the first [`LayoutConfig::prefix`]
//! events; nothing is handed out before it is known, so a trace with fewer events is laid out
//! whole, in the same way.
//!
//! When the input does not fit the windows (a construct holding more slices than a window, an
//! event starting before the time zero), [`Layout::push`] says so ([`Late`]) instead of writing
//! anything out of order: the caller lays the trace out again with what the error says
//! ([`Late::retry`]). Nothing is ever handed out of order or dropped.
//!
//! # Device records
//!
//! A device record waits, placed on its stream's track, until the slice that issued it can be
//! told ([`crate::device`]'s rule): its issuing thread's tracks have laid out every slice that
//! started before the call. The innermost of those containing the call is the issuer: slices
//! still unread that contain it end later, so they enclose it (one thread's slices nest). A
//! record whose issuer was let go of ([`Issuers`]'s budget) gets none and is counted.
//!
//! A kernel record that names no call is given a launch of its kernel by name
//! ([`crate::by_name`]): the records of each kernel in issue order, whatever order their
//! streams lay them out in, each once no launch that starts earlier can still come out of a
//! window of its trace; its issuer is that launch, among the slices kept. The caller tells the kernel
//! names' texts ([`Layout::name_kernel`]); without them such records get no issuer.

use crate::by_name::{call_of, ByName, KernelLaunches, Launch};
use crate::compact::{CompactEvent, NONE_U32};
use crate::device::{DeviceOp, DeviceRecord, IssuerSearch};
use crate::issuers::{better, Found, Issuers, Kept};
use crate::lanes::Lanes;
use crate::order::StartWindow;
use crate::track::{TrackId, TrackKey, TrackKind, TrackTable};
use accprof_abi::acc_event_t;
use accprof_trace::{Event, Header, StrId};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// How a layout buffers.
#[derive(Clone, Debug)]
pub struct LayoutConfig {
    /// Slices each track's window holds before it lets the earliest go: deeper than any nesting
    /// of host events a runtime reports (a construct holds its data events, launches and waits).
    pub window: usize,
    /// Events read before anything is handed out, when [`zero`](Self::zero) is not given: the
    /// earliest start among them is the time zero (each thread's first events come early).
    pub prefix: usize,
    /// The time zero, when known before reading (several traces: the earliest of all).
    pub zero: Option<u64>,
    /// Hand the slices that may issue device work out only once their flows are known (a
    /// format that names a flow on the slice it starts from: Perfetto).
    pub hold_issuers: bool,
    /// Keep slices for device records to find their issuer in, whatever the traces' headers
    /// say (a trace whose header announces no device activity is laid out without them, and
    /// asks for them ([`Late::Unannounced`]) if device records come after all).
    pub note_issuers: bool,
    /// Slices kept, over all tracks, for device records to find their issuer in.
    pub issuer_budget: usize,
    /// Device records that may wait for their issuer before the oldest are tied to what is
    /// known (and counted in [`LayoutStats::forced`]).
    pub pending: usize,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig {
            window: 8192,
            prefix: 1 << 16,
            zero: None,
            hold_issuers: false,
            note_issuers: false,
            issuer_budget: 1 << 17,
            pending: 1 << 18,
        }
    }
}

/// The input did not fit: lay it out again with [`Late::retry`]'s configuration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Late {
    /// A slice arrived after a later-starting one of its track had been handed out (a
    /// construct holding more slices than a window).
    Window,
    /// An event started before the time zero, taken from the first events; the earliest
    /// start read so far.
    BeforeZero(u64),
    /// Device records came in a trace whose header did not announce them, after slices that
    /// may have issued them were laid out without being kept.
    Unannounced,
}

impl Late {
    /// What went wrong, for a log line.
    pub fn why(&self) -> &'static str {
        match self {
            Late::Window => "a construct holds more slices than a window",
            Late::BeforeZero(_) => "an event starts before the first events read",
            Late::Unannounced => "device records in a trace whose header does not announce them",
        }
    }

    /// The configuration to lay the same input out again with. A window grows sixteenfold
    /// each time (memory grows with the input's nesting, which the first try did not know);
    /// a time zero found too late is taken as given, with the earliest start of `earliest`
    /// (the caller reads the traces once for it).
    pub fn retry(&self, cfg: &LayoutConfig, earliest: impl FnOnce() -> u64) -> LayoutConfig {
        let mut next = cfg.clone();
        match self {
            Late::Window => next.window = cfg.window.saturating_mul(16),
            Late::BeforeZero(_) => next.zero = Some(earliest()),
            Late::Unannounced => next.note_issuers = true,
        }
        next
    }
}

/// A flow arrow from the slice that issued a device record to the record's slice.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Flow {
    /// Numbered from 1 in the order found.
    pub id: u64,
    pub trace: u16,
    /// (track, lane, time) of each end; the times lie inside their slices.
    pub from: (TrackId, u16, u64),
    pub to: (TrackId, u16, u64),
}

/// A device record's slice, with what the record says and the slice that issued it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DeviceSlice {
    pub record: DeviceRecord,
    pub issuer: Option<CompactEvent>,
    pub flow: Option<Flow>,
}

/// What a view does with the slices of a layout, in each track's start order.
pub trait Sink {
    type Error;
    /// The time zero is known; nothing was handed out before.
    fn start(&mut self, zero: u64) -> Result<(), Self::Error>;
    /// A slice (or instant) that is not a device record, with the flows it starts (given only
    /// with [`LayoutConfig::hold_issuers`]).
    fn slice(
        &mut self,
        tracks: &TrackTable,
        s: &CompactEvent,
        flows_out: &[u64],
    ) -> Result<(), Self::Error>;
    /// A device record's slice.
    fn device(
        &mut self,
        tracks: &TrackTable,
        s: &CompactEvent,
        d: &DeviceSlice,
    ) -> Result<(), Self::Error>;
}

/// Why [`Layout::push`] stopped.
#[derive(Debug)]
pub enum Stop<E> {
    Late(Late),
    Sink(E),
}

impl<E> From<Late> for Stop<E> {
    fn from(l: Late) -> Self {
        Stop::Late(l)
    }
}

/// What the layout saw, for the views' warnings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutStats {
    pub slices: u64,
    pub flows: u64,
    /// Device records whose issuing slice had been let go before they arrived.
    pub issuer_gone: u64,
    /// Device records tied to their issuer before every slice that may have issued them was
    /// laid out (too many were waiting).
    pub forced: u64,
}

/// A device slice waiting for its issuer.
#[derive(Debug)]
struct Pending {
    s: CompactEvent,
    record: DeviceRecord,
    /// A kernel record without its call waiting for the by-name rule: its number there.
    unissued: Option<u64>,
    /// The launch it was given by name.
    by_name: Option<Launch<TrackId>>,
}

/// A kernel record without its call, in line for the by-name rule: (correlation id, device
/// start) for the order, its number, its device start.
type InLine = ((u64, u64), u64, u64);

/// One trace being laid out, or laid out.
#[derive(Debug)]
struct TraceState {
    /// Added to a monotonic time to put it on the wall clock, so that ranks line up.
    shift: i128,
    ended: bool,
    /// Slices that may issue device work are kept for device records ([`Issuers`]).
    noting: bool,
    /// Such slices were laid out without being kept.
    unnoted: bool,
    /// Kernel names, and the launches laid out that wait for a record without its call.
    by_name: KernelLaunches<TrackId>,
    /// Per kernel name, its records without their call not yet decided, in issue order (the
    /// rule takes them in that order, whatever order their streams lay them out in).
    in_line: FxHashMap<u32, VecDeque<InLine>>,
    /// What the rule said for records decided before their slice was linked, by number.
    said: FxHashMap<u64, ByName<TrackId>>,
    /// Numbers records without their call.
    next_unissued: u64,
}

/// The streaming layout (see the module's documentation).
#[derive(Debug)]
pub struct Layout {
    cfg: LayoutConfig,
    tracks: TrackTable,
    windows: Vec<StartWindow<CompactEvent>>,
    lanes: Vec<Lanes>,
    traces: Vec<TraceState>,
    /// Device records while their slices are in a window; free slots.
    records: Vec<(DeviceRecord, Option<u64>)>,
    free_records: Vec<u32>,
    issuers: Issuers,
    /// Per device stream track, its slices waiting for their issuers, in order.
    pending: Vec<VecDeque<Pending>>,
    pending_count: usize,
    /// (trace, thread) of every thread that recorded OpenACC events.
    reporting: FxHashSet<(u16, i64)>,
    zero: Option<u64>,
    /// The sink was told the time zero.
    started: bool,
    earliest: u64,
    read: usize,
    stats: LayoutStats,
    /// Slices let go by [`Issuers`], to be handed out.
    kept: Vec<Kept>,
}

/// Maps a trace's monotonic timestamps to the wall clock, so that traces of different ranks
/// (different hosts, different monotonic clocks) line up. A header without a wall-clock time
/// leaves them as they are.
pub fn wall_clock_shift(h: &Header) -> i128 {
    if h.start_unix_ns == 0 {
        0
    } else {
        i128::from(h.start_unix_ns) - i128::from(h.start_monotonic_ns)
    }
}

/// `t` shifted by `shift`, within u64.
pub fn shifted(t: u64, shift: i128) -> u64 {
    (i128::from(t) + shift).clamp(0, i128::from(u64::MAX)) as u64
}

impl Layout {
    pub fn new(cfg: LayoutConfig) -> Self {
        Layout {
            issuers: Issuers::new(cfg.issuer_budget),
            zero: cfg.zero,
            cfg,
            tracks: TrackTable::default(),
            windows: Vec::new(),
            lanes: Vec::new(),
            traces: Vec::new(),
            records: Vec::new(),
            free_records: Vec::new(),
            pending: Vec::new(),
            pending_count: 0,
            reporting: FxHashSet::default(),
            started: false,
            earliest: u64::MAX,
            read: 0,
            stats: LayoutStats::default(),
            kept: Vec::new(),
        }
    }

    /// Starts the next trace (they are numbered from 0 in the order begun), whose header is
    /// `h`.
    pub fn begin_trace(&mut self, h: &Header) -> u16 {
        self.traces.push(TraceState {
            shift: wall_clock_shift(h),
            ended: false,
            noting: self.cfg.note_issuers || h.device_activity().is_some(),
            unnoted: false,
            by_name: KernelLaunches::default(),
            in_line: FxHashMap::default(),
            said: FxHashMap::default(),
            next_unissued: 0,
        });
        (self.traces.len() - 1) as u16
    }

    /// Tells that string `id` of the trace begun last is the kernel name `text` (call it
    /// before pushing the first event that uses `id`): kernel records that name no call are
    /// then tied to a launch of their kernel ([`crate::by_name`]).
    pub fn name_kernel(&mut self, id: StrId, text: &str) {
        if let Some(t) = self.traces.last_mut() {
            t.by_name.name(id, text);
        }
    }

    /// The tracks met so far.
    pub fn tracks(&self) -> &TrackTable {
        &self.tracks
    }

    pub fn stats(&self) -> LayoutStats {
        self.stats
    }

    /// The time zero, once known.
    pub fn zero(&self) -> Option<u64> {
        self.zero
    }

    /// Takes in the next event of the trace begun last.
    pub fn push<S: Sink>(&mut self, ev: &Event, sink: &mut S) -> Result<(), Stop<S::Error>> {
        if accprof_trace::nvtx::is_name(ev.kind) {
            // A name the program gave an NVTX category or its thread: no slice.
            return Ok(());
        }
        let trace = (self.traces.len() - 1) as u16;
        let shift = self.traces[trace as usize].shift;
        let mut s = CompactEvent::from_event(ev, trace, 0, |t| shifted(t, shift));
        if let Some(record) = DeviceRecord::of(ev) {
            let st = &mut self.traces[trace as usize];
            if !st.noting {
                if st.unnoted {
                    return Err(Late::Unannounced.into());
                }
                st.noting = true;
            }
            let unissued = self.line_up(trace, &record, &s);
            s.device = self.keep_record((record, unissued));
        } else {
            self.tracks.note_event(trace, ev);
            if let Some(t) = ev.thread() {
                self.reporting.insert((trace, t));
            }
        }
        s.track = self.tracks.intern(TrackKey {
            trace,
            kind: TrackKind::of_event(ev),
        });
        if self.windows.len() < self.tracks.len() {
            self.windows
                .resize_with(self.tracks.len(), || StartWindow::new(self.cfg.window));
            self.lanes.resize_with(self.tracks.len(), Lanes::default);
            self.pending.resize_with(self.tracks.len(), VecDeque::new);
        }
        self.earliest = self.earliest.min(s.start);
        if self.zero.is_some_and(|z| s.start < z) {
            return Err(Late::BeforeZero(self.earliest).into());
        }
        let track = s.track as usize;
        self.windows[track].push(s).map_err(|_| Late::Window)?;
        self.read += 1;
        if self.started {
            if let Some(s) = self.windows[track].pop_over() {
                self.emit(s, sink)?;
            }
        } else if self.zero.is_some() || self.read >= self.cfg.prefix {
            self.start(sink)?;
        }
        Ok(())
    }

    /// Ends the trace begun last: its windows are emptied (once the time zero is known) and its
    /// device records tied to their issuers.
    pub fn end_trace<S: Sink>(&mut self, sink: &mut S) -> Result<(), Stop<S::Error>> {
        if let Some(t) = self.traces.last_mut() {
            t.ended = true;
        }
        if !self.started {
            // Still held whole: laid out at `finish`, once the time zero is known.
            return Ok(());
        }
        let trace = (self.traces.len() - 1) as u16;
        self.drain(Some(trace), sink)
    }

    /// Lays out what is still held (every trace must have been ended) and gives back the
    /// tracks, with the lanes each needed.
    pub fn finish<S: Sink>(
        mut self,
        sink: &mut S,
    ) -> Result<(TrackTable, LayoutStats), Stop<S::Error>> {
        if !self.started {
            self.start(sink)?;
        }
        self.drain(None, sink)?;
        Ok((self.tracks, self.stats))
    }

    /// Empties the windows of `trace` (of every trace when `None`), then ties their device
    /// records and hands out the slices kept for them.
    fn drain<S: Sink>(&mut self, trace: Option<u16>, sink: &mut S) -> Result<(), Stop<S::Error>> {
        let mut tracks: Vec<TrackId> = (0..self.tracks.len() as TrackId)
            .filter(|&t| trace.is_none_or(|tr| self.tracks.key(t).trace == tr))
            .collect();
        // Slices that may issue device work first: a device record is tied to its issuer as
        // soon as its own slice is laid out.
        tracks.sort_by_key(|&t| matches!(self.tracks.key(t).kind, TrackKind::DeviceStream { .. }));
        for &t in &tracks {
            while let Some(s) = self.windows[t as usize].pop() {
                self.emit(s, sink)?;
            }
        }
        self.link_pending(sink, usize::MAX)?;
        let mut kept = std::mem::take(&mut self.kept);
        self.issuers.drain(tracks.iter().copied(), &mut kept);
        let r = self.hand_out_kept(&mut kept, sink);
        self.kept = kept;
        r
    }

    /// Puts a kernel record without its call in line for the by-name rule (its kernel's name
    /// told), and gives its number there.
    fn line_up(&mut self, trace: u16, record: &DeviceRecord, s: &CompactEvent) -> Option<u64> {
        if record.op != DeviceOp::Kernel || record.issued().is_some() {
            return None;
        }
        let st = &mut self.traces[trace as usize];
        let n = st.by_name.of(s.name_id())?;
        let seq = st.next_unissued;
        st.next_unissued += 1;
        let key = (record.correlation.unwrap_or(u64::MAX), s.start);
        let q = st.in_line.entry(n).or_default();
        let at = q.partition_point(|e| e.0 <= key);
        q.insert(at, (key, seq, s.start));
        Some(seq)
    }

    fn keep_record(&mut self, r: (DeviceRecord, Option<u64>)) -> u32 {
        match self.free_records.pop() {
            Some(k) => {
                self.records[k as usize] = r;
                k
            }
            None => {
                self.records.push(r);
                self.records.len() as u32 - 1
            }
        }
    }

    /// Fixes the time zero, tells the sink, and lets go what the windows hold beyond their
    /// capacity.
    fn start<S: Sink>(&mut self, sink: &mut S) -> Result<(), Stop<S::Error>> {
        let zero = self.zero.unwrap_or(if self.earliest == u64::MAX {
            0
        } else {
            self.earliest
        });
        self.zero = Some(zero);
        self.started = true;
        sink.start(zero).map_err(Stop::Sink)?;
        for t in 0..self.windows.len() {
            while let Some(s) = self.windows[t].pop_over() {
                self.emit(s, sink)?;
            }
        }
        Ok(())
    }

    /// Places `s` (the next of its track in start order) and hands it out, or keeps it for
    /// the device records it may have issued, or (a device record) waits for its issuer.
    fn emit<S: Sink>(&mut self, mut s: CompactEvent, sink: &mut S) -> Result<(), Stop<S::Error>> {
        let p = self.lanes[s.track as usize].place(s.start, s.end, s.is_point());
        (s.lane, s.depth) = (p.lane, p.depth);
        self.tracks.note_lane(s.track, s.lane);
        self.stats.slices += 1;
        if let Some(k) = s.device_index() {
            let (record, unissued) = self.records[k];
            self.free_records.push(k as u32);
            s.device = NONE_U32;
            self.pending[s.track as usize].push_back(Pending {
                s,
                record,
                unissued,
                by_name: None,
            });
            self.pending_count += 1;
            return self.link_track(s.track, sink, self.cfg.pending);
        }
        let kind = self.tracks.key(s.track).kind;
        let st = &mut self.traces[s.trace as usize];
        if matches!(kind, TrackKind::DeviceStream { .. }) || !st.noting {
            st.unnoted |= !matches!(kind, TrackKind::DeviceStream { .. });
            return sink.slice(&self.tracks, &s, &[]).map_err(Stop::Sink);
        }
        if s.event() == acc_event_t::ENQUEUE_LAUNCH_START && st.by_name.is_named() {
            if let Some(n) = st.by_name.of(s.name_id()) {
                st.by_name.add_launch(n, (s.start, s.end, s.track));
            }
        }
        let mut kept = std::mem::take(&mut self.kept);
        self.issuers.note(&s, &mut kept);
        let r = if self.cfg.hold_issuers {
            self.hand_out_kept(&mut kept, sink)
        } else {
            kept.clear();
            sink.slice(&self.tracks, &s, &[]).map_err(Stop::Sink)
        };
        self.kept = kept;
        r?;
        if self.pending_count > 0 && self.stats.slices.is_multiple_of(64) {
            self.link_pending(sink, self.cfg.pending)?;
        }
        Ok(())
    }

    fn hand_out_kept<S: Sink>(
        &mut self,
        kept: &mut Vec<Kept>,
        sink: &mut S,
    ) -> Result<(), Stop<S::Error>> {
        if self.cfg.hold_issuers {
            for k in kept.iter() {
                sink.slice(&self.tracks, &k.slice, &k.flows)
                    .map_err(Stop::Sink)?;
            }
        }
        kept.clear();
        Ok(())
    }

    /// Hands out every waiting device slice whose issuer can be told now, in each track's
    /// order; beyond `keep` waiting, the oldest are tied to what is known.
    fn link_pending<S: Sink>(&mut self, sink: &mut S, keep: usize) -> Result<(), Stop<S::Error>> {
        for t in 0..self.pending.len() {
            if !self.pending[t].is_empty() {
                self.link_track(t as TrackId, sink, keep)?;
            }
        }
        Ok(())
    }

    /// [`link_pending`](Self::link_pending) for the slices waiting on `track`.
    fn link_track<S: Sink>(
        &mut self,
        track: TrackId,
        sink: &mut S,
        keep: usize,
    ) -> Result<(), Stop<S::Error>> {
        let t = track as usize;
        while !self.pending[t].is_empty() {
            let force = self.pending_count > keep;
            if !self.named_launch(t, force) {
                break;
            }
            let Some(p) = self.pending[t].front() else {
                break;
            };
            let Some(found) = self.issuer(p, force) else {
                break;
            };
            let Some(p) = self.pending[t].pop_front() else {
                break;
            };
            self.pending_count -= 1;
            if force && !self.traces[p.s.trace as usize].ended {
                self.stats.forced += 1;
            }
            let d = self.link(&p, found);
            sink.device(&self.tracks, &p.s, &d).map_err(Stop::Sink)?;
        }
        Ok(())
    }

    /// Whether the record first waiting on `track` is not one that waits for a launch of its
    /// kernel by name: a kernel record without its call is given one here ([`ByName`]), after
    /// the records of its kernel issued before it, once no launch of its trace that starts
    /// earlier can still be laid out (with `force`, or at the end of the trace, what is known
    /// now).
    fn named_launch(&mut self, track: usize, force: bool) -> bool {
        let Some(p) = self.pending[track].front() else {
            return true;
        };
        let Some(seq) = p.unissued else {
            return true;
        };
        let trace = p.s.trace as usize;
        let Some(n) = self.traces[trace].by_name.of(p.s.name_id()) else {
            return true;
        };
        let horizon = if force || self.traces[trace].ended {
            u64::MAX
        } else {
            self.launch_horizon(trace as u16)
        };
        // The records of this kernel before it in issue order are decided first.
        let st = &mut self.traces[trace];
        while !st.said.contains_key(&seq) {
            let Some(&(_, first, device_start)) = st.in_line.get(&n).and_then(|q| q.front()) else {
                break;
            };
            match st.by_name.decide(n, device_start, horizon) {
                ByName::Wait => return false,
                said => {
                    st.said.insert(first, said);
                    if let Some(q) = st.in_line.get_mut(&n) {
                        q.pop_front();
                    }
                }
            }
        }
        let said = st.said.remove(&seq);
        if let Some(p) = self.pending[track].front_mut() {
            p.unissued = None;
            if let Some(ByName::Launch(l)) = said {
                p.by_name = Some(l);
            }
        }
        true
    }

    /// No launch of `trace` that starts before this can still come out of a window.
    fn launch_horizon(&self, trace: u16) -> u64 {
        self.tracks
            .of_trace(trace)
            .filter(|(_, key)| {
                matches!(
                    key.kind,
                    TrackKind::DeviceSync { .. } | TrackKind::DeviceQueue { .. }
                )
            })
            .filter_map(|(track, _)| self.windows[track as usize].next_start_bound())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The call time of `p` on the layout's clock: its own, or the middle of the launch it
    /// was given by name.
    fn call_of(&self, p: &Pending) -> Option<u64> {
        if let Some(l) = p.by_name {
            return Some(call_of(&l));
        }
        let shift = self.traces[p.s.trace as usize].shift;
        p.record.host_call_ns.map(|t| shifted(t, shift))
    }

    /// The answer of the issuer rule for `p`, or `None` while slices that may have issued it
    /// are still to be laid out. With `force`, what is known now.
    fn issuer(&self, p: &Pending, force: bool) -> Option<Found> {
        let trace = p.s.trace;
        let st = &self.traces[trace as usize];
        if let Some(l) = p.by_name {
            // The launch itself (what the rule's search from its middle finds), if still kept.
            let launch = |s: &CompactEvent| {
                s.event() == acc_event_t::ENQUEUE_LAUNCH_START && (s.start, s.end) == (l.0, l.1)
            };
            return Some(self.issuers.innermost(l.2, call_of(&l), launch));
        }
        let search = p
            .record
            .issuer_search(|t| self.reporting.contains(&(trace, t)));
        let (IssuerSearch::Thread(..) | IssuerSearch::Enqueue(_)) = search else {
            return Some(Found::None);
        };
        let Some(call) = p.record.host_call_ns.map(|t| shifted(t, st.shift)) else {
            return Some(Found::None);
        };
        let decided = force || st.ended;
        let mut found = Found::None;
        let mut passed = true;
        for (track, key) in self.tracks.of_trace(trace) {
            if !search.looks_on(key.kind) {
                continue;
            }
            // A slice open at the call is still in the window: not laid out yet.
            if !decided && self.windows[track as usize].may_hold_open_at(call) {
                return None;
            }
            passed &= self.issuers.passed(track, call);
            let here = self
                .issuers
                .innermost(track, call, |s| search.accepts(s.event()));
            found = better(found, here);
        }
        // A laid-out slice containing the call is the innermost: any unread one containing it
        // ends later, so it encloses it. Without one, a slice still unread may contain it.
        match found {
            Found::None if !decided && !passed => None,
            found => Some(found),
        }
    }

    /// The device slice of `p` with its issuer and the flow from it.
    fn link(&mut self, p: &Pending, found: Found) -> DeviceSlice {
        let none = DeviceSlice {
            record: p.record,
            issuer: None,
            flow: None,
        };
        let (h, at) = match found {
            Found::Slice(h, at) => (h, at),
            Found::Gone => {
                self.stats.issuer_gone += 1;
                return none;
            }
            Found::None => return none,
        };
        let Some(call) = self.call_of(p) else {
            return none;
        };
        if p.by_name.is_none()
            && p.record.op == DeviceOp::Kernel
            && h.event() == acc_event_t::ENQUEUE_LAUNCH_START
        {
            // A launch a record names as its call is that record's, not one by name.
            let st = &mut self.traces[p.s.trace as usize];
            if let Some(n) = st.by_name.of(h.name_id()) {
                st.by_name.claim(n, (h.start, h.end, h.track));
            }
        }
        let from_ts = inside(&h, call);
        // The arrow's end lies inside the device slice and not before its start: a viewer drops
        // a flow whose end comes before its beginning (clocks of host and device can disagree
        // by a little). A record that ran before its call (by that much) keeps its issuer, with
        // no arrow.
        let (lo, hi) = interior(&p.s);
        let to_ts = from_ts.max(lo);
        if to_ts > hi {
            return DeviceSlice {
                issuer: Some(h),
                ..none
            };
        }
        self.stats.flows += 1;
        let id = self.stats.flows;
        self.issuers.add_flow(h.track, at, id);
        DeviceSlice {
            record: p.record,
            issuer: Some(h),
            flow: Some(Flow {
                id,
                trace: p.s.trace,
                from: (h.track, h.lane, from_ts),
                to: (p.s.track, p.s.lane, to_ts),
            }),
        }
    }
}

/// The part of `s` strictly inside its edges (when it is long enough to have one): a viewer
/// binds a flow to the slice open at the flow's time, and at an edge that may be a neighbour.
fn interior(s: &CompactEvent) -> (u64, u64) {
    if s.duration() >= 2 {
        (s.start + 1, s.end - 1)
    } else {
        (s.start, s.start)
    }
}

fn inside(s: &CompactEvent, t: u64) -> u64 {
    let (lo, hi) = interior(s);
    t.clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::{Field, Header, StrId};

    /// A slice as a sink was handed it: (track, start, end, lane, depth, issuer's start, flows
    /// out).
    type Handed = (u32, u64, u64, u16, u16, Option<u64>, Vec<u64>);

    #[derive(Default)]
    struct Got {
        zero: Option<u64>,
        slices: Vec<Handed>,
    }

    impl Sink for Got {
        type Error = ();
        fn start(&mut self, zero: u64) -> Result<(), ()> {
            self.zero = Some(zero);
            Ok(())
        }
        fn slice(&mut self, _: &TrackTable, s: &CompactEvent, f: &[u64]) -> Result<(), ()> {
            let row = (s.track, s.start, s.end, s.lane, s.depth, None, f.to_vec());
            self.slices.push(row);
            Ok(())
        }
        fn device(&mut self, _: &TrackTable, s: &CompactEvent, d: &DeviceSlice) -> Result<(), ()> {
            let issuer = d.issuer.map(|i| i.start);
            let flow = d.flow.map(|f| vec![f.id]).unwrap_or_default();
            self.slices
                .push((s.track, s.start, s.end, s.lane, s.depth, issuer, flow));
            Ok(())
        }
    }

    fn ev(kind: acc_event_t, start: u64, end: u64, thread: i64) -> Event {
        let mut e = Event::new(kind, start);
        e.end_ns = end;
        e.set_i64(Field::Thread, thread);
        e
    }

    fn kernel(start: u64, end: u64, thread: i64, call: u64) -> Event {
        let mut e = ev(accprof_trace::device::KERNEL, start, end, thread);
        e.set(Field::HostCallNs, call);
        e.set(Field::AsyncHandle, 7);
        e
    }

    fn lay(cfg: LayoutConfig, events: &[Event]) -> Result<Got, Late> {
        let mut got = Got::default();
        let mut l = Layout::new(cfg);
        l.begin_trace(&Header::default());
        for e in events {
            match l.push(e, &mut got) {
                Err(Stop::Late(late)) => return Err(late),
                r => r.unwrap(),
            }
        }
        l.end_trace(&mut got).unwrap();
        l.finish(&mut got).unwrap();
        Ok(got)
    }

    fn small() -> LayoutConfig {
        LayoutConfig {
            window: 2,
            prefix: 3,
            ..LayoutConfig::default()
        }
    }

    const C: acc_event_t = acc_event_t::COMPUTE_CONSTRUCT_START;
    const L: acc_event_t = acc_event_t::ENQUEUE_LAUNCH_START;

    #[test]
    fn end_order_comes_out_in_start_order_nested() {
        // Two constructs, each after its two launches (end order), on thread 1.
        let events = [
            ev(L, 12, 14, 1),
            ev(L, 15, 17, 1),
            ev(C, 10, 20, 1),
            ev(L, 32, 34, 1),
            ev(C, 30, 40, 1),
        ];
        let got = lay(small(), &events).unwrap();
        assert_eq!(got.zero, Some(10));
        let host: Vec<_> = got
            .slices
            .iter()
            .filter(|s| s.0 == 1)
            .map(|s| (s.1, s.4))
            .collect();
        assert_eq!(host, [(10, 0), (30, 0)]);
        let launches: Vec<_> = got
            .slices
            .iter()
            .filter(|s| s.0 == 0)
            .map(|s| s.1)
            .collect();
        assert_eq!(launches, [12, 15, 32]);
    }

    #[test]
    fn a_construct_wider_than_the_window_asks_for_a_larger_one() {
        let mut events: Vec<Event> = (0..5).map(|i| ev(C, 10 + 2 * i, 11 + 2 * i, 1)).collect();
        events.push(ev(C, 5, 30, 1));
        let cfg = LayoutConfig {
            window: 2,
            prefix: 1,
            zero: Some(0),
            ..LayoutConfig::default()
        };
        assert_eq!(lay(cfg.clone(), &events).err(), Some(Late::Window));
        let got = lay(Late::Window.retry(&cfg, || 0), &events).unwrap();
        assert_eq!(got.slices[0].1, 5);
        assert!(got.slices[1..].iter().all(|s| s.4 == 1));
    }

    #[test]
    fn an_event_before_the_time_zero_asks_for_the_earliest() {
        let events = [ev(C, 10, 11, 1), ev(C, 12, 13, 1), ev(C, 1, 20, 2)];
        let cfg = LayoutConfig {
            prefix: 2,
            ..LayoutConfig::default()
        };
        assert_eq!(lay(cfg.clone(), &events).err(), Some(Late::BeforeZero(1)));
        let got = lay(Late::BeforeZero(1).retry(&cfg, || 1), &events).unwrap();
        assert_eq!(got.zero, Some(1));
    }

    #[test]
    fn device_records_find_the_innermost_slice_open_at_their_call() {
        // A construct holding a launch; its kernel record comes late, after more host slices.
        let mut events = vec![ev(L, 12, 14, 1), ev(C, 10, 20, 1)];
        events.extend((0..6).map(|i| ev(C, 30 + 10 * i, 35 + 10 * i, 1)));
        events.push(kernel(15, 25, 1, 13));
        events.push(kernel(40, 45, 1, 16));
        events.push(kernel(50, 55, 1, 99));
        // The header announces no device activity: the records ask for the slices to be kept.
        assert_eq!(lay(small(), &events).err(), Some(Late::Unannounced));
        for hold in [false, true] {
            let cfg = LayoutConfig {
                hold_issuers: hold,
                ..Late::Unannounced.retry(&small(), || 0)
            };
            let got = lay(cfg, &events).unwrap();
            let records: Vec<_> = got
                .slices
                .iter()
                .filter(|s| s.0 == 2)
                .map(|s| (s.1, s.5))
                .collect();
            // The launch (12..14) holds the first call; the second falls in the construct only,
            // after its launch; the third in nothing.
            assert_eq!(records, [(15, Some(12)), (40, Some(10)), (50, None)]);
            let flows_out: Vec<_> = got
                .slices
                .iter()
                .filter(|s| !s.6.is_empty() && s.0 != 2)
                .collect();
            assert_eq!(flows_out.len(), if hold { 2 } else { 0 }, "{hold}");
        }
    }

    #[test]
    fn a_kernel_record_without_its_call_is_tied_to_a_launch_of_its_kernel() {
        let named = |mut e: Event, id: u32| {
            e.set(Field::KernelName, u64::from(id));
            e
        };
        let unissued = |start: u64, end: u64, id: u32| {
            let mut e = Event::new(accprof_trace::device::KERNEL, start);
            e.end_ns = end;
            e.set(Field::AsyncHandle, 7);
            named(e, id)
        };
        let ms = 1_000_000;
        // Two launches of kernel "k" (id 1; its records name it with id 2), one of "other"
        // (id 3). The first launch's record says its call; the second's does not; the third
        // record started on the device long before any launch left of its kernel.
        let events = vec![
            named(ev(L, 10 * ms, 11 * ms, 1), 1),
            named(ev(L, 20 * ms, 21 * ms, 1), 1),
            named(ev(L, 30 * ms, 31 * ms, 1), 3),
            ev(C, 5 * ms, 40 * ms, 1),
            named(kernel(12 * ms, 13 * ms, 1, 10 * ms + 5), 2),
            unissued(22 * ms, 23 * ms, 2),
            unissued(2 * ms, 3 * ms, 2),
            unissued(32 * ms, 33 * ms, 4),
        ];
        for told in [true, false] {
            let mut got = Got::default();
            let mut l = Layout::new(LayoutConfig {
                note_issuers: true,
                zero: Some(0),
                ..small()
            });
            l.begin_trace(&Header::default());
            if told {
                for (id, text) in [(1, "k"), (2, "k"), (3, "other"), (4, "other")] {
                    l.name_kernel(StrId(id), text);
                }
            }
            for e in &events {
                l.push(e, &mut got).unwrap();
            }
            l.end_trace(&mut got).unwrap();
            l.finish(&mut got).unwrap();
            let records: Vec<_> = got
                .slices
                .iter()
                .filter(|s| s.0 == 2)
                .map(|s| (s.1 / ms, s.5.map(|i| i / ms)))
                .collect();
            let by_name = |launch| told.then_some(launch);
            assert_eq!(
                records,
                [
                    (2, None),
                    (12, Some(10)),
                    (22, by_name(20)),
                    (32, by_name(30))
                ],
                "names told: {told}"
            );
        }
    }

    #[test]
    fn a_quiet_track_holds_no_record_back() {
        // Thread 1's host track holds one early slice and never fills its window; its
        // synchronous launches are many. Each kernel record comes late and is tied as soon as
        // its launch is laid out, not at the end (too many waiting would be tied by force).
        let mut events = vec![ev(C, 0, 10, 1)];
        for i in 0..200u64 {
            let t = 100 + i * 100;
            events.push(ev(L, t, t + 50, 1));
            if i >= 10 {
                let c = 100 + (i - 10) * 100 + 25;
                events.push(kernel(c + 30, c + 40, 1, c));
            }
        }
        let cfg = LayoutConfig {
            pending: 8,
            note_issuers: true,
            ..small()
        };
        let mut got = Got::default();
        let mut l = Layout::new(cfg);
        l.begin_trace(&Header::default());
        for e in &events {
            l.push(e, &mut got).unwrap();
        }
        assert_eq!(l.stats().forced, 0);
        l.end_trace(&mut got).unwrap();
        let (_, stats) = l.finish(&mut got).unwrap();
        assert_eq!((stats.forced, stats.issuer_gone), (0, 0));
        let issued = got.slices.iter().filter(|s| s.5.is_some()).count();
        assert_eq!(issued, 190);
    }
}
