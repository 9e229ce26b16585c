//! [`TraceBuilder`]: a small trace made up event by event, written with `TraceWriter` the way
//! the tool library writes them: events in the order each thread finished them (a construct
//! after the transfers and launches it contains), with the fields the OpenACC runtime fills.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{Event, EventFlags, Field, Footer, Header, LostReason, StrId, TraceWriter};
use std::path::Path;

/// Monotonic clock at the start of recording in every synthetic trace.
pub const T0: u64 = 5_000_000_000;

/// A trace being made up.
#[derive(Debug)]
pub struct TraceBuilder {
    pub header: Header,
    pub events: Vec<Event>,
    strings: Vec<String>,
    pub footer: bool,
    /// Events the tool could not record, written as a lost-events chunk before the footer.
    pub lost: Vec<(LostReason, u64)>,
}

impl TraceBuilder {
    pub fn new(exe: &str, pid: u32, rank: Option<u32>) -> Self {
        let header = Header {
            exe: exe.into(),
            args: vec![exe.into()],
            pid,
            hostname: "node1".into(),
            start_unix_ns: 1_700_000_000_000_000_000,
            start_monotonic_ns: T0,
            tool_version: "0.1.0".into(),
            mpi_rank: rank,
            registration: "acc_register_library".into(),
            extra: Vec::new(),
        };
        TraceBuilder {
            header,
            events: Vec::new(),
            strings: Vec::new(),
            footer: true,
            lost: Vec::new(),
        }
    }

    pub fn str(&mut self, s: &str) -> StrId {
        if let Some(i) = self.strings.iter().position(|x| x == s) {
            return StrId(i as u32);
        }
        self.strings.push(s.into());
        StrId(self.strings.len() as u32 - 1)
    }

    /// Adds an event from `T0 + start` to `T0 + end` on `thread` and returns it for more fields.
    pub fn ev(&mut self, kind: acc_event_t, start: u64, end: u64, thread: i64) -> &mut Event {
        let mut e = Event::new(kind, T0 + start);
        e.end_ns = T0 + end;
        e.set_i64(Field::Thread, thread);
        e.set_i64(Field::DeviceType, 5);
        e.set_i64(Field::DeviceNumber, 0);
        self.events.push(e);
        self.events.last_mut().unwrap()
    }

    /// Sets the source location of the last event.
    pub fn at(&mut self, file: &str, func: &str, line: i64) -> &mut Self {
        let (f, g) = (self.str(file), self.str(func));
        let e = self.events.last_mut().unwrap();
        e.set(Field::SrcFile, u64::from(f.0));
        e.set(Field::FuncName, u64::from(g.0));
        e.set_i64(Field::LineNo, line);
        e.set_i64(Field::EndLineNo, line + 6);
        self
    }

    /// A transfer (upload or download) of `var`.
    pub fn transfer(
        &mut self,
        kind: acc_event_t,
        start: u64,
        end: u64,
        thread: i64,
        var: &str,
        bytes: u64,
        queue: Option<i64>,
    ) {
        let v = self.str(var);
        let e = self.ev(kind, start, end, thread);
        e.set(Field::VarName, u64::from(v.0));
        e.set(Field::Bytes, bytes);
        e.set(Field::HostPtr, 0x7f00_0000_0000 + bytes);
        e.set(Field::DevicePtr, 0xd000_0000 + bytes);
        set_async(e, queue);
    }

    /// A kernel launch.
    pub fn launch(
        &mut self,
        start: u64,
        end: u64,
        thread: i64,
        kernel: &str,
        geometry: (u64, u64, u64),
        queue: Option<i64>,
    ) {
        let k = self.str(kernel);
        let e = self.ev(acc_event_t::ENQUEUE_LAUNCH_START, start, end, thread);
        e.set(Field::KernelName, u64::from(k.0));
        e.set(Field::NumGangs, geometry.0);
        e.set(Field::NumWorkers, geometry.1);
        e.set(Field::VectorLength, geometry.2);
        set_async(e, queue);
    }

    /// A point event (alloc, free, create, delete).
    pub fn point(
        &mut self,
        kind: acc_event_t,
        at: u64,
        thread: i64,
        var: &str,
        bytes: Option<u64>,
        dev: u64,
    ) {
        let v = self.str(var);
        let e = self.ev(kind, at, at, thread);
        e.set(Field::VarName, u64::from(v.0));
        e.set(Field::DevicePtr, dev);
        match bytes {
            Some(b) => e.set(Field::Bytes, b),
            None => e.add_flags(EventFlags::BYTES_UNKNOWN),
        }
    }

