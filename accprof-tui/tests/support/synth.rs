//! Synthetic traces shaped like what the tool records from a Laplace solver (used by the tests,
//! the snapshot screens and the 10M-event benchmark).
//!
//! Per iteration on thread 0: a `parallel` compute construct holding an implicit enter data with
//! one upload, a kernel launch, an implicit exit data with one download, and alloc/free points;
//! every 4th iteration an async kernel on queue 1 and a `wait`; every 10th an `update host`.
//! A `data` region around the loop uploads and downloads the arrays. Events are written when
//! they end (children before parents), as the tool does.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{Event, Field, Footer, Header, StrId, TraceWriter};
use std::io::{self, Write};

const FILE: StrId = StrId(0);
const VAR_A: StrId = StrId(1);
const VAR_ANEW: StrId = StrId(2);
const KERNEL_MAIN: StrId = StrId(3);
const KERNEL_ERR: StrId = StrId(4);
const FUNC: StrId = StrId(5);
const STRINGS: [&str; 6] = [
    "/src/laplace.c",
    "A",
    "Anew",
    "main_40_gpu",
    "main_52_gpu",
    "main",
];

/// Bytes of each array in the synthetic program (4096 x 4096 doubles / 16).
pub const ARRAY_BYTES: u64 = 8 << 20;

/// Writes the header, strings and the events of `iterations` iterations.
#[derive(Debug)]
pub struct Synth<W: Write> {
    w: TraceWriter<W>,
    pending: Vec<Event>,
    t: u64,
    events: u64,
}

fn ev(kind: acc_event_t, start: u64, end: u64, line: i64) -> Event {
    let mut e = Event::new(kind, start);
    e.end_ns = end;
    e.set_i64(Field::Thread, 0);
    e.set(Field::SrcFile, u64::from(FILE.0));
    e.set(Field::FuncName, u64::from(FUNC.0));
    e.set_i64(Field::LineNo, line);
    e.set_i64(Field::DeviceType, 5);
    e.set_i64(Field::DeviceNumber, 0);
    e.set_i64(Field::Async, -2);
    e
}

fn transfer(
    kind: acc_event_t,
    start: u64,
    end: u64,
    line: i64,
    var: StrId,
    parent: acc_construct_t,
) -> Event {
    let mut e = ev(kind, start, end, line);
    e.set(Field::VarName, u64::from(var.0));
    e.set(Field::Bytes, ARRAY_BYTES);
    e.set(
        Field::HostPtr,
        0x7f00_0000_0000 + u64::from(var.0) * ARRAY_BYTES,
    );
    e.set(
        Field::DevicePtr,
        0x5000_0000 + u64::from(var.0) * ARRAY_BYTES,
    );
    e.set_i64(Field::ParentConstruct, i64::from(parent.0));
    e.set_i64(Field::Implicit, 1);
    e
}

fn launch(start: u64, end: u64, line: i64, kernel: StrId, queue: i64) -> Event {
    let mut e = ev(acc_event_t::ENQUEUE_LAUNCH_START, start, end, line);
    e.set(Field::KernelName, u64::from(kernel.0));
    e.set(Field::NumGangs, 1024);
    e.set(Field::NumWorkers, 1);
    e.set(Field::VectorLength, 128);
    e.set_i64(Field::Async, queue);
    e.set_i64(
        Field::ParentConstruct,
        i64::from(acc_construct_t::PARALLEL.0),
    );
    e
}

impl<W: Write> Synth<W> {
    pub fn new(out: W) -> io::Result<Self> {
        let header = Header {
            exe: "/bin/laplace".into(),
            args: vec!["laplace".into(), "--version".into(), "naive".into()],
            pid: 4242,
            hostname: "synth".into(),
            tool_version: "synthetic".into(),
            registration: "acc_register_library".into(),
            ..Header::default()
        };
        let mut w = TraceWriter::new(out, &header)?;
        w.write_strings(
            STRINGS
                .iter()
                .enumerate()
                .map(|(i, s)| (StrId(i as u32), s.as_bytes())),
        )?;
        Ok(Self {
            w,
            pending: Vec::with_capacity(1 << 14),
            t: 1_000_000,
            events: 0,
        })
    }

    fn push(&mut self, e: Event) -> io::Result<()> {
        self.pending.push(e);
        self.events += 1;
        if self.pending.len() >= 1 << 14 {
            self.flush_events()?;
        }
        Ok(())
    }

    /// Writes the buffered events as chunks (what a following reader sees).
    pub fn flush_events(&mut self) -> io::Result<()> {
        self.w.write_events(&self.pending)?;
        self.pending.clear();
        self.w.flush()
    }

