//! Reading what a runtime handed us, one field at a time, only where `valid_bytes` covers it.
//!
//! The specification lets a runtime fill fewer bytes than the structure holds (an older runtime,
//! a smaller `acc_device_t`), and says a tool must not read past `valid_bytes`. Every accessor
//! here returns `None` for a field that is not covered, so callers never see stale memory.
//!
//! These are on the hot path of the tool. The views read a field only when it is asked for:
//! copying every field into a structure of `Option`s first would cost each callback a few
//! hundred instructions and stack cache lines for fields most callbacks never read.

use super::*;
use std::marker::PhantomData;
use std::mem::{offset_of, size_of};

/// Defines accessors on a view: each reads field `$field` of type `$ty` from the viewed
/// `$struct` when the view's `valid` bytes cover it.
macro_rules! guarded_fields {
    ($struct:ty; $($(#[$doc:meta])* $field:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $field(&self) -> Option<$ty> {
                const END: usize = offset_of!($struct, $field) + size_of::<$ty>();
                if self.valid >= END {
                    // SAFETY: the view's constructor was promised `ptr` points at a structure
                    // of at least `valid` readable bytes, and the field lies inside them.
                    Some(unsafe { std::ptr::addr_of!((*(self.ptr as *const $struct)).$field).read_unaligned() })
                } else {
                    None
                }
            }
        )*
    };
}

/// `valid_bytes` as a byte count: a negative value covers nothing.
fn byte_count(valid_bytes: c_int) -> usize {
    usize::try_from(valid_bytes).unwrap_or(0)
}

/// An `acc_prof_info` as the runtime filled it, borrowed for the callback.
#[derive(Clone, Copy, Debug)]
pub struct ProfView<'a> {
    ptr: *const acc_prof_info,
    valid: usize,
    event_type: acc_event_t,
    _callback: PhantomData<&'a acc_prof_info>,
}

impl<'a> ProfView<'a> {
    /// A view of `*p`, or `None` for a null pointer.
    ///
    /// # Safety
    /// `p` is null or points at an `acc_prof_info` whose first `valid_bytes` bytes are
    /// readable and stay unchanged for `'a`.
    #[inline]
    pub unsafe fn new(p: *const acc_prof_info) -> Option<Self> {
        if p.is_null() {
            return None;
        }
        // SAFETY: event_type and valid_bytes are the first 8 bytes, which every runtime fills.
        let (event_type, valid) = unsafe { ((*p).event_type, (*p).valid_bytes) };
        Some(Self {
            ptr: p,
            valid: byte_count(valid),
            event_type,
            _callback: PhantomData,
        })
    }

    pub fn event_type(&self) -> acc_event_t {
        self.event_type
    }

    /// The bytes the runtime says it filled.
    pub fn valid_bytes(&self) -> usize {
        self.valid
    }

    /// The structure viewed (its first `valid_bytes` bytes are readable).
    #[inline(always)]
    pub fn as_ptr(&self) -> *const acc_prof_info {
        self.ptr
    }

    guarded_fields! { acc_prof_info;
        version: c_int,
        device_type: acc_device_t,
        device_number: c_int,
        thread_id: c_int,
        async_: isize,
        async_queue: isize,
        src_file: *const c_char,
        func_name: *const c_char,
        line_no: c_int,
        end_line_no: c_int,
        func_line_no: c_int,
        func_end_line_no: c_int,
    }
}

/// An `acc_event_info` as the runtime filled it, read as the member of the union that its
/// event type uses (see [`acc_event_t::info_kind`]).
#[derive(Clone, Copy, Debug)]
pub struct EventView<'a> {
    ptr: *const acc_event_info,
    valid: usize,
    kind: EventInfoKind,
    _callback: PhantomData<&'a acc_event_info>,
}

impl<'a> EventView<'a> {
    /// A view of `*p` for an event of `event_type`, or `None` for a null pointer.
    ///
    /// # Safety
    /// `p` is null or points at an `acc_event_info` whose first `valid_bytes` bytes are
    /// readable and stay unchanged for `'a`.
    #[inline]
    pub unsafe fn new(p: *const acc_event_info, event_type: acc_event_t) -> Option<Self> {
        if p.is_null() {
            return None;
        }
        // SAFETY: valid_bytes sits in the first 8 bytes of every member, which every runtime fills.
        let valid = unsafe { (*(p as *const acc_other_event_info)).valid_bytes };
        Some(Self {
            ptr: p,
            valid: byte_count(valid),
            kind: event_type.info_kind(),
            _callback: PhantomData,
        })
    }

