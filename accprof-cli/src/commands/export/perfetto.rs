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

use super::batch::{Batch, Output, Process, Summary};
use super::chrome;
use super::counters::Counter;
use super::strings::{Shipped, Strings};
use accprof_perfetto::{
    Arg, ArgNameId, ArgValue, CategoryId, CounterUnit, Event, FlowId, LocationId, NameId,
    PerfettoWriter, StringId, TrackId,
};
use accprof_timeline::compact::{NONE_I32, NONE_U32};
use accprof_timeline::track::lane_name;
use accprof_timeline::{CompactEvent as Slice, DeviceSlice, NameStyle, TrackKind, TrackTable};
use accprof_trace::device;
use std::io::{self, Write};

/// The export's tables are looked up on small integer keys once or more per event, where
/// SipHash's DoS resistance buys nothing and costs a third of the time.
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Per trace: its process, strings, process track, device group and counter tracks.
#[derive(Default)]
struct TraceOut {
    process: Option<Process>,
    strings: Shipped,
    track: Option<TrackId>,
    devices: Option<TrackId>,
    /// Device memory in use, bytes moved; and the bytes moved so far, as last written.
    counters: [Option<TrackId>; 2],
    moved: i64,
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
}

impl<W: Write> PerfettoOutput<W> {
    pub fn new(out: W, zero: u64) -> Self {
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
        let which = usize::from(counter != Counter::Memory);
        if let Some(t) = self.trace(trace).counters[which] {
            return Ok(t);
        }
        let process = self.process(trace)?;
        let t = match counter {
            // Written as what each transfer moved: two points per transfer fewer than bytes in
            // flight, to show what the slices of the copies already show.
            Counter::Moved => {
                self.w
                    .delta_counter_track(process, counter.name(), CounterUnit::Bytes)?
            }
            _ => self
                .w
                .counter_track(process, counter.name(), CounterUnit::Bytes)?,
        };
        self.trace(trace).counters[which] = Some(t);
        Ok(t)
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
            let s = &p.s;
            let track = self.track(s.track, s.lane)?;
            let d = p.device(b);
            let ins = match d.and_then(|d| d.flow) {
                Some(f) => vec![self.flow(f.id)],
                None => Vec::new(),
            };
            let mut outs = std::mem::take(&mut self.outs);
            outs.clear();
            for &n in p.flows_out(b) {
                outs.push(self.flow(n));
            }
            let at = Placed {
                s,
                dev: d,
                track,
                zero: self.zero,
            };
            let strings = &self.traces[usize::from(s.trace)].strings;
            let r = put_slice(
                &mut self.w,
                &mut self.names,
                at,
                strings,
                &outs,
                &ins,
                &mut self.name_buf,
            );
            self.outs = outs;
            r?;
        }
        self.slices += b.slices.len();
        for &(trace, counter, ts, value) in &b.counters {
            let value = match counter {
                Counter::Memory => value,
                Counter::Moved => {
                    let moved = &mut self.trace(trace).moved;
                    let step = value - *moved;
                    *moved = value;
                    step
                }
                Counter::InFlight => continue,
            };
            let track = self.counter(trace, counter)?;
            self.w.counter(track, ts.saturating_sub(self.zero), value)?;
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
    zero: u64,
}

/// Writes one slice (or instant) with its name, category, location, args and flows.
fn put_slice<W: Write, T: Strings + ?Sized>(
    w: &mut PerfettoWriter<W>,
    names: &mut Names,
    at: Placed<'_>,
    strings: &T,
    outs: &[FlowId],
    ins: &[FlowId],
    name_buf: &mut Vec<u8>,
) -> io::Result<()> {
    let Placed {
        s,
        dev,
        track,
        zero,
    } = at;
    let (name, category, location) = names.look(w, s, dev, strings, name_buf);
    let mut args = [Arg {
        name: names.arg_bytes,
        value: ArgValue::Uint(0),
    }; 8];
    let n = names.args(w, s, dev.is_some(), &mut args);
    let mut ev = Event::named(name)
        .category(category)
        .args(&args[..n])
        .flows_out(outs)
        .flows_in(ins);
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
    /// Device records: the copy kind and bytes their names show.
    copy: u64,
    bytes: u64,
}

/// Everything that decides a slice's name, category and source location.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct LookKey {
    name: NameKey,
    device: bool,
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
        bytes: if dev.is_some() && s.event() == device::MEMCPY {
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
    categories: HashMap<&'static str, CategoryId>,
    locations: HashMap<(u16, u32, u32, i32), LocationId>,
    constructs: HashMap<i32, StringId>,
    /// Per (track, lane, event kind, kernel), the geometry of its last launch.
    geometry: HashMap<(u32, u16, i32, u32), [u32; 3]>,
    arg_bytes: ArgNameId,
    arg_gangs: ArgNameId,
    arg_workers: ArgNameId,
    arg_vector: ArgNameId,
    arg_async: ArgNameId,
    arg_queue: ArgNameId,
    arg_construct: ArgNameId,
    arg_implicit: ArgNameId,
}

impl Names {
    fn new<W: Write>(w: &mut PerfettoWriter<W>) -> Self {
        Names {
            looks: HashMap::default(),
            names: HashMap::default(),
            categories: HashMap::default(),
            locations: HashMap::default(),
            constructs: HashMap::default(),
            geometry: HashMap::default(),
            arg_bytes: w.arg_name("bytes"),
            arg_gangs: w.arg_name("num_gangs"),
            arg_workers: w.arg_name("num_workers"),
            arg_vector: w.arg_name("vector_length"),
            arg_async: w.arg_name("async"),
            arg_queue: w.arg_name("async_queue"),
            arg_construct: w.arg_name("construct"),
            arg_implicit: w.arg_name("implicit"),
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

    fn category<W: Write>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        device: bool,
    ) -> CategoryId {
        let label = if device {
            chrome::device_category(s.event())
        } else {
            chrome::category(s.event())
        };
        *self
            .categories
            .entry(label)
            .or_insert_with(|| w.category(label))
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

    /// The JSON export's args that Perfetto shows beside a slice and its name does not: bytes,
    /// launch geometry (when it changed, see [`Self::new_geometry`]), async queue, enclosing
    /// construct, implicit.
    fn args<'a, W: Write>(
        &mut self,
        w: &mut PerfettoWriter<W>,
        s: &Slice,
        device: bool,
        out: &mut [Arg<'a>; 8],
    ) -> usize {
        let mut n = 0;
        let mut push = |a: Arg<'a>| {
            out[n] = a;
            n += 1;
        };
        if let Some(b) = s.bytes() {
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
        // Synchronous work (acc_async_sync, most events) is what its track already says: only
        // asynchronous events carry their async argument and queue, a fifth of the file less.
        if s.async_ != NONE_I32 && i64::from(s.async_) != accprof_abi::ACC_ASYNC_SYNC {
            push(Arg {
                name: self.arg_async,
                value: ArgValue::Int(i64::from(s.async_)),
            });
            if s.async_queue != NONE_I32 {
                push(Arg {
                    name: self.arg_queue,
                    value: ArgValue::Int(i64::from(s.async_queue)),
                });
            }
        }
        // A construct's own slice is named after it; the operations inside (transfers,
        // launches, allocations) say which construct they belong to.
        let inside = accprof_timeline::is_enqueue(s.event()) || s.is_point() || device;
        if let Some(c) = s.construct().filter(|_| inside) {
            let sid = *self
                .constructs
                .entry(c.0)
                .or_insert_with(|| w.string(chrome::construct_word(c)));
            push(Arg {
                name: self.arg_construct,
                value: ArgValue::Interned(sid),
            });
        }
        if s.implicit {
            push(Arg {
                name: self.arg_implicit,
                value: ArgValue::Bool(true),
            });
        }
        n
    }
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
}
