//! The construct API: what a compiler emits for the OpenACC directives, callable by hand-lowered
//! code from Rust (this module) and C (src/ffi/construct.rs, include/accshim.h).
//!
//! Each function maps its clauses inside the event sequence of its directive (src/sequence.rs,
//! shared with GCC's entry points and the runtime routines): the data construct, enter data
//! and exit data (dynamic reference counting), update (an upload or download per section),
//! parallel / kernels / serial (one enqueue_launch start/end per kernel), wait.

use crate::backend::{HostKernel, LaunchSpec, RedOp, RedSlot, Val};
use crate::data::{self, Clause, ClauseKind, Entered, Op};
use crate::error::{AccError, OrFatal, Result};
use crate::loc::Loc;
use crate::profiling::dispatch::{self, DataInfo, LaunchInfo};
use crate::runtime::{self, op_for, Runtime, ACC_ASYNC_SYNC};
use crate::sequence::{self, ComputeSteps, DataDirective, WaitClause};
use accprof_abi::{acc_construct_t, acc_event_t};
use std::ffi::{c_char, c_void, CStr};
use std::ops::Range;
use std::sync::Arc;

pub use crate::backend::{RedOp as Reduction, Val as KVal};

/// The source of a kernel for the CUDA backend: CUDA C (entry point = kernel name) or PTX.
///
/// The fields are private so that a `CudaSrc` always names 'static bytes: the backend reads
/// `len` bytes at `ptr` when it compiles the kernel.
#[derive(Clone, Copy, Debug)]
pub struct CudaSrc {
    ptr: *const u8,
    len: usize,
}
// SAFETY: `ptr` points at 'static, immutable bytes (both constructors take 'static data), so
// the value may move to any thread.
unsafe impl Send for CudaSrc {}
// SAFETY: as for Send: the bytes are immutable for the program's life.
unsafe impl Sync for CudaSrc {}

