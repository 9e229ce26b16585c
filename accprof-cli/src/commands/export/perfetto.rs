//! The export in Perfetto's native format (TracePacket/TrackEvent protobuf, through
//! [`accprof_perfetto::PerfettoWriter`]): the same tracks, lanes, slices, names, flows and
//! counters as the Chrome JSON export, from the same laid-out slices.
//!
//! Tracks are made as they are first used: a process per trace; under it a thread track per
//! host thread (its synchronous device work beneath it), a track per async queue, and a
//! "device" group holding a track per stream. Lanes after the first become tracks of their own
//! beside the first, named as the JSON export names them.
//!
//! Names, categories, source locations and string arguments are interned by the writer; this
//! module keeps one handle per distinct value in its own tables (keyed by the trace's string ids,
//! not by the formatted text, so that an event that repeats a known name costs a hash lookup).
//!
//! Counter values ride on the slice or instant that starts at their time (TrackEvent's
//! `extra_counter_values`: a few bytes instead of a packet of their own). A counter's value is
//! final only once its window has passed ([`super::counters`]), later than the layout hands out
//! most slices (and sooner than others on traces of many threads), so slices are held here for
//! their values to come and values wait for their slices, each up to a bound
//! ([`HOLD_PER_STEP`], [`WAITING_PER_STEP`]); a value no slice carried gets a packet of its own
//! on its counter's track.

use super::batch::{Batch, Output, Process, Summary};
use super::chrome;
use super::counters::Counter;
use super::strings::{Shipped, Strings};
use accprof_perfetto::{
    Arg, ArgNameId, ArgValue, CategoryId, CounterUnit, CounterValue, Event, FlowId, LocationId,
    NameId, PerfettoWriter, TrackId,
};
use accprof_timeline::compact::{NONE_I32, NONE_U32};
use accprof_timeline::title::states_size;
use accprof_timeline::track::lane_name;
use accprof_timeline::{CompactEvent as Slice, DeviceSlice, NameStyle, TrackKind, TrackTable};
use std::io::{self, Write};

/// The export's tables are looked up on small integer keys once or more per event, where
/// SipHash's DoS resistance buys nothing and costs a third of the time.
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Slices held for the counter values at their start times, at most, per step of the counters'
/// window (8 per step: 65,536 slices for the default window of 8192 steps). A window releases a
/// value after that many later steps of its counter, which a trace of transfers reaches within
/// a few times as many slices.
const HOLD_PER_STEP: usize = 8;
/// Counter values waiting for a slice to carry them, at most, per step of the counters' window
/// (524,288 by default); past it the earliest gets a packet of its own. Values mostly wait here
/// rather than slices in the hold where many threads make the layout's windows slow to release
/// slices (64 threads: about 550,000 packets after their values).
const WAITING_PER_STEP: usize = 64;

/// Per trace: its process, strings, process track, device group and counter tracks.
#[derive(Default)]
struct TraceOut {
    process: Option<Process>,
    strings: Shipped,
    track: Option<TrackId>,
    devices: Option<TrackId>,
    /// Device memory in use, bytes moved.
    counters: [Option<TrackId>; 2],
}

/// Slices waiting to be written, in the order the layout gave them, with their device
/// records and the flows they start beside them (most slices have neither).
#[derive(Default)]
struct Held {
    slices: std::collections::VecDeque<(Slice, bool, u8)>,
    devices: std::collections::VecDeque<DeviceSlice>,
    flows: std::collections::VecDeque<u64>,
}

