//! Writing the Chrome Trace Event JSON: metadata, slices, instants, flows and counters, and the
//! words a slice is named with (which the Perfetto export shares).
//!
//! Layout: `{"displayTimeUnit":"ns","traceEvents":[ ... ]}` with one event per line, so that the
//! file stays readable with `grep` and diffs well. Times are microseconds (the format's unit)
//! with three decimals, relative to the first event of the export.

use super::batch::{Batch, Output, Process, Summary};
use super::counters::Counter;
use super::json::{put_micros, put_str_body, Object};
use super::strings::{Shipped, Strings};
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::compact::{NONE_I32, NONE_U32};
use accprof_timeline::device::{copy_direction_name, memory_kind_name, record_name};
use accprof_timeline::format::{bytes_compact, gbps};
use accprof_timeline::title::construct_word;
use accprof_timeline::track::lane_name;
use accprof_timeline::{CompactEvent as Slice, DeviceSlice, Flow, NameStyle, Title, TrackTable};
use accprof_trace::{device, EventFlags};
use std::fmt::{self, Write as _};
use std::io::{self, Write};

/// Flushes the buffer to the output once it holds this much.
const FLUSH_AT: usize = 1 << 20;

pub struct ChromeWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    first: bool,
    /// Subtracted from every time, so the export starts at 0.
    zero: u64,
}

impl<W: Write> ChromeWriter<W> {
    pub fn new(out: W, zero: u64) -> io::Result<Self> {
        let mut w = ChromeWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            first: true,
            zero,
        };
        w.buf
            .extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
        Ok(w)
    }

    /// Starts the next event of the array.
    fn next(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        self.buf
            .extend_from_slice(if self.first { b"\n" } else { b",\n" });
        self.first = false;
        Ok(())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.buf.extend_from_slice(b"\n]}\n");
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// The name of a process (`pid`) and its place among the processes (`index`).
    pub fn process(&mut self, pid: u32, index: usize, name: &str) -> io::Result<()> {
        self.meta(pid, None, "process_name", |o| o.str("name", name))?;
        self.meta(pid, None, "process_sort_index", |o| {
            o.u64("sort_index", index as u64)
        })
    }

    /// The name of thread `tid` of process `pid` and its place in the display order.
    pub fn thread(&mut self, pid: u32, tid: u32, name: &str, sort_index: u64) -> io::Result<()> {
        self.meta(pid, Some(tid), "thread_name", |o| o.str("name", name))?;
        self.meta(pid, Some(tid), "thread_sort_index", |o| {
            o.u64("sort_index", sort_index)
        })
    }

    fn meta(
        &mut self,
        pid: u32,
        tid: Option<u32>,
        name: &str,
        args: impl FnOnce(&mut Object),
    ) -> io::Result<()> {
        self.next()?;
        let mut o = Object::open(&mut self.buf);
        o.str("ph", "M");
        o.u64("pid", u64::from(pid));
        if let Some(tid) = tid {
            o.u64("tid", u64::from(tid));
        }
        o.str("name", name);
        let mut a = Object::open(o.key("args"));
        args(&mut a);
        a.close();
        o.close();
        Ok(())
    }

    /// A complete slice (`X`), or an instant (`i`, thread-scoped) for a point event. A device
    /// record comes with what it says and the slice that issued it, if known.
    pub fn slice<T: Strings + ?Sized>(
        &mut self,
        s: &Slice,
        pid: u32,
        strings: &T,
        tid: u32,
        dev: Option<&DeviceSlice>,
    ) -> io::Result<()> {
        self.next()?;
        put_slice(&mut self.buf, self.zero, s, pid, strings, tid, dev);
        Ok(())
    }

    /// A flow arrow (`s` at the issuing host slice, `f` bound to the enclosing device slice),
    /// the pair sharing an id, name and category as the format asks; `tids` are the thread ids
    /// of its two ends.
    pub fn flow(&mut self, f: &Flow, pid: u32, tids: (u32, u32)) -> io::Result<()> {
        for (ph, tid, ts) in [("s", tids.0, f.from.2), ("f", tids.1, f.to.2)] {
            self.next()?;
            let zero = self.zero;
            let mut o = Object::open(&mut self.buf);
            o.str("ph", ph);
            if ph == "f" {
                o.str("bp", "e");
            }
            o.u64("id", f.id);
            o.u64("pid", u64::from(pid));
            o.u64("tid", u64::from(tid));
            put_micros(o.key("ts"), ts.saturating_sub(zero));
            o.str("name", "issued");
            o.str("cat", "device");
            o.close();
        }
        Ok(())
    }

    /// One value of counter `name` of process `pid`, from `ts` on.
    pub fn counter_point(&mut self, name: &str, pid: u32, ts: u64, value: i64) -> io::Result<()> {
        self.next()?;
        let zero = self.zero;
        let mut o = Object::open(&mut self.buf);
        o.str("ph", "C");
        o.u64("pid", u64::from(pid));
        put_micros(o.key("ts"), ts.saturating_sub(zero));
        o.str("name", name);
        let mut a = Object::open(o.key("args"));
        a.i64("bytes", value);
        a.close();
        o.close();
        Ok(())
    }
}