impl CudaSrc {
    pub fn from_static(s: &'static str) -> CudaSrc {
        CudaSrc {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }
    /// The text of a C string literal (what the C API passes; not necessarily UTF-8).
    pub fn from_static_cstr(s: &'static std::ffi::CStr) -> CudaSrc {
        CudaSrc {
            ptr: s.as_ptr().cast(),
            len: s.to_bytes().len(),
        }
    }
    /// The source's bytes.
    pub fn as_bytes(&self) -> &'static [u8] {
        // SAFETY: both constructors take `len` bytes at `ptr` from 'static data, never mutated.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A kernel argument before translation.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// A host address inside present data: the kernel gets the matching device address.
    Present(*const c_void),
    /// A device address as it is (deviceptr, acc_malloc).
    Device(u64),
    I64(i64),
    F64(f64),
}

impl Arg {
    pub fn of<T>(s: &[T]) -> Arg {
        Arg::Present(s.as_ptr().cast())
    }
    pub fn of_mut<T>(s: &mut [T]) -> Arg {
        Arg::Present(s.as_ptr().cast())
    }
}

/// A kernel: a loop of `work` iterations with a host implementation (emulated device) and/or a
/// CUDA implementation. Its name is what enqueue_launch reports as kernel_name.
#[derive(Clone)]
pub struct Kernel {
    pub name: &'static CStr,
    pub work: usize,
    pub host: Option<HostKernel>,
    pub cuda: Option<CudaSrc>,
    pub args: Vec<Arg>,
    pub reduction: Option<(RedOp, *mut f64, *const c_char)>,
}

impl Kernel {
    pub fn new(name: &'static CStr, work: usize) -> Kernel {
        Kernel {
            name,
            work,
            host: None,
            cuda: None,
            args: Vec::new(),
            reduction: None,
        }
    }
    pub fn args(mut self, args: &[Arg]) -> Kernel {
        self.args = args.to_vec();
        self
    }
    /// Host implementation: runs iterations `range` with the translated args; returns the
    /// partial reduction value (anything when there is no reduction).
    pub fn host(
        mut self,
        f: impl Fn(Range<usize>, &[Val]) -> f64 + Send + Sync + 'static,
    ) -> Kernel {
        self.host = Some(HostKernel::Rust(Arc::new(f)));
        self
    }
    /// CUDA C source defining `extern "C" __global__ void <name>(...)`, parameters in the order of
    /// the args (all 8 bytes: pointers, long long, double), then `double *` for a reduction.
    pub fn cuda(mut self, src: &'static str) -> Kernel {
        self.cuda = Some(CudaSrc::from_static(src));
        self
    }
    /// `reduction(op: var)`: the kernel's result is combined into `*var` when the construct
    /// completes (at its end for synchronous constructs, in queue order for async ones).
    pub fn reduction(mut self, op: RedOp, var: &mut f64, name: &'static CStr) -> Kernel {
        self.reduction = Some((op, var as *mut f64, name.as_ptr()));
        self
    }
}

/// Everything about a compute construct except its kernels.
#[derive(Clone, Debug)]
pub struct ComputeSpec {
    pub kind: acc_construct_t,
    pub loc: Loc,
    pub clauses: Vec<Clause>,
    pub num_gangs: Option<u32>,
    pub num_workers: Option<u32>,
    pub vector_length: Option<u32>,
    pub async_: i64,
    /// `wait` clause: None = absent, Some(empty) = wait for all queues.
    pub wait: Option<Vec<i64>>,
}

pub use crate::sequence::wait_on;

/// A data construct in progress; [`DataRegion::end`] (or drop) is its exit.
pub struct DataRegion {
    rt: &'static Runtime,
    loc: Loc,
    async_: i64,
    entered: Vec<(Clause, Entered)>,
    ended: bool,
}

/// `#pragma acc data <clauses>`: entry now, exit at [`DataRegion::end`].
pub fn data(loc: Loc, clauses: &[Clause]) -> DataRegion {
    data_async(loc, clauses, ACC_ASYNC_SYNC, None)
}

/// The data construct with OpenACC 3.x's async and wait clauses.
pub fn data_async(loc: Loc, clauses: &[Clause], async_: i64, wait: Option<&[i64]>) -> DataRegion {
    let rt = runtime::get(acc_construct_t::DATA, &loc);
    let entered = data_enter(rt, loc, clauses, async_, wait).or_fatal("data construct", &loc);
    DataRegion {
        rt,
        loc,
        async_,
        entered,
        ended: false,
    }
}

fn data_enter(
    rt: &'static Runtime,
    loc: Loc,
    clauses: &[Clause],
    async_: i64,
    wait: Option<&[i64]>,
) -> Result<Vec<(Clause, Entered)>> {
    let op = op_for(rt, acc_construct_t::DATA, false, &loc, async_)?;
    sequence::data_directive(&op, DataDirective::Enter, wait.into(), |op| {
        enter_structured(op, clauses)
    })
}

/// Structured references for a construct's clauses, attachments last.
fn enter_structured(op: &Op, clauses: &[Clause]) -> Result<Vec<(Clause, Entered)>> {
    let mut entered = Vec::with_capacity(clauses.len());
    for c in attaches_last(clauses) {
        entered.push((*c, data::enter(op, c, false)?));
    }
    Ok(entered)
}

/// The structured references of [`enter_structured`] given up, last taken first.
fn exit_structured(op: &Op, entered: &[(Clause, Entered)]) -> Result<()> {
    for (c, e) in entered.iter().rev() {
        if matches!(e, Entered::Mapped(_)) {
            data::exit(op, c, false, false)?;
        }
    }
    Ok(())
}

impl DataRegion {
    /// The device address of a clause's section (host_data use_device).
    pub fn device_ptr<T>(&self, host: *const T) -> *mut T {
        data::device_addr(self.rt, host as usize)
            .map_or(std::ptr::null_mut(), |d| d as usize as *mut T)
    }

    /// The exit of the region; `end_line` is the line of its closing brace / `end data`.
    pub fn end(mut self, end_line: u32) {
        self.loc.end_line = end_line as i32;
        self.finish();
    }

