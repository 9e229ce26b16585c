//! Realistic synthetic traces, for benchmarks and tests of every consumer (report, TUI, export).
//!
//! The generator writes what the tool library records for the seeds' Laplace 2D solver, with the
//! events in the order the tool writes them (a joined start/end pair when its end arrives, so the
//! transfers and launches of a construct come before the construct):
//!
//! - [`Shape::LaplaceNaive`]: no data region. Each iteration runs two compute constructs
//!   (laplace2d.c lines 57-68 and 71-80 in `main`) whose implicit data regions allocate, copy in
//!   and copy out `A` and `Anew` (and the reduction scalar `error` for the first), as the
//!   parallel-loop version of the data-locality guide does before its fix.
//! - [`Shape::LaplaceData`]: the guide's fix, `#pragma acc data copy(A) create(Anew)` at line 55
//!   around the loop: the arrays move once, each iteration only moves `error`.
//! - [`Shape::LooseOps`]: uploads, launches and downloads outside any construct (runtime API
//!   calls, as a library built on `acc_memcpy_*` makes them), from [`SynthConfig::threads`] host
//!   threads at once: the shape whose operations no construct ever claims.
//!
//! With [`SynthConfig::with_cupti`], every launch, upload and download also gets the device
//! record CUPTI would give it (kernel or memcpy, naming the issuing thread and call time), and
//! the records arrive as CUPTI delivers them: in batches of [`CUPTI_BATCH`], after the host
//! events that issued them.
//!
//! Any number of iterations (so any number of events, 10 million and more) streams out in
//! constant memory:
//!
//! ```no_run
//! use accprof_testkit::laplace::{SynthConfig, Shape};
//! let cfg = SynthConfig::new(Shape::LaplaceNaive).with_event_target(10_000_000);
//! let stats = accprof_testkit::laplace::write_trace(&cfg, "big.trace").unwrap();
//! assert!(stats.events >= 10_000_000);
//! ```

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{device, Event, Field, Footer, Header, StrId, TraceWriter};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Which program the trace imitates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// Laplace 2D without a data region: both arrays copied in and out by every construct.
    LaplaceNaive,
    /// Laplace 2D with `#pragma acc data copy(A) create(Anew)` around the iteration loop.
    LaplaceData,
    /// Per iteration, on each thread: upload, launch, download, outside any construct.
    LooseOps,
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    pub shape: Shape,
    /// Grid side: arrays are `n * n` doubles.
    pub n: u64,
    pub iterations: u64,
    /// Whether transfers carry variable names and events carry source locations (NVHPC-like);
    /// `false` imitates GCC, which fills neither.
    pub names: bool,
    pub pid: u32,
    pub mpi_rank: Option<u32>,
    /// Monotonic time at which the trace starts.
    pub start_ns: u64,
    /// Host to device bandwidth in bytes per ns (GB/s).
    pub bandwidth: f64,
    /// Device initialization time.
    pub init_ns: u64,
    /// Host threads issuing operations at once ([`Shape::LooseOps`] only).
    pub threads: u64,
    /// Async queues the threads' operations go on, thread `t` on queue `1 + t % queues`, each
    /// thread waiting for its queue after its operations ([`Shape::LooseOps`] only; 0: the
    /// operations are synchronous).
    pub queues: u64,
    /// Device records for every launch and transfer, as CUPTI records them.
    pub cupti: bool,
    /// Kernel records say neither their thread nor their call's time, and name their kernel
    /// with a string id of their own, as libaccprof records GCC's launches (CUPTI's launch
    /// callback off once libgomp reports launches; names interned by pointer).
    pub kernels_by_name: bool,
}

/// Device records per delivered CUPTI buffer.
pub const CUPTI_BATCH: usize = 512;

/// Source lines of the generated program (laplace2d.c), as in the data-locality guide.
pub const DATA_LINE: i64 = 55;
pub const DATA_END_LINE: i64 = 84;
pub const STENCIL_LINE: i64 = 57;
pub const STENCIL_END_LINE: i64 = 68;
pub const COPY_LINE: i64 = 71;
pub const COPY_END_LINE: i64 = 80;

const A_PTR: u64 = 0x7f3a_0000_0000;
const ANEW_PTR: u64 = 0x7f3b_0000_0000;
const ERROR_PTR: u64 = 0x7ffd_1234_5670;

