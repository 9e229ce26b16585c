//! The OpenACC runtime library routines (specification chapter 3) with their C names and
//! signatures. Data routines dispatch the same events as the directives (src/sequence.rs), with
//! parent_construct = acc_construct_runtime_api: enter_data start/end around acc_copyin and
//! acc_create, exit_data start/end around acc_copyout and acc_delete, update start/end around
//! acc_update_*, and alloc/create/upload/download/delete/free inside.

use super::guard;
use crate::backend::SYNC;
use crate::data::{self, Clause, ClauseKind, Op};
use crate::error::{AccError, OrFatal, Result};
use crate::loc::Loc;
use crate::present::Lookup;
use crate::profiling::dispatch::{self, DataInfo};
use crate::runtime::{self, ACC_ASYNC_SYNC};
use crate::sequence::{self, DataDirective, WaitClause};
use accprof_abi::{acc_construct_t, acc_device_t, acc_event_t};
use std::ffi::{c_char, c_int, c_void};

const API: acc_construct_t = acc_construct_t::RUNTIME_API;
const NOWHERE: Loc = Loc::UNKNOWN;

fn op(async_: c_int) -> Result<Op> {
    let rt = runtime::get(API, &NOWHERE);
    let q = rt.queue_of(async_ as i64)?;
    Ok(Op {
        rt,
        ctx: rt.ctx(API, false, &NOWHERE, async_ as i64, q),
        q,
    })
}

fn clause(kind: ClauseKind, h: *mut c_void, bytes: usize) -> Clause {
    Clause {
        kind,
        host: h,
        bytes,
        name: std::ptr::null(),
        implicit: false,
    }
}

fn run<T>(what: &str, f: impl FnOnce() -> Result<T>) -> T {
    guard(what, || f().or_fatal(what, &NOWHERE))
}

// ----- devices -----

#[no_mangle]
pub extern "C" fn acc_get_num_devices(t: acc_device_t) -> c_int {
    guard("acc_get_num_devices", || runtime::num_devices(t))
}

#[no_mangle]
pub extern "C" fn acc_set_device_type(t: acc_device_t) {
    run("acc_set_device_type", || {
        if let Some(rt) = runtime::current() {
            if runtime::resolve_type(t) != rt.device_type {
                // Switching device type: shut the current one down first, like GCC does.
                runtime::shutdown(API, &NOWHERE);
            }
        }
        runtime::select_type(t)
    })
}

#[no_mangle]
pub extern "C" fn acc_get_device_type() -> acc_device_t {
    guard("acc_get_device_type", || runtime::selected().0)
}

#[no_mangle]
pub extern "C" fn acc_set_device_num(n: c_int, t: acc_device_t) {
    run("acc_set_device_num", || {
        // A negative number means the default one.
        let wanted = if n < 0 { runtime::default_num() } else { n };
        if let Some(rt) = runtime::current() {
            if rt.device_num != wanted || runtime::resolve_type(t) != rt.device_type {
                runtime::shutdown(API, &NOWHERE);
            }
        }
        runtime::select_num(n, t)
    })
}

#[no_mangle]
pub extern "C" fn acc_get_device_num(t: acc_device_t) -> c_int {
    guard("acc_get_device_num", || {
        let (cur, n) = runtime::selected();
        if runtime::resolve_type(t) == cur {
            n
        } else {
            0
        }
    })
}

/// acc_device_property_t values (GCC's numbering).
const PROP_MEMORY: c_int = 1;
const PROP_FREE_MEMORY: c_int = 2;
const PROP_NAME: c_int = 0x10001;
const PROP_VENDOR: c_int = 0x10002;
const PROP_DRIVER: c_int = 0x10003;

fn props(n: c_int, t: acc_device_t) -> Option<crate::backend::Properties> {
    let (cur, num) = runtime::selected();
    if runtime::resolve_type(t) != cur || n != num {
        return None;
    }
    Some(runtime::get(API, &NOWHERE).backend.properties())
}

#[no_mangle]
pub extern "C" fn acc_get_property(n: c_int, t: acc_device_t, p: c_int) -> usize {
    guard("acc_get_property", || {
        let Some(pr) = props(n, t) else { return 0 };
        match p {
            PROP_MEMORY => pr.memory,
            PROP_FREE_MEMORY => pr.free_memory,
            _ => 0,
        }
    })
}

