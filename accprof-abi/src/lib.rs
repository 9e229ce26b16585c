//! A hand-written `#[repr(C)]` mirror of the OpenACC profiling interface, `acc_prof.h`
//! (OpenACC 3.x, chapter "Profiling and Error Callback Interface").
//!
//! The layout follows the specification for LP64 Linux, which is what GCC's header and NVHPC give.
//! `tests/abi_layout.rs` compiles a C file against the system's `acc_prof.h` and checks every size
//! and offset here against it.
//!
//! Enums are *not* Rust enums: a runtime may hand us any number (a newer event type, Cray's
//! device numbers, garbage), and reading an out-of-range value into a Rust enum is undefined
//! behaviour. They are `i32` newtypes with named constants instead, so unknown values are kept.
//!
//! Fields must only be read when `valid_bytes` says the runtime filled them: see [`read`].

#![warn(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

pub mod read;

/// `acc_event_t`: the event number. Values outside the known range are kept as they are.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct acc_event_t(pub i32);

impl acc_event_t {
    pub const NONE: Self = Self(0);
    pub const DEVICE_INIT_START: Self = Self(1);
    pub const DEVICE_INIT_END: Self = Self(2);
    pub const DEVICE_SHUTDOWN_START: Self = Self(3);
    pub const DEVICE_SHUTDOWN_END: Self = Self(4);
    pub const RUNTIME_SHUTDOWN: Self = Self(5);
    pub const CREATE: Self = Self(6);
    pub const DELETE: Self = Self(7);
    pub const ALLOC: Self = Self(8);
    pub const FREE: Self = Self(9);
    pub const ENTER_DATA_START: Self = Self(10);
    pub const ENTER_DATA_END: Self = Self(11);
    pub const EXIT_DATA_START: Self = Self(12);
    pub const EXIT_DATA_END: Self = Self(13);
    pub const UPDATE_START: Self = Self(14);
    pub const UPDATE_END: Self = Self(15);
    pub const COMPUTE_CONSTRUCT_START: Self = Self(16);
    pub const COMPUTE_CONSTRUCT_END: Self = Self(17);
    pub const ENQUEUE_LAUNCH_START: Self = Self(18);
    pub const ENQUEUE_LAUNCH_END: Self = Self(19);
    pub const ENQUEUE_UPLOAD_START: Self = Self(20);
    pub const ENQUEUE_UPLOAD_END: Self = Self(21);
    pub const ENQUEUE_DOWNLOAD_START: Self = Self(22);
    pub const ENQUEUE_DOWNLOAD_END: Self = Self(23);
    pub const WAIT_START: Self = Self(24);
    pub const WAIT_END: Self = Self(25);
    /// One past the last event the specification defines.
    pub const LAST: Self = Self(26);

    /// Every event the specification defines, in numeric order (none and last excluded).
    pub const ALL: [Self; 25] = {
        let mut all = [Self(0); 25];
        let mut i = 0;
        while i < 25 {
            all[i] = Self(i as i32 + 1);
            i += 1;
        }
        all
    };