/// The Perfetto export's writing side.
pub struct PerfettoOutput<W: Write> {
    w: PerfettoWriter<W>,
    zero: u64,
    traces: Vec<TraceOut>,
    names: Names,
    /// Per export track: its key and name, and (once made) its parent and the Perfetto
    /// track of each lane.
    tracks: Vec<Option<(accprof_timeline::TrackKey, String)>>,
    lanes: Vec<Option<(TrackId, Vec<TrackId>)>>,
    /// Host threads' tracks, the parents of their synchronous device tracks.
    threads: HashMap<(u16, Option<i64>), TrackId>,
    /// Flows with one end written: the layout's number and the id given.
    open_flows: HashMap<u64, FlowId>,
    outs: Vec<FlowId>,
    name_buf: Vec<u8>,
    slices: usize,
    held: Held,
    /// Counter values no slice has carried yet, by time and counter track uuid.
    waiting: std::collections::BTreeMap<(u64, u64), CounterValue>,
    carried: Vec<CounterValue>,
    /// Slices held and counter values waiting, at most.
    hold: usize,
    waiting_max: usize,
}

impl<W: Write> PerfettoOutput<W> {
    /// The output of a Perfetto trace to `out`, times from `zero`, counters through windows of
    /// `steps` steps.
    pub fn new(out: W, zero: u64, steps: usize) -> Self {
        let mut w = PerfettoWriter::new(out);
        let names = Names::new(&mut w);
        PerfettoOutput {
            w,
            zero,
            traces: Vec::new(),
            names,
            tracks: Vec::new(),
            lanes: Vec::new(),
            threads: HashMap::default(),
            open_flows: HashMap::default(),
            outs: Vec::new(),
            name_buf: Vec::new(),
            slices: 0,
            held: Held::default(),
            waiting: std::collections::BTreeMap::new(),
            carried: Vec::new(),
            hold: steps.saturating_mul(HOLD_PER_STEP),
            waiting_max: steps.saturating_mul(WAITING_PER_STEP),
        }
    }

    fn trace(&mut self, trace: u16) -> &mut TraceOut {
        let t = usize::from(trace);
        if self.traces.len() <= t {
            self.traces.resize_with(t + 1, TraceOut::default);
        }
        &mut self.traces[t]
    }

    fn process(&mut self, trace: u16) -> io::Result<TrackId> {
        if let Some(p) = self.trace(trace).track {
            return Ok(p);
        }
        let (pid, name) = match &self.trace(trace).process {
            Some(p) => (p.pid, p.name.clone()),
            None => (u32::from(trace) + 1, String::new()),
        };
        let track = self.w.process(pid as i32, &name, &[])?;
        self.trace(trace).track = Some(track);
        // Made before any slice track of the process, so that the process's slices carry
        // their values without naming the tracks (the writer's sequence defaults); bytes moved
        // first, the counter most events carry.
        for counter in [Counter::Moved, Counter::Memory] {
            self.counter(trace, counter)?;
        }
        Ok(track)
    }

    /// The track of a host thread (made when first needed, by its slices or by its
    /// synchronous device track's).
    fn thread(&mut self, trace: u16, thread: Option<i64>) -> io::Result<TrackId> {
        if let Some(&t) = self.threads.get(&(trace, thread)) {
            return Ok(t);
        }
        let process = self.process(trace)?;
        let name = TrackKind::Host { thread }.name(&Default::default(), NameStyle::Full);
        let t = match thread {
            Some(tid) => self.w.thread(process, tid, &name)?,
            None => self.w.slice_track(process, &name)?,
        };
        self.threads.insert((trace, thread), t);
        Ok(t)
    }

