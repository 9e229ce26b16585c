//! The runtime's global state: which device is selected, the initialised device (backend and
//! present table), each thread's default async queue, lazy initialisation with its events, and
//! shutdown.
//!
//! The initialised runtime is published through one atomic pointer, so the hot path (every
//! construct and API call) costs one load to find it. A runtime that is shut down is retired but
//! never freed: another thread may still hold a reference to it, and it holds little memory.

use crate::backend::{self, Backend, QueueId, ACC_DEVICE_EMULATED, SYNC};
use crate::error::{AccError, OrFatal, Result};
use crate::loc::Loc;
use crate::present::{Entry, PresentTable};
use crate::profiling::dispatch::{self, DataInfo, EvCtx};
use crate::profiling::{loader, registry};
use accprof_abi::{acc_construct_t, acc_device_t, acc_event_t, acc_query_fn};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};

pub use accprof_abi::{ACC_ASYNC_NOVAL, ACC_ASYNC_SYNC};

/// One operation's context: the runtime, its event context, and the queue it runs on.
#[derive(Clone, Copy)]
pub struct Op {
    pub rt: &'static Runtime,
    pub ctx: EvCtx,
    pub q: QueueId,
}

/// The operation of a directive or routine of kind `construct` at `loc` on the queue that
/// `async_` names (an error for an async argument that names none).
pub fn op_for(
    rt: &'static Runtime,
    construct: acc_construct_t,
    implicit: bool,
    loc: &Loc,
    async_: i64,
) -> Result<Op> {
    let q = rt.queue_of(async_)?;
    Ok(Op {
        rt,
        ctx: rt.ctx(construct, implicit, loc, async_, q),
        q,
    })
}

pub struct Runtime {
    pub backend: Box<dyn Backend>,
    pub device_type: acc_device_t,
    pub device_num: i32,
    pub present: Mutex<PresentTable>,
}

thread_local! {
    /// acc-default-async-var: the queue `acc_async_noval` means on this thread. The
    /// specification makes it an internal control variable of each thread
    /// (acc_set_default_async "for the current thread"), and it belongs to the thread, not to
    /// the device: it outlives a shutdown and a new initialisation. Initially acc_async_noval,
    /// which is a queue of its own (-1).
    static DEFAULT_ASYNC: Cell<i64> = const { Cell::new(ACC_ASYNC_NOVAL) };
}

/// This thread's default async queue (acc_get_default_async).
pub fn default_async() -> i64 {
    DEFAULT_ASYNC.with(Cell::get)
}

/// Sets this thread's default async queue (acc_set_default_async); the caller checks `a`.
pub fn set_default_async(a: i64) {
    DEFAULT_ASYNC.with(|d| d.set(a));
}

/// What the program selected before (or between) initialisations.
struct Selection {
    device_type: Option<acc_device_t>,
    device_num: Option<i32>,
}

static CURRENT: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static SELECTION: Mutex<Selection> = Mutex::new(Selection {
    device_type: None,
    device_num: None,
});
static ATEXIT: AtomicBool = AtomicBool::new(false);

fn selection() -> MutexGuard<'static, Selection> {
    SELECTION.lock().unwrap_or_else(|e| e.into_inner())
}

/// The device type named by `ACC_DEVICE_TYPE`, if set and known.
fn env_device_type() -> Option<acc_device_t> {
    let v = std::env::var("ACC_DEVICE_TYPE").ok()?;
    match v.trim().to_ascii_lowercase().as_str() {
        "nvidia" | "cuda" | "gpu" => Some(acc_device_t::NVIDIA),
        "emulated" | "host_nonshm" | "emu" => Some(ACC_DEVICE_EMULATED),
        "host" => Some(acc_device_t::HOST),
        "not_host" | "default" | "" => Some(acc_device_t::NOT_HOST),
        _ => {
            crate::env::report_once(
                "ACC_DEVICE_TYPE",
                &v,
                "no device type accshim knows (nvidia, emulated, not_host, host)",
            );
            None
        }
    }
}

fn env_device_num() -> Option<i32> {
    crate::env::int("ACC_DEVICE_NUM")
}