    /// Device init and the `data` region's entry: upload A and Anew.
    pub fn prologue(&mut self) -> io::Result<()> {
        let t = self.t;
        let mut init = ev(acc_event_t::DEVICE_INIT_START, t, t + 50_000, 30);
        init.clear(Field::Async);
        self.push(init)?;
        let t = t + 60_000;
        for (i, var) in [VAR_A, VAR_ANEW].into_iter().enumerate() {
            let s = t + 1_000 + i as u64 * 5_000;
            let mut a = ev(acc_event_t::ALLOC, s, s, 35);
            a.set(Field::Bytes, ARRAY_BYTES);
            self.push(a)?;
            let mut up = transfer(
                acc_event_t::ENQUEUE_UPLOAD_START,
                s + 500,
                s + 4_500,
                35,
                var,
                acc_construct_t::DATA,
            );
            up.clear(Field::Implicit);
            self.push(up)?;
        }
        let mut enter = ev(acc_event_t::ENTER_DATA_START, t, t + 12_000, 35);
        enter.set_i64(Field::ParentConstruct, i64::from(acc_construct_t::DATA.0));
        self.push(enter)?;
        self.t = t + 15_000;
        Ok(())
    }

    /// One solver iteration (about 8 events, 100 us).
    pub fn iteration(&mut self, i: u64) -> io::Result<()> {
        let t = self.t;
        let par = acc_construct_t::PARALLEL;
        // Implicit enter data: one upload of A (the "copy in every iteration" mistake).
        self.push(transfer(
            acc_event_t::ENQUEUE_UPLOAD_START,
            t + 2_000,
            t + 14_000,
            40,
            VAR_A,
            par,
        ))?;
        let mut enter = ev(acc_event_t::ENTER_DATA_START, t + 1_000, t + 15_000, 40);
        enter.set_i64(Field::ParentConstruct, i64::from(par.0));
        enter.set_i64(Field::Implicit, 1);
        self.push(enter)?;
        self.push(launch(t + 16_000, t + 70_000, 40, KERNEL_MAIN, -2))?;
        self.push(transfer(
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            t + 72_000,
            t + 90_000,
            40,
            VAR_ANEW,
            par,
        ))?;
        let mut exit = ev(acc_event_t::EXIT_DATA_START, t + 71_000, t + 92_000, 40);
        exit.set_i64(Field::ParentConstruct, i64::from(par.0));
        exit.set_i64(Field::Implicit, 1);
        self.push(exit)?;
        let mut free = ev(acc_event_t::FREE, t + 93_000, t + 93_000, 40);
        free.set(Field::Bytes, ARRAY_BYTES);
        self.push(free)?;
        let mut cc = ev(acc_event_t::COMPUTE_CONSTRUCT_START, t, t + 95_000, 40);
        cc.set_i64(Field::ParentConstruct, i64::from(par.0));
        cc.set_i64(Field::EndLineNo, 48);
        self.push(cc)?;
        let mut end = t + 100_000;
        if i % 4 == 3 {
            // An async reduction kernel on queue 1, then a wait for it.
            self.push(launch(end, end + 30_000, 52, KERNEL_ERR, 1))?;
            let mut w = ev(acc_event_t::WAIT_START, end + 2_000, end + 31_000, 56);
            w.set_i64(Field::Async, 1);
            self.push(w)?;
            end += 35_000;
        }
        if i % 10 == 9 {
            let mut d = transfer(
                acc_event_t::ENQUEUE_DOWNLOAD_START,
                end + 500,
                end + 9_000,
                60,
                VAR_A,
                acc_construct_t::UPDATE,
            );
            d.clear(Field::Implicit);
            self.push(d)?;
            self.push(ev(acc_event_t::UPDATE_START, end, end + 10_000, 60))?;
            end += 12_000;
        }
        self.t = end;
        Ok(())
    }

    /// The `data` region's exit (download A), the footer, and the writer back.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        let t = self.t;
        self.push(transfer(
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            t + 1_000,
            t + 5_000,
            70,
            VAR_A,
            acc_construct_t::DATA,
        ))?;
        let mut exit = ev(acc_event_t::EXIT_DATA_START, t, t + 6_000, 70);
        exit.set_i64(Field::ParentConstruct, i64::from(acc_construct_t::DATA.0));
        self.push(exit)?;
        self.flush_events()?;
        let footer = Footer {
            events_recorded: self.events,
            events_dropped: 0,
            end_monotonic_ns: t + 10_000,
        };
        self.w.write_footer(&footer)?;
        self.w.flush()?;
        Ok((self.w.into_inner(), self.events))
    }
}

/// A whole synthetic trace of `iterations` iterations at `path`; returns the event count.
pub fn write_trace(path: &std::path::Path, iterations: u64) -> io::Result<u64> {
    let f = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut s = Synth::new(f)?;
    s.prologue()?;
    for i in 0..iterations {
        s.iteration(i)?;
    }
    let (_, n) = s.finish()?;
    Ok(n)
}