    /// The Perfetto track of `lane` of export track `track`, made on first use.
    fn track(&mut self, track: u32, lane: u16) -> io::Result<TrackId> {
        let t = track as usize;
        if self.lanes.len() <= t {
            self.lanes.resize_with(t + 1, || None);
        }
        let Some((key, name)) = self.tracks.get(t).cloned().flatten() else {
            return Err(io::Error::other(format!("track {track} was never named")));
        };
        if self.lanes[t].is_none() {
            let (parent, first) = match key.kind {
                TrackKind::Host { thread } => {
                    let process = self.process(key.trace)?;
                    (process, self.thread(key.trace, thread)?)
                }
                // Under the thread they ran on: its synchronous device work, the program's
                // NVTX ranges.
                TrackKind::DeviceSync { thread } | TrackKind::Nvtx { thread } => {
                    let parent = self.thread(key.trace, thread)?;
                    (parent, self.w.slice_track(parent, &name)?)
                }
                TrackKind::DeviceQueue { .. } => {
                    let process = self.process(key.trace)?;
                    (process, self.w.slice_track(process, &name)?)
                }
                TrackKind::DeviceStream { .. } => {
                    let group = match self.trace(key.trace).devices {
                        Some(g) => g,
                        None => {
                            let process = self.process(key.trace)?;
                            let g = self.w.slice_track(process, "device")?;
                            self.trace(key.trace).devices = Some(g);
                            g
                        }
                    };
                    (group, self.w.slice_track(group, &name)?)
                }
            };
            self.lanes[t] = Some((parent, vec![first]));
        }
        let Some((parent, lanes)) = &mut self.lanes[t] else {
            unreachable!("made above")
        };
        while lanes.len() <= usize::from(lane) {
            let lane_track = self
                .w
                .slice_track(*parent, &lane_name(&name, lanes.len() as u16))?;
            lanes.push(lane_track);
        }
        Ok(lanes[usize::from(lane)])
    }

    /// The id of the layout's flow `n`: given at its first end, forgotten at its second.
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

    fn counter(&mut self, trace: u16, counter: Counter) -> io::Result<TrackId> {
        // The process first: making it makes its counters.
        let process = self.process(trace)?;
        let which = usize::from(counter != Counter::Memory);
        if let Some(t) = self.trace(trace).counters[which] {
            return Ok(t);
        }
        // Bytes moved so far rather than bytes in flight: one point per transfer instead of
        // two, since the copies' slices already show when bytes are in flight.
        let t = self
            .w
            .counter_track(process, counter.name(), CounterUnit::Bytes)?;
        self.trace(trace).counters[which] = Some(t);
        Ok(t)
    }

    /// Writes the earliest held slice, with the counter values waiting at its start.
    fn write_held(&mut self) -> io::Result<()> {
        let Some((s, has_device, n)) = self.held.slices.pop_front() else {
            return Ok(());
        };
        let d = if has_device {
            self.held.devices.pop_front()
        } else {
            None
        };
        let track = self.track(s.track, s.lane)?;
        let ins = match d.and_then(|d| d.flow) {
            Some(f) => vec![self.flow(f.id)],
            None => Vec::new(),
        };
        let mut outs = std::mem::take(&mut self.outs);
        outs.clear();
        for _ in 0..n {
            let Some(f) = self.held.flows.pop_front() else {
                break;
            };
            outs.push(self.flow(f));
        }
        let start = s.start.saturating_sub(self.zero);
        let mut carried = std::mem::take(&mut self.carried);
        carried.clear();
        while let Some((&key, &value)) = self
            .waiting
            .range((start, 0)..)
            .next()
            .filter(|((ts, _), _)| *ts == start)
        {
            self.waiting.remove(&key);
            carried.push(value);
        }
        let queue = match self.tracks[s.track as usize].as_ref().map(|t| t.0.kind) {
            Some(TrackKind::DeviceQueue { queue }) => Some(queue),
            _ => None,
        };
        let at = Placed {
            s: &s,
            dev: d.as_ref(),
            track,
            queue,
            zero: self.zero,
        };
        let strings = &self.traces[usize::from(s.trace)].strings;
        let r = put_slice(
            &mut self.w,
            &mut self.names,
            at,
            strings,
            Flows {
                outs: &outs,
                ins: &ins,
                counters: &carried,
            },
            &mut self.name_buf,
        );
        self.outs = outs;
        self.carried = carried;
        r
    }

    /// Writes the earliest waiting counter value in a packet of its own.
    fn write_waiting(&mut self) -> io::Result<()> {
        match self.waiting.pop_first() {
            Some(((ts, _), c)) => self.w.counter(c.track, ts, c.value),
            None => Ok(()),
        }
    }
}