    /// The specification's name, e.g. `acc_ev_compute_construct_start`; `None` for unknown numbers.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 27] = [
            "acc_ev_none",
            "acc_ev_device_init_start",
            "acc_ev_device_init_end",
            "acc_ev_device_shutdown_start",
            "acc_ev_device_shutdown_end",
            "acc_ev_runtime_shutdown",
            "acc_ev_create",
            "acc_ev_delete",
            "acc_ev_alloc",
            "acc_ev_free",
            "acc_ev_enter_data_start",
            "acc_ev_enter_data_end",
            "acc_ev_exit_data_start",
            "acc_ev_exit_data_end",
            "acc_ev_update_start",
            "acc_ev_update_end",
            "acc_ev_compute_construct_start",
            "acc_ev_compute_construct_end",
            "acc_ev_enqueue_launch_start",
            "acc_ev_enqueue_launch_end",
            "acc_ev_enqueue_upload_start",
            "acc_ev_enqueue_upload_end",
            "acc_ev_enqueue_download_start",
            "acc_ev_enqueue_download_end",
            "acc_ev_wait_start",
            "acc_ev_wait_end",
            "acc_ev_last",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|i| NAMES.get(i).copied())
    }

    /// How this event pairs with others: start of a pair, end of a pair, or a single point.
    #[inline]
    pub fn shape(self) -> EventShape {
        // Bit tests rather than a match: a jump table is one more cache line to read in a
        // callback (the tool's hot path; a test checks every number).
        const STARTS: u32 = 1 << 1 | 1 << 3 | 0x0155_5400;
        const ENDS: u32 = 1 << 2 | 1 << 4 | 0x02aa_a800;
        const POINTS: u32 = 0x3e0;
        let Ok(k) = u32::try_from(self.0) else {
            return EventShape::Unknown;
        };
        let bit = 1u32.checked_shl(k).unwrap_or(0);
        if bit & STARTS != 0 {
            EventShape::Start
        } else if bit & ENDS != 0 {
            EventShape::End
        } else if bit & POINTS != 0 {
            EventShape::Point
        } else {
            EventShape::Unknown
        }
    }

    /// For a start event, its end event; for an end event, its start event; else itself.
    #[inline]
    pub fn partner(self) -> Self {
        match self.shape() {
            EventShape::Start => Self(self.0 + 1),
            EventShape::End => Self(self.0 - 1),
            EventShape::Point | EventShape::Unknown => self,
        }
    }

    /// Which member of `acc_event_info` the specification uses for this event.
    #[inline]
    pub fn info_kind(self) -> EventInfoKind {
        const DATA: u32 = 0x3c0 | 0x00f0_0000;
        const LAUNCH: u32 = 0x000c_0000;
        let bit = u32::try_from(self.0)
            .ok()
            .and_then(|k| 1u32.checked_shl(k))
            .unwrap_or(0);
        if bit & DATA != 0 {
            EventInfoKind::Data
        } else if bit & LAUNCH != 0 {
            EventInfoKind::Launch
        } else {
            EventInfoKind::Other
        }
    }
}

/// How an event number relates to its partner.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventShape {
    /// Opens an interval that a matching end event closes.
    Start,
    /// Closes the interval its start event opened.
    End,
    /// Happens at one instant (create, delete, alloc, free, runtime shutdown).
    Point,
    /// Not a number the specification defines.
    Unknown,
}

/// Which member of the `acc_event_info` union carries an event's details.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventInfoKind {
    Data,
    Launch,
    Other,
}

/// `acc_device_t`. GCC numbers the NVIDIA device 5; NVHPC and Cray number theirs differently.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct acc_device_t(pub i32);

impl acc_device_t {
    pub const CURRENT: Self = Self(-1);
    pub const NONE: Self = Self(0);
    pub const DEFAULT: Self = Self(1);
    pub const HOST: Self = Self(2);
    pub const NOT_HOST: Self = Self(4);
    pub const NVIDIA: Self = Self(5);
    pub const RADEON: Self = Self(8);

    /// The name GCC's `openacc.h` gives this number, if any.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            -1 => "acc_device_current",
            0 => "acc_device_none",
            1 => "acc_device_default",
            2 => "acc_device_host",
            4 => "acc_device_not_host",
            5 => "acc_device_nvidia",
            8 => "acc_device_radeon",
            _ => return None,
        })
    }
}

/// `acc_construct_t`: the construct or directive an event belongs to.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct acc_construct_t(pub i32);

impl acc_construct_t {
    pub const PARALLEL: Self = Self(0);
    pub const KERNELS: Self = Self(1);
    pub const LOOP: Self = Self(2);
    pub const DATA: Self = Self(3);
    pub const ENTER_DATA: Self = Self(4);
    pub const EXIT_DATA: Self = Self(5);
    pub const HOST_DATA: Self = Self(6);
    pub const ATOMIC: Self = Self(7);
    pub const DECLARE: Self = Self(8);
    pub const INIT: Self = Self(9);
    pub const SHUTDOWN: Self = Self(10);
    pub const SET: Self = Self(11);
    pub const UPDATE: Self = Self(12);
    pub const ROUTINE: Self = Self(13);
    pub const WAIT: Self = Self(14);
    pub const RUNTIME_API: Self = Self(15);
    pub const SERIAL: Self = Self(16);

