//! Device activity from CUPTI: what the GPU did, with device timestamps.
//!
//! OpenACC runtimes report what the host asked for; GCC's libgomp does not even report its
//! transfers of user data. When CUPTI is there (`ACCPROF_CUPTI=auto`, the default, or `on`),
//! libaccprof enables CUPTI's activity records for kernels, memcpys and memsets, and a callback
//! on the driver calls that issue them ([`calls`]), and writes each record as a device event
//! (kinds 1001-1003, docs/trace-format.md): device start and end on the trace's clock, bytes,
//! copy direction and memory kinds, stream, and the issuing host thread, the time of its call
//! and the host pointer of a copy. `accprof report` ties each one to the construct that was open
//! on that thread at that time.
//!
//! The launch callback is the costly one (about 0.6 us per launch on the H200, against a bare
//! collector), and runtimes that report launches through acc_prof (GCC, NVHPC, the shim) say
//! already who launched what: at the first such launch the launch callback is switched off
//! ([`runtime_reports_launches`]) and `accprof report` pairs later kernel records with the
//! runtime's launches of the same kernel name. Copies keep theirs: GCC reports none, and their
//! host pointers name the arrays.
//!
//! Rules kept here: CUPTI is loaded with dlopen and only looked for once recording starts; with
//! no CUPTI the program runs as before (`ACCPROF_CUPTI=on` says so in one line); nothing here
//! calls the OpenACC runtime; no panic crosses into CUPTI's C frames; buffers are delivered on
//! CUPTI's thread and flushed at exit, before the trace's footer.

pub mod calls;
pub mod clock;
pub mod ffi;
pub mod limits;
pub mod records;

use crate::recorder::message::DeviceBatch;
use crate::recorder::message::Message;
use crate::strings::StringCache;
use calls::{Call, CallTable, Class};
use ffi::{CallbackData, Cupti, CUPTI_SUCCESS};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// `ACCPROF_CUPTI`: `auto` uses CUPTI when it loads and starts and says nothing otherwise.
pub use crate::config::Switch as Mode;

/// Activity buffers handed to CUPTI: large enough that a busy GPU fills one every few hundred
/// milliseconds at most, not so large that many of them cost memory.
const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;

struct State {
    lib: Cupti,
    calls: CallTable,
    anchors: Mutex<clock::Anchors>,
    names: Mutex<StringCache>,
    records: AtomicU64,
    dropped: AtomicU64,
    /// Bit d: device d's limits were written.
    limits_written: AtomicU64,
}

static STATE: OnceLock<State> = OnceLock::new();
/// CUPTI's subscriber handle, for switching callbacks off later.
static SUBSCRIBER: std::sync::atomic::AtomicPtr<c_void> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
/// Set once the launch callback has been switched off.
static LAUNCH_CALLBACK_OFF: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// What the trace header records about device activity: `(key, value)` pairs.
pub type HeaderKeys = Vec<(String, String)>;

/// Loads and starts CUPTI according to `mode`. Returns the header keys when device activity is
/// being recorded.
pub fn start(mode: Mode) -> Option<HeaderKeys> {
    if mode == Mode::Off {
        return None;
    }
    let r = std::panic::catch_unwind(start_inner)
        .unwrap_or_else(|_| Err("CUPTI could not be started".into()));
    match r {
        Ok(keys) => Some(keys),
        Err(why) => {
            if mode == Mode::On {
                eprintln!("accprof: ACCPROF_CUPTI=on but {why}; recording without device times");
            }
            None
        }
    }
}