impl<W: Write> Output<W> for PerfettoOutput<W> {
    fn batch(&mut self, b: &Batch) -> io::Result<()> {
        for (trace, p) in &b.processes {
            self.trace(*trace).process = Some(p.clone());
        }
        for (track, key, name) in &b.tracks {
            let t = *track as usize;
            if self.tracks.len() <= t {
                self.tracks.resize_with(t + 1, || None);
            }
            self.tracks[t] = Some((*key, name.clone()));
        }
        for (trace, id, text) in &b.strings {
            self.trace(*trace).strings.add(*id, text.clone());
        }
        for p in &b.slices {
            let device = p.device(b);
            let flows = p.flows_out(b);
            let n = u8::try_from(flows.len())
                .map_err(|_| io::Error::other("a slice starts more than 255 flows"))?;
            self.held.slices.push_back((p.s, device.is_some(), n));
            self.held.devices.extend(device.copied());
            self.held.flows.extend(flows.iter().copied());
        }
        self.slices += b.slices.len();
        for &(trace, counter, ts, value) in &b.counters {
            if counter == Counter::InFlight {
                continue;
            }
            let track = self.counter(trace, counter)?;
            self.waiting.insert(
                (ts.saturating_sub(self.zero), track.uuid()),
                CounterValue { track, value },
            );
        }
        while self.held.slices.len() > self.hold {
            self.write_held()?;
        }
        while self.waiting.len() > self.waiting_max {
            self.write_waiting()?;
        }
        Ok(())
    }

    fn finish(mut self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)> {
        if tracks.is_some() {
            // A trace with no events still names its process.
            for trace in 0..self.traces.len() {
                self.process(trace as u16)?;
            }
        }
        while !self.held.slices.is_empty() {
            self.write_held()?;
        }
        while !self.waiting.is_empty() {
            self.write_waiting()?;
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

/// A slice with what decides how it is written: its device record (if it is one), the
/// Perfetto track of its lane, and the export's time zero.
struct Placed<'a> {
    s: &'a Slice,
    dev: Option<&'a DeviceSlice>,
    track: TrackId,
    /// The queue of the slice's track, when it is an async queue's.
    queue: Option<i64>,
    zero: u64,
}

/// What a slice's packet carries besides the slice: the flows it starts and ends, and counter
/// values at its start.
struct Flows<'a> {
    outs: &'a [FlowId],
    ins: &'a [FlowId],
    counters: &'a [CounterValue],
}

/// Writes one slice (or instant) with its name, category, location, args and flows.
fn put_slice<W: Write, T: Strings + ?Sized>(
    w: &mut PerfettoWriter<W>,
    names: &mut Names,
    at: Placed<'_>,
    strings: &T,
    carries: Flows<'_>,
    name_buf: &mut Vec<u8>,
) -> io::Result<()> {
    let Placed {
        s,
        dev,
        track,
        queue,
        zero,
    } = at;
    let (name, category, location) = names.look(w, s, dev, strings, name_buf);
    let mut args = [Arg {
        name: names.arg_bytes,
        value: ArgValue::Uint(0),
    }; 8];
    let n = names.args(s, queue, &mut args);
    let mut ev = Event::named(name)
        .category(category)
        .args(&args[..n])
        .flows_out(carries.outs)
        .flows_in(carries.ins)
        .counters(carries.counters);
    if let Some(loc) = location {
        ev = ev.location(loc);
    }
    if s.is_point() {
        w.instant(track, s.start - zero, &ev)
    } else {
        w.slice(track, s.start - zero, s.end - zero, &ev)
    }
}

/// A slice's name as the JSON export shows it, up to the facts that make it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct NameKey {
    trace: u16,
    kind: i32,
    construct: i32,
    name: u32,
    src_file: u32,
    line: i32,
    point: bool,
    /// Device records: the copy kind their names show.
    copy: u64,
    /// The bytes the names of transfers and device memory show ([`states_size`]).
    bytes: u64,
}