/// The JSON export's writing side: slices and counter values as they come, thread names at
/// the end (they need every track's lanes; JSON allows metadata anywhere).
pub struct JsonOutput<W: Write> {
    w: ChromeWriter<W>,
    /// Per trace, its process (once begun) and the strings shipped so far.
    processes: Vec<Option<Process>>,
    strings: Vec<Shipped>,
    /// Per track, the tid of each lane, given on first use: dense from 1.
    tids: Vec<Vec<u32>>,
    next_tid: u32,
    slices: usize,
}

impl<W: Write> JsonOutput<W> {
    pub fn new(out: W, zero: u64) -> io::Result<Self> {
        Ok(JsonOutput {
            w: ChromeWriter::new(out, zero)?,
            processes: Vec::new(),
            strings: Vec::new(),
            tids: Vec::new(),
            next_tid: 1,
            slices: 0,
        })
    }

    /// The tid of (track, lane), given in order of first use.
    fn tid(&mut self, track: u32, lane: u16) -> u32 {
        let (t, l) = (track as usize, usize::from(lane));
        if self.tids.len() <= t {
            self.tids.resize_with(t + 1, Vec::new);
        }
        let lanes = &mut self.tids[t];
        // Lanes open one after another, so this is lane `len` (a skipped one gets an id too).
        while lanes.len() <= l {
            lanes.push(self.next_tid);
            self.next_tid += 1;
        }
        lanes[l]
    }

    fn pid(&self, trace: u16) -> u32 {
        self.processes
            .get(usize::from(trace))
            .and_then(Option::as_ref)
            .map_or(u32::from(trace) + 1, |p| p.pid)
    }
}

impl<W: Write> Output<W> for JsonOutput<W> {
    fn batch(&mut self, b: &Batch) -> io::Result<()> {
        for (trace, p) in &b.processes {
            let t = usize::from(*trace);
            if self.processes.len() <= t {
                self.processes.resize_with(t + 1, || None);
                self.strings.resize_with(t + 1, Shipped::default);
            }
            self.processes[t] = Some(p.clone());
        }
        for (trace, id, text) in &b.strings {
            self.strings[usize::from(*trace)].add(*id, text.clone());
        }
        for p in &b.slices {
            let s = &p.s;
            let tid = self.tid(s.track, s.lane);
            let pid = self.pid(s.trace);
            let dev = p.device(b);
            self.w
                .slice(s, pid, &self.strings[usize::from(s.trace)], tid, dev)?;
            if let Some(f) = dev.and_then(|d| d.flow.as_ref()) {
                let tids = (self.tid(f.from.0, f.from.1), self.tid(f.to.0, f.to.1));
                self.w.flow(f, pid, tids)?;
            }
        }
        self.slices += b.slices.len();
        for &(trace, counter, ts, value) in &b.counters {
            if counter == Counter::Moved {
                continue;
            }
            let pid = self.pid(trace);
            self.w.counter_point(counter.name(), pid, ts, value)?;
        }
        Ok(())
    }

