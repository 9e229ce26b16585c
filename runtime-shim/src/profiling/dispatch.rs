//! Builds the three structures of the profiling interface and calls the registered callbacks.
//!
//! Start callbacks run in registration order, end callbacks in reverse (as the specification and
//! GCC do), and whatever `tool_info` a start callback leaves in the event structure is handed to
//! the matching end event. No lock is held while a callback runs. When no tool is registered,
//! every function here returns after one atomic load (see [`registry::active`]).

use super::registry::{self, Order};
use crate::loc::Loc;
use accprof_abi::*;
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

/// The native handles a tool gets in `acc_api_info` (CUDA: CUdevice as pointer-sized value,
/// CUcontext, CUstream).
#[derive(Clone, Copy, Debug)]
pub struct ApiHandles {
    pub device_api: acc_device_api,
    pub device: *const c_void,
    pub context: *const c_void,
    pub stream: *const c_void,
}

impl ApiHandles {
    pub const NONE: ApiHandles = ApiHandles {
        device_api: acc_device_api::NONE,
        device: std::ptr::null(),
        context: std::ptr::null(),
        stream: std::ptr::null(),
    };
}

/// What is common to every event of one operation.
#[derive(Clone, Copy, Debug)]
pub struct EvCtx {
    pub construct: acc_construct_t,
    pub implicit: bool,
    pub loc: Loc,
    pub async_: isize,
    pub async_queue: isize,
    pub device_type: acc_device_t,
    pub device_number: i32,
    pub api: ApiHandles,
    /// [`thread_id`] of the thread the operation runs on, looked up once per operation rather
    /// than per event (a thread-local lookup from a shared library calls into the loader).
    pub thread_id: i32,
}

/// Details of a data event (create, delete, alloc, free, upload, download).
#[derive(Clone, Copy, Debug)]
pub struct DataInfo {
    pub var_name: *const c_char,
    pub bytes: usize,
    pub host_ptr: *const c_void,
    pub device_ptr: *const c_void,
}

/// Details of a launch event. A dimension of 0 is not known (GCC's code leaves it to the
/// device, and the emulated device runs the construct's host code): the event's valid_bytes then
/// ends before it, the specification's way of saying a field is not filled, rather than
/// reporting one gang or one lane.
#[derive(Clone, Copy, Debug)]
pub struct LaunchInfo {
    pub kernel_name: *const c_char,
    pub num_gangs: usize,
    pub num_workers: usize,
    pub vector_length: usize,
}

/// What the tool handed back from a start event, for its end event.
#[derive(Clone, Copy, Debug)]
pub struct ToolInfo(*mut c_void);

impl ToolInfo {
    pub const NONE: ToolInfo = ToolInfo(std::ptr::null_mut());
}