/// Everything that decides a slice's name, category and source location.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct LookKey {
    name: NameKey,
    device: bool,
    implicit: bool,
    src_file: u32,
    func: u32,
    line: i32,
}

/// What a slice's name (as the JSON export shows it) is made of.
fn name_key(s: &Slice, dev: Option<&DeviceSlice>) -> NameKey {
    NameKey {
        trace: s.trace,
        kind: s.kind,
        construct: s.construct,
        name: s.name,
        src_file: if dev.is_some() { NONE_U32 } else { s.src_file },
        line: if dev.is_some() { NONE_I32 } else { s.line },
        point: s.is_point(),
        copy: dev.and_then(|d| d.record.copy_kind).unwrap_or(u64::MAX),
        bytes: if states_size(s.event()) {
            s.bytes
        } else {
            u64::MAX
        },
    }
}

/// The export's tables of interned handles.
struct Names {
    /// Name, category and location together: one lookup per event.
    looks: HashMap<LookKey, (NameId, CategoryId, Option<LocationId>)>,
    names: HashMap<NameKey, NameId>,
    categories: HashMap<Vec<u8>, CategoryId>,
    locations: HashMap<(u16, u32, u32, i32), LocationId>,
    /// Per (track, lane, event kind, kernel), the geometry of its last launch.
    geometry: HashMap<(u32, u16, i32, u32), [u32; 3]>,
    arg_bytes: ArgNameId,
    arg_gangs: ArgNameId,
    arg_workers: ArgNameId,
    arg_vector: ArgNameId,
    arg_async: ArgNameId,
    arg_queue: ArgNameId,
}

impl Names {
    fn new<W: Write>(w: &mut PerfettoWriter<W>) -> Self {
        Names {
            looks: HashMap::default(),
            names: HashMap::default(),
            categories: HashMap::default(),
            locations: HashMap::default(),
            geometry: HashMap::default(),
            arg_bytes: w.arg_name("bytes"),
            arg_gangs: w.arg_name("num_gangs"),
            arg_workers: w.arg_name("num_workers"),
            arg_vector: w.arg_name("vector_length"),
            arg_async: w.arg_name("async"),
            arg_queue: w.arg_name("async_queue"),
        }
    }