    fn finish(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        let loc = self.loc;
        (|| {
            let op = op_for(self.rt, acc_construct_t::DATA, false, &loc, self.async_)?;
            sequence::data_directive(&op, DataDirective::Exit, WaitClause::Absent, |op| {
                exit_structured(op, &self.entered)
            })
        })()
        .or_fatal("end of data construct", &loc);
    }
}

impl Drop for DataRegion {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `#pragma acc enter data <clauses> [async] [wait]` (copyin, create, attach).
pub fn enter_data(loc: Loc, clauses: &[Clause], async_: i64, wait: Option<&[i64]>) {
    let rt = runtime::get(acc_construct_t::ENTER_DATA, &loc);
    (|| -> Result<()> {
        let op = op_for(rt, acc_construct_t::ENTER_DATA, false, &loc, async_)?;
        sequence::data_directive(&op, DataDirective::Enter, wait.into(), |op| {
            for c in attaches_last(clauses) {
                match c.kind {
                    ClauseKind::CopyIn | ClauseKind::Create | ClauseKind::Attach => {
                        data::enter(op, c, true)?;
                    }
                    k => {
                        return Err(AccError::InvalidArgument(format!(
                            "{k:?} is not allowed on enter data"
                        )))
                    }
                }
            }
            Ok(())
        })
    })()
    .or_fatal("enter data", &loc)
}

/// `#pragma acc exit data <clauses> [async] [wait] [finalize]` (copyout, delete, detach).
pub fn exit_data(loc: Loc, clauses: &[Clause], async_: i64, wait: Option<&[i64]>, finalize: bool) {
    let rt = runtime::get(acc_construct_t::EXIT_DATA, &loc);
    (|| -> Result<()> {
        let op = op_for(rt, acc_construct_t::EXIT_DATA, false, &loc, async_)?;
        sequence::data_directive(&op, DataDirective::Exit, wait.into(), |op| {
            for c in detaches_first(clauses) {
                match c.kind {
                    ClauseKind::CopyOut | ClauseKind::Delete | ClauseKind::Detach => {
                        data::exit(op, c, true, finalize)?
                    }
                    k => {
                        return Err(AccError::InvalidArgument(format!(
                            "{k:?} is not allowed on exit data"
                        )))
                    }
                }
            }
            Ok(())
        })
    })()
    .or_fatal("exit data", &loc)
}

/// `#pragma acc update device(...) self(...) [async] [wait] [if_present]`.
pub fn update(loc: Loc, clauses: &[Clause], async_: i64, wait: Option<&[i64]>, if_present: bool) {
    let rt = runtime::get(acc_construct_t::UPDATE, &loc);
    (|| -> Result<()> {
        let op = op_for(rt, acc_construct_t::UPDATE, false, &loc, async_)?;
        sequence::data_directive(&op, DataDirective::Update, wait.into(), |op| {
            clauses
                .iter()
                .try_for_each(|c| data::update(op, c, if_present))
        })
    })()
    .or_fatal("update", &loc)
}

/// `#pragma acc wait [(queues)] [async]`.
pub fn wait(loc: Loc, queues: Option<&[i64]>, async_: i64) {
    let rt = runtime::get(acc_construct_t::WAIT, &loc);
    wait_on(rt, acc_construct_t::WAIT, false, &loc, queues, async_).or_fatal("wait", &loc)
}

struct SendPtr<T>(*mut T);
// SAFETY: used only to hand a reduction's result slot and variable to the one host job that
// completes the reduction; the launching thread does not touch either until that job has run.
unsafe impl<T> Send for SendPtr<T> {}

/// Runs a compute construct with its kernels (see the module docs for the events).
pub fn compute(spec: &ComputeSpec, kernels: &[Kernel]) {
    let loc = spec.loc;
    let rt = runtime::get(spec.kind, &loc);
    compute_in(rt, spec, kernels).or_fatal(construct_name(spec.kind), &loc)
}

/// How an error line names a compute construct.
pub(crate) fn construct_name(k: acc_construct_t) -> &'static str {
    match k {
        acc_construct_t::KERNELS => "kernels construct",
        acc_construct_t::SERIAL => "serial construct",
        _ => "parallel construct",
    }
}

fn compute_in(rt: &'static Runtime, spec: &ComputeSpec, kernels: &[Kernel]) -> Result<()> {
    let op = op_for(rt, spec.kind, false, &spec.loc, spec.async_)?;
    let serial = spec.kind == acc_construct_t::SERIAL;
    let steps = ComputeSteps {
        map: |op: &Op| enter_structured(op, &spec.clauses),
        launch: |implicit: &Op, entered: &Vec<(Clause, Entered)>| {
            let unmapped = unmapped_sections(entered);
            let mut reductions = Vec::new();
            for k in kernels {
                reductions.extend(launch(implicit, spec, k, serial, &unmapped)?);
            }
            copy_back_reductions(implicit, reductions)
        },
        unmap: |implicit: &Op, entered: Vec<(Clause, Entered)>| exit_structured(implicit, &entered),
    };
    sequence::compute(&op, spec.wait.as_deref().into(), steps)
}

/// Default vector length when the construct gives none (NVHPC's default too).
pub const DEFAULT_VECTOR: u32 = 128;
/// Upper bound of the default gang count (kernels use grid-stride loops; on the H200 4096 gangs
/// ran the Laplace kernels faster than one lane per iteration: docs/performance/shim.md).
pub const MAX_DEFAULT_GANGS: u32 = 4096;

/// A reduction result on its way back: the slot the backend writes, and the user's variable
/// it is combined into.
struct PendingReduction {
    red: RedOp,
    var: *mut f64,
    name: *const c_char,
    slot: *mut f64,
    /// The device cell the result is downloaded from (the download event's device_ptr).
    cell: u64,
}

/// A section of the construct's clauses that mapped nothing (no_create of absent data, a
/// zero-length section): host range and the address the kernels get for its start.
struct Unmapped {
    host: usize,
    bytes: usize,
    addr: u64,
}

fn unmapped_sections(entered: &[(Clause, Entered)]) -> Vec<Unmapped> {
    entered
        .iter()
        .filter_map(|(c, e)| match *e {
            Entered::Unmapped(addr) if !c.host.is_null() => Some(Unmapped {
                host: c.host as usize,
                bytes: c.bytes,
                addr,
            }),
            _ => None,
        })
        .collect()
}

/// The clauses in the order their actions are done at entry: pointer attachments after every
/// copy of the same directive ("The implementation schedules pointer updates after any data
/// copies due to copyin actions that are performed for the same directive"), so that the
/// pointer and its target are present whatever order the clauses were written in.
fn attaches_last(clauses: &[Clause]) -> impl Iterator<Item = &Clause> {
    let attach = |c: &&Clause| c.kind == ClauseKind::Attach;
    clauses
        .iter()
        .filter(move |c| !attach(c))
        .chain(clauses.iter().filter(attach))
}

/// The clauses in the order their actions are done at an exit data directive: detachments
/// first, so that a pointer's device copy holds its host value again before the data holding it
/// is copied back (GCC does the same).
fn detaches_first(clauses: &[Clause]) -> impl Iterator<Item = &Clause> {
    let detach = |c: &&Clause| c.kind == ClauseKind::Detach;
    clauses
        .iter()
        .filter(detach)
        .chain(clauses.iter().filter(move |c| !detach(c)))
}

/// Launches one kernel; returns its reduction, whose result comes back once the construct's
/// kernels are all launched ([`copy_back_reductions`]).
fn launch(
    op: &Op,
    spec: &ComputeSpec,
    k: &Kernel,
    serial: bool,
    unmapped: &[Unmapped],
) -> Result<Option<PendingReduction>> {
    let rt = op.rt;
    let (gangs, workers, vector) = if serial {
        (1, 1, 1)
    } else {
        let vector = spec.vector_length.unwrap_or(DEFAULT_VECTOR).max(1);
        let workers = spec.num_workers.unwrap_or(1).max(1);
        let per_gang = (vector as usize) * (workers as usize);
        let gangs = spec
            .num_gangs
            .unwrap_or_else(|| {
                (k.work
                    .div_ceil(per_gang)
                    .clamp(1, MAX_DEFAULT_GANGS as usize)) as u32
            })
            .max(1);
        (gangs, workers, vector)
    };
    // Translate the args through the present table (one lock for all of them).
    let args: Vec<Val> = {
        let table = rt.table();
        k.args
            .iter()
            .map(|a| match *a {
                Arg::Present(h) => {
                    let h = h as usize;
                    match table.containing(h) {
                        Some(e) => Ok(Val(e.dev_of(h))),
                        None if h == 0 => Ok(Val(0)),
                        None => match unmapped
                            .iter()
                            .find(|u| h >= u.host && h < u.host + u.bytes.max(1))
                        {
                            // no_create of absent data (the local address), a zero-length section.
                            Some(u) => Ok(Val(u.addr + (h - u.host) as u64)),
                            None => Err(AccError::NotPresent {
                                host: h,
                                bytes: 1,
                                name: format!("argument of kernel {}", k.name.to_string_lossy()),
                            }),
                        },
                    }
                }
                Arg::Device(d) => Ok(Val(d)),
                Arg::I64(v) => Ok(Val::from_i64(v)),
                Arg::F64(v) => Ok(Val::from_f64(v)),
            })
            .collect::<Result<_>>()?
    };
    let ls = LaunchSpec {
        name: k.name,
        host: k.host.clone(),
        cuda_src: k.cuda.map(|c| c.ptr as *const c_char),
        cuda_len: k.cuda.map_or(0, |c| c.len),
        work: k.work,
        gangs,
        workers,
        vector,
        args,
        inline: Vec::new(),
        reduction: k.reduction.map(|r| r.0),
        gcc: None,
    };
    let li = LaunchInfo {
        kernel_name: k.name.as_ptr(),
        num_gangs: gangs as usize,
        num_workers: workers as usize,
        vector_length: vector as usize,
    };
    let slot = k.reduction.map(|_| Box::into_raw(Box::new(0.0f64)));
    let t = dispatch::launch_start(&op.ctx, &li);
    let r = rt.backend.launch(op.q, &ls, slot.map(RedSlot));
    dispatch::launch_end(&op.ctx, &li, t);
    let cell = match r {
        Ok(cell) => cell.unwrap_or(0),
        Err(e) => {
            if let Some(slot) = slot {
                // SAFETY: from Box::into_raw above; nothing was launched that writes it.
                drop(unsafe { Box::from_raw(slot) });
            }
            return Err(e);
        }
    };
    Ok(k.reduction
        .zip(slot)
        .map(|((red, var, name), slot)| PendingReduction {
            red,
            var,
            name,
            slot,
            cell,
        }))
}

/// Brings a construct's reduction results back to the host after its last kernel. Each comes
/// back in an enqueue_download of its variable (8 bytes); a backend that returns it with a
/// kernel of its own (the CUDA one) reports that kernel's launch just before.
fn copy_back_reductions(op: &Op, reductions: Vec<PendingReduction>) -> Result<()> {
    let rt = op.rt;
    let store = rt.backend.reduction_store_kernel();
    for p in reductions {
        let stored = store.map(|name| {
            let li = LaunchInfo {
                kernel_name: name.as_ptr(),
                num_gangs: 1,
                num_workers: 1,
                vector_length: 1,
            };
            let t = dispatch::launch_start(&op.ctx, &li);
            let r = rt.backend.flush_reduction(op.q);
            dispatch::launch_end(&op.ctx, &li, t);
            r
        });
        let d = DataInfo {
            var_name: p.name,
            bytes: 8,
            host_ptr: p.var as *const c_void,
            device_ptr: p.cell as *const c_void,
        };
        let t = dispatch::data_start(acc_event_t::ENQUEUE_DOWNLOAD_START, &op.ctx, &d);
        let flushed = stored.unwrap_or_else(|| rt.backend.flush_reduction(op.q));
        let (slot, var, red) = (SendPtr(p.slot), SendPtr(p.var), p.red);
        let r = flushed.and_then(|_| {
            rt.backend.host_fn(
                op.q,
                Box::new(move || {
                    let (slot, var) = (slot, var);
                    // SAFETY: slot came from Box::into_raw in launch and is freed once, here;
                    // `var` is the user's reduction variable, which must live until the
                    // construct completes.
                    unsafe {
                        let v = *Box::from_raw(slot.0);
                        *var.0 = red.combine(*var.0, v);
                    }
                }),
            )
        });
        dispatch::data_end(acc_event_t::ENQUEUE_DOWNLOAD_END, &op.ctx, &d, t);
        r?;
    }
    Ok(())
}

/// Builder for `parallel`, `kernels` and `serial` constructs from Rust.
pub struct Compute {
    spec: ComputeSpec,
}

macro_rules! clause_methods {
    ($($method:ident => $kind:ident),* $(,)?) => {
        $(
            #[doc = concat!("A `", stringify!($method), "` clause for the section `s`, named as written (`A[0:n]`).")]
            pub fn $method<T>(mut self, s: &[T], name: &'static CStr) -> Self {
                self.spec.clauses.push(Clause::new(ClauseKind::$kind, s, name));
                self
            }
        )*
    };
}

impl Clause {
    pub fn new<T>(kind: ClauseKind, s: &[T], name: &'static CStr) -> Clause {
        Clause {
            kind,
            host: s.as_ptr().cast(),
            bytes: std::mem::size_of_val(s),
            name: name.as_ptr(),
            implicit: false,
        }
    }
    pub fn copy<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::Copy, s, name)
    }
    pub fn copyin<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::CopyIn, s, name)
    }
    pub fn copyout<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::CopyOut, s, name)
    }
    pub fn create<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::Create, s, name)
    }
    pub fn present<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::Present, s, name)
    }
    pub fn no_create<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::NoCreate, s, name)
    }
    pub fn delete<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::Delete, s, name)
    }
    pub fn update_device<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::UpdateDevice, s, name)
    }
    pub fn update_self<T>(s: &[T], name: &'static CStr) -> Clause {
        Clause::new(ClauseKind::UpdateSelf, s, name)
    }
    /// `attach(p)` / `detach(p)`: `ptr` is the address of the pointer variable.
    pub fn attach<T>(ptr: &*mut T, name: &'static CStr) -> Clause {
        Clause {
            kind: ClauseKind::Attach,
            host: (ptr as *const *mut T).cast(),
            bytes: 8,
            name: name.as_ptr(),
            implicit: false,
        }
    }
    pub fn detach<T>(ptr: &*mut T, name: &'static CStr) -> Clause {
        Clause {
            kind: ClauseKind::Detach,
            host: (ptr as *const *mut T).cast(),
            bytes: 8,
            name: name.as_ptr(),
            implicit: false,
        }
    }
    /// Marks the clause as determined by the compiler (events report implicit = 1).
    pub fn implicit(mut self) -> Clause {
        self.implicit = true;
        self
    }
}