#[no_mangle]
pub extern "C" fn acc_get_property_string(n: c_int, t: acc_device_t, p: c_int) -> *const c_char {
    guard("acc_get_property_string", || {
        let Some(pr) = props(n, t) else {
            return std::ptr::null();
        };
        let s = match p {
            PROP_NAME => pr.name,
            PROP_VENDOR => pr.vendor,
            PROP_DRIVER => pr.driver,
            _ => return std::ptr::null(),
        };
        crate::loc::intern(&s).as_ptr()
    })
}

#[no_mangle]
pub extern "C" fn acc_init(t: acc_device_t) {
    run("acc_init", || {
        if runtime::current().is_none() {
            runtime::select_type(t)?;
        }
        runtime::init(API, false, &NOWHERE).map(|_| ())
    })
}

#[no_mangle]
pub extern "C" fn acc_shutdown(t: acc_device_t) {
    run("acc_shutdown", || runtime::shutdown_type(t, API, &NOWHERE))
}

#[no_mangle]
pub extern "C" fn acc_init_device(n: c_int, t: acc_device_t) {
    run("acc_init_device", || {
        runtime::init_device(n, t, API, &NOWHERE)
    })
}

#[no_mangle]
pub extern "C" fn acc_shutdown_device(n: c_int, t: acc_device_t) {
    run("acc_shutdown_device", || {
        runtime::shutdown_device(n, t, API, &NOWHERE)
    })
}

/// Whether the caller runs on a device of type `t`. Host code: true for acc_device_host (and
/// none, as GCC's). A kernel of the emulated device is a host function, but it is device code:
/// there, true for acc_device_not_host and the emulated device's type, false for the host (as
/// GCC's answers in code offloaded to a device).
#[no_mangle]
pub extern "C" fn acc_on_device(t: acc_device_t) -> c_int {
    let on_device = crate::backend::emulated::in_kernel();
    c_int::from(if on_device {
        t == acc_device_t::NOT_HOST || t == crate::backend::ACC_DEVICE_EMULATED
    } else {
        matches!(t, acc_device_t::HOST | acc_device_t::NONE)
    })
}

// ----- async queues -----

#[no_mangle]
pub extern "C" fn acc_async_test(a: c_int) -> c_int {
    run("acc_async_test", || {
        runtime::check_async(a as i64)?;
        let Some(rt) = runtime::current() else {
            return Ok(1);
        };
        Ok(c_int::from(rt.backend.test(rt.queue_of(a as i64)?)))
    })
}

#[no_mangle]
pub extern "C" fn acc_async_test_all() -> c_int {
    guard("acc_async_test_all", || {
        let Some(rt) = runtime::current() else {
            return 1;
        };
        c_int::from(rt.backend.queues().into_iter().all(|q| rt.backend.test(q)))
    })
}

#[no_mangle]
pub extern "C" fn acc_wait(a: c_int) {
    run("acc_wait", || {
        runtime::check_async(a as i64)?;
        let rt = runtime::get(API, &NOWHERE);
        sequence::wait_on(rt, API, false, &NOWHERE, Some(&[a as i64]), ACC_ASYNC_SYNC)
    })
}

#[no_mangle]
pub extern "C" fn acc_async_wait(a: c_int) {
    acc_wait(a)
}

#[no_mangle]
pub extern "C" fn acc_wait_async(a: c_int, on: c_int) {
    run("acc_wait_async", || {
        runtime::check_async(a as i64)?;
        let rt = runtime::get(API, &NOWHERE);
        sequence::wait_on(rt, API, false, &NOWHERE, Some(&[a as i64]), on as i64)
    })
}

#[no_mangle]
pub extern "C" fn acc_wait_all() {
    run("acc_wait_all", || {
        let Some(rt) = runtime::current() else {
            return Ok(());
        };
        sequence::wait_on(rt, API, false, &NOWHERE, None, ACC_ASYNC_SYNC)
    })
}

#[no_mangle]
pub extern "C" fn acc_async_wait_all() {
    acc_wait_all()
}

#[no_mangle]
pub extern "C" fn acc_wait_all_async(on: c_int) {
    run("acc_wait_all_async", || {
        let rt = runtime::get(API, &NOWHERE);
        sequence::wait_on(rt, API, false, &NOWHERE, None, on as i64)
    })
}