/// A small, stable number per thread for `thread_id` (0 for the first thread that dispatches).
pub fn thread_id() -> i32 {
    static NEXT: AtomicI32 = AtomicI32::new(0);
    thread_local! { static ID: Cell<i32> = const { Cell::new(-1) }; }
    ID.try_with(|id| {
        if id.get() < 0 {
            id.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        id.get()
    })
    .unwrap_or(-1)
}

#[inline(always)]
pub fn enabled() -> bool {
    registry::active()
}

fn prof_info(ev: acc_event_t, c: &EvCtx) -> acc_prof_info {
    acc_prof_info {
        event_type: ev,
        valid_bytes: valid_bytes::PROF_INFO,
        version: ACC_PROF_INFO_VERSION_2_6,
        device_type: c.device_type,
        device_number: c.device_number,
        thread_id: c.thread_id,
        async_: c.async_,
        async_queue: c.async_queue,
        src_file: c.loc.file,
        func_name: c.loc.func,
        line_no: c.loc.line,
        end_line_no: c.loc.end_line,
        func_line_no: c.loc.func_line,
        func_end_line_no: c.loc.func_end_line,
    }
}

fn api_info(c: &EvCtx) -> acc_api_info {
    acc_api_info {
        device_api: c.api.device_api,
        valid_bytes: valid_bytes::API_INFO,
        device_type: c.device_type,
        vendor: -1,
        device_handle: c.api.device,
        context_handle: c.api.context,
        async_handle: c.api.stream,
    }
}

fn other_info(ev: acc_event_t, c: &EvCtx, t: ToolInfo) -> acc_event_info {
    acc_event_info {
        other_event: acc_other_event_info {
            event_type: ev,
            valid_bytes: valid_bytes::OTHER_EVENT_INFO,
            parent_construct: c.construct,
            implicit: c.implicit as i32,
            tool_info: t.0,
        },
    }
}

fn data_info(ev: acc_event_t, c: &EvCtx, d: &DataInfo, t: ToolInfo) -> acc_event_info {
    acc_event_info {
        data_event: acc_data_event_info {
            event_type: ev,
            valid_bytes: valid_bytes::DATA_EVENT_INFO,
            parent_construct: c.construct,
            implicit: c.implicit as i32,
            tool_info: t.0,
            var_name: d.var_name,
            bytes: d.bytes,
            host_ptr: d.host_ptr,
            device_ptr: d.device_ptr,
        },
    }
}

/// valid_bytes of a launch event: up to the first dimension that is not known.
fn launch_valid_bytes(l: &LaunchInfo) -> std::ffi::c_int {
    let end = if l.num_gangs == 0 {
        std::mem::offset_of!(acc_launch_event_info, num_gangs)
    } else if l.num_workers == 0 {
        std::mem::offset_of!(acc_launch_event_info, num_workers)
    } else if l.vector_length == 0 {
        std::mem::offset_of!(acc_launch_event_info, vector_length)
    } else {
        return valid_bytes::LAUNCH_EVENT_INFO;
    };
    end as std::ffi::c_int
}

fn launch_info(ev: acc_event_t, c: &EvCtx, l: &LaunchInfo, t: ToolInfo) -> acc_event_info {
    acc_event_info {
        launch_event: acc_launch_event_info {
            event_type: ev,
            valid_bytes: launch_valid_bytes(l),
            parent_construct: c.construct,
            implicit: c.implicit as i32,
            tool_info: t.0,
            kernel_name: l.kernel_name,
            num_gangs: l.num_gangs,
            num_workers: l.num_workers,
            vector_length: l.vector_length,
        },
    }
}

/// Calls every callback of `ev` with fresh copies of the structures (so one callback scribbling
/// on a field does not change what the next sees, except `tool_info`, which is meant to flow).
/// Returns the `tool_info` left by the callbacks.
///
/// The callbacks come from [`registry::walk`], which looks at the registry again before each
/// one: a callback that registers, unregisters, enables or disables callbacks of this event
/// changes which of the remaining ones run for this very instance, as the specification asks.
fn call(ev: acc_event_t, c: &EvCtx, info: acc_event_info, order: Order) -> ToolInfo {
    // SAFETY: every variant of the acc_event_info union starts with the same fields up to and
    // including `tool_info` (the specification's common initial sequence), so this field is
    // initialized whichever variant `info` holds.
    let mut tool_info = unsafe { info.other_event.tool_info };
    for cb in registry::walk(ev, order) {
        let mut p = prof_info(ev, c);
        let mut a = api_info(c);
        let mut i = info;
        i.other_event.tool_info = tool_info;
        // SAFETY: the callback was registered by a tool for exactly this signature.
        unsafe { cb(&mut p, &mut i, &mut a) };
        // SAFETY: as above: `tool_info` is in every variant's common initial sequence.
        tool_info = unsafe { i.other_event.tool_info };
    }
    ToolInfo(tool_info)
}

/// A start event of the "other" kind (device init/shutdown, enter/exit data, update, compute
/// construct, wait).
#[inline]
pub fn other_start(ev: acc_event_t, c: &EvCtx) -> ToolInfo {
    if !enabled() {
        return ToolInfo::NONE;
    }
    call(
        ev,
        c,
        other_info(ev, c, ToolInfo::NONE),
        Order::Registration,
    )
}

/// The end event matching [`other_start`].
#[inline]
pub fn other_end(ev: acc_event_t, c: &EvCtx, t: ToolInfo) {
    if !enabled() {
        return;
    }
    call(ev, c, other_info(ev, c, t), Order::Reverse);
}

/// A single-point event of the "other" kind (runtime shutdown).
pub fn other_point(ev: acc_event_t, c: &EvCtx) {
    if enabled() {
        call(
            ev,
            c,
            other_info(ev, c, ToolInfo::NONE),
            Order::Registration,
        );
    }
}

/// A single-point data event (alloc, free, create, delete).
#[inline]
pub fn data_point(ev: acc_event_t, c: &EvCtx, d: &DataInfo) {
    if enabled() {
        call(
            ev,
            c,
            data_info(ev, c, d, ToolInfo::NONE),
            Order::Registration,
        );
    }
}

/// An upload or download start event.
#[inline]
pub fn data_start(ev: acc_event_t, c: &EvCtx, d: &DataInfo) -> ToolInfo {
    if !enabled() {
        return ToolInfo::NONE;
    }
    call(
        ev,
        c,
        data_info(ev, c, d, ToolInfo::NONE),
        Order::Registration,
    )
}

#[inline]
pub fn data_end(ev: acc_event_t, c: &EvCtx, d: &DataInfo, t: ToolInfo) {
    if enabled() {
        call(ev, c, data_info(ev, c, d, t), Order::Reverse);
    }
}

#[inline]
pub fn launch_start(c: &EvCtx, l: &LaunchInfo) -> ToolInfo {
    if !enabled() {
        return ToolInfo::NONE;
    }
    let ev = acc_event_t::ENQUEUE_LAUNCH_START;
    call(
        ev,
        c,
        launch_info(ev, c, l, ToolInfo::NONE),
        Order::Registration,
    )
}

#[inline]
pub fn launch_end(c: &EvCtx, l: &LaunchInfo, t: ToolInfo) {
    if enabled() {
        let ev = acc_event_t::ENQUEUE_LAUNCH_END;
        call(ev, c, launch_info(ev, c, l, t), Order::Reverse);
    }
}