/// The device number used when the program selects none: ACC_DEVICE_NUM, else 0.
pub fn default_num() -> i32 {
    env_device_num().unwrap_or(0)
}

/// The device type a selection resolves to (none, default and not_host pick CUDA when present).
pub fn resolve_type(t: acc_device_t) -> acc_device_t {
    match t {
        acc_device_t::NONE
        | acc_device_t::DEFAULT
        | acc_device_t::NOT_HOST
        | acc_device_t::CURRENT => {
            if backend::cuda::Cuda::count() > 0 {
                acc_device_t::NVIDIA
            } else {
                ACC_DEVICE_EMULATED
            }
        }
        t => t,
    }
}

/// How many devices of type `t` there are.
pub fn num_devices(t: acc_device_t) -> i32 {
    match resolve_type(t) {
        acc_device_t::NVIDIA => backend::cuda::Cuda::count(),
        ACC_DEVICE_EMULATED => 1,
        _ => 0,
    }
}

/// Records a device type selection (acc_set_device_type); takes effect at the next init.
pub fn select_type(t: acc_device_t) -> Result<()> {
    let r = resolve_type(t);
    if num_devices(r) == 0 {
        return Err(AccError::DeviceUnavailable(format!(
            "no device of type {} available",
            type_name(t)
        )));
    }
    let mut sel = selection();
    sel.device_type = Some(r);
    Ok(())
}

/// Records a device number selection (acc_set_device_num); takes effect at the next init.
/// A negative number reverts to the default (OpenACC 3.x: "the runtime will revert to its
/// default behavior"): ACC_DEVICE_NUM, else 0, as if no number had been selected; the type is
/// selected all the same.
pub fn select_num(n: i32, t: acc_device_t) -> Result<()> {
    if n < 0 {
        select_type(t)?;
        selection().device_num = None;
        return Ok(());
    }
    let r = resolve_type(t);
    let count = num_devices(r);
    if n < 0 || n >= count {
        return Err(AccError::DeviceUnavailable(format!(
            "device number {n} of type {} (there are {count})",
            type_name(r)
        )));
    }
    let mut sel = selection();
    sel.device_type = Some(r);
    sel.device_num = Some(n);
    Ok(())
}

pub fn type_name(t: acc_device_t) -> String {
    if t == ACC_DEVICE_EMULATED {
        return "acc_device_host_nonshm (emulated)".into();
    }
    t.name().map_or_else(|| format!("{}", t.0), str::to_owned)
}

/// The selected (not necessarily initialised) device type and number.
pub fn selected() -> (acc_device_t, i32) {
    if let Some(rt) = current() {
        return (rt.device_type, rt.device_num);
    }
    let sel = selection();
    let t = sel
        .device_type
        .or_else(env_device_type)
        .map_or_else(|| resolve_type(acc_device_t::DEFAULT), resolve_type);
    (t, sel.device_num.unwrap_or_else(default_num))
}

/// The initialised runtime, if any.
#[inline(always)]
pub fn current() -> Option<&'static Runtime> {
    let p = CURRENT.load(Ordering::Acquire);
    if p.is_null() {
        None
    } else {
        // SAFETY: published runtimes are leaked and never freed.
        Some(unsafe { &*p })
    }
}

/// The runtime, initialising the device first if needed. `construct` and `loc` are the operation
/// that triggered the initialisation: its device_init events carry them (implicit = 1).
#[inline]
pub fn get(construct: acc_construct_t, loc: &Loc) -> &'static Runtime {
    match current() {
        Some(rt) => rt,
        None => init(construct, true, loc).or_fatal("device initialisation", loc),
    }
}

/// Serialises initialisation and shutdown. Not held by readers of the selection, so a tool's
/// callback may call acc_get_device_type and friends during device_init or device_shutdown.
/// Held while device_init_start/end and device_shutdown_start are dispatched, so this thread's
/// flags below keep those callbacks from taking it again (a std Mutex is not reentrant: that
/// would hang the program inside acc_shutdown or at exit).
static INIT_LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread is inside init_locked: a callback that needs the device cannot have it yet.
    static INITIALISING: Cell<bool> = const { Cell::new(false) };
    /// This thread holds INIT_LOCK in shutdown (device_shutdown_start is being dispatched or
    /// the queues drained): a callback's acc_shutdown is ignored rather than deadlocking.
    static SHUTTING_DOWN: Cell<bool> = const { Cell::new(false) };
}