fn start_inner() -> Result<HeaderKeys, String> {
    let lib = ffi::load()?;
    let calls = CallTable::new(calls::names(lib.get_callback_name));
    let state = State {
        lib,
        calls,
        anchors: Mutex::new(clock::Anchors::default()),
        names: Mutex::new(StringCache::default()),
        records: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        limits_written: AtomicU64::new(0),
    };
    if STATE.set(state).is_err() {
        return Err("CUPTI was already started".into());
    }
    let s = STATE.get().ok_or("CUPTI state missing")?;
    let lib = &s.lib;
    let check = |what: &str, r: i32| {
        if r == CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what} failed: {}", lib.error(r)))
        }
    };
    // Before any kind is enabled, so that every record uses it.
    let monotonic = match lib.register_timestamp_callback {
        // SAFETY: a plain extern "C" function returning u64.
        Some(f) => (unsafe { f(monotonic_timestamp) }) == CUPTI_SUCCESS,
        None => false,
    };
    if !monotonic {
        anchor(s);
    }
    // SAFETY: the callbacks are extern "C" functions of the signatures CUPTI documents.
    check("cuptiActivityRegisterCallbacks", unsafe {
        (lib.activity_register_callbacks)(buffer_requested, buffer_completed)
    })?;
    // SAFETY: plain calls with CUPTI's enum values.
    unsafe {
        if (lib.activity_enable)(ffi::KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS {
            check(
                "enabling kernel records",
                (lib.activity_enable)(ffi::KIND_KERNEL),
            )?;
        }
        check(
            "enabling memcpy records",
            (lib.activity_enable)(ffi::KIND_MEMCPY),
        )?;
        check(
            "enabling memset records",
            (lib.activity_enable)(ffi::KIND_MEMSET),
        )?;
    }
    let mut sub: *mut c_void = std::ptr::null_mut();
    // SAFETY: CUPTI writes the subscriber handle; the callback has CUPTI's signature.
    check("cuptiSubscribe", unsafe {
        (lib.subscribe)(&mut sub, on_driver_call, std::ptr::null_mut())
    })?;
    SUBSCRIBER.store(sub, Ordering::Release);
    // The first context created is when the devices' limits are read (`limits`).
    // SAFETY: as below; a resource callback id every CUPTI has.
    unsafe {
        (lib.enable_callback)(
            1,
            sub,
            ffi::CB_DOMAIN_RESOURCE,
            ffi::CBID_RESOURCE_CONTEXT_CREATED,
        )
    };
    for cbid in s.calls.enabled() {
        // SAFETY: enabling a callback id CUPTI named (or a known one); failures for ids this
        // CUPTI does not have are harmless.
        unsafe { (lib.enable_callback)(1, sub, ffi::CB_DOMAIN_DRIVER_API, cbid) };
    }
    // `monotonic` is only known now; the state was published before enabling so that early
    // callbacks find it. Records are converted with the flag read at delivery.
    MONOTONIC.store(monotonic, Ordering::Release);
    ACTIVE.store(true, Ordering::Release);
    if !LAUNCH_CALLBACK_OFF.load(Ordering::Acquire) {
        crate::hot::set(crate::hot::LAUNCH_SWITCH, true);
    }
    Ok(vec![
        ("device_activity".into(), "cupti".into()),
        ("cupti_library".into(), lib.path.clone()),
        ("cupti_clock".into(), if monotonic { "monotonic (timestamp callback)".into() } else { "anchored to CLOCK_MONOTONIC".into() }),
        ("cupti_launch_calls".into(), "until the runtime reports a launch; later kernels are matched to the runtime's launches by name".into()),
    ])
}

static MONOTONIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Set once every kind and callback is enabled: device activity is being recorded.
static ACTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

unsafe extern "C" fn monotonic_timestamp() -> u64 {
    crate::clock::monotonic_ns()
}

/// Records a (CUPTI, monotonic) pair, bracketing CUPTI's read with two of ours.
fn anchor(s: &State) {
    let mut t = 0u64;
    let before = crate::clock::monotonic_ns();
    // SAFETY: CUPTI writes one u64.
    let ok = unsafe { (s.lib.get_timestamp)(&mut t) } == CUPTI_SUCCESS;
    let after = crate::clock::monotonic_ns();
    if ok {
        if let Ok(mut a) = s.anchors.lock() {
            a.push(t, before / 2 + after / 2);
        }
    }
}