impl SynthConfig {
    pub fn new(shape: Shape) -> Self {
        SynthConfig {
            shape,
            n: 1024,
            iterations: 100,
            names: true,
            pid: 4242,
            mpi_rank: None,
            start_ns: 1_000_000_000,
            bandwidth: 12.0,
            init_ns: 150_000_000,
            threads: 3,
            queues: 0,
            cupti: false,
            kernels_by_name: false,
        }
    }

    /// With device records for every launch and transfer, delivered in batches as CUPTI does.
    pub fn with_cupti(mut self) -> Self {
        self.cupti = true;
        self
    }

    /// With device records whose kernel records carry only the kernel's name, not their
    /// issuing call: what GCC-compiled programs give under libaccprof.
    pub fn with_cupti_kernels_by_name(mut self) -> Self {
        self.cupti = true;
        self.kernels_by_name = true;
        self
    }

    pub fn iterations(mut self, k: u64) -> Self {
        self.iterations = k;
        self
    }

    pub fn grid(mut self, n: u64) -> Self {
        self.n = n;
        self
    }

    pub fn without_names(mut self) -> Self {
        self.names = false;
        self
    }

    /// Host threads for [`Shape::LooseOps`].
    pub fn threads(mut self, t: u64) -> Self {
        self.threads = t.max(1);
        self
    }

    /// Async queues for [`Shape::LooseOps`] ([`SynthConfig::queues`]).
    pub fn queues(mut self, q: u64) -> Self {
        self.queues = q;
        self
    }

    pub fn rank(mut self, r: u32) -> Self {
        self.mpi_rank = Some(r);
        self.pid += r;
        self
    }

    /// Events one iteration produces.
    pub fn events_per_iteration(&self) -> u64 {
        let host = self.host_events_per_iteration();
        if !self.cupti {
            return host;
        }
        // One device record per launch, upload and download.
        host + match self.shape {
            Shape::LaplaceNaive => 2 + 5 + 5,
            Shape::LaplaceData => 2 + 1 + 1,
            Shape::LooseOps => 3 * self.threads,
        }
    }

    fn host_events_per_iteration(&self) -> u64 {
        match self.shape {
            // c1: 3x(alloc, create, upload) + enter + launch + wait + 3x(download, delete, free) + exit + cc = 23
            // c2: 2x(alloc, create, upload) + enter + launch + wait + 2x(download, delete, free) + exit + cc = 17
            Shape::LaplaceNaive => 40,
            // c1: upload error + enter + launch + wait + download error + exit + cc = 7; c2: enter, launch, wait, exit, cc = 5
            Shape::LaplaceData => 12,
            // Per thread: upload, launch, download (and a wait, on async queues).
            Shape::LooseOps => (3 + u64::from(self.queues > 0)) * self.threads,
        }
    }

    /// Sets the iterations so that the trace has at least `events` events.
    pub fn with_event_target(mut self, events: u64) -> Self {
        self.iterations = events.div_ceil(self.events_per_iteration()).max(1);
        self
    }
}

/// What [`write_trace`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct SynthStats {
    pub events: u64,
    pub bytes: u64,
}

/// String ids the generated events use.
const S_FILE: u32 = 0;
const S_MAIN: u32 = 1;
const S_A: u32 = 2;
const S_ANEW: u32 = 3;
const S_ERROR: u32 = 4;
const S_K1: u32 = 5;
const S_K2: u32 = 6;
/// The kernels' names as kernel records give them (another pointer, another id).
const S_K1_RECORD: u32 = 7;
const S_K2_RECORD: u32 = 8;

/// Generates the events of a [`SynthConfig`] batch by batch.
#[derive(Debug)]
pub struct Synth {
    cfg: SynthConfig,
    t: u64,
    iteration: u64,
    /// 0 = prologue not yet written, 1 = iterating, 2 = done.
    phase: u8,
    /// Device records not delivered yet (CUPTI's buffer).
    cupti_buffer: Vec<Event>,
    correlation: u64,
}

#[derive(Clone, Copy)]
struct Var {
    name: u32,
    ptr: u64,
    bytes: u64,
}

impl Synth {
    pub fn new(cfg: SynthConfig) -> Self {
        let t = cfg.start_ns + 50_000;
        Synth {
            cfg,
            t,
            iteration: 0,
            phase: 0,
            cupti_buffer: Vec::new(),
            correlation: 0,
        }
    }