/// Initialises the selected device (no-op if already initialised).
pub fn init(construct: acc_construct_t, implicit: bool, loc: &Loc) -> Result<&'static Runtime> {
    // Published: nothing to do, and no lock to take. The callbacks of device_init_end and
    // device_shutdown_start run on a thread that holds INIT_LOCK, with the device published.
    if let Some(rt) = current() {
        return Ok(rt);
    }
    if INITIALISING.with(|f| f.get()) {
        return Err(AccError::DeviceUnavailable(
            "a tool's device_init_start callback needs the device, which is still being initialised".into(),
        ));
    }
    if SHUTTING_DOWN.with(|f| f.get()) {
        return Err(AccError::DeviceUnavailable(
            "the device is needed while it is being shut down".into(),
        ));
    }
    let _init = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = current() {
        return Ok(rt);
    }
    let _flag = ThreadFlag::set(&INITIALISING);
    init_locked(construct, implicit, loc)
}

/// Sets one of this thread's lifecycle flags until dropped, also when a panic unwinds.
struct ThreadFlag(&'static std::thread::LocalKey<Cell<bool>>);

impl ThreadFlag {
    fn set(key: &'static std::thread::LocalKey<Cell<bool>>) -> ThreadFlag {
        key.with(|f| f.set(true));
        ThreadFlag(key)
    }
}

impl Drop for ThreadFlag {
    fn drop(&mut self) {
        self.0.with(|f| f.set(false));
    }
}

fn init_locked(construct: acc_construct_t, implicit: bool, loc: &Loc) -> Result<&'static Runtime> {
    let (t, num) = {
        let mut sel = selection();
        let t = sel
            .device_type
            .or_else(env_device_type)
            .map_or_else(|| resolve_type(acc_device_t::DEFAULT), resolve_type);
        let num = sel.device_num.unwrap_or_else(default_num);
        sel.device_type = Some(t);
        sel.device_num = Some(num);
        (t, num)
    };
    // Tools first, so that they see device_init.
    loader::load_tools(TOOL_API);
    let ctx = EvCtx {
        construct,
        implicit,
        loc: *loc,
        async_: ACC_ASYNC_SYNC as isize,
        async_queue: ACC_ASYNC_SYNC as isize,
        device_type: t,
        device_number: num,
        api: dispatch::ApiHandles::NONE,
        thread_id: dispatch::thread_id(),
    };
    let ti = dispatch::other_start(acc_event_t::DEVICE_INIT_START, &ctx);
    let backend: Result<Box<dyn Backend>> = match t {
        acc_device_t::NVIDIA => backend::cuda::open_boxed(num),
        ACC_DEVICE_EMULATED => {
            if num != 0 {
                Err(AccError::DeviceUnavailable(format!("emulated device number {num} (there is 1)")))
            } else {
                Ok(Box::new(backend::emulated::Emulated::new()))
            }
        }
        acc_device_t::HOST => Err(AccError::DeviceUnavailable(
            "acc_device_host (shared memory) is not provided by accshim; use ACC_DEVICE_TYPE=emulated".into(),
        )),
        other => Err(AccError::DeviceUnavailable(format!("device type {}", type_name(other)))),
    };
    let backend = backend?;
    if !crate::env::flag("ACCSHIM_QUIET") {
        eprintln!("accshim: using {}", backend.describe());
    }
    let rt: &'static Runtime = Box::leak(Box::new(Runtime {
        device_type: t,
        device_num: num,
        present: Mutex::new(PresentTable::new()),
        backend,
    }));
    // The program's `acc declare` globals are present from the start, as when libgomp loads
    // the program's image.
    crate::goacc::globals::load(&*rt.backend, t, &mut rt.table())?;
    let mut end_ctx = ctx;
    end_ctx.api = rt.backend.handles(None);
    CURRENT.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    crate::fork::on_fork(drain_before_fork, queue_workers_in_child);
    crate::check::start(
        t == crate::backend::ACC_DEVICE_EMULATED,
        crate::backend::emulated::in_kernel,
    );
    dispatch::other_end(acc_event_t::DEVICE_INIT_END, &end_ctx, ti);
    if !ATEXIT.swap(true, Ordering::AcqRel) {
        // Registered after the tools' own registration, so it runs before their atexit
        // handlers and they still see runtime_shutdown.
        // SAFETY: at_exit is an extern "C" fn with no arguments.
        unsafe { libc::atexit(at_exit) };
    }
    Ok(rt)
}