/// Switches CUPTI's launch callback off, once: the runtime reports its launches through acc_prof.
/// Called by the hot path on an enqueue_launch start while the hot word's LAUNCH_SWITCH is set.
/// Kernel records from then on carry no issuing call. (Left to the collector, the switch came
/// only at its first sweep, 200 ms in: after all of a short solver loop.)
pub fn runtime_reports_launches() {
    if LAUNCH_CALLBACK_OFF.load(Ordering::Relaxed)
        || !active()
        || LAUNCH_CALLBACK_OFF.swap(true, Ordering::AcqRel)
    {
        return;
    }
    crate::hot::set(crate::hot::LAUNCH_SWITCH, false);
    let Some(s) = STATE.get() else { return };
    let sub = SUBSCRIBER.load(Ordering::Acquire);
    let _ = std::panic::catch_unwind(|| {
        for cbid in s.calls.launches() {
            // SAFETY: our subscriber and a callback id we enabled (or that this CUPTI lacks).
            unsafe { (s.lib.enable_callback)(0, sub, ffi::CB_DOMAIN_DRIVER_API, cbid) };
        }
    });
}

/// Whether device activity is being recorded.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Hands every buffered record, partly filled buffers included, to the collector now: every
/// second from the writer thread, and at exit before the final flush.
pub fn flush() {
    let Some(s) = STATE.get() else { return };
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: 1 = CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also incomplete buffers.
        unsafe { (s.lib.activity_flush_all)(1) };
    });
}

/// Records CUPTI dropped (its buffers were full) and records delivered, for the exit line.
pub fn counts() -> (u64, u64) {
    STATE.get().map_or((0, 0), |s| {
        (
            s.records.load(Ordering::Relaxed),
            s.dropped.load(Ordering::Relaxed),
        )
    })
}

/// The driver callback: notes who issued device work. Runs on the application's thread.
unsafe extern "C" fn on_driver_call(
    _user: *mut c_void,
    domain: u32,
    cbid: u32,
    cbdata: *const c_void,
) {
    let t0 = crate::self_time::begin();
    let _ = std::panic::catch_unwind(|| {
        let Some(s) = STATE.get() else { return };
        if domain == ffi::CB_DOMAIN_RESOURCE {
            if cbid == ffi::CBID_RESOURCE_CONTEXT_CREATED {
                limits::on_context_created();
            }
            return;
        }
        if domain != ffi::CB_DOMAIN_DRIVER_API || cbdata.is_null() {
            return;
        }
        let class = s.calls.class(cbid);
        if class == Class::Ignore {
            return;
        }
        // SAFETY: for the driver domain CUPTI passes a CUpti_CallbackData.
        let d = unsafe { &*(cbdata as *const CallbackData) };
        if d.callback_site != ffi::API_ENTER {
            return;
        }
        let (dst, src) = if class == Class::Copy1D {
            // SAFETY: a Copy1D function's parameters, per its class.
            unsafe { calls::copy_params(d.function_params) }
        } else {
            (None, None)
        };
        let call = Call {
            thread: crate::recorder::thread_id::current_thread_id(),
            host_ns: crate::clock::monotonic_ns(),
            src,
            dst,
            nvtx_range: crate::recorder::thread_id::current_nvtx_range(),
        };
        s.calls.note(d.correlation_id, call);
    });
    crate::self_time::end_driver(t0);
}

unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    let _ = std::panic::catch_unwind(|| {
        let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN)
            .expect("constant layout");
        // SAFETY: a non-zero-sized layout.
        let p = unsafe { std::alloc::alloc(layout) };
        // SAFETY: CUPTI passes valid out-pointers.
        unsafe {
            *buffer = p;
            *size = if p.is_null() { 0 } else { BUFFER_BYTES };
            *max_records = 0;
        }
    });
}

unsafe extern "C" fn buffer_completed(
    ctx: *mut c_void,
    stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(s) = STATE.get() {
            // SAFETY: CUPTI hands back a buffer we allocated, `valid` bytes of it filled.
            unsafe { deliver(s, ctx, stream, buffer, valid) };
        }
    });
    if !buffer.is_null() {
        let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN)
            .expect("constant layout");
        // SAFETY: allocated in buffer_requested with this layout.
        unsafe { std::alloc::dealloc(buffer, layout) };
    }
}