impl Compute {
    pub fn new(kind: acc_construct_t, loc: Loc) -> Compute {
        Compute {
            spec: ComputeSpec {
                kind,
                loc,
                clauses: Vec::new(),
                num_gangs: None,
                num_workers: None,
                vector_length: None,
                async_: ACC_ASYNC_SYNC,
                wait: None,
            },
        }
    }
    clause_methods!(copy => Copy, copyin => CopyIn, copyout => CopyOut, create => Create, present => Present, no_create => NoCreate);

    pub fn clause(mut self, c: Clause) -> Self {
        self.spec.clauses.push(c);
        self
    }
    pub fn clauses(mut self, cs: &[Clause]) -> Self {
        self.spec.clauses.extend_from_slice(cs);
        self
    }
    /// `deviceptr(p)`: `p` is a device address (from acc_malloc or acc_deviceptr).
    pub fn deviceptr(mut self, p: *mut c_void, name: &'static CStr) -> Self {
        self.spec.clauses.push(Clause {
            kind: ClauseKind::DevicePtr,
            host: p,
            bytes: 0,
            name: name.as_ptr(),
            implicit: false,
        });
        self
    }
    pub fn num_gangs(mut self, n: u32) -> Self {
        self.spec.num_gangs = Some(n);
        self
    }
    pub fn num_workers(mut self, n: u32) -> Self {
        self.spec.num_workers = Some(n);
        self
    }
    pub fn vector_length(mut self, n: u32) -> Self {
        self.spec.vector_length = Some(n);
        self
    }
    /// `async(q)`; `async` without argument is `async_(acc_async_noval)` (-1).
    pub fn async_(mut self, q: i64) -> Self {
        self.spec.async_ = q;
        self
    }
    /// `wait(q...)`; an empty list is `wait` without argument.
    pub fn wait(mut self, qs: &[i64]) -> Self {
        self.spec.wait = Some(qs.to_vec());
        self
    }
    /// The line of the construct's end (closing brace or `end parallel`).
    pub fn end_line(mut self, line: u32) -> Self {
        self.spec.loc.end_line = line as i32;
        self
    }
    pub fn spec(&self) -> &ComputeSpec {
        &self.spec
    }
    /// Runs one kernel (a `parallel loop`).
    pub fn run(self, k: Kernel) {
        compute(&self.spec, std::slice::from_ref(&k))
    }
    /// Runs several kernels in one construct (a `kernels` region with several loops).
    pub fn run_all(self, ks: &[Kernel]) {
        compute(&self.spec, ks)
    }
}

/// `#pragma acc parallel` at `loc`.
pub fn parallel(loc: Loc) -> Compute {
    Compute::new(acc_construct_t::PARALLEL, loc)
}
/// `#pragma acc kernels` at `loc`.
pub fn kernels(loc: Loc) -> Compute {
    Compute::new(acc_construct_t::KERNELS, loc)
}
/// `#pragma acc serial` at `loc`.
pub fn serial(loc: Loc) -> Compute {
    Compute::new(acc_construct_t::SERIAL, loc)
}