    fn finish(mut self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)> {
        let n = tracks.map_or(0, TrackTable::len);
        if let Some(tracks) = tracks {
            for (i, p) in self.processes.iter().enumerate() {
                if let Some(p) = p {
                    self.w.process(p.pid, i, &p.name)?;
                }
            }
            // Thread ids are handles given in order of first use; the sort index puts the
            // tracks in display order, each lane after the one before.
            let mut sort_index = 1u64;
            for t in tracks.display_order() {
                let key = tracks.key(t);
                let pid = self.pid(key.trace);
                let name = tracks.name(t, NameStyle::Full);
                for lane in 0..tracks.lanes(t) {
                    let tid = self.tid(t, lane);
                    self.w
                        .thread(pid, tid, &lane_name(&name, lane), sort_index)?;
                    sort_index += 1;
                }
            }
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

/// One slice event (see [`ChromeWriter::slice`]) into `buf`, times relative to `zero`.
pub fn put_slice<T: Strings + ?Sized>(
    buf: &mut Vec<u8>,
    zero: u64,
    s: &Slice,
    pid: u32,
    strings: &T,
    tid: u32,
    dev: Option<&DeviceSlice>,
) {
    let mut o = Object::open(buf);
    if s.is_point() {
        o.str("ph", "i");
        o.str("s", "t");
    } else {
        o.str("ph", "X");
    }
    o.u64("pid", u64::from(pid));
    o.u64("tid", u64::from(tid));
    put_micros(o.key("ts"), s.start - zero);
    if !s.is_point() {
        put_micros(o.key("dur"), s.duration());
    }
    let name = o.key("name");
    name.push(b'"');
    match dev {
        Some(d) => put_device_name(name, s, d, strings),
        None => put_name(name, s, strings),
    }
    name.push(b'"');
    let cat = o.key("cat");
    cat.push(b'"');
    put_category(cat, s, dev.is_some());
    cat.push(b'"');
    let mut a = Object::open(o.key("args"));
    put_args(&mut a, s, strings);
    if let Some(d) = dev {
        put_device_args(&mut a, s, d);
        if let Some(h) = &d.issuer {
            let mut issued = Vec::new();
            put_name(&mut issued, h, strings);
            // Already escaped by put_name.
            let out = a.key("issued_by");
            out.push(b'"');
            out.extend_from_slice(&issued);
            out.push(b'"');
        }
    }
    a.close();
    o.close();
}

/// The slice's title: what happened, to what ([`Title`], the one rule every view names a slice
/// by), and where in the source.
pub(super) fn put_name<T: Strings + ?Sized>(out: &mut Vec<u8>, s: &Slice, strings: &T) {
    let title = Title::of(s, strings.resolve(s.name_id()));
    // Writing into a Vec cannot fail.
    let _ = write!(JsonText(out), "{title}");
    // Data movement is named by its variable; constructs by where they are in the source.
    if !accprof_timeline::is_enqueue(s.event()) && !s.is_point() {
        if let Some(file) = strings.resolve(s.src_file_id()) {
            let base = file.rsplit('/').next().unwrap_or(file);
            out.push(b' ');
            put_str_body(out, base);
            if s.line != NONE_I32 {
                out.push(b':');
                super::json::put_i64(out, i64::from(s.line));
            }
        }
    }
}

/// Text written into a JSON string's body, escaped.
struct JsonText<'a>(&'a mut Vec<u8>);

impl fmt::Write for JsonText<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        put_str_body(self.0, s);
        Ok(())
    }
}

/// A device record's title: "kernel_name", "memcpy HtoD 128 MiB A", "memset".
pub(super) fn put_device_name<T: Strings + ?Sized>(
    out: &mut Vec<u8>,
    s: &Slice,
    d: &DeviceSlice,
    strings: &T,
) {
    let var = strings.resolve(s.name_id());
    match s.event() {
        device::KERNEL => put_str_body(out, var.unwrap_or("kernel")),
        device::MEMCPY => {
            out.extend_from_slice(b"memcpy");
            if let Some(dir) = d.record.copy_direction() {
                out.push(b' ');
                out.extend_from_slice(copy_direction_name(dir).0.as_bytes());
            }
            if let Some(b) = s.bytes() {
                out.push(b' ');
                out.extend_from_slice(bytes_compact(b).as_bytes());
            }
            if let Some(v) = var {
                out.push(b' ');
                put_str_body(out, v);
            }
        }
        _ => out.extend_from_slice(b"memset"),
    }
}

/// Categories of device records: "device" first, so that one filter shows or hides them all.
pub(super) fn device_category(kind: acc_event_t) -> &'static str {
    match kind {
        device::KERNEL => "device,kernel",
        device::MEMCPY => "device,transfer",
        _ => "device,memset",
    }
}

/// What only a device record has: device times, the copy, the call that issued it.
fn put_device_args(a: &mut Object, s: &Slice, d: &DeviceSlice) {
    let r = &d.record;
    a.u64("device_start_ns", r.start_ns);
    a.u64("device_end_ns", r.end_ns);
    if let Some(gbs) = s.bytes().and_then(|b| gbps(b, s.duration())) {
        a.f64("GB_per_s", gbs);
    }
    if let (Some(dir), Some((src, dst))) = (r.copy_direction(), r.copy_memory()) {
        a.str("direction", copy_direction_name(dir).1);
        a.str("src_memory", memory_kind_name(src));
        a.str("dst_memory", memory_kind_name(dst));
    }
    if let Some(c) = r.correlation {
        a.u64("correlation_id", c);
    }
    if let Some(t) = r.host_call_ns {
        a.u64("host_call_ns", t);
        a.i64("call_to_start_ns", r.start_ns as i64 - t as i64);
    }
    if let Some(t) = r.thread {
        a.i64("host_thread", t);
    }
    match r.stream {
        Some(h) => a.str("stream", &format!("{h:#x}")),
        None => a.str("stream", "none"),
    }
}