    /// The bytes the runtime says it filled.
    pub fn valid_bytes(&self) -> usize {
        self.valid
    }

    // Every member starts with event_type, valid_bytes, parent_construct, implicit, tool_info.
    guarded_fields! { acc_other_event_info;
        parent_construct: acc_construct_t,
        implicit: c_int,
        tool_info: *mut c_void,
    }

    /// The structure viewed (its first `valid_bytes` bytes are readable).
    #[inline(always)]
    pub fn as_ptr(&self) -> *const acc_event_info {
        self.ptr
    }

    /// The kind of information this is (the member of the union the event uses).
    #[inline(always)]
    pub fn info_kind(&self) -> EventInfoKind {
        self.kind
    }

    /// The data event's fields, when this is a data event.
    #[inline]
    pub fn data(&self) -> Option<DataView<'a>> {
        (self.kind == EventInfoKind::Data).then_some(DataView {
            ptr: self.ptr as *const u8,
            valid: self.valid,
            _callback: PhantomData,
        })
    }

    /// The launch event's fields, when this is a launch event.
    #[inline]
    pub fn launch(&self) -> Option<LaunchView<'a>> {
        (self.kind == EventInfoKind::Launch).then_some(LaunchView {
            ptr: self.ptr as *const u8,
            valid: self.valid,
            _callback: PhantomData,
        })
    }
}

/// The `acc_data_event_info` member of an event's information.
#[derive(Clone, Copy, Debug)]
pub struct DataView<'a> {
    ptr: *const u8,
    valid: usize,
    _callback: PhantomData<&'a acc_data_event_info>,
}

impl DataView<'_> {
    guarded_fields! { acc_data_event_info;
        var_name: *const c_char,
        bytes: usize,
        host_ptr: *const c_void,
        device_ptr: *const c_void,
    }
}

/// The `acc_launch_event_info` member of an event's information.
#[derive(Clone, Copy, Debug)]
pub struct LaunchView<'a> {
    ptr: *const u8,
    valid: usize,
    _callback: PhantomData<&'a acc_launch_event_info>,
}

impl LaunchView<'_> {
    guarded_fields! { acc_launch_event_info;
        kernel_name: *const c_char,
        num_gangs: usize,
        num_workers: usize,
        vector_length: usize,
    }
}

/// An `acc_api_info` as the runtime filled it, borrowed for the callback.
#[derive(Clone, Copy, Debug)]
pub struct ApiView<'a> {
    ptr: *const acc_api_info,
    valid: usize,
    _callback: PhantomData<&'a acc_api_info>,
}

impl<'a> ApiView<'a> {
    /// A view of `*p`, or `None` for a null pointer.
    ///
    /// # Safety
    /// `p` is null or points at an `acc_api_info` whose first `valid_bytes` bytes are readable
    /// and stay unchanged for `'a`.
    #[inline]
    pub unsafe fn new(p: *const acc_api_info) -> Option<Self> {
        if p.is_null() {
            return None;
        }
        // SAFETY: valid_bytes sits in the first 8 bytes, which every runtime fills.
        let valid = unsafe { (*p).valid_bytes };
        Some(Self {
            ptr: p,
            valid: byte_count(valid),
            _callback: PhantomData,
        })
    }

    /// The bytes the runtime says it filled.
    pub fn valid_bytes(&self) -> usize {
        self.valid
    }

    /// The structure viewed (its first `valid_bytes` bytes are readable).
    #[inline(always)]
    pub fn as_ptr(&self) -> *const acc_api_info {
        self.ptr
    }