    /// The header a trace of this program has.
    pub fn header(&self) -> Header {
        let version = match self.cfg.shape {
            Shape::LaplaceNaive => "naive",
            Shape::LaplaceData => "data",
            Shape::LooseOps => "loose",
        };
        Header {
            exe: "/opt/app/laplace".into(),
            args: vec![
                "laplace".into(),
                "--version".into(),
                version.into(),
                "--iters".into(),
                self.cfg.iterations.to_string(),
            ],
            pid: self.cfg.pid,
            hostname: "synth".into(),
            start_unix_ns: 1_795_000_000_000_000_000,
            start_monotonic_ns: self.cfg.start_ns,
            tool_version: "synth".into(),
            mpi_rank: self.cfg.mpi_rank,
            registration: "synthetic".into(),
            extra: if self.cfg.cupti {
                vec![("device_activity".into(), "cupti".into())]
            } else {
                Vec::new()
            },
        }
    }

    /// The string table the events refer to.
    pub fn strings(&self) -> Vec<(StrId, &'static [u8])> {
        vec![
            (StrId(S_FILE), b"/home/user/laplace/laplace2d.c"),
            (StrId(S_MAIN), b"main"),
            (StrId(S_A), b"A"),
            (StrId(S_ANEW), b"Anew"),
            (StrId(S_ERROR), b"error"),
            (StrId(S_K1), b"main_57_gpu"),
            (StrId(S_K2), b"main_71_gpu"),
            (StrId(S_K1_RECORD), b"main_57_gpu"),
            (StrId(S_K2_RECORD), b"main_71_gpu"),
        ]
    }

    /// Appends the next batch (an iteration, or the prologue / epilogue) to `out`; `false` when
    /// there is nothing more.
    pub fn next_batch(&mut self, out: &mut Vec<Event>) -> bool {
        let from = out.len();
        let more = match self.phase {
            0 => {
                self.prologue(out);
                self.phase = 1;
                true
            }
            1 if self.iteration < self.cfg.iterations => {
                self.iteration_events(out);
                self.iteration += 1;
                true
            }
            1 => {
                self.epilogue(out);
                self.phase = 2;
                true
            }
            _ => false,
        };
        if self.cfg.cupti && more {
            for i in from..out.len() {
                if let Some(r) = self.device_record_of(&out[i]) {
                    self.cupti_buffer.push(r);
                }
            }
            // CUPTI hands its buffer over when it is full, and the rest at the end.
            if self.cupti_buffer.len() >= CUPTI_BATCH || self.phase == 2 {
                out.append(&mut self.cupti_buffer);
            }
        }
        more
    }

    /// The device record CUPTI gives a launch, upload or download: issued by the event's thread
    /// in the middle of its host call, run on the device right after on the thread's stream.
    fn device_record_of(&mut self, host: &Event) -> Option<Event> {
        let (kind, copy) = match host.kind {
            acc_event_t::ENQUEUE_LAUNCH_START => (device::KERNEL, None),
            acc_event_t::ENQUEUE_UPLOAD_START => (device::MEMCPY, Some((device::COPY_HTOD, 2, 3))),
            acc_event_t::ENQUEUE_DOWNLOAD_START => {
                (device::MEMCPY, Some((device::COPY_DTOH, 3, 2)))
            }
            _ => return None,
        };
        let call = host.start_ns + host.duration_ns() / 2;
        let mut e = Event::new(kind, call + 1_000);
        e.end_ns = e.start_ns + host.duration_ns().saturating_sub(1_500).max(500);
        let thread = host.thread().unwrap_or(1);
        let by_name = self.cfg.kernels_by_name && kind == device::KERNEL;
        if !by_name {
            e.set_i64(Field::Thread, thread);
            e.set(Field::HostCallNs, call);
        }
        self.correlation += 1;
        e.set(Field::CorrelationId, self.correlation);
        e.set(Field::AsyncHandle, 0x1000 + thread as u64);
        if let Some((dir, src, dst)) = copy {
            e.set(Field::CopyKind, device::copy_kind(dir as u8, src, dst));
            e.set(Field::Bytes, host.bytes().unwrap_or(0));
        } else if let Some(k) = host.kernel_name() {
            let k = match k.0 {
                S_K1 if by_name => S_K1_RECORD,
                S_K2 if by_name => S_K2_RECORD,
                k => k,
            };
            e.set(Field::KernelName, u64::from(k));
        }
        Some(e)
    }

