//! The export in Perfetto's native format (TracePacket/TrackEvent protobuf, through
//! [`accprof_perfetto::PerfettoWriter`]): the same tracks, lanes, slices, names, flows and
//! counters as the Chrome JSON export, from the same laid-out slices.
//!
//! Names, categories, source locations and string arguments are interned by the writer; this
//! module keeps one handle per distinct value in its own tables (keyed by the trace's string ids,
//! not by the formatted text, so that an event that repeats a known name costs a hash lookup).
//! Memory beyond the collected slices is those tables, never a copy of the events.

use super::chrome;
use super::counters::{Series, Step};
use super::device::DeviceInfo;
use super::slice::{Slice, NONE_I32, NONE_U32};
use super::strings::Strings;
use super::tracks::{ThreadIds, TrackKind};
use super::Collected;
use accprof_perfetto::{
    Arg, ArgNameId, ArgValue, CategoryId, CounterUnit, Event, FlowId, LocationId, NameId,
    PerfettoWriter, StringId, TrackId,
};
use accprof_trace::device;
use std::io::{self, Write};

/// The export's tables are looked up on small integer keys once or more per event, where
/// SipHash's DoS resistance buys nothing and costs a third of the time.
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// What was written, for the closing message and the progress bar.
pub(super) struct Written {
    pub events: usize,
    pub tracks: usize,
}

/// Writes `c` (already laned, with `flows` linked) as a Perfetto trace; `progress` is told the
/// number of slices written so far.
pub(super) fn write<W: Write>(
    c: &Collected,
    tids: &ThreadIds,
    counters: &[(&str, &Series)],
    zero: u64,
    out: W,
    progress: &mut dyn FnMut(usize),
) -> io::Result<Written> {
    let mut w = PerfettoWriter::new(out);
    let tracks = make_tracks(&mut w, c, tids)?;
    let mut names = Names::new(&mut w);

    // One flow per device record whose issuing host slice is known; host slices in index order
    // with the flows they start.
    let mut flow_in: Vec<Option<FlowId>> = vec![None; c.device.len()];
    let mut flow_out: Vec<(u32, FlowId)> = Vec::new();
    for (k, d) in c.device.iter().enumerate() {
        if let Some(h) = d.issued_by {
            let f = w.new_flow();
            flow_in[k] = Some(f);
            flow_out.push((h, f));
        }
    }
    flow_out.sort_unstable_by_key(|&(h, f)| (h, f.get()));
    let mut next_out = 0;
    let mut outs: Vec<FlowId> = Vec::new();
    let mut name_buf = Vec::new();
    for (i, s) in c.slices.iter().enumerate() {
        if i % (1 << 16) == 0 {
            progress(i);
        }
        let p = &c.processes[s.trace as usize];
        let dev = s.device_index().map(|k| &c.device[k]);
        outs.clear();
        while next_out < flow_out.len() && (flow_out[next_out].0 as usize) < i {
            next_out += 1;
        }
        while next_out < flow_out.len() && flow_out[next_out].0 as usize == i {
            outs.push(flow_out[next_out].1);
            next_out += 1;
        }
        let ins: &[FlowId] = match s.device_index().and_then(|k| flow_in[k].as_ref()) {
            Some(f) => std::slice::from_ref(f),
            None => &[],
        };
        let track = tracks.slices[s.track as usize][usize::from(s.lane)];
        put_slice(
            &mut w,
            &mut names,
            Placed {
                s,
                dev,
                track,
                zero,
            },
            &p.strings,
            &outs,
            ins,
            &mut name_buf,
        )?;
    }
    progress(c.slices.len());
    for (name, series) in counters {
        // Per trace, its track and the value written last.
        let mut by_trace: HashMap<u16, (TrackId, i64)> = HashMap::default();
        let deltas = *name == BYTES_MOVED;
        for &(ts, trace, value) in series.iter() {
            let (track, last) = match by_trace.get_mut(&trace) {
                Some(t) => t,
                None => {
                    let t = counter_track(&mut w, tracks.processes[trace as usize], name)?;
                    by_trace.entry(trace).or_insert((t, 0))
                }
            };
            let v = if deltas { value - *last } else { value };
            *last = value;
            w.counter(*track, ts.saturating_sub(zero), v)?;
        }
    }
    let (mut out, _) = w.finish()?;
    out.flush()?;
    Ok(Written {
        events: c.slices.len(),
        tracks: tracks.count,
    })
}

/// A slice with what decides how it is written: its device record (if it is one), the
/// Perfetto track of its lane, and the export's time zero.
pub(super) struct Placed<'a> {
    pub s: &'a Slice,
    pub dev: Option<&'a DeviceInfo>,
    pub track: TrackId,
    pub zero: u64,
}