/// Writes the limits of `device` ([`limits`]) before its first kernel record, once.
fn device_limits(
    s: &State,
    device: u32,
    names: Option<&mut std::sync::MutexGuard<'_, StringCache>>,
    batch: &mut DeviceBatch,
) {
    if device >= limits::MAX_DEVICES {
        return;
    }
    let bit = 1u64 << device;
    if s.limits_written.load(Ordering::Acquire) & bit != 0 {
        return;
    }
    let (Some(text), Some(cache)) = (limits::text(device), names) else {
        return;
    };
    if s.limits_written.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
        return;
    }
    let Ok(text) = std::ffi::CString::new(text) else {
        return;
    };
    // SAFETY: a NUL-terminated string alive for the call; the cache confirms a pointer hit by
    // content, so a later string at the same address is never mistaken for this one.
    let Some(id) = (unsafe { cache.intern(text.as_ptr(), &mut batch.strings) }) else {
        return;
    };
    let mut e = accprof_trace::Event::new(
        accprof_trace::device::PROPERTIES,
        crate::clock::monotonic_ns(),
    );
    e.set_i64(accprof_trace::Field::DeviceNumber, i64::from(device));
    e.set(accprof_trace::Field::DeviceProperties, u64::from(id.0));
    batch.events.push(e);
}

/// Turns a completed buffer into device events and sends them to the collector.
unsafe fn deliver(s: &State, ctx: *mut c_void, stream: u32, buffer: *mut u8, valid: usize) {
    let monotonic = MONOTONIC.load(Ordering::Acquire);
    if !monotonic {
        anchor(s);
    }
    let anchors = if monotonic {
        None
    } else {
        s.anchors.lock().ok().map(|a| a.clone())
    };
    let to_ns = |t: u64| anchors.as_ref().map_or(t, |a| a.to_ns(t));
    let mut batch = DeviceBatch::default();
    let mut names = s.names.lock().ok();
    let end = buffer as usize + valid;
    let mut rec: *mut u8 = std::ptr::null_mut();
    // SAFETY: CUPTI walks its own buffer and points `rec` at each record inside it.
    while unsafe { (s.lib.activity_get_next_record)(buffer, valid, &mut rec) } == CUPTI_SUCCESS {
        if rec.is_null() || (rec as usize) < buffer as usize || rec as usize >= end {
            break;
        }
        // SAFETY: the record lies inside the valid part of the buffer.
        let bytes = unsafe {
            std::slice::from_raw_parts(rec, (end - rec as usize).min(records::MAX_PREFIX))
        };
        let Some(a) = records::parse(bytes) else {
            continue;
        };
        if let records::Activity::Kernel { device, .. } = a {
            device_limits(s, device, names.as_mut(), &mut batch);
        }
        let call = s.calls.take(a.correlation());
        let kernel_name = match (a, names.as_mut()) {
            (records::Activity::Kernel { name, .. }, Some(cache)) if !name.is_null() => {
                // SAFETY: CUPTI's kernel names are NUL-terminated and live as long as CUPTI.
                unsafe { cache.intern(name, &mut batch.strings) }.map(|id| id.0)
            }
            _ => None,
        };
        batch
            .events
            .push(a.to_event(call.as_ref(), to_ns, kernel_name));
    }
    let mut dropped = 0usize;
    // SAFETY: CUPTI writes the count for the buffer's context and stream.
    if unsafe { (s.lib.activity_get_num_dropped_records)(ctx, stream, &mut dropped) }
        == CUPTI_SUCCESS
        && dropped > 0
    {
        s.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
    }
    // Activities only: a device's limits are no record of what it did.
    let limits = batch
        .events
        .iter()
        .filter(|e| e.kind == accprof_trace::device::PROPERTIES)
        .count();
    s.records
        .fetch_add((batch.events.len() - limits) as u64, Ordering::Relaxed);
    if batch.events.is_empty() && batch.strings.is_empty() {
        return;
    }
    if let Some(rec) = crate::recorder::recorder() {
        let _ = rec.tx.send(Message::Device(batch));
    }
}