    /// The time the last event ended (the run's end once [`next_batch`](Self::next_batch)
    /// returned `false`).
    pub fn now(&self) -> u64 {
        self.t
    }

    fn arrays(&self) -> (Var, Var, Var) {
        let b = self.cfg.n * self.cfg.n * 8;
        (
            Var {
                name: S_A,
                ptr: A_PTR,
                bytes: b,
            },
            Var {
                name: S_ANEW,
                ptr: ANEW_PTR,
                bytes: b,
            },
            Var {
                name: S_ERROR,
                ptr: ERROR_PTR,
                bytes: 8,
            },
        )
    }

    fn ev(
        &self,
        kind: acc_event_t,
        start: u64,
        end: u64,
        line: i64,
        end_line: i64,
        parent: acc_construct_t,
    ) -> Event {
        let mut e = Event::new(kind, start);
        e.end_ns = end;
        e.set_i64(Field::Thread, 1);
        e.set_i64(Field::DeviceType, 5);
        e.set_i64(Field::DeviceNumber, 0);
        e.set_i64(Field::ParentConstruct, i64::from(parent.0));
        e.set_i64(Field::Async, -2);
        if self.cfg.names {
            e.set(Field::SrcFile, u64::from(S_FILE));
            e.set(Field::FuncName, u64::from(S_MAIN));
            e.set_i64(Field::LineNo, line);
            e.set_i64(Field::EndLineNo, end_line);
        }
        e
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        3_000 + (bytes as f64 / self.cfg.bandwidth) as u64
    }

    fn data_ops(
        &mut self,
        out: &mut Vec<Event>,
        vars: &[Var],
        dir: acc_event_t,
        alloc: bool,
        line: i64,
        end: i64,
        parent: acc_construct_t,
    ) {
        let point = |s: &Self, kind, t, v: &Var| {
            let mut e = s.ev(kind, t, t, line, end, parent);
            e.set(Field::Bytes, v.bytes);
            e.set(Field::HostPtr, v.ptr);
            e.set(Field::DevicePtr, v.ptr ^ 0x0000_5000_0000_0000);
            e.set_i64(Field::Implicit, 1);
            if s.cfg.names {
                e.set(Field::VarName, u64::from(v.name));
            }
            e
        };
        let upload = dir == acc_event_t::ENQUEUE_UPLOAD_START;
        for v in vars {
            if alloc && upload {
                self.t += 1_000;
                out.push(point(self, acc_event_t::ALLOC, self.t, v));
                out.push(point(self, acc_event_t::CREATE, self.t, v));
            }
            if dir != acc_event_t::NONE {
                self.t += 500;
                let s = self.t;
                self.t += self.transfer_ns(v.bytes);
                let mut e = point(self, dir, s, v);
                e.end_ns = self.t;
                out.push(e);
            }
            if alloc && !upload {
                self.t += 800;
                out.push(point(self, acc_event_t::DELETE, self.t, v));
                out.push(point(self, acc_event_t::FREE, self.t, v));
            }
        }
    }

    /// A compute construct: implicit data region moving `copy` both ways (allocating when
    /// `alloc`), one kernel launch, the implicit wait.
    fn compute(
        &mut self,
        out: &mut Vec<Event>,
        line: i64,
        end: i64,
        kernel: u32,
        copy_in: &[Var],
        copy_out: &[Var],
        alloc: bool,
    ) {
        let par = acc_construct_t::PARALLEL;
        let cc_start = self.t;
        self.t += 1_500;
        let e_start = self.t;
        self.data_ops(
            out,
            copy_in,
            acc_event_t::ENQUEUE_UPLOAD_START,
            alloc,
            line,
            end,
            par,
        );
        self.t += 400;
        let mut e = self.ev(
            acc_event_t::ENTER_DATA_START,
            e_start,
            self.t,
            line,
            end,
            par,
        );
        e.set_i64(Field::Implicit, 1);
        out.push(e);
        self.t += 300;
        let l_start = self.t;
        self.t += 4_000;
        let mut l = self.ev(
            acc_event_t::ENQUEUE_LAUNCH_START,
            l_start,
            self.t,
            line,
            end,
            par,
        );
        l.set(Field::KernelName, u64::from(kernel));
        l.set(Field::NumGangs, self.cfg.n.saturating_sub(2).max(1));
        l.set(Field::NumWorkers, 1);
        l.set(Field::VectorLength, 128);
        out.push(l);
        let w_start = self.t;
        // The kernel: about a quarter ns per grid point.
        self.t += 2_000 + self.cfg.n * self.cfg.n / 4;
        let mut w = self.ev(acc_event_t::WAIT_START, w_start, self.t, line, end, par);
        w.set_i64(Field::Implicit, 1);
        out.push(w);
        let x_start = self.t;
        self.data_ops(
            out,
            copy_out,
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            alloc,
            line,
            end,
            par,
        );
        self.t += 400;
        let mut x = self.ev(
            acc_event_t::EXIT_DATA_START,
            x_start,
            self.t,
            line,
            end,
            par,
        );
        x.set_i64(Field::Implicit, 1);
        out.push(x);
        self.t += 800;
        out.push(self.ev(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            cc_start,
            self.t,
            line,
            end,
            par,
        ));
    }

