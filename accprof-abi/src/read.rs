//! Reading what a runtime handed us, one field at a time, only where `valid_bytes` covers it.
//!
//! The specification lets a runtime fill fewer bytes than the structure holds (an older runtime,
//! a smaller `acc_device_t`), and says a tool must not read past `valid_bytes`. Every accessor
//! here returns `None` for a field that is not covered, so callers never see stale memory.
//! These are on the hot path of the tool: they copy, branch and never allocate.

use super::*;
use std::mem::{offset_of, size_of};

/// Reads field `$field` of type `$ty` from `$ptr` (a `*const $struct`) when `$valid` covers it.
macro_rules! guarded {
    ($ptr:expr, $valid:expr, $struct:ty, $field:ident, $ty:ty) => {{
        const END: usize = offset_of!($struct, $field) + size_of::<$ty>();
        if ($valid as usize) >= END {
            // SAFETY: the caller promised `$ptr` points at a structure of at least `$valid`
            // readable bytes, and the field lies inside them.
            Some(unsafe { std::ptr::addr_of!((*$ptr).$field).read_unaligned() })
        } else {
            None
        }
    }};
}

/// The fields of `acc_prof_info` that the runtime filled.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfFields {
    pub event_type: acc_event_t,
    pub valid_bytes: i32,
    pub version: Option<i32>,
    pub device_type: Option<acc_device_t>,
    pub device_number: Option<i32>,
    pub thread_id: Option<i32>,
    pub async_: Option<isize>,
    pub async_queue: Option<isize>,
    pub src_file: Option<*const c_char>,
    pub func_name: Option<*const c_char>,
    pub line_no: Option<i32>,
    pub end_line_no: Option<i32>,
    pub func_line_no: Option<i32>,
    pub func_end_line_no: Option<i32>,
}

/// Copies the valid fields of `*p`.
///
/// # Safety
/// `p` is null or points at an `acc_prof_info` whose first `valid_bytes` bytes are readable.
#[inline]
pub unsafe fn prof_info(p: *const acc_prof_info) -> Option<ProfFields> {
    if p.is_null() {
        return None;
    }
    // SAFETY: event_type and valid_bytes are the first 8 bytes, which every runtime fills.
    let (event_type, valid) = unsafe { ((*p).event_type, (*p).valid_bytes) };
    let valid = valid.max(0);
    Some(ProfFields {
        event_type,
        valid_bytes: valid,
        version: guarded!(p, valid, acc_prof_info, version, c_int),
        device_type: guarded!(p, valid, acc_prof_info, device_type, acc_device_t),
        device_number: guarded!(p, valid, acc_prof_info, device_number, c_int),
        thread_id: guarded!(p, valid, acc_prof_info, thread_id, c_int),
        async_: guarded!(p, valid, acc_prof_info, async_, isize),
        async_queue: guarded!(p, valid, acc_prof_info, async_queue, isize),
        src_file: guarded!(p, valid, acc_prof_info, src_file, *const c_char),
        func_name: guarded!(p, valid, acc_prof_info, func_name, *const c_char),
        line_no: guarded!(p, valid, acc_prof_info, line_no, c_int),
        end_line_no: guarded!(p, valid, acc_prof_info, end_line_no, c_int),
        func_line_no: guarded!(p, valid, acc_prof_info, func_line_no, c_int),
        func_end_line_no: guarded!(p, valid, acc_prof_info, func_end_line_no, c_int),
    })
}

/// The fields of the event-specific part (`acc_event_info`) that the runtime filled.
/// Which of them exist depends on the event type (see [`acc_event_t::info_kind`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct EventFields {
    pub valid_bytes: i32,
    pub parent_construct: Option<acc_construct_t>,
    pub implicit: Option<i32>,
    pub tool_info: Option<*mut c_void>,
    // Data events.
    pub var_name: Option<*const c_char>,
    pub bytes: Option<usize>,
    pub host_ptr: Option<*const c_void>,
    pub device_ptr: Option<*const c_void>,
    // Launch events.
    pub kernel_name: Option<*const c_char>,
    pub num_gangs: Option<usize>,
    pub num_workers: Option<usize>,
    pub vector_length: Option<usize>,
}