    /// The slice's name, category and source location.
    fn look<W: Write, T: Strings + ?Sized>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        dev: Option<&DeviceSlice>,
        strings: &T,
        buf: &mut Vec<u8>,
    ) -> (NameId, CategoryId, Option<LocationId>) {
        let key = LookKey {
            name: name_key(s, dev),
            device: dev.is_some(),
            implicit: s.implicit,
            src_file: s.src_file,
            func: s.func,
            line: s.line,
        };
        if let Some(&found) = self.looks.get(&key) {
            return found;
        }
        let found = (
            self.name(w, s, dev, strings, buf),
            self.category(w, s, dev.is_some()),
            self.location(w, s, strings),
        );
        self.looks.insert(key, found);
        found
    }

    fn name<W: Write, T: Strings + ?Sized>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        dev: Option<&DeviceSlice>,
        strings: &T,
        buf: &mut Vec<u8>,
    ) -> NameId {
        let key = name_key(s, dev);
        if let Some(&id) = self.names.get(&key) {
            return id;
        }
        buf.clear();
        match dev {
            Some(d) => chrome::put_device_name(buf, s, d, strings),
            None => chrome::put_name(buf, s, strings),
        }
        let id = w.name(&unescape(buf));
        self.names.insert(key, id);
        id
    }

    /// The slice's categories, one interned string per combination (trace_processor joins
    /// several categories of an event with commas, so one string is the same to it).
    fn category<W: Write>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        device: bool,
    ) -> CategoryId {
        let mut label = Vec::new();
        chrome::put_category(&mut label, s, device);
        if let Some(&id) = self.categories.get(&label) {
            return id;
        }
        let id = w.category(&String::from_utf8_lossy(&label));
        self.categories.insert(label, id);
        id
    }

    fn location<W: Write, T: Strings + ?Sized>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        strings: &T,
    ) -> Option<LocationId> {
        let file = strings.resolve(s.src_file_id())?;
        let key = (s.trace, s.src_file, s.func, s.line);
        if let Some(&id) = self.locations.get(&key) {
            return Some(id);
        }
        let func = strings.resolve(s.func_id()).unwrap_or("");
        let line = if s.line == NONE_I32 {
            0
        } else {
            s.line.max(0) as u32
        };
        let id = w.location(file, func, line);
        self.locations.insert(key, id);
        Some(id)
    }

    /// Whether `s` launches its kernel with another geometry than the previous launch of that
    /// kernel on its track and lane (or is the first): a kernel is mostly launched the same
    /// way every time, and its geometry args are written only when they change.
    fn new_geometry(&mut self, s: &Slice, geometry: [u32; 3]) -> bool {
        let key = (s.track, s.lane, s.kind, s.name);
        self.geometry.insert(key, geometry) != Some(geometry)
    }

    /// The JSON export's args that Perfetto shows beside a slice and neither its name nor its
    /// category nor its track says: bytes, launch geometry (when it changed, see
    /// [`Self::new_geometry`]), async and async queue (see [`async_args`]). `queue` is the
    /// queue of the slice's track when it is an async queue's.
    fn args<'a>(&mut self, s: &Slice, queue: Option<i64>, out: &mut [Arg<'a>; 8]) -> usize {
        let mut n = 0;
        let mut push = |a: Arg<'a>| {
            out[n] = a;
            n += 1;
        };
        // A transfer's (or an allocation's) name states its size ([`states_size`]);
        // exactly, unless it is rounded to a tenth of its unit, and then the argument still
        // gives it.
        let named = |b: u64| states_size(s.event()) && names_exactly(b);
        if let Some(b) = s.bytes().filter(|&b| !named(b)) {
            push(Arg {
                name: self.arg_bytes,
                value: ArgValue::Uint(b),
            });
        }
        // The variable or kernel is in the slice's name already (an interned string, so
        // trace_processor can group by it): no argument repeats it.
        let geometry = [s.num_gangs, s.num_workers, s.vector_length];
        if geometry != [NONE_U32; 3] && self.new_geometry(s, geometry) {
            for (name, v) in [
                (self.arg_gangs, s.num_gangs),
                (self.arg_workers, s.num_workers),
                (self.arg_vector, s.vector_length),
            ] {
                if v != NONE_U32 {
                    push(Arg {
                        name,
                        value: ArgValue::Uint(u64::from(v)),
                    });
                }
            }
        }
        let (async_, async_queue) = async_args(s, queue);
        if let Some(a) = async_ {
            push(Arg {
                name: self.arg_async,
                value: ArgValue::Int(a),
            });
        }
        if let Some(q) = async_queue {
            push(Arg {
                name: self.arg_queue,
                value: ArgValue::Int(q),
            });
        }
        // The construct an operation belongs to and `implicit` are in its category.
        n
    }
}

/// Whether [`accprof_timeline::format::bytes_compact`] writes `b` without rounding: under a
/// KiB, or a whole number of its unit.
fn names_exactly(b: u64) -> bool {
    [1u64 << 30, 1 << 20, 1 << 10]
        .into_iter()
        .find(|&unit| b >= unit)
        .is_none_or(|unit| b.is_multiple_of(unit))
}

/// The `async` and `async_queue` args Perfetto writes. Synchronous work (acc_async_sync, most
/// events) is what its track already says, and an async queue's track is named by its number:
/// only an asynchronous event carries them, and not a value its queue track names (on the track
/// of queue `q`, `async_queue` when the runtime gave one is `q`, else `async` is).
pub(super) fn async_args(s: &Slice, queue: Option<i64>) -> (Option<i64>, Option<i64>) {
    if s.async_ == NONE_I32 || i64::from(s.async_) == accprof_abi::ACC_ASYNC_SYNC {
        return (None, None);
    }
    let own = |v: i32| (v != NONE_I32 && Some(i64::from(v)) != queue).then_some(i64::from(v));
    (own(s.async_), own(s.async_queue))
}