    fn prologue(&mut self, out: &mut Vec<Event>) {
        // Device initialization, triggered by the first construct.
        let first_line = if self.cfg.shape == Shape::LaplaceData {
            DATA_LINE
        } else {
            STENCIL_LINE
        };
        let s = self.t;
        self.t += self.cfg.init_ns;
        let mut e = self.ev(
            acc_event_t::DEVICE_INIT_START,
            s,
            self.t,
            first_line,
            first_line,
            acc_construct_t::PARALLEL,
        );
        e.set_i64(Field::Implicit, 1);
        out.push(e);
        self.t += 20_000;
        if self.cfg.shape == Shape::LaplaceData {
            let (a, anew, _) = self.arrays();
            let data = acc_construct_t::DATA;
            let s = self.t;
            self.data_ops(
                out,
                &[a],
                acc_event_t::ENQUEUE_UPLOAD_START,
                true,
                DATA_LINE,
                DATA_END_LINE,
                data,
            );
            self.data_ops(
                out,
                &[anew],
                acc_event_t::NONE,
                false,
                DATA_LINE,
                DATA_END_LINE,
                data,
            );
            self.t += 1_000;
            let mut c = self.ev(
                acc_event_t::ALLOC,
                self.t,
                self.t,
                DATA_LINE,
                DATA_END_LINE,
                data,
            );
            c.set(Field::Bytes, anew.bytes);
            c.set(Field::HostPtr, anew.ptr);
            if self.cfg.names {
                c.set(Field::VarName, u64::from(anew.name));
            }
            out.push(c);
            self.t += 500;
            out.push(self.ev(
                acc_event_t::ENTER_DATA_START,
                s,
                self.t,
                DATA_LINE,
                DATA_END_LINE,
                data,
            ));
        }
    }

    fn iteration_events(&mut self, out: &mut Vec<Event>) {
        let (a, anew, err) = self.arrays();
        // Host work between iterations (loop control, the error check).
        self.t += 2_000;
        match self.cfg.shape {
            Shape::LaplaceNaive => {
                self.compute(
                    out,
                    STENCIL_LINE,
                    STENCIL_END_LINE,
                    S_K1,
                    &[a, anew, err],
                    &[a, anew, err],
                    true,
                );
                self.t += 1_000;
                self.compute(
                    out,
                    COPY_LINE,
                    COPY_END_LINE,
                    S_K2,
                    &[anew, a],
                    &[anew, a],
                    true,
                );
            }
            Shape::LaplaceData => {
                self.compute(
                    out,
                    STENCIL_LINE,
                    STENCIL_END_LINE,
                    S_K1,
                    &[err],
                    &[err],
                    false,
                );
                self.t += 1_000;
                self.compute(out, COPY_LINE, COPY_END_LINE, S_K2, &[], &[], false);
            }
            Shape::LooseOps => self.loose_ops(out, &[a, anew, err]),
        }
    }