pub(super) fn category(kind: acc_event_t) -> &'static str {
    match kind {
        acc_event_t::COMPUTE_CONSTRUCT_START => "compute",
        acc_event_t::ENTER_DATA_START
        | acc_event_t::EXIT_DATA_START
        | acc_event_t::UPDATE_START => "data",
        acc_event_t::WAIT_START => "wait",
        acc_event_t::DEVICE_INIT_START
        | acc_event_t::DEVICE_SHUTDOWN_START
        | acc_event_t::RUNTIME_SHUTDOWN => "init",
        acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START => "transfer",
        acc_event_t::ENQUEUE_LAUNCH_START => "kernel",
        acc_event_t::CREATE | acc_event_t::DELETE | acc_event_t::ALLOC | acc_event_t::FREE => {
            "memory"
        }
        k if accprof_trace::nvtx::is_nvtx(k) => "nvtx",
        _ => "other",
    }
}

/// A slice's categories, comma-separated as both formats read them: its kind ([`category`],
/// [`device_category`]), then `implicit` for data the runtime moved without a clause naming it,
/// then `construct=WORD` for an operation (transfer, launch, memory event, device record) of a
/// construct. They are tags rather than arguments so that Perfetto interns each combination
/// once instead of writing two arguments on every event.
pub(super) fn put_category(out: &mut Vec<u8>, s: &Slice, device: bool) {
    out.extend_from_slice(
        if device {
            device_category(s.event())
        } else {
            category(s.event())
        }
        .as_bytes(),
    );
    if s.implicit {
        out.extend_from_slice(b",implicit");
    }
    if let Some(c) = operation_construct(s, device) {
        out.extend_from_slice(b",construct=");
        out.extend_from_slice(construct_word(c).as_bytes());
    }
}

/// The construct an operation belongs to; none for a construct's own slice, which is named
/// after it.
fn operation_construct(s: &Slice, device: bool) -> Option<acc_construct_t> {
    let operation = accprof_timeline::is_enqueue(s.event()) || s.is_point() || device;
    s.construct().filter(|_| operation)
}

/// The details shown when a slice is selected.
fn put_args<T: Strings + ?Sized>(a: &mut Object, s: &Slice, strings: &T) {
    a.str(
        "event",
        s.event()
            .name()
            .or_else(|| record_name(s.event()))
            .unwrap_or("unknown"),
    );
    if let Some(file) = strings.resolve(s.src_file_id()) {
        a.str("src_file", file);
    }
    if s.line != NONE_I32 {
        a.i64("line", i64::from(s.line));
    }
    if s.end_line != NONE_I32 {
        a.i64("end_line", i64::from(s.end_line));
    }
    if let Some(f) = strings.resolve(s.func_id()) {
        a.str("func", f);
    }
    if let Some(n) = strings.resolve(s.name_id()) {
        let kernel = s.event() == acc_event_t::ENQUEUE_LAUNCH_START || s.event() == device::KERNEL;
        a.str(if kernel { "kernel" } else { "var" }, n);
    }
    if let Some(b) = s.bytes() {
        a.u64("bytes", b);
    }
    for (key, v) in [
        ("num_gangs", s.num_gangs),
        ("num_workers", s.num_workers),
        ("vector_length", s.vector_length),
    ] {
        if v != NONE_U32 {
            a.u64(key, u64::from(v));
        }
    }
    if s.async_ != NONE_I32 {
        a.i64("async", i64::from(s.async_));
    }
    if s.async_queue != NONE_I32 {
        a.i64("async_queue", i64::from(s.async_queue));
    }
    if let Some(c) = s.construct() {
        a.str("construct", construct_word(c));
    }
    if s.implicit {
        put_u64_bool(a, "implicit");
    }
    let flags = EventFlags(u64::from(s.flags));
    if flags.0 != 0 {
        a.str("flags", &flags.names().join(","));
    }
}

fn put_u64_bool(a: &mut Object, key: &str) {
    a.key(key).extend_from_slice(b"true");
}