    /// A device record (`kind` one of `accprof_trace::device`'s) from `T0 + start` to
    /// `T0 + end` on CUDA stream `stream`, issued by `thread` at `T0 + host_call`, as
    /// libaccprof writes them from CUPTI: no device type or number, no source location.
    pub fn device_record(
        &mut self,
        kind: acc_event_t,
        start: u64,
        end: u64,
        stream: Option<u64>,
        issued: Option<(i64, u64)>,
    ) -> &mut Event {
        let mut e = Event::new(kind, T0 + start);
        e.end_ns = T0 + end;
        if let Some(h) = stream {
            e.set(Field::AsyncHandle, h);
        }
        if let Some((thread, call)) = issued {
            e.set_i64(Field::Thread, thread);
            e.set(Field::HostCallNs, T0 + call);
        }
        e.set(Field::CorrelationId, self.events.len() as u64 + 1);
        self.events.push(e);
        self.events.last_mut().unwrap()
    }

    /// A device copy of `bytes` in direction `direction` (`device::COPY_HTOD`, ...), named
    /// `var` when given.
    pub fn device_copy(
        &mut self,
        start: u64,
        end: u64,
        stream: Option<u64>,
        issued: Option<(i64, u64)>,
        direction: u64,
        bytes: u64,
        var: Option<&str>,
    ) -> &mut Event {
        let v = var.map(|v| self.str(v));
        let e = self.device_record(accprof_trace::device::MEMCPY, start, end, stream, issued);
        let (src, dst) = if direction == accprof_trace::device::COPY_DTOH {
            (3, 2)
        } else {
            (2, 3)
        };
        e.set(
            Field::CopyKind,
            accprof_trace::device::copy_kind(direction as u8, src, dst),
        );
        e.set(Field::Bytes, bytes);
        if let Some(v) = v {
            e.set(Field::VarName, u64::from(v.0));
        }
        e
    }

    /// A device kernel `kernel` on `stream`.
    pub fn device_kernel(
        &mut self,
        start: u64,
        end: u64,
        stream: Option<u64>,
        issued: Option<(i64, u64)>,
        kernel: &str,
    ) -> &mut Event {
        let k = self.str(kernel);
        let e = self.device_record(accprof_trace::device::KERNEL, start, end, stream, issued);
        e.set(Field::KernelName, u64::from(k.0));
        e
    }

    /// Writes the trace, events in order of their end (how the tool library emits them).
    pub fn write(&self, path: &Path) {
        let mut events = self.events.clone();
        events.sort_by_key(|e| (e.end_ns, std::cmp::Reverse(e.start_ns)));
        let file = std::fs::File::create(path).unwrap();
        let mut w = TraceWriter::new(std::io::BufWriter::new(file), &self.header).unwrap();
        let defs: Vec<(StrId, &[u8])> = self
            .strings
            .iter()
            .enumerate()
            .map(|(i, s)| (StrId(i as u32), s.as_bytes()))
            .collect();
        w.write_strings(defs).unwrap();
        w.write_events(&events).unwrap();
        if !self.lost.is_empty() {
            w.write_lost(&self.lost).unwrap();
        }
        if self.footer {
            let end = events.iter().map(|e| e.end_ns).max().unwrap_or(T0);
            w.write_footer(&Footer {
                events_recorded: events.len() as u64,
                events_dropped: 0,
                end_monotonic_ns: end,
            })
            .unwrap();
        }
        w.flush().unwrap();
    }
}

fn set_async(e: &mut Event, queue: Option<i64>) {
    match queue {
        Some(q) => {
            e.set_i64(Field::Async, q);
            e.set_i64(Field::AsyncQueue, q);
        }
        None => e.set_i64(Field::Async, -2),
    }
}

/// Sets the construct an event belongs to.
pub fn construct(e: &mut Event, c: acc_construct_t) -> &mut Event {
    e.set_i64(Field::ParentConstruct, i64::from(c.0));
    e
}