    /// The specification's name, e.g. `acc_construct_parallel`; `None` for unknown numbers.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 17] = [
            "acc_construct_parallel",
            "acc_construct_kernels",
            "acc_construct_loop",
            "acc_construct_data",
            "acc_construct_enter_data",
            "acc_construct_exit_data",
            "acc_construct_host_data",
            "acc_construct_atomic",
            "acc_construct_declare",
            "acc_construct_init",
            "acc_construct_shutdown",
            "acc_construct_set",
            "acc_construct_update",
            "acc_construct_routine",
            "acc_construct_wait",
            "acc_construct_runtime_api",
            "acc_construct_serial",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|i| NAMES.get(i).copied())
    }
}

/// `acc_device_api`: which native API the handles in `acc_api_info` belong to.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct acc_device_api(pub i32);

impl acc_device_api {
    pub const NONE: Self = Self(0);
    pub const CUDA: Self = Self(1);
    pub const OPENCL: Self = Self(2);
    pub const COI: Self = Self(3);
    pub const OTHER: Self = Self(4);

    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "acc_device_api_none",
            1 => "acc_device_api_cuda",
            2 => "acc_device_api_opencl",
            3 => "acc_device_api_coi",
            4 => "acc_device_api_other",
            _ => return None,
        })
    }
}

/// `acc_register_t`: what `acc_prof_register` is asked to do.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct acc_register_t(pub i32);

impl acc_register_t {
    pub const REG: Self = Self(0);
    pub const TOGGLE: Self = Self(1);
    pub const TOGGLE_PER_THREAD: Self = Self(2);
}

/// `acc_prof_info`: common information about every event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct acc_prof_info {
    pub event_type: acc_event_t,
    pub valid_bytes: c_int,
    pub version: c_int,
    pub device_type: acc_device_t,
    pub device_number: c_int,
    pub thread_id: c_int,
    pub async_: isize,
    pub async_queue: isize,
    pub src_file: *const c_char,
    pub func_name: *const c_char,
    pub line_no: c_int,
    pub end_line_no: c_int,
    pub func_line_no: c_int,
    pub func_end_line_no: c_int,
}

/// `acc_data_event_info`: details of create, delete, alloc, free, upload and download.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct acc_data_event_info {
    pub event_type: acc_event_t,
    pub valid_bytes: c_int,
    pub parent_construct: acc_construct_t,
    pub implicit: c_int,
    pub tool_info: *mut c_void,
    pub var_name: *const c_char,
    pub bytes: usize,
    pub host_ptr: *const c_void,
    pub device_ptr: *const c_void,
}

/// `acc_launch_event_info`: details of a kernel launch.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct acc_launch_event_info {
    pub event_type: acc_event_t,
    pub valid_bytes: c_int,
    pub parent_construct: acc_construct_t,
    pub implicit: c_int,
    pub tool_info: *mut c_void,
    pub kernel_name: *const c_char,
    pub num_gangs: usize,
    pub num_workers: usize,
    pub vector_length: usize,
}

/// `acc_other_event_info`: details of every other event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct acc_other_event_info {
    pub event_type: acc_event_t,
    pub valid_bytes: c_int,
    pub parent_construct: acc_construct_t,
    pub implicit: c_int,
    pub tool_info: *mut c_void,
}

/// `acc_event_info`: the union of the three detail structures; `event_type` is common to all.
#[repr(C)]
#[derive(Clone, Copy)]
pub union acc_event_info {
    pub event_type: acc_event_t,
    pub data_event: acc_data_event_info,
    pub launch_event: acc_launch_event_info,
    pub other_event: acc_other_event_info,
}

impl std::fmt::Debug for acc_event_info {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: event_type is at offset 0 of every member.
        let event_type = unsafe { self.event_type };
        f.debug_struct("acc_event_info")
            .field("event_type", &event_type)
            .finish_non_exhaustive()
    }
}

/// `acc_api_info`: the native device API's handles for this event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct acc_api_info {
    pub device_api: acc_device_api,
    pub valid_bytes: c_int,
    pub device_type: acc_device_t,
    pub vendor: c_int,
    pub device_handle: *const c_void,
    pub context_handle: *const c_void,
    pub async_handle: *const c_void,
}

/// `acc_prof_callback`: what a tool registers for an event.
pub type acc_prof_callback =
    Option<unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info)>;

/// `acc_prof_reg`: the type of `acc_prof_register` and `acc_prof_unregister`.
pub type acc_prof_reg =
    Option<unsafe extern "C" fn(acc_event_t, acc_prof_callback, acc_register_t)>;