/// At program exit, other threads may still be inside constructs (main returned while they
/// ran): the device is not released under them (their data stays present and their memory
/// valid until the process ends), and the shutdown is only told: device_shutdown start, the
/// queues drained, delete and free events for the data still present, device_shutdown end and
/// runtime_shutdown, so that a tool sees the run end as after acc_shutdown. After a runtime
/// error the program ends with nothing more done: the device may be mid-operation.
/// Before a fork: the device's queued work done, so that no queue worker is inside a job.
fn drain_before_fork() {
    if let Some(rt) = current() {
        for q in rt.backend.queues() {
            let _ = rt.backend.wait(q);
        }
    }
}

/// In a fork's child: the queue workers are not there.
fn queue_workers_in_child() {
    if let Some(rt) = current() {
        rt.backend.after_fork_in_child();
    }
}

extern "C" fn at_exit() {
    if crate::ending::start_exit() || crate::ending::reporting() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let told = tell_shutdown(acc_construct_t::RUNTIME_API, &Loc::UNKNOWN);
        if crate::check::on() {
            check_at_exit();
        }
        let Some(mut ctx) = told else {
            return;
        };
        dispatch::other_end(acc_event_t::DEVICE_SHUTDOWN_END, &ctx.0, ctx.1);
        ctx.0.api = dispatch::ApiHandles::NONE;
        dispatch::other_point(acc_event_t::RUNTIME_SHUTDOWN, &ctx.0);
    });
}

/// The exit's part of a shutdown under INIT_LOCK: device_shutdown_start, the queues drained,
/// and the delete and free events of the data still present, which stays.
fn tell_shutdown(construct: acc_construct_t, loc: &Loc) -> Option<(EvCtx, dispatch::ToolInfo)> {
    let _init = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let rt = current()?;
    let _flag = ThreadFlag::set(&SHUTTING_DOWN);
    let mut ctx = rt.ctx(construct, false, loc, ACC_ASYNC_SYNC, SYNC);
    ctx.api = rt.backend.handles(None);
    let ti = dispatch::other_start(acc_event_t::DEVICE_SHUTDOWN_START, &ctx);
    for q in rt.backend.queues() {
        let _ = rt.backend.wait(q);
    }
    let present: Vec<Entry> = rt.table().entries().cloned().collect();
    for e in present {
        let d = leftover_info(&e);
        dispatch::data_point(acc_event_t::DELETE, &ctx, &d);
        if !e.mapped {
            dispatch::data_point(acc_event_t::FREE, &ctx, &d);
        }
    }
    Some((ctx, ti))
}

/// The checker's end: what the program left mapped, then its report.
fn check_at_exit() {
    let Some(rt) = current() else {
        crate::check::hooks::at_exit(&[]);
        return;
    };
    let table = rt.table();
    let descriptors: std::collections::HashSet<usize> =
        table.entries().map(|e| e.descriptor).collect();
    let leftovers: Vec<crate::check::hooks::Leftover> = table
        .entries()
        .map(|e| crate::check::hooks::Leftover {
            host: e.host,
            bytes: e.bytes,
            dynamic: e.dynamic,
            incidental: e.mapped || e.declared || e.bytes <= 8 || descriptors.contains(&e.host),
        })
        .collect();
    drop(table);
    crate::check::hooks::at_exit(&leftovers);
}

fn leftover_info(e: &Entry) -> DataInfo {
    DataInfo {
        var_name: e.name,
        bytes: e.bytes,
        host_ptr: e.host as *const c_void,
        device_ptr: e.dev as usize as *const c_void,
    }
}