/// Writes one slice (or instant) with its name, category, location, args and flows.
pub(super) fn put_slice<W: Write, T: Strings + ?Sized>(
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
    let n = names.args(w, s, &mut args);
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

/// The name of the counter of bytes moved so far, written as the bytes each transfer moved
/// ([`PerfettoWriter::delta_counter_track`]).
pub(super) const BYTES_MOVED: &str = "bytes moved";

/// The counter track `name` of `process`: bytes moved is written as steps, any other as values.
pub(super) fn counter_track<W: Write>(
    w: &mut PerfettoWriter<W>,
    process: TrackId,
    name: &str,
) -> io::Result<TrackId> {
    if name == BYTES_MOVED {
        w.delta_counter_track(process, name, CounterUnit::Bytes)
    } else {
        w.counter_track(process, name, CounterUnit::Bytes)
    }
}

/// "bytes moved": per trace, the bytes transferred so far, at each transfer's start (the
/// positive steps of bytes in flight), in time order.
pub(super) fn bytes_moved(in_flight: &[Step]) -> Series {
    let mut steps: Vec<Step> = in_flight.iter().copied().filter(|s| s.delta > 0).collect();
    steps.sort_unstable_by_key(|s| (s.trace, s.ts));
    let mut out: Series = Vec::new();
    let mut total = 0i64;
    let mut trace = u16::MAX;
    for s in steps {
        if s.trace != trace {
            trace = s.trace;
            total = 0;
        }
        total = total.saturating_add(s.delta);
        match out.last_mut() {
            Some(last) if last.0 == s.ts && last.1 == s.trace => last.2 = total,
            _ => out.push((s.ts, s.trace, total)),
        }
    }
    out.sort_by_key(|&(ts, trace, _)| (ts, trace));
    out
}

struct Tracks {
    processes: Vec<TrackId>,
    /// Per export track, the Perfetto track of each lane.
    slices: Vec<Vec<TrackId>>,
    count: usize,
}

/// A process per trace; under it a thread track per host thread (its synchronous device work
/// beneath it), a track per async queue, and a "device" group holding a track per stream. Lanes
/// after the first become tracks of their own beside the first, named as the JSON export names
/// them.
fn make_tracks<W: Write>(
    w: &mut PerfettoWriter<W>,
    c: &Collected,
    tids: &ThreadIds,
) -> io::Result<Tracks> {
    let mut processes = Vec::with_capacity(c.processes.len());
    for p in &c.processes {
        processes.push(w.process(p.pid as i32, &p.name, &[])?);
    }
    let mut slices: Vec<Vec<TrackId>> = vec![Vec::new(); c.tracks.len()];
    let mut threads: HashMap<(u16, Option<i64>), TrackId> = HashMap::default();
    let mut devices: HashMap<u16, TrackId> = HashMap::default();
    let mut count = 0;
    // Host threads first: their synchronous device tracks go under them.
    let (host, other): (Vec<u32>, Vec<u32>) = tids
        .order
        .iter()
        .partition(|&&t| matches!(c.tracks.key(t).kind, TrackKind::Host { .. }));
    for t in host.into_iter().chain(other) {
        let key = c.tracks.key(t);
        let process = processes[key.trace as usize];
        let label = c.tracks.label(t);
        let (parent, first) = match key.kind {
            TrackKind::Host { thread: Some(tid) } => {
                let track = w.thread(process, tid, &label)?;
                threads.insert((key.trace, Some(tid)), track);
                (process, track)
            }
            TrackKind::Host { thread: None } => {
                let track = w.slice_track(process, &label)?;
                threads.insert((key.trace, None), track);
                (process, track)
            }
            // Under the thread they ran on: its synchronous device work, the program's NVTX
            // ranges.
            TrackKind::DeviceSync { thread } | TrackKind::Nvtx { thread } => {
                let parent = threads
                    .get(&(key.trace, thread))
                    .copied()
                    .unwrap_or(process);
                (parent, w.slice_track(parent, &label)?)
            }
            TrackKind::DeviceQueue { .. } => (process, w.slice_track(process, &label)?),
            TrackKind::DeviceStream { .. } => {
                let group = match devices.get(&key.trace) {
                    Some(&g) => g,
                    None => {
                        let g = w.slice_track(process, "device")?;
                        devices.insert(key.trace, g);
                        g
                    }
                };
                (group, w.slice_track(group, &label)?)
            }
        };
        let lanes = &mut slices[t as usize];
        lanes.push(first);
        for lane in 1..tids.lanes(t) {
            lanes
                .push(w.slice_track(parent, &format!("{label} (overlapping, lane {})", lane + 1))?);
        }
        count += lanes.len();
    }
    Ok(Tracks {
        processes,
        slices,
        count,
    })
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
fn name_key(s: &Slice, dev: Option<&DeviceInfo>) -> NameKey {
    NameKey {
        trace: s.trace,
        kind: s.kind,
        construct: s.construct,
        name: s.name,
        src_file: if dev.is_some() { NONE_U32 } else { s.src_file },
        line: if dev.is_some() { NONE_I32 } else { s.line },
        point: s.is_point(),
        copy: dev.and_then(|d| d.copy_kind).unwrap_or(u64::MAX),
        bytes: if dev.is_some() && s.event() == device::MEMCPY {
            s.bytes
        } else {
            u64::MAX
        },
    }
}

/// The export's tables of interned handles.
pub(super) struct Names {
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
    pub(super) fn new<W: Write>(w: &mut PerfettoWriter<W>) -> Self {
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
        dev: Option<&DeviceInfo>,
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
        dev: Option<&DeviceInfo>,
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
        let inside =
            accprof_timeline::is_enqueue(s.event()) || s.is_point() || s.device_index().is_some();
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
    fn bytes_moved_adds_up_each_traces_transfers() {
        let steps = [
            Step {
                ts: 10,
                trace: 0,
                delta: 100,
            },
            Step {
                ts: 20,
                trace: 0,
                delta: -100,
            },
            Step {
                ts: 15,
                trace: 1,
                delta: 7,
            },
            Step {
                ts: 30,
                trace: 0,
                delta: 50,
            },
            Step {
                ts: 30,
                trace: 0,
                delta: 5,
            },
        ];
        assert_eq!(
            bytes_moved(&steps),
            [(10, 0, 100), (15, 1, 7), (30, 0, 155)]
        );
    }

    #[test]
    fn escaped_names_come_back_as_text() {
        assert_eq!(unescape(br#"a \"b\" c\\d"#), r#"a "b" c\d"#);
        assert_eq!(unescape(b"plain"), "plain");
    }
}