/// The text of a name formatted for JSON (escaped, without quotes).
fn unescape(json_body: &[u8]) -> String {
    if !json_body.contains(&b'\\') {
        return String::from_utf8_lossy(json_body).into_owned();
    }
    let mut quoted = Vec::with_capacity(json_body.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(json_body);
    quoted.push(b'"');
    serde_json::from_slice(&quoted)
        .unwrap_or_else(|_| String::from_utf8_lossy(json_body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_names_come_back_as_text() {
        assert_eq!(unescape(br#"a \"b\" c\\d"#), r#"a "b" c\d"#);
        assert_eq!(unescape(b"plain"), "plain");
    }

    #[test]
    fn a_size_is_named_exactly_under_a_kib_or_in_whole_units() {
        use accprof_timeline::format::bytes_compact;
        for b in [0, 1000, 1024, 8 << 20, 3 << 30] {
            assert!(names_exactly(b), "{b}: {}", bytes_compact(b));
        }
        for b in [1025, (8 << 20) + 1, 1536] {
            assert!(!names_exactly(b), "{b}: {}", bytes_compact(b));
        }
    }

    /// Values that come after their slices were written get packets of their own, the others
    /// ride on their slices; Perfetto's protos read every value back at its time either way.
    #[test]
    fn counter_values_too_late_for_their_slice_are_written_on_their_own() {
        use accprof_abi::acc_event_t;
        use accprof_timeline::{TrackKey, TrackKind};
        use accprof_trace::{Event as TraceEvent, Field};
        let decoder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../accprof-perfetto/tests/decode_trace.py");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("late.pftrace");
        // A counter window of 1 step: 8 slices held, 64 values waiting.
        let mut out = PerfettoOutput::new(std::fs::File::create(&path).unwrap(), 0, 1);
        let mut b = Batch::default();
        b.processes.push((
            0,
            Process {
                pid: 7,
                name: "p".into(),
            },
        ));
        let key = TrackKey {
            trace: 0,
            kind: TrackKind::Host { thread: Some(1) },
        };
        b.tracks.push((0, key, "host thread 1".into()));
        let uploads = 20u64;
        for i in 0..uploads {
            let mut ev = TraceEvent::new(acc_event_t::ENQUEUE_UPLOAD_START, 100 * (i + 1));
            ev.end_ns = 100 * (i + 1) + 50;
            ev.set(Field::Bytes, 10);
            b.slices.push(super::super::batch::Placed {
                s: Slice::from_event(&ev, 0, 0, |t| t),
                device: NONE_U32,
                flows: (0, 0),
            });
        }
        out.batch(&b).unwrap();
        b.clear();
        // Bytes moved so far at each upload, after 12 of the slices were written.
        for i in 0..uploads {
            let value = 10 * (i as i64 + 1);
            b.counters.push((0, Counter::Moved, 100 * (i + 1), value));
        }
        out.batch(&b).unwrap();
        out.finish(None).unwrap();

        let Ok(run) = std::process::Command::new("python3")
            .arg(&decoder)
            .arg(&path)
            .output()
        else {
            return;
        };
        if run.status.code() == Some(3) && std::env::var("CI").as_deref() != Ok("true") {
            // No perfetto package here (CI installs it).
            return;
        }
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let decoded: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        let values: Vec<(u64, i64)> = decoded["counters"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().unwrap().clone())
            .map(|v| (v[0].as_u64().unwrap(), v[1].as_i64().unwrap()))
            .collect();
        let expected: Vec<(u64, i64)> = (0..uploads)
            .map(|i| (100 * (i + 1), 10 * (i as i64 + 1)))
            .collect();
        assert_eq!(values, expected);
        assert_eq!(
            decoded["carried_counter_values"], 8,
            "the slices still held"
        );
    }
}