/// Copies the valid fields of `*p`, reading it as the member of the union that `event_type` uses.
///
/// # Safety
/// `p` is null or points at an `acc_event_info` whose first `valid_bytes` bytes are readable.
#[inline]
pub unsafe fn event_info(p: *const acc_event_info, event_type: acc_event_t) -> Option<EventFields> {
    if p.is_null() {
        return None;
    }
    // Every member starts with event_type, valid_bytes, parent_construct, implicit, tool_info.
    let o = p as *const acc_other_event_info;
    // SAFETY: valid_bytes sits in the first 8 bytes, which every runtime fills.
    let valid = unsafe { (*o).valid_bytes }.max(0);
    let mut fields = EventFields {
        valid_bytes: valid,
        parent_construct: guarded!(o, valid, acc_other_event_info, parent_construct, acc_construct_t),
        implicit: guarded!(o, valid, acc_other_event_info, implicit, c_int),
        tool_info: guarded!(o, valid, acc_other_event_info, tool_info, *mut c_void),
        ..EventFields::default()
    };
    match event_type.info_kind() {
        EventInfoKind::Data => {
            let d = p as *const acc_data_event_info;
            fields.var_name = guarded!(d, valid, acc_data_event_info, var_name, *const c_char);
            fields.bytes = guarded!(d, valid, acc_data_event_info, bytes, usize);
            fields.host_ptr = guarded!(d, valid, acc_data_event_info, host_ptr, *const c_void);
            fields.device_ptr = guarded!(d, valid, acc_data_event_info, device_ptr, *const c_void);
        }
        EventInfoKind::Launch => {
            let l = p as *const acc_launch_event_info;
            fields.kernel_name = guarded!(l, valid, acc_launch_event_info, kernel_name, *const c_char);
            fields.num_gangs = guarded!(l, valid, acc_launch_event_info, num_gangs, usize);
            fields.num_workers = guarded!(l, valid, acc_launch_event_info, num_workers, usize);
            fields.vector_length = guarded!(l, valid, acc_launch_event_info, vector_length, usize);
        }
        EventInfoKind::Other => {}
    }
    Some(fields)
}

/// The fields of `acc_api_info` that the runtime filled.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApiFields {
    pub valid_bytes: i32,
    pub device_api: Option<acc_device_api>,
    pub device_type: Option<acc_device_t>,
    pub vendor: Option<i32>,
    pub device_handle: Option<*const c_void>,
    pub context_handle: Option<*const c_void>,
    pub async_handle: Option<*const c_void>,
}

/// Copies the valid fields of `*p`.
///
/// # Safety
/// `p` is null or points at an `acc_api_info` whose first `valid_bytes` bytes are readable.
#[inline]
pub unsafe fn api_info(p: *const acc_api_info) -> Option<ApiFields> {
    if p.is_null() {
        return None;
    }
    // SAFETY: valid_bytes sits in the first 8 bytes, which every runtime fills.
    let valid = unsafe { (*p).valid_bytes }.max(0);
    Some(ApiFields {
        valid_bytes: valid,
        device_api: guarded!(p, valid, acc_api_info, device_api, acc_device_api),
        device_type: guarded!(p, valid, acc_api_info, device_type, acc_device_t),
        vendor: guarded!(p, valid, acc_api_info, vendor, c_int),
        device_handle: guarded!(p, valid, acc_api_info, device_handle, *const c_void),
        context_handle: guarded!(p, valid, acc_api_info, context_handle, *const c_void),
        async_handle: guarded!(p, valid, acc_api_info, async_handle, *const c_void),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_prof() -> acc_prof_info {
        acc_prof_info {
            event_type: acc_event_t::COMPUTE_CONSTRUCT_START,
            valid_bytes: valid_bytes::PROF_INFO,
            version: ACC_PROF_INFO_VERSION_2_6,
            device_type: acc_device_t::HOST,
            device_number: 0,
            thread_id: 7,
            async_: -1,
            async_queue: -1,
            src_file: c"a.c".as_ptr(),
            func_name: c"main".as_ptr(),
            line_no: 10,
            end_line_no: 20,
            func_line_no: 3,
            func_end_line_no: 40,
        }
    }

    #[test]
    fn full_structure_reads_every_field() {
        let p = full_prof();
        let f = unsafe { prof_info(&p) }.unwrap();
        assert_eq!(f.version, Some(201711));
        assert_eq!(f.thread_id, Some(7));
        assert_eq!(f.func_end_line_no, Some(40));
    }

    #[test]
    fn short_valid_bytes_hides_later_fields() {
        let mut p = full_prof();
        p.valid_bytes = 24; // up to and including thread_id
        let f = unsafe { prof_info(&p) }.unwrap();
        assert_eq!(f.thread_id, Some(7));
        assert_eq!(f.async_, None);
        assert!(f.src_file.is_none());
        p.valid_bytes = -5;
        let f = unsafe { prof_info(&p) }.unwrap();
        assert_eq!(f.version, None);
    }

    #[test]
    fn null_pointers_read_as_none() {
        assert!(unsafe { prof_info(std::ptr::null()) }.is_none());
        assert!(unsafe { event_info(std::ptr::null(), acc_event_t::ALLOC) }.is_none());
        assert!(unsafe { api_info(std::ptr::null()) }.is_none());
    }

    #[test]
    fn data_fields_only_for_data_events() {
        let info = acc_event_info {
            data_event: acc_data_event_info {
                event_type: acc_event_t::ENQUEUE_UPLOAD_START,
                valid_bytes: valid_bytes::DATA_EVENT_INFO,
                parent_construct: acc_construct_t::PARALLEL,
                implicit: 1,
                tool_info: std::ptr::null_mut(),
                var_name: c"A".as_ptr(),
                bytes: 4096,
                host_ptr: 16 as *const c_void,
                device_ptr: 32 as *const c_void,
            },
        };
        let f = unsafe { event_info(&info, acc_event_t::ENQUEUE_UPLOAD_START) }.unwrap();
        assert_eq!(f.bytes, Some(4096));
        let f = unsafe { event_info(&info, acc_event_t::COMPUTE_CONSTRUCT_START) }.unwrap();
        assert_eq!(f.bytes, None);
        assert_eq!(f.implicit, Some(1));
    }
}