/// Shuts the device down: waits for all queues, deletes and frees the data left (with their
/// events), dispatches device_shutdown start/end and runtime_shutdown. A later use initialises
/// again.
///
/// Callbacks may use the runtime: during device_shutdown_start the device is still there (it is
/// unpublished only after the start event and the queues' drain), and device_shutdown_end and
/// runtime_shutdown are dispatched after INIT_LOCK is released, so a routine that needs the
/// device there initialises it again instead of deadlocking. An acc_shutdown from a callback
/// during initialisation or during device_shutdown_start is ignored: the lock is held there.
pub fn shutdown(construct: acc_construct_t, loc: &Loc) {
    shutdown_if(construct, loc, |_| true)
}

/// [`shutdown`] of the device in use if `names` says the caller named it (checked under the
/// lock, so that it is the device that is shut down).
fn shutdown_if(construct: acc_construct_t, loc: &Loc, names: impl Fn(&Runtime) -> bool) {
    if INITIALISING.with(|f| f.get()) || SHUTTING_DOWN.with(|f| f.get()) {
        eprintln!("accshim: acc_shutdown called by a callback during device initialisation or shutdown is ignored");
        return;
    }
    let Some(mut ctx) = shut_down_device(construct, loc, names) else {
        return;
    };
    dispatch::other_end(acc_event_t::DEVICE_SHUTDOWN_END, &ctx.0, ctx.1);
    ctx.0.api = dispatch::ApiHandles::NONE;
    dispatch::other_point(acc_event_t::RUNTIME_SHUTDOWN, &ctx.0);
}

/// Whether `t` is one of the device types of openacc.h (GCC's numbering, and the emulated
/// device's).
pub fn known_type(t: acc_device_t) -> bool {
    t == ACC_DEVICE_EMULATED || t.name().is_some()
}

/// Whether `t` is a generic type: acc_device_default, acc_device_not_host and
/// acc_device_current name the device in use, and so does acc_device_none, which the runtime
/// reads as the default type everywhere: it runs one device at a time, and never the host.
fn generic(t: acc_device_t) -> bool {
    matches!(
        t,
        acc_device_t::NONE | acc_device_t::DEFAULT | acc_device_t::NOT_HOST | acc_device_t::CURRENT
    )
}

/// Whether the device type argument `t` of acc_shutdown names a device of type `running`.
fn names_type(t: acc_device_t, running: acc_device_t) -> bool {
    generic(t) || t == running
}

/// acc_shutdown(t): shuts down the device in use if it is of type `t`.
///
/// A type with no device initialised (acc_device_nvidia while the emulated device runs,
/// acc_device_host, or any type before initialisation) has nothing to disconnect from, and the
/// call does nothing: the specification says the routine disconnects the program from the
/// devices of that type, and gives no error for there being none. (GCC's libgomp ends the
/// program there with "no device initialized", or "device type ... not supported"; the device
/// in use and its data are never touched.) A value that is no device type is an error.
pub fn shutdown_type(t: acc_device_t, construct: acc_construct_t, loc: &Loc) -> Result<()> {
    if !known_type(t) {
        return Err(AccError::DeviceUnavailable(format!(
            "unknown device type {}",
            t.0
        )));
    }
    shutdown_if(construct, loc, |rt| names_type(t, rt.device_type));
    Ok(())
}

/// The device type a routine's type argument names together with a device number: the
/// generic types name the type of the device in use, or the default type before there is one.
fn named_type(t: acc_device_t) -> acc_device_t {
    if generic(t) {
        current().map_or_else(|| resolve_type(t), |rt| rt.device_type)
    } else {
        t
    }
}

/// The type that (`n`, `t`) names, or acc_error_device_unavailable if `n` is not a device
/// number of that type (the specification's error for acc_init_device and acc_shutdown_device).
fn named_device(n: i32, t: acc_device_t) -> Result<acc_device_t> {
    if !known_type(t) {
        return Err(AccError::DeviceUnavailable(format!(
            "unknown device type {}",
            t.0
        )));
    }
    let named = named_type(t);
    let count = num_devices(named);
    if n < 0 || n >= count {
        return Err(AccError::DeviceUnavailable(format!(
            "device number {n} of type {} (there are {count})",
            type_name(named)
        )));
    }
    Ok(named)
}