/// `acc_query_fn`: what `acc_prof_lookup` returns.
pub type acc_query_fn = Option<unsafe extern "C" fn()>;

/// `acc_prof_lookup_func`: the type of `acc_prof_lookup`.
pub type acc_prof_lookup_func = Option<unsafe extern "C" fn(*const c_char) -> acc_query_fn>;

/// `acc_register_library`: the entry point every tool library exports.
pub type acc_register_library_fn =
    unsafe extern "C" fn(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func);

/// The `version` the OpenACC 2.6 interface reports (GCC's `_ACC_PROF_INFO_VERSION`).
pub const ACC_PROF_INFO_VERSION_2_6: c_int = 201711;

/// `acc_async_sync`: the `async` value of an operation that runs synchronously (OpenACC 3.x,
/// section 3.1). Every other value means asynchronous.
pub const ACC_ASYNC_SYNC: i64 = -2;
/// `acc_async_noval`: the `async` value of an `async` clause without an argument (the default
/// async queue).
pub const ACC_ASYNC_NOVAL: i64 = -1;

/// `valid_bytes` of a complete structure, as GCC's `_ACC_*_VALID_BYTES` macros compute it:
/// the offset of the last field plus its size (no trailing padding).
pub mod valid_bytes {
    use super::*;
    use std::mem::{offset_of, size_of};

    pub const PROF_INFO: c_int =
        (offset_of!(acc_prof_info, func_end_line_no) + size_of::<c_int>()) as c_int;
    pub const DATA_EVENT_INFO: c_int =
        (offset_of!(acc_data_event_info, device_ptr) + size_of::<*const c_void>()) as c_int;
    pub const LAUNCH_EVENT_INFO: c_int =
        (offset_of!(acc_launch_event_info, vector_length) + size_of::<usize>()) as c_int;
    pub const OTHER_EVENT_INFO: c_int =
        (offset_of!(acc_other_event_info, tool_info) + size_of::<*mut c_void>()) as c_int;
    pub const API_INFO: c_int =
        (offset_of!(acc_api_info, async_handle) + size_of::<*const c_void>()) as c_int;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_every_event_and_unknown_is_none() {
        for ev in acc_event_t::ALL {
            assert!(ev.name().unwrap().starts_with("acc_ev_"));
        }
        assert_eq!(acc_event_t(99).name(), None);
        assert_eq!(acc_event_t(-3).name(), None);
        assert_eq!(acc_event_t(99).shape(), EventShape::Unknown);
    }

    #[test]
    fn shapes_are_the_specification_s() {
        let want = |k: i32| match k {
            1 | 3 | 10 | 12 | 14 | 16 | 18 | 20 | 22 | 24 => EventShape::Start,
            2 | 4 | 11 | 13 | 15 | 17 | 19 | 21 | 23 | 25 => EventShape::End,
            5..=9 => EventShape::Point,
            _ => EventShape::Unknown,
        };
        for k in -3..40 {
            assert_eq!(acc_event_t(k).shape(), want(k), "event {k}");
        }
    }

    #[test]
    fn info_kinds_are_the_specification_s() {
        let want = |k: i32| match k {
            6..=9 | 20..=23 => EventInfoKind::Data,
            18 | 19 => EventInfoKind::Launch,
            _ => EventInfoKind::Other,
        };
        for k in -3..40 {
            assert_eq!(acc_event_t(k).info_kind(), want(k), "event {k}");
        }
    }

    #[test]
    fn partners_pair_up() {
        for ev in acc_event_t::ALL {
            match ev.shape() {
                EventShape::Start => assert_eq!(ev.partner().partner(), ev),
                EventShape::End => assert_eq!(ev.partner().shape(), EventShape::Start),
                EventShape::Point => assert_eq!(ev.partner(), ev),
                EventShape::Unknown => panic!("{ev:?} is defined"),
            }
        }
    }

    #[test]
    fn valid_bytes_match_gcc_macros() {
        // GCC's header: offsetof(last field) + sizeof(last field) on LP64.
        assert_eq!(valid_bytes::PROF_INFO, 72);
        assert_eq!(valid_bytes::DATA_EVENT_INFO, 56);
        assert_eq!(valid_bytes::LAUNCH_EVENT_INFO, 56);
        assert_eq!(valid_bytes::OTHER_EVENT_INFO, 24);
        assert_eq!(valid_bytes::API_INFO, 40);
    }
}