    guarded_fields! { acc_api_info;
        device_api: acc_device_api,
        device_type: acc_device_t,
        vendor: c_int,
        device_handle: *const c_void,
        context_handle: *const c_void,
        async_handle: *const c_void,
    }
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
        // SAFETY: null, or a structure of this test that outlives the view.
        let f = unsafe { ProfView::new(&p) }.unwrap();
        assert_eq!(f.event_type(), acc_event_t::COMPUTE_CONSTRUCT_START);
        assert_eq!(f.version(), Some(201711));
        assert_eq!(f.thread_id(), Some(7));
        assert_eq!(f.line_no(), Some(10));
        assert_eq!(f.func_end_line_no(), Some(40));
    }

    #[test]
    fn short_valid_bytes_hides_later_fields() {
        let mut p = full_prof();
        p.valid_bytes = 24; // up to and including thread_id
                            // SAFETY: null, or a structure of this test that outlives the view.
        let f = unsafe { ProfView::new(&p) }.unwrap();
        assert_eq!(f.thread_id(), Some(7));
        assert_eq!(f.async_(), None);
        assert!(f.src_file().is_none());
        p.valid_bytes = -5;
        // SAFETY: null, or a structure of this test that outlives the view.
        let f = unsafe { ProfView::new(&p) }.unwrap();
        assert_eq!(f.valid_bytes(), 0);
        assert_eq!(f.version(), None);
    }

    #[test]
    fn null_pointers_read_as_none() {
        // SAFETY: null, or a structure of this test that outlives the view.
        assert!(unsafe { ProfView::new(std::ptr::null()) }.is_none());
        // SAFETY: null, or a structure of this test that outlives the view.
        assert!(unsafe { EventView::new(std::ptr::null(), acc_event_t::ALLOC) }.is_none());
        // SAFETY: null, or a structure of this test that outlives the view.
        assert!(unsafe { ApiView::new(std::ptr::null()) }.is_none());
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
        // SAFETY: null, or a structure of this test that outlives the view.
        let f = unsafe { EventView::new(&info, acc_event_t::ENQUEUE_UPLOAD_START) }.unwrap();
        let d = f.data().unwrap();
        assert_eq!(d.bytes(), Some(4096));
        assert_eq!(d.host_ptr(), Some(16 as *const c_void));
        assert!(f.launch().is_none());
        // SAFETY: null, or a structure of this test that outlives the view.
        let f = unsafe { EventView::new(&info, acc_event_t::COMPUTE_CONSTRUCT_START) }.unwrap();
        assert!(f.data().is_none());
        assert_eq!(f.implicit(), Some(1));
        assert_eq!(f.parent_construct(), Some(acc_construct_t::PARALLEL));
    }

    #[test]
    fn launch_fields_stop_at_valid_bytes() {
        let mut info = acc_event_info {
            launch_event: acc_launch_event_info {
                event_type: acc_event_t::ENQUEUE_LAUNCH_START,
                valid_bytes: valid_bytes::LAUNCH_EVENT_INFO,
                parent_construct: acc_construct_t::PARALLEL,
                implicit: 0,
                tool_info: std::ptr::null_mut(),
                kernel_name: c"k".as_ptr(),
                num_gangs: 8,
                num_workers: 4,
                vector_length: 32,
            },
        };
        // SAFETY: null, or a structure of this test that outlives the view.
        let l = unsafe { EventView::new(&info, acc_event_t::ENQUEUE_LAUNCH_START) }
            .unwrap()
            .launch()
            .unwrap();
        assert_eq!(
            (l.num_gangs(), l.num_workers(), l.vector_length()),
            (Some(8), Some(4), Some(32))
        );
        // A runtime that filled up to num_workers only.
        info.launch_event.valid_bytes =
            (std::mem::offset_of!(acc_launch_event_info, num_workers) + 8) as c_int;
        // SAFETY: null, or a structure of this test that outlives the view.
        let l = unsafe { EventView::new(&info, acc_event_t::ENQUEUE_LAUNCH_START) }
            .unwrap()
            .launch()
            .unwrap();
        assert_eq!(
            (l.num_gangs(), l.num_workers(), l.vector_length()),
            (Some(8), Some(4), None)
        );
    }

    #[test]
    fn api_fields_stop_at_valid_bytes() {
        let mut api = acc_api_info {
            device_api: acc_device_api::CUDA,
            valid_bytes: valid_bytes::API_INFO,
            device_type: acc_device_t::NVIDIA,
            vendor: 0,
            device_handle: 8 as *const c_void,
            context_handle: 2 as *const c_void,
            async_handle: 3 as *const c_void,
        };
        // SAFETY: null, or a structure of this test that outlives the view.
        let a = unsafe { ApiView::new(&api) }.unwrap();
        assert_eq!(
            (a.device_api(), a.async_handle()),
            (Some(acc_device_api::CUDA), Some(3 as *const c_void))
        );
        api.valid_bytes = 32; // through context_handle
                              // SAFETY: null, or a structure of this test that outlives the view.
        let a = unsafe { ApiView::new(&api) }.unwrap();
        assert_eq!(
            (a.context_handle(), a.async_handle()),
            (Some(2 as *const c_void), None)
        );
    }
}