/// What the Laplace example does, `iters` times: device init, a data region that uploads A and
/// Anew, per iteration a `parallel loop` (implicit enter/exit data, one launch) and a reduction
/// download, then the region's downloads; plus an async pipeline on queue 1 and a second host
/// thread. Times in ns from T0; returns the end time.
pub fn laplace_like(s: &mut TraceBuilder, iters: u64) -> u64 {
    const F: &str = "/src/laplace.c";
    let mib = 1 << 20;
    construct(
        s.ev(acc_event_t::DEVICE_INIT_START, 0, 50_000, 0),
        acc_construct_t::RUNTIME_API,
    );
    // The data region's entry: allocate and upload A and Anew.
    construct(
        s.ev(acc_event_t::ENTER_DATA_START, 60_000, 90_000, 0),
        acc_construct_t::DATA,
    );
    s.at(F, "main", 30);
    s.point(acc_event_t::ALLOC, 61_000, 0, "A", Some(8 * mib), 0xd100);
    s.point(acc_event_t::CREATE, 61_500, 0, "A", Some(8 * mib), 0xd100);
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        62_000,
        74_000,
        0,
        "A",
        8 * mib,
        None,
    );
    s.at(F, "main", 30);
    s.point(acc_event_t::ALLOC, 75_000, 0, "Anew", Some(8 * mib), 0xd200);
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        76_000,
        88_000,
        0,
        "Anew",
        8 * mib,
        None,
    );
    s.at(F, "main", 30);
    let mut t = 100_000;
    for _ in 0..iters {
        let c0 = t;
        construct(
            s.ev(acc_event_t::ENTER_DATA_START, t + 500, t + 1_500, 0),
            acc_construct_t::PARALLEL,
        )
        .set_i64(Field::Implicit, 1);
        s.at(F, "main", 42);
        s.launch(t + 2_000, t + 12_000, 0, "main_42_gpu", (256, 1, 128), None);
        s.at(F, "main", 42);
        s.transfer(
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            t + 12_500,
            t + 13_000,
            0,
            "error",
            8,
            None,
        );
        construct(
            s.ev(acc_event_t::EXIT_DATA_START, t + 12_200, t + 13_500, 0),
            acc_construct_t::PARALLEL,
        )
        .set_i64(Field::Implicit, 1);
        s.at(F, "main", 42);
        construct(
            s.ev(acc_event_t::COMPUTE_CONSTRUCT_START, c0, t + 14_000, 0),
            acc_construct_t::PARALLEL,
        );
        s.at(F, "main", 42);
        t += 20_000;
    }
    // An update and an async pipeline on queue 1, then a wait.
    construct(
        s.ev(acc_event_t::UPDATE_START, t, t + 9_000, 0),
        acc_construct_t::UPDATE,
    );
    s.at(F, "main", 60);
    s.transfer(
        acc_event_t::ENQUEUE_DOWNLOAD_START,
        t + 1_000,
        t + 8_000,
        0,
        "A",
        8 * mib,
        None,
    );
    s.at(F, "main", 60);
    t += 10_000;
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        t,
        t + 3_000,
        0,
        "B",
        mib,
        Some(1),
    );
    s.at(F, "pipeline", 70);
    s.launch(
        t + 3_000,
        t + 9_000,
        0,
        "pipeline_72_gpu",
        (128, 1, 64),
        Some(1),
    );
    s.at(F, "pipeline", 72);
    construct(
        s.ev(acc_event_t::WAIT_START, t + 3_500, t + 9_500, 0),
        acc_construct_t::WAIT,
    );
    s.at(F, "pipeline", 75);
    t += 10_000;
    // A second host thread running its own small kernel.
    construct(
        s.ev(acc_event_t::COMPUTE_CONSTRUCT_START, 100_500, 110_000, 1),
        acc_construct_t::KERNELS,
    );
    s.at(F, "worker", 90);
    s.launch(101_000, 109_000, 1, "worker_91_gpu", (64, 4, 32), None);
    s.at(F, "worker", 91);
    // The data region's exit: download A, free both.
    construct(
        s.ev(acc_event_t::EXIT_DATA_START, t, t + 14_000, 0),
        acc_construct_t::DATA,
    );
    s.at(F, "main", 80);
    s.transfer(
        acc_event_t::ENQUEUE_DOWNLOAD_START,
        t + 500,
        t + 12_500,
        0,
        "A",
        8 * mib,
        None,
    );
    s.at(F, "main", 80);
    s.point(
        acc_event_t::DELETE,
        t + 12_800,
        0,
        "A",
        Some(8 * mib),
        0xd100,
    );
    s.point(acc_event_t::FREE, t + 13_000, 0, "A", None, 0xd100);
    s.point(
        acc_event_t::FREE,
        t + 13_500,
        0,
        "Anew",
        Some(8 * mib),
        0xd200,
    );
    t + 14_000
}

/// Writes a trace of `copies` back-to-back copies of `template`'s events, one batch per copy,
/// so that a million-event trace is made without holding a million events.
pub fn write_repeated(template: &TraceBuilder, copies: u64, path: &Path) -> u64 {
    let mut events = template.events.clone();
    events.sort_by_key(|e| (e.end_ns, std::cmp::Reverse(e.start_ns)));
    let period = events.iter().map(|e| e.end_ns - T0).max().unwrap_or(0) + 1_000;
    let file = std::fs::File::create(path).unwrap();
    let mut w = TraceWriter::new(std::io::BufWriter::new(file), &template.header).unwrap();
    let defs: Vec<(StrId, &[u8])> = template
        .strings
        .iter()
        .enumerate()
        .map(|(i, s)| (StrId(i as u32), s.as_bytes()))
        .collect();
    w.write_strings(defs).unwrap();
    let mut batch = events.clone();
    for k in 0..copies {
        for (b, e) in batch.iter_mut().zip(&events) {
            b.start_ns = e.start_ns + k * period;
            b.end_ns = e.end_ns + k * period;
        }
        w.write_events(&batch).unwrap();
    }
    w.flush().unwrap();
    copies * events.len() as u64
}

/// The name the tests have used for [`TraceBuilder`].
pub type Synth = TraceBuilder;