/// The error for a device other than the one in use: the runtime runs one device at a time.
fn other_device_in_use(rt: &Runtime, n: i32, t: acc_device_t) -> AccError {
    AccError::DeviceUnavailable(format!(
        "device number {n} of type {}: device number {} of type {} is in use, and accshim runs one device at a time (acc_shutdown it first)",
        type_name(t),
        rt.device_num,
        type_name(rt.device_type)
    ))
}

/// acc_init_device(n, t) (OpenACC 3.2): initialises device `n` of type `t`, selecting it (as
/// acc_init selects its type). Nothing to do if it is the device in use. A different device in
/// use is an error rather than a silent no-op or a shutdown of the one in use (and its data):
/// the runtime cannot run two at once.
pub fn init_device(n: i32, t: acc_device_t, construct: acc_construct_t, loc: &Loc) -> Result<()> {
    let named = named_device(n, t)?;
    if current().is_none() {
        select_num(n, named)?;
    }
    // Another thread may initialise a device between the check and this call: compare after.
    let rt = init(construct, false, loc)?;
    if rt.device_type != named || rt.device_num != n {
        return Err(other_device_in_use(rt, n, named));
    }
    Ok(())
}

/// acc_shutdown_device(n, t) (OpenACC 3.2): shuts down device `n` of type `t` if it is the one
/// in use; nothing otherwise (as [`shutdown_type`] for a type not in use).
pub fn shutdown_device(
    n: i32,
    t: acc_device_t,
    construct: acc_construct_t,
    loc: &Loc,
) -> Result<()> {
    let named = named_device(n, t)?;
    shutdown_if(construct, loc, |rt| {
        rt.device_type == named && rt.device_num == n
    });
    Ok(())
}

/// The part of [`shutdown`] under INIT_LOCK: dispatches device_shutdown_start, drains and
/// releases the device. Returns the end event's context and the start's tool_info, or None if
/// no device was initialised or `names` does not name it.
fn shut_down_device(
    construct: acc_construct_t,
    loc: &Loc,
    names: impl Fn(&Runtime) -> bool,
) -> Option<(EvCtx, dispatch::ToolInfo)> {
    let _init = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let rt = current().filter(|rt| names(rt))?;
    let _flag = ThreadFlag::set(&SHUTTING_DOWN);
    let mut ctx = rt.ctx(construct, false, loc, ACC_ASYNC_SYNC, SYNC);
    ctx.api = rt.backend.handles(None);
    let ti = dispatch::other_start(acc_event_t::DEVICE_SHUTDOWN_START, &ctx);
    for q in rt.backend.queues() {
        let _ = rt.backend.wait(q);
    }
    let leftovers = rt.table().drain();
    release_leftovers(rt, &ctx, leftovers);
    // Other threads stop finding the device here; one that needs it now waits on INIT_LOCK and
    // initialises it again once this shutdown is done.
    CURRENT.store(std::ptr::null_mut(), Ordering::Release);
    rt.backend.shutdown();
    Some((ctx, ti))
}

/// Removes the data still present at shutdown as a data exit would (the specification:
/// shutdown "effectively sets structured and dynamic reference counters to zero"): a delete
/// event for each entry, and the free of its device memory with a free event unless the
/// program owns that memory (acc_map_data), so that a tool balancing alloc against free sees
/// no leak. Called with INIT_LOCK held and this thread's SHUTTING_DOWN set, the device still
/// published and the present table unlocked: a callback may use the device, and its
/// acc_shutdown is ignored instead of deadlocking.
fn release_leftovers(rt: &Runtime, ctx: &EvCtx, entries: Vec<Entry>) {
    for e in entries {
        let d = leftover_info(&e);
        dispatch::data_point(acc_event_t::DELETE, ctx, &d);
        if let Some(a) = e.release_allocation() {
            if rt.backend.free(SYNC, a.dev).is_ok() {
                let d = DataInfo {
                    host_ptr: a.host as *const c_void,
                    bytes: a.bytes,
                    device_ptr: a.dev as usize as *const c_void,
                    ..d
                };
                dispatch::data_point(acc_event_t::FREE, ctx, &d);
            }
        }
    }
}