#[no_mangle]
pub extern "C" fn acc_get_default_async() -> c_int {
    guard("acc_get_default_async", || {
        runtime::default_async() as c_int
    })
}

#[no_mangle]
pub extern "C" fn acc_set_default_async(a: c_int) {
    run("acc_set_default_async", || {
        let a = a as i64;
        // Any async argument will do (the specification asks for "a valid async-argument").
        // acc_async_sync makes async-without-a-queue work synchronous, as in GCC.
        runtime::check_async(a)?;
        // This thread's value, kept outside the device: setting it needs no initialisation.
        runtime::set_default_async(a);
        Ok(())
    })
}

// ----- memory -----

#[no_mangle]
pub extern "C" fn acc_malloc(bytes: usize) -> *mut c_void {
    guard("acc_malloc", || {
        // No memory, no pointer (GCC returns NULL too, before initialising anything): a unique
        // non-NULL address for nothing would have to be freed, and a tool would see an alloc
        // of 0 bytes.
        if bytes == 0 {
            return std::ptr::null_mut();
        }
        let Ok(op) = op(ACC_ASYNC_SYNC as c_int) else {
            return std::ptr::null_mut();
        };
        match op.rt.backend.alloc(bytes) {
            Ok(dev) => {
                let d = DataInfo {
                    var_name: std::ptr::null(),
                    bytes,
                    host_ptr: std::ptr::null(),
                    device_ptr: dev as usize as *const c_void,
                };
                dispatch::data_point(acc_event_t::ALLOC, &op.ctx, &d);
                dev as usize as *mut c_void
            }
            // The specification: acc_malloc returns NULL when it cannot allocate.
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// acc_free of device memory that host data is still mapped to is an error (GCC refuses it
/// too): freed, the block would serve the next allocation and two host ranges would share one
/// device copy, or the present entry would point at freed memory. GCC looks at the block's
/// start address only; this looks at the whole block (`bytes`, 1 if unknown).
fn refuse_if_mapped(rt: &runtime::Runtime, dev: u64, bytes: usize) -> Result<()> {
    let table = rt.table();
    let Some(e) = table.overlapping_device(dev, bytes) else {
        return Ok(());
    };
    Err(AccError::InvalidArgument(format!(
        "refusing to free device memory at {dev:#x} that is still mapped to host memory [{:#x},+{}]",
        e.host, e.bytes
    )))
}

#[no_mangle]
pub extern "C" fn acc_free(p: *mut c_void) {
    run("acc_free", || {
        if p.is_null() {
            return Ok(());
        }
        let op = op(ACC_ASYNC_SYNC as c_int)?;
        let dev = p as u64;
        let bytes = op.rt.backend.allocation_size(dev).unwrap_or(0);
        refuse_if_mapped(op.rt, dev, bytes)?;
        op.rt.backend.free(SYNC, dev)?;
        let d = DataInfo {
            var_name: std::ptr::null(),
            bytes,
            host_ptr: std::ptr::null(),
            device_ptr: p,
        };
        dispatch::data_point(acc_event_t::FREE, &op.ctx, &d);
        Ok(())
    })
}

/// The specification's check of a data routine's arguments: a NULL data_arg is an error
/// unless bytes is 0. Ok(false) when there is nothing to do (NULL with 0 bytes).
fn data_arg(h: *mut c_void, bytes: usize) -> Result<bool> {
    named_data_arg(h, bytes, "data_arg")
}

/// [`data_arg`] for a routine whose pointer argument has another name.
fn named_data_arg(h: *mut c_void, bytes: usize, arg: &'static str) -> Result<bool> {
    match (h.is_null(), bytes) {
        (true, 0) => Ok(false),
        (true, bytes) => Err(AccError::InvalidNullPointer { arg, bytes }),
        (false, _) => Ok(true),
    }
}

/// Refuses a host range the routine would copy from (`write` false) or into that the program
/// cannot read or write: a garbage pointer gives an error, not a fault in the runtime's copy.
fn host_range(h: *mut c_void, bytes: usize, arg: &str, write: bool) -> Result<()> {
    if (h as usize).checked_add(bytes).is_none() {
        return Err(AccError::past_address_space(arg, h as u64, bytes, ""));
    }
    if crate::host_memory::accessible(h as usize, bytes, write) {
        return Ok(());
    }
    Err(AccError::InvalidArgument(format!(
        "{arg} [{:#x},+{bytes}] is not host memory the program can {}",
        h as usize,
        if write { "write" } else { "read" }
    )))
}

fn enter_api(
    what: &'static str,
    kind: ClauseKind,
    h: *mut c_void,
    bytes: usize,
    async_: c_int,
) -> *mut c_void {
    run(what, || {
        if !data_arg(h, bytes)? {
            return Ok(std::ptr::null_mut());
        }
        if kind == ClauseKind::CopyIn {
            host_range(h, bytes, "data_arg", false)?;
        }
        let op = op(async_)?;
        // After `op`, which starts the device (and the checker) on the first call.
        let _site = crate::check::hooks::api_call_site();
        let e = sequence::data_directive(&op, DataDirective::Enter, WaitClause::Absent, |op| {
            data::enter(op, &clause(kind, h, bytes), true)
        })?;
        Ok(e.device_addr() as usize as *mut c_void)
    })
}

fn exit_api(
    what: &'static str,
    kind: ClauseKind,
    h: *mut c_void,
    bytes: usize,
    async_: c_int,
    finalize: bool,
) {
    run(what, || {
        if !data_arg(h, bytes)? {
            return Ok(());
        }
        if kind == ClauseKind::CopyOut {
            host_range(h, bytes, "data_arg", true)?;
        }
        let op = op(async_)?;
        let _site = crate::check::hooks::api_call_site();
        sequence::data_directive(&op, DataDirective::Exit, WaitClause::Absent, |op| {
            data::exit(op, &clause(kind, h, bytes), true, finalize)
        })
    })
}

fn update_api(what: &'static str, kind: ClauseKind, h: *mut c_void, bytes: usize, async_: c_int) {
    run(what, || {
        if !data_arg(h, bytes)? {
            return Ok(());
        }
        host_range(h, bytes, "data_arg", kind == ClauseKind::UpdateSelf)?;
        let op = op(async_)?;
        let _site = crate::check::hooks::api_call_site();
        sequence::data_directive(&op, DataDirective::Update, WaitClause::Absent, |op| {
            data::update(op, &clause(kind, h, bytes), false)
        })
    })
}

const SYNC_INT: c_int = ACC_ASYNC_SYNC as c_int;

#[no_mangle]
pub extern "C" fn acc_copyin(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api("acc_copyin", ClauseKind::CopyIn, h, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_present_or_copyin(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api(
        "acc_present_or_copyin",
        ClauseKind::CopyIn,
        h,
        bytes,
        SYNC_INT,
    )
}
#[no_mangle]
pub extern "C" fn acc_pcopyin(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api("acc_pcopyin", ClauseKind::CopyIn, h, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_copyin_async(h: *mut c_void, bytes: usize, a: c_int) {
    enter_api("acc_copyin_async", ClauseKind::CopyIn, h, bytes, a);
}
#[no_mangle]
pub extern "C" fn acc_create(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api("acc_create", ClauseKind::Create, h, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_present_or_create(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api(
        "acc_present_or_create",
        ClauseKind::Create,
        h,
        bytes,
        SYNC_INT,
    )
}
#[no_mangle]
pub extern "C" fn acc_pcreate(h: *mut c_void, bytes: usize) -> *mut c_void {
    enter_api("acc_pcreate", ClauseKind::Create, h, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_create_async(h: *mut c_void, bytes: usize, a: c_int) {
    enter_api("acc_create_async", ClauseKind::Create, h, bytes, a);
}
#[no_mangle]
pub extern "C" fn acc_copyout(h: *mut c_void, bytes: usize) {
    exit_api(
        "acc_copyout",
        ClauseKind::CopyOut,
        h,
        bytes,
        SYNC_INT,
        false,
    )
}
#[no_mangle]
pub extern "C" fn acc_copyout_async(h: *mut c_void, bytes: usize, a: c_int) {
    exit_api("acc_copyout_async", ClauseKind::CopyOut, h, bytes, a, false)
}
#[no_mangle]
pub extern "C" fn acc_copyout_finalize(h: *mut c_void, bytes: usize) {
    exit_api(
        "acc_copyout_finalize",
        ClauseKind::CopyOut,
        h,
        bytes,
        SYNC_INT,
        true,
    )
}
#[no_mangle]
pub extern "C" fn acc_copyout_finalize_async(h: *mut c_void, bytes: usize, a: c_int) {
    exit_api(
        "acc_copyout_finalize_async",
        ClauseKind::CopyOut,
        h,
        bytes,
        a,
        true,
    )
}
#[no_mangle]
pub extern "C" fn acc_delete(h: *mut c_void, bytes: usize) {
    exit_api("acc_delete", ClauseKind::Delete, h, bytes, SYNC_INT, false)
}
#[no_mangle]
pub extern "C" fn acc_delete_async(h: *mut c_void, bytes: usize, a: c_int) {
    exit_api("acc_delete_async", ClauseKind::Delete, h, bytes, a, false)
}
#[no_mangle]
pub extern "C" fn acc_delete_finalize(h: *mut c_void, bytes: usize) {
    exit_api(
        "acc_delete_finalize",
        ClauseKind::Delete,
        h,
        bytes,
        SYNC_INT,
        true,
    )
}
#[no_mangle]
pub extern "C" fn acc_delete_finalize_async(h: *mut c_void, bytes: usize, a: c_int) {
    exit_api(
        "acc_delete_finalize_async",
        ClauseKind::Delete,
        h,
        bytes,
        a,
        true,
    )
}
#[no_mangle]
pub extern "C" fn acc_update_device(h: *mut c_void, bytes: usize) {
    update_api(
        "acc_update_device",
        ClauseKind::UpdateDevice,
        h,
        bytes,
        SYNC_INT,
    )
}
#[no_mangle]
pub extern "C" fn acc_update_device_async(h: *mut c_void, bytes: usize, a: c_int) {
    update_api(
        "acc_update_device_async",
        ClauseKind::UpdateDevice,
        h,
        bytes,
        a,
    )
}
#[no_mangle]
pub extern "C" fn acc_update_self(h: *mut c_void, bytes: usize) {
    update_api(
        "acc_update_self",
        ClauseKind::UpdateSelf,
        h,
        bytes,
        SYNC_INT,
    )
}
#[no_mangle]
pub extern "C" fn acc_update_self_async(h: *mut c_void, bytes: usize, a: c_int) {
    update_api("acc_update_self_async", ClauseKind::UpdateSelf, h, bytes, a)
}

#[no_mangle]
pub extern "C" fn acc_map_data(h: *mut c_void, d: *mut c_void, bytes: usize) {
    run("acc_map_data", || {
        if h.is_null() || d.is_null() {
            return Err(AccError::InvalidArgument("NULL address".into()));
        }
        data::map(&op(SYNC_INT)?, h as usize, d as u64, bytes)
    })
}

#[no_mangle]
pub extern "C" fn acc_unmap_data(h: *mut c_void) {
    run("acc_unmap_data", || data::unmap(&op(SYNC_INT)?, h as usize))
}

#[no_mangle]
pub extern "C" fn acc_deviceptr(h: *mut c_void) -> *mut c_void {
    guard("acc_deviceptr", || {
        let Some(rt) = runtime::current() else {
            return std::ptr::null_mut();
        };
        data::device_addr(rt, h as usize)
            .map_or(std::ptr::null_mut(), |d| d as usize as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn acc_hostptr(d: *mut c_void) -> *mut c_void {
    guard("acc_hostptr", || {
        let Some(rt) = runtime::current() else {
            return std::ptr::null_mut();
        };
        let t = rt.table();
        t.by_device(d as u64).map_or(std::ptr::null_mut(), |e| {
            (e.host + (d as u64 - e.dev) as usize) as *mut c_void
        })
    })
}

#[no_mangle]
pub extern "C" fn acc_is_present(h: *mut c_void, bytes: usize) -> c_int {
    guard("acc_is_present", || {
        let Some(rt) = runtime::current() else {
            return 0;
        };
        // Partly present is "not present" here, not an error (the routine is a query).
        c_int::from(matches!(
            rt.table().lookup(h as usize, bytes, std::ptr::null()),
            Ok(crate::present::Lookup::Present { .. })
        ))
    })
}

/// The argument names of the memcpy routines by direction (0 to the device, 1 from it, 2
/// within it), as the specification writes them: (destination, source).
const MEMCPY_ARGS: [(&str, &str); 3] = [
    ("data_dev_dest", "data_host_src"),
    ("data_host_dest", "data_dev_src"),
    ("data_dev_dest", "data_dev_src"),
];

fn memcpy_api(what: &str, dir: u8, dst: *mut c_void, src: *mut c_void, bytes: usize, a: c_int) {
    run(what, || {
        if bytes == 0 {
            return Ok(());
        }
        // A NULL source or destination is the specification's error, never a copy through
        // address 0 (which would crash the program on the host side).
        let (dst_name, src_name) = MEMCPY_ARGS[dir as usize];
        for (p, arg) in [(dst, dst_name), (src, src_name)] {
            if p.is_null() {
                return Err(AccError::InvalidNullPointer { arg, bytes });
            }
        }
        let op = op(a)?;
        let device = &op.rt.backend;
        match dir {
            0 => device.check_device_range(dst as u64, bytes)?,
            1 => device.check_device_range(src as u64, bytes)?,
            _ => {
                device.check_device_range(dst as u64, bytes)?;
                device.check_device_range(src as u64, bytes)?;
            }
        }
        match dir {
            0 => host_range(src, bytes, src_name, false)?,
            1 => host_range(dst, bytes, dst_name, true)?,
            _ => {}
        }
        match dir {
            0 => data::upload(
                &op,
                &op.ctx,
                src as usize,
                dst as u64,
                bytes,
                std::ptr::null(),
            ),
            1 => data::download(
                &op,
                &op.ctx,
                dst as usize,
                src as u64,
                bytes,
                std::ptr::null(),
            ),
            _ => op.rt.backend.copy_d2d(op.q, dst as u64, src as u64, bytes),
        }
    })
}

#[no_mangle]
pub extern "C" fn acc_memcpy_to_device(dst: *mut c_void, src: *mut c_void, bytes: usize) {
    memcpy_api("acc_memcpy_to_device", 0, dst, src, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_memcpy_to_device_async(
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    a: c_int,
) {
    memcpy_api("acc_memcpy_to_device_async", 0, dst, src, bytes, a)
}
#[no_mangle]
pub extern "C" fn acc_memcpy_from_device(dst: *mut c_void, src: *mut c_void, bytes: usize) {
    memcpy_api("acc_memcpy_from_device", 1, dst, src, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_memcpy_from_device_async(
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    a: c_int,
) {
    memcpy_api("acc_memcpy_from_device_async", 1, dst, src, bytes, a)
}
#[no_mangle]
pub extern "C" fn acc_memcpy_device(dst: *mut c_void, src: *mut c_void, bytes: usize) {
    memcpy_api("acc_memcpy_device", 2, dst, src, bytes, SYNC_INT)
}
#[no_mangle]
pub extern "C" fn acc_memcpy_device_async(
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    a: c_int,
) {
    memcpy_api("acc_memcpy_device_async", 2, dst, src, bytes, a)
}

/// acc_memcpy_d2d: copies between the device copies of two present host ranges, each on a
/// device number. One device runs at a time here, so both numbers must name the current one;
/// another is acc_error_device_unavailable rather than a copy on the wrong device.
fn memcpy_d2d(
    what: &'static str,
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    dev_dst: c_int,
    dev_src: c_int,
    a: c_int,
) {
    run(what, || {
        // Nothing to copy is no error, whatever the addresses (as for acc_memcpy_device).
        if !named_data_arg(dst, bytes, "data_arg_dest")?
            || !named_data_arg(src, bytes, "data_arg_src")?
            || bytes == 0
        {
            return Ok(());
        }
        let op = op(a)?;
        for d in [dev_dst, dev_src] {
            if d != op.rt.device_num {
                return Err(AccError::DeviceUnavailable(format!(
                    "device number {d}: this runtime copies within the current device ({}) only",
                    op.rt.device_num
                )));
            }
        }
        let (to, from) = {
            let table = op.rt.table();
            let device_copy = |h: *mut c_void, role: &str| match table.lookup(
                h as usize,
                bytes,
                std::ptr::null(),
            )? {
                Lookup::Present { dev, .. } => Ok(dev),
                Lookup::Absent => Err(AccError::NotPresent {
                    host: h as usize,
                    bytes,
                    name: role.into(),
                }),
            };
            (
                device_copy(dst, "destination")?,
                device_copy(src, "source")?,
            )
        };
        op.rt.backend.copy_d2d(op.q, to, from, bytes)
    })
}

#[no_mangle]
pub extern "C" fn acc_memcpy_d2d(
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    dev_dst: c_int,
    dev_src: c_int,
) {
    memcpy_d2d(
        "acc_memcpy_d2d",
        dst,
        src,
        bytes,
        dev_dst,
        dev_src,
        SYNC_INT,
    )
}

#[no_mangle]
pub extern "C" fn acc_memcpy_d2d_async(
    dst: *mut c_void,
    src: *mut c_void,
    bytes: usize,
    dev_dst: c_int,
    dev_src: c_int,
    a: c_int,
) {
    memcpy_d2d("acc_memcpy_d2d_async", dst, src, bytes, dev_dst, dev_src, a)
}

/// acc_attach and acc_detach: the routines of `enter data attach(p)` and `exit data detach(p)`,
/// with their events.
fn attach_api(what: &str, p: *mut *mut c_void, a: c_int, detach: bool, finalize: bool) {
    run(what, || {
        let op = op(a)?;
        if detach {
            sequence::data_directive(&op, DataDirective::Exit, WaitClause::Absent, |op| {
                data::detach(op, &op.ctx, p as usize, std::ptr::null(), finalize)
            })
        } else {
            sequence::data_directive(&op, DataDirective::Enter, WaitClause::Absent, |op| {
                data::attach(op, &op.ctx, p as usize, std::ptr::null())
            })
        }
    })
}

#[no_mangle]
pub extern "C" fn acc_attach(p: *mut *mut c_void) {
    attach_api("acc_attach", p, SYNC_INT, false, false)
}
#[no_mangle]
pub extern "C" fn acc_attach_async(p: *mut *mut c_void, a: c_int) {
    attach_api("acc_attach_async", p, a, false, false)
}
#[no_mangle]
pub extern "C" fn acc_detach(p: *mut *mut c_void) {
    attach_api("acc_detach", p, SYNC_INT, true, false)
}
#[no_mangle]
pub extern "C" fn acc_detach_async(p: *mut *mut c_void, a: c_int) {
    attach_api("acc_detach_async", p, a, true, false)
}
#[no_mangle]
pub extern "C" fn acc_detach_finalize(p: *mut *mut c_void) {
    attach_api("acc_detach_finalize", p, SYNC_INT, true, true)
}
#[no_mangle]
pub extern "C" fn acc_detach_finalize_async(p: *mut *mut c_void, a: c_int) {
    attach_api("acc_detach_finalize_async", p, a, true, true)
}

// ----- CUDA interoperability -----

/// The stream of an async queue, NULL for a value that is no async argument. For
/// acc_async_sync it is the stream the runtime's synchronous work runs on: GCC returns NULL
/// there because its synchronous work runs on CUDA's legacy default stream, but this runtime's
/// runs on a non-blocking stream of its own, which the legacy stream does not order with, so a
/// program that puts its own CUDA work in line with the synchronous queue needs that stream.
#[no_mangle]
pub extern "C" fn acc_get_cuda_stream(a: c_int) -> *mut c_void {
    runtime::cuda_stream(a)
}

/// Makes `stream` the stream of an async queue: 1 if done, 0 if not (no CUDA device, a NULL
/// stream). acc_async_sync is a valid async argument but no async queue: GCC refuses it with
/// 0 and the program goes on (its test acc_set_cuda_stream-1.c), and so does this. A value
/// that is no async argument at all is the specification's acc_error_invalid_async.
#[no_mangle]
pub extern "C" fn acc_set_cuda_stream(a: c_int, stream: *mut c_void) -> c_int {
    run("acc_set_cuda_stream", || {
        let rt = runtime::get(API, &NOWHERE);
        match rt.queue_of(a as i64)? {
            SYNC => Ok(0),
            q => Ok(c_int::from(rt.backend.set_native_stream(q, stream))),
        }
    })
}

#[no_mangle]
pub extern "C" fn acc_get_current_cuda_device() -> *mut c_void {
    runtime::current_cuda_device()
}

#[no_mangle]
pub extern "C" fn acc_get_current_cuda_context() -> *mut c_void {
    runtime::current_cuda_context()
}