    /// Each thread uploads a variable, launches a kernel and downloads the variable, all at the
    /// same time, outside any construct (as runtime API calls).
    fn loose_ops(&mut self, out: &mut Vec<Event>, vars: &[Var]) {
        let api = acc_construct_t::RUNTIME_API;
        let base = self.t;
        let mut end = base;
        for thread in 0..self.cfg.threads {
            let v = vars[thread as usize % vars.len()];
            let line = STENCIL_LINE + thread as i64;
            let mut t = base + thread * 700;
            let queue = (self.cfg.queues > 0).then(|| 1 + (thread % self.cfg.queues) as i64);
            let op = |s: &Self, kind, dur: u64, t: &mut u64| {
                let mut e = s.ev(kind, *t, *t + dur, line, line, api);
                e.set_i64(Field::Thread, 1 + thread as i64);
                if let Some(q) = queue.filter(|_| kind != acc_event_t::WAIT_START) {
                    e.set_i64(Field::Async, q);
                    e.set_i64(Field::AsyncQueue, q);
                    e.set(Field::AsyncHandle, 0x1000 + q as u64);
                }
                *t += dur + 300;
                e
            };
            let dur = self.transfer_ns(v.bytes);
            let mut up = op(self, acc_event_t::ENQUEUE_UPLOAD_START, dur, &mut t);
            up.set(Field::Bytes, v.bytes);
            up.set(Field::HostPtr, v.ptr);
            let mut launch = op(self, acc_event_t::ENQUEUE_LAUNCH_START, 4_000, &mut t);
            launch.set(
                Field::KernelName,
                u64::from(if thread % 2 == 0 { S_K1 } else { S_K2 }),
            );
            launch.set(Field::NumGangs, 256);
            launch.set(Field::VectorLength, 128);
            let mut down = op(self, acc_event_t::ENQUEUE_DOWNLOAD_START, dur, &mut t);
            down.set(Field::Bytes, v.bytes);
            down.set(Field::HostPtr, v.ptr);
            for e in [&mut up, &mut down] {
                if self.cfg.names {
                    e.set(Field::VarName, u64::from(v.name));
                }
            }
            out.extend([up, launch, down]);
            if queue.is_some() {
                out.push(op(self, acc_event_t::WAIT_START, 2_000, &mut t));
            }
            end = end.max(t);
        }
        self.t = end;
    }

    fn epilogue(&mut self, out: &mut Vec<Event>) {
        if self.cfg.shape == Shape::LaplaceData {
            let (a, anew, _) = self.arrays();
            let data = acc_construct_t::DATA;
            self.t += 5_000;
            let s = self.t;
            self.data_ops(
                out,
                &[a],
                acc_event_t::ENQUEUE_DOWNLOAD_START,
                true,
                DATA_LINE,
                DATA_END_LINE,
                data,
            );
            self.t += 800;
            let mut f = self.ev(
                acc_event_t::FREE,
                self.t,
                self.t,
                DATA_LINE,
                DATA_END_LINE,
                data,
            );
            f.set(Field::Bytes, anew.bytes);
            f.set(Field::HostPtr, anew.ptr);
            out.push(f);
            self.t += 500;
            out.push(self.ev(
                acc_event_t::EXIT_DATA_START,
                s,
                self.t,
                DATA_LINE,
                DATA_END_LINE,
                data,
            ));
        }
        self.t += 30_000;
    }
}

/// Every event of `cfg` in memory (for small traces and tests).
pub fn events(cfg: &SynthConfig) -> Vec<Event> {
    let mut s = Synth::new(cfg.clone());
    let mut out = Vec::new();
    while s.next_batch(&mut out) {}
    out
}

/// Writes the trace of `cfg` to `out`, streaming: memory stays constant whatever the size.
pub fn write_trace_to<W: Write>(cfg: &SynthConfig, out: W) -> io::Result<(SynthStats, W)> {
    let mut s = Synth::new(cfg.clone());
    let mut w = TraceWriter::new(out, &s.header())?;
    w.write_strings(s.strings())?;
    let mut batch = Vec::with_capacity(1 << 16);
    let mut events = 0u64;
    while s.next_batch(&mut batch) {
        if batch.len() >= 1 << 15 {
            events += batch.len() as u64;
            w.write_events(&batch)?;
            batch.clear();
        }
    }
    events += batch.len() as u64;
    w.write_events(&batch)?;
    w.write_footer(&Footer {
        events_recorded: events,
        events_dropped: 0,
        end_monotonic_ns: s.now(),
    })?;
    w.flush()?;
    let bytes = w.bytes_written();
    Ok((SynthStats { events, bytes }, w.into_inner()))
}

/// Writes the trace of `cfg` to the file at `path`.
pub fn write_trace(cfg: &SynthConfig, path: impl AsRef<Path>) -> io::Result<SynthStats> {
    let f = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let (stats, mut f) = write_trace_to(cfg, f)?;
    f.flush()?;
    Ok(stats)
}