impl Runtime {
    /// The event context of an operation on queue `q` (async value `async_` as written).
    #[inline]
    pub fn ctx(
        &self,
        construct: acc_construct_t,
        implicit: bool,
        loc: &Loc,
        async_: i64,
        q: QueueId,
    ) -> EvCtx {
        EvCtx {
            construct,
            implicit,
            loc: *loc,
            async_: async_ as isize,
            async_queue: q as isize,
            device_type: self.device_type,
            device_number: self.device_num,
            // Only look the handles up (a map access on CUDA) when a tool listens.
            api: if dispatch::enabled() {
                self.backend.handles(Some(q))
            } else {
                dispatch::ApiHandles::NONE
            },
            thread_id: if dispatch::enabled() {
                dispatch::thread_id()
            } else {
                -1
            },
        }
    }

    /// The queue an async argument means: acc_async_sync is the synchronous queue,
    /// acc_async_noval the calling thread's default async queue, n >= 0 queue n.
    pub fn queue_of(&self, async_: i64) -> Result<QueueId> {
        match async_ {
            ACC_ASYNC_SYNC => Ok(SYNC),
            ACC_ASYNC_NOVAL => Ok(default_async()),
            n if n >= 0 => Ok(n),
            n => Err(AccError::InvalidAsync(n)),
        }
    }

    pub fn table(&self) -> MutexGuard<'_, PresentTable> {
        self.present.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a tool's acc_register_library is given.
const TOOL_API: loader::ToolApi = loader::ToolApi {
    register: Some(registry::c_register),
    unregister: Some(registry::c_unregister),
    lookup: Some(tool_lookup),
};

/// `acc_prof_lookup`: the runtime-specific queries a tool may ask for by name. The shim offers
/// the CUDA handle getters, so that a tool can reach the device's native context and streams.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn tool_lookup(name: *const c_char) -> acc_query_fn {
    crate::error::guard("acc_prof_lookup", || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the tool passes a NUL-terminated name.
        let name = unsafe { CStr::from_ptr(name) }.to_bytes();
        let f: *const () = match name {
            b"acc_get_cuda_stream" => cuda_stream as *const (),
            b"acc_get_current_cuda_context" => current_cuda_context as *const (),
            b"acc_get_current_cuda_device" => current_cuda_device as *const (),
            _ => return None,
        };
        // SAFETY: a function pointer as acc_query_fn; the tool casts it back to the named
        // routine's real type, which it has.
        Some(unsafe { std::mem::transmute::<*const (), unsafe extern "C" fn()>(f) })
    })
}

/// `acc_get_cuda_stream`: the native stream of async queue `a` (NULL without one).
pub extern "C" fn cuda_stream(a: c_int) -> *mut c_void {
    crate::error::guard("acc_get_cuda_stream", || {
        let rt = get(acc_construct_t::RUNTIME_API, &Loc::UNKNOWN);
        rt.queue_of(a as i64)
            .map_or(std::ptr::null_mut(), |q| rt.backend.native_stream(q))
    })
}

/// `acc_get_current_cuda_device`: the CUdevice in use (NULL without one).
pub extern "C" fn current_cuda_device() -> *mut c_void {
    crate::error::guard("acc_get_current_cuda_device", || {
        current().map_or(std::ptr::null_mut(), |rt| {
            rt.backend.handles(None).device as *mut c_void
        })
    })
}

/// `acc_get_current_cuda_context`: the CUcontext in use (NULL without one).
pub extern "C" fn current_cuda_context() -> *mut c_void {
    crate::error::guard("acc_get_current_cuda_context", || {
        current().map_or(std::ptr::null_mut(), |rt| {
            rt.backend.handles(None).context as *mut c_void
        })
    })
}

/// Checks an async argument without a runtime (acc_async_test before init).
pub fn check_async(a: i64) -> Result<()> {
    if a >= ACC_ASYNC_SYNC {
        Ok(())
    } else {
        Err(AccError::InvalidAsync(a))
    }
}
