//! After warm-up, recording an event allocates nothing on the application's thread.
//!
//! A counting global allocator wraps the system one in this test binary; the test drives the
//! registered callback as a runtime would and counts allocations made on its own thread (the
//! writer thread's work is its own business). Buffers are recycled through the pool and strings
//! are interned once, so the only allocation left is the channel's: one block per 31 batches
//! of thousands of events.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_abi::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNTING.try_with(|c| {
            if c.get() {
                let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
            }
        });
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static CALLBACK: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn fake_reg(_ev: acc_event_t, cb: acc_prof_callback, _r: acc_register_t) {
    if let Some(cb) = cb {
        CALLBACK.store(cb as usize, Ordering::Relaxed);
    }
}

type Callback = unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info);

fn prof(kind: acc_event_t) -> acc_prof_info {
    acc_prof_info {
        event_type: kind,
        valid_bytes: valid_bytes::PROF_INFO,
        version: ACC_PROF_INFO_VERSION_2_6,
        device_type: acc_device_t::NVIDIA,
        device_number: 0,
        thread_id: 0,
        async_: -1,
        async_queue: -1,
        src_file: c"laplace.c".as_ptr(),
        func_name: c"main".as_ptr(),
        line_no: 62,
        end_line_no: 70,
        func_line_no: 40,
        func_end_line_no: 90,
    }
}

fn upload(kind: acc_event_t, i: usize) -> acc_event_info {
    acc_event_info {
        data_event: acc_data_event_info {
            event_type: kind,
            valid_bytes: valid_bytes::DATA_EVENT_INFO,
            parent_construct: acc_construct_t::PARALLEL,
            implicit: 0,
            tool_info: std::ptr::null_mut(),
            var_name: c"A[0:n]".as_ptr(),
            bytes: 4096 + i,
            host_ptr: std::ptr::without_provenance::<c_void>(0x1000 + i),
            device_ptr: std::ptr::without_provenance::<c_void>(0x9000 + i),
        },
    }
}

#[test]
fn recording_allocates_nothing_per_event_after_warm_up() {
    let dir = std::env::temp_dir().join(format!("accprof-noalloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("ACCPROF_OUT", dir.join("t.trace"));
    std::env::set_var("ACCPROF_QUIET", "1");
    accprof::bench::register_with(Some(fake_reg), "test");
    // SAFETY: the registered pointer is accprof's callback.
    let cb: Callback =
        unsafe { std::mem::transmute::<usize, Callback>(CALLBACK.load(Ordering::Relaxed)) };
    let drive = |pairs: usize| {
        for i in 0..pairs {
            for kind in [
                acc_event_t::ENQUEUE_UPLOAD_START,
                acc_event_t::ENQUEUE_UPLOAD_END,
            ] {
                let mut p = prof(kind);
                let mut e = upload(kind, i);
                // SAFETY: well-formed structures, as a runtime passes them.
                unsafe { cb(&mut p, &mut e, std::ptr::null_mut()) };
            }
        }
    };
    // Warm-up: the thread's state, its string cache, the pool's buffers.
    drive(50_000);
    COUNTING.with(|c| c.set(true));
    let events = 400_000u64;
    drive(events as usize / 2);
    COUNTING.with(|c| c.set(false));
    let allocs = ALLOCS.with(Cell::get);
    accprof::bench::finish();
    std::fs::remove_dir_all(&dir).ok();
    // 400,000 events fill ~100 buffers; the channel allocates a block per 31 sends.
    assert!(
        allocs * 10_000 <= events,
        "{allocs} allocations for {events} events"
    );
}
