//! The semantics GCC's own tests check for its runtime (libgomp.oacc-c-c++-common/acc_prof-*.c:
//! dispatch order and reference counting, toggles, tool_info, version, valid_bytes, init events),
//! plus present-table reference counting, async ordering and thread safety, written against the
//! shim's C entry points and construct API, in process, on the emulated device.
//!
//! The registry and runtime are process-wide, so the tests take a lock and clean up.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_abi::*;
use accshim::ffi::api::*;
use accshim::ffi::prof::{acc_prof_register, acc_prof_unregister};
use accshim::{here, Arg, Clause, Kernel, RedOp};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());
static LOG: Mutex<Vec<(char, i32, i32, i32)>> = Mutex::new(Vec::new()); // (tag, event, construct, implicit)

/// Serialises the tests and pins them to the emulated device: on a machine with a GPU the
/// runtime would otherwise pick CUDA, where these kernels (host functions only) cannot run.
fn lock() -> std::sync::MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Changed under the lock: setenv while another test's runtime calls getenv is a data race.
    std::env::remove_var("ACC_DEVICE_TYPE");
    std::env::set_var("ACCSHIM_NO_CUDA", "1");
    LOG.lock().unwrap().clear();
    g
}

fn take_log() -> Vec<(char, i32, i32, i32)> {
    std::mem::take(&mut *LOG.lock().unwrap())
}

unsafe fn record(tag: char, pi: *mut acc_prof_info, ei: *mut acc_event_info) {
    // SAFETY: the runtime passes valid prof and event info pointers for the callback's duration.
    let (ev, c, i) = unsafe {
        (
            (*pi).event_type.0,
            (*ei).other_event.parent_construct.0,
            (*ei).other_event.implicit,
        )
    };
    LOG.lock().unwrap().push((tag, ev, c, i));
}

unsafe extern "C" fn cb_a(pi: *mut acc_prof_info, ei: *mut acc_event_info, _: *mut acc_api_info) {
    // SAFETY: called by the runtime with valid pointers (the callback contract).
    unsafe { record('a', pi, ei) }
}
unsafe extern "C" fn cb_b(pi: *mut acc_prof_info, ei: *mut acc_event_info, _: *mut acc_api_info) {
    // SAFETY: called by the runtime with valid pointers (the callback contract).
    unsafe { record('b', pi, ei) }
}
unsafe extern "C" fn cb_c(pi: *mut acc_prof_info, ei: *mut acc_event_info, _: *mut acc_api_info) {
    // SAFETY: called by the runtime with valid pointers (the callback contract).
    unsafe { record('c', pi, ei) }
}

fn reg(
    ev: acc_event_t,
    cb: unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info),
) {
    // SAFETY: `cb` is a callback with the signature acc_prof_register expects.
    unsafe { acc_prof_register(ev, Some(cb), acc_register_t::REG) }
}
fn unreg(
    ev: acc_event_t,
    cb: unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info),
) {
    // SAFETY: as in `reg`.
    unsafe { acc_prof_unregister(ev, Some(cb), acc_register_t::REG) }
}

/// A small synchronous parallel construct on `x` (copy), one kernel doubling it.
fn construct(x: &mut [f64]) {
    let k = Kernel::new(c"double_it", x.len())
        .args(&[Arg::of(x)])
        .host(|r, a| {
            let p = a[0].ptr::<f64>();
            for i in r {
                // SAFETY: `i` is in the kernel's range, at most x.len(), and `p` is x's (host) copy.
                unsafe { *p.add(i) *= 2.0 };
            }
            0.0
        });
    accshim::parallel(here!()).copy(x, c"x[0:n]").run(k);
}

const CCS: acc_event_t = acc_event_t::COMPUTE_CONSTRUCT_START;
const CCE: acc_event_t = acc_event_t::COMPUTE_CONSTRUCT_END;

#[test]
fn dispatch_order_and_reference_counting() {
    let _g = lock();
    let mut x = vec![1.0; 8];
    for cb in [cb_a, cb_b, cb_c] {
        reg(CCS, cb);
        reg(CCE, cb);
    }
    construct(&mut x);
    let tags: String = take_log().iter().map(|e| e.0).collect();
    assert_eq!(
        tags, "abccba",
        "start callbacks in registration order, end callbacks in reverse"
    );

    // Registering again bumps a count: still called once; one unregister leaves it registered.
    reg(CCS, cb_a);
    construct(&mut x);
    assert_eq!(
        take_log().iter().filter(|e| e.0 == 'a').count(),
        2,
        "once for start, once for end"
    );
    unreg(CCS, cb_a);
    construct(&mut x);
    assert_eq!(
        take_log()
            .iter()
            .filter(|e| e.0 == 'a' && e.1 == CCS.0)
            .count(),
        1
    );
    unreg(CCS, cb_a);
    construct(&mut x);
    assert_eq!(
        take_log()
            .iter()
            .filter(|e| e.0 == 'a' && e.1 == CCS.0)
            .count(),
        0,
        "gone after as many unregisters"
    );
    for cb in [cb_a, cb_b, cb_c] {
        unreg(CCS, cb);
        unreg(CCE, cb);
    }
    construct(&mut x);
    assert!(take_log().is_empty());
    assert_eq!(x[0], 32.0, "five constructs each doubled x");
}

#[test]
fn toggles() {
    let _g = lock();
    let mut x = vec![1.0; 4];
    reg(CCS, cb_a);
    reg(CCS, cb_b);
    let count = |tag: char| take_log().iter().filter(|e| e.0 == tag).count();
    // SAFETY: cb_a and cb_b have the callback signature the registry expects; None is allowed for toggles.
    unsafe {
        // One callback of one event.
        acc_prof_unregister(CCS, Some(cb_a), acc_register_t::TOGGLE);
        construct(&mut x);
        let log = take_log();
        assert_eq!(
            (
                log.iter().filter(|e| e.0 == 'a').count(),
                log.iter().filter(|e| e.0 == 'b').count()
            ),
            (0, 1)
        );
        acc_prof_register(CCS, Some(cb_a), acc_register_t::TOGGLE);
        construct(&mut x);
        assert_eq!(take_log().len(), 2);
        // A whole event.
        acc_prof_unregister(CCS, None, acc_register_t::TOGGLE);
        construct(&mut x);
        assert_eq!(count('a') + count('b'), 0);
        acc_prof_register(CCS, None, acc_register_t::TOGGLE);
        // Everything.
        acc_prof_unregister(acc_event_t::NONE, None, acc_register_t::TOGGLE);
        construct(&mut x);
        assert!(take_log().is_empty());
        acc_prof_register(acc_event_t::NONE, None, acc_register_t::TOGGLE);
        construct(&mut x);
        assert_eq!(take_log().len(), 2);
        // This thread only.
        acc_prof_unregister(acc_event_t::NONE, None, acc_register_t::TOGGLE_PER_THREAD);
        construct(&mut x);
        assert!(take_log().is_empty(), "disabled on this thread");
        std::thread::spawn(|| construct(&mut [1.0; 4]))
            .join()
            .unwrap();
        assert_eq!(take_log().len(), 2, "other threads still dispatch");
        acc_prof_register(acc_event_t::NONE, None, acc_register_t::TOGGLE_PER_THREAD);
        construct(&mut x);
        assert_eq!(take_log().len(), 2);
    }
    unreg(CCS, cb_a);
    unreg(CCS, cb_b);
}

static TOOL_INFO_OK: AtomicUsize = AtomicUsize::new(0);
static TOOL_INFO_BAD: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn ti_cb(pi: *mut acc_prof_info, ei: *mut acc_event_info, _: *mut acc_api_info) {
    // SAFETY: the runtime passes valid prof and event info pointers for the callback's duration.
    unsafe {
        let ev = (*pi).event_type;
        let other = &mut (*ei).other_event;
        match ev.shape() {
            EventShape::Start => {
                if !other.tool_info.is_null() {
                    TOOL_INFO_BAD.fetch_add(1, Ordering::SeqCst);
                }
                other.tool_info = Box::into_raw(Box::new(ev.0)) as *mut c_void;
            }
            EventShape::End => {
                if other.tool_info.is_null() {
                    TOOL_INFO_BAD.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                let start = *Box::from_raw(other.tool_info as *mut i32);
                if start == ev.0 - 1 {
                    TOOL_INFO_OK.fetch_add(1, Ordering::SeqCst);
                } else {
                    TOOL_INFO_BAD.fetch_add(1, Ordering::SeqCst);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn tool_info_flows_from_start_to_end_even_nested() {
    let _g = lock();
    for ev in acc_event_t::ALL {
        reg(ev, ti_cb);
    }
    TOOL_INFO_OK.store(0, Ordering::SeqCst);
    TOOL_INFO_BAD.store(0, Ordering::SeqCst);
    let mut x = vec![1.0; 16];
    construct(&mut x); // compute, enter data, upload, launch, wait, download, exit data: 7 pairs
    for ev in acc_event_t::ALL {
        unreg(ev, ti_cb);
    }
    assert_eq!(TOOL_INFO_BAD.load(Ordering::SeqCst), 0);
    assert_eq!(TOOL_INFO_OK.load(Ordering::SeqCst), 7);
}

static FIELDS_BAD: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn field_cb(
    pi: *mut acc_prof_info,
    ei: *mut acc_event_info,
    ai: *mut acc_api_info,
) {
    // SAFETY: the runtime passes valid info structures for the callback's duration.
    let p = unsafe { accprof_abi::read::ProfView::new(pi) }.unwrap();
    // SAFETY: as above; `ei` holds the variant of `p.event_type()`.
    let e = unsafe { accprof_abi::read::EventView::new(ei, p.event_type()) }.unwrap();
    // SAFETY: as above.
    let a = unsafe { accprof_abi::read::ApiView::new(ai) }.unwrap();
    let mut bad = Vec::new();
    if p.valid_bytes() != valid_bytes::PROF_INFO as usize
        || p.version() != Some(ACC_PROF_INFO_VERSION_2_6)
    {
        bad.push("prof_info valid_bytes/version");
    }
    let want = match p.event_type().info_kind() {
        EventInfoKind::Data => valid_bytes::DATA_EVENT_INFO,
        EventInfoKind::Launch => valid_bytes::LAUNCH_EVENT_INFO,
        EventInfoKind::Other => valid_bytes::OTHER_EVENT_INFO,
    };
    if e.valid_bytes() != want as usize {
        bad.push("event valid_bytes");
    }
    if a.valid_bytes() != valid_bytes::API_INFO as usize || a.device_type() != p.device_type() {
        bad.push("api_info");
    }
    if e.data().is_some_and(|d| d.bytes().unwrap_or(0) == 0) {
        bad.push("data event without bytes");
    }
    if !bad.is_empty() {
        FIELDS_BAD
            .lock()
            .unwrap()
            .push(format!("{:?}: {bad:?}", p.event_type().name()));
    }
}

#[test]
fn version_and_valid_bytes() {
    let _g = lock();
    for ev in acc_event_t::ALL {
        reg(ev, field_cb);
    }
    let mut x = vec![1.0; 16];
    construct(&mut x);
    acc_copyin(x.as_mut_ptr().cast(), 128);
    acc_update_self(x.as_mut_ptr().cast(), 128);
    acc_delete(x.as_mut_ptr().cast(), 128);
    for ev in acc_event_t::ALL {
        unreg(ev, field_cb);
    }
    let bad = FIELDS_BAD.lock().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn init_and_shutdown_events() {
    let _g = lock();
    acc_shutdown(acc_device_t::DEFAULT);
    let evs = [
        acc_event_t::DEVICE_INIT_START,
        acc_event_t::DEVICE_INIT_END,
        acc_event_t::DEVICE_SHUTDOWN_START,
        acc_event_t::DEVICE_SHUTDOWN_END,
        acc_event_t::RUNTIME_SHUTDOWN,
        CCS,
    ];
    for ev in evs {
        reg(ev, cb_a);
    }
    acc_init(acc_device_t::DEFAULT);
    acc_init(acc_device_t::DEFAULT); // already initialised: no second pair
    acc_shutdown(acc_device_t::DEFAULT);
    let log = take_log();
    let api = acc_construct_t::RUNTIME_API.0;
    assert_eq!(
        log,
        vec![
            ('a', 1, api, 0),
            ('a', 2, api, 0),
            ('a', 3, api, 0),
            ('a', 4, api, 0),
            ('a', 5, api, 0)
        ]
    );
    // Lazy initialisation by a compute construct: device_init carries the construct, implicit,
    // and comes before compute_construct_start (GCC's DEVICE_INIT_INSIDE_COMPUTE_CONSTRUCT 0).
    let mut x = vec![1.0; 4];
    construct(&mut x);
    let log = take_log();
    let par = acc_construct_t::PARALLEL.0;
    assert_eq!(
        &log[..3],
        &[('a', 1, par, 1), ('a', 2, par, 1), ('a', CCS.0, par, 0)]
    );
    for ev in evs {
        unreg(ev, cb_a);
    }
    assert_eq!(acc_get_device_type(), accshim::ACC_DEVICE_EMULATED);
}

static NESTED_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn nested_cb(
    _: *mut acc_prof_info,
    _: *mut acc_event_info,
    _: *mut acc_api_info,
) {
    NESTED_CALLS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn registering_cb(
    _: *mut acc_prof_info,
    _: *mut acc_event_info,
    _: *mut acc_api_info,
) {
    // Registering from inside a callback and calling the runtime must not deadlock.
    reg(CCE, nested_cb);
    let _ = acc_get_device_type();
    let mut probe = [0u8; 8];
    let _ = acc_is_present(probe.as_mut_ptr().cast(), 8);
    let _ = acc_async_test_all();
}

#[test]
fn registration_and_runtime_calls_from_a_callback() {
    let _g = lock();
    NESTED_CALLS.store(0, Ordering::SeqCst);
    reg(CCS, registering_cb);
    let mut x = vec![1.0; 4];
    construct(&mut x);
    assert_eq!(
        NESTED_CALLS.load(Ordering::SeqCst),
        1,
        "registered during the construct, called at its end"
    );
    unreg(CCS, registering_cb);
    // registering_cb ran once: nested_cb is registered once.
    unreg(CCE, nested_cb);
    construct(&mut x);
    assert_eq!(NESTED_CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn present_table_reference_counts() {
    let _g = lock();
    let mut a = vec![1.0f64; 64];
    let h = a.as_mut_ptr() as *mut c_void;
    let bytes = 64 * 8;
    reg(acc_event_t::ALLOC, cb_a);
    reg(acc_event_t::FREE, cb_a);
    reg(acc_event_t::ENQUEUE_DOWNLOAD_START, cb_a);

    // Dynamic counter: two copyins need two copyouts; only the last one copies back.
    let d = acc_copyin(h, bytes);
    assert!(!d.is_null() && d != h);
    assert_eq!(acc_copyin(h, bytes), d, "present: same device copy");
    assert_eq!(acc_is_present(h, bytes), 1);
    assert_eq!(acc_deviceptr(h), d);
    assert_eq!(acc_hostptr(d), h);
    // Wrapping adds: `d` is a device address, not a pointer into any Rust allocation.
    assert_eq!(
        acc_deviceptr(h.wrapping_byte_add(80)),
        d.wrapping_byte_add(80),
        "inside a present section"
    );
    assert_eq!(
        acc_is_present(h.wrapping_byte_add(8), 16),
        1,
        "subarray of present data"
    );
    a[0] = 5.0;
    acc_copyout(h, bytes);
    assert_eq!(a[0], 5.0, "still referenced: no copy back");
    assert_eq!(acc_is_present(h, bytes), 1);
    acc_copyout(h, bytes);
    assert_eq!(a[0], 1.0, "last reference: copied back");
    assert_eq!(acc_is_present(h, bytes), 0);
    let log = take_log();
    assert_eq!(
        log.iter().filter(|e| e.1 == acc_event_t::ALLOC.0).count(),
        1
    );
    assert_eq!(log.iter().filter(|e| e.1 == acc_event_t::FREE.0).count(), 1);
    assert_eq!(
        log.iter()
            .filter(|e| e.1 == acc_event_t::ENQUEUE_DOWNLOAD_START.0)
            .count(),
        1
    );
    assert!(
        log.iter().all(|e| e.2 == acc_construct_t::RUNTIME_API.0),
        "API routines report runtime_api"
    );

    // Finalize drops the dynamic counter to zero at once.
    acc_copyin(h, bytes);
    acc_copyin(h, bytes);
    acc_copyin(h, bytes);
    acc_delete_finalize(h, bytes);
    assert_eq!(acc_is_present(h, bytes), 0);

    // Structured inside dynamic: the data construct's exit keeps the data (dynamic ref > 0).
    acc_create(h, bytes);
    {
        let r = accshim::data_region(here!(), &[Clause::copy(&a, c"a")]);
        assert_eq!(acc_is_present(h, bytes), 1);
        r.end(line!());
    }
    assert_eq!(acc_is_present(h, bytes), 1);
    acc_delete(h, bytes);
    assert_eq!(acc_is_present(h, bytes), 0);

    // A data construct's present clause on data placed by enter data.
    accshim::enter_data(
        here!(),
        &[Clause::copyin(&a, c"a")],
        accshim::ACC_ASYNC_SYNC,
        None,
    );
    let mut err = 0.0;
    // SAFETY: `i` is in the kernel's range of 64, and the argument is `a`'s present copy of 64 doubles.
    let k = Kernel::new(c"sum", 64)
        .args(&[Arg::of(&a)])
        .host(|r, v| r.map(|i| unsafe { *v[0].ptr::<f64>().add(i) }).sum())
        .reduction(RedOp::Sum, &mut err, c"err");
    accshim::parallel(here!()).present(&a, c"a").run(k);
    assert_eq!(
        err, 64.0,
        "reduction result combined into the host variable"
    );
    accshim::exit_data(
        here!(),
        &[Clause::delete(&a, c"a")],
        accshim::ACC_ASYNC_SYNC,
        None,
        false,
    );
    assert_eq!(acc_is_present(h, bytes), 0);

    // acc_map_data / acc_unmap_data with acc_malloc'd memory.
    let dm = acc_malloc(bytes);
    assert!(!dm.is_null());
    acc_map_data(h, dm, bytes);
    assert_eq!(acc_deviceptr(h), dm);
    acc_copyin(h, bytes); // present: no transfer, no new memory
    acc_update_device(h, bytes);
    acc_unmap_data(h);
    assert_eq!(acc_is_present(h, bytes), 0);
    acc_free(dm);
    unreg(acc_event_t::ALLOC, cb_a);
    unreg(acc_event_t::FREE, cb_a);
    unreg(acc_event_t::ENQUEUE_DOWNLOAD_START, cb_a);
}

#[test]
fn attach_and_detach_pointers() {
    let _g = lock();
    #[repr(C)]
    struct S {
        p: *mut f64,
        n: usize,
    }
    let mut data = vec![3.0f64; 8];
    let mut s = S {
        p: data.as_mut_ptr(),
        n: 8,
    };
    let sp = &mut s as *mut S as *mut c_void;
    acc_copyin(sp, std::mem::size_of::<S>());
    acc_copyin(data.as_mut_ptr().cast(), 64);
    acc_attach(&mut s.p as *mut *mut f64 as *mut *mut c_void);
    // The device copy of s.p now holds the device address of data.
    let mut back = S {
        p: std::ptr::null_mut(),
        n: 0,
    };
    acc_memcpy_from_device(
        (&mut back as *mut S).cast(),
        acc_deviceptr(sp),
        std::mem::size_of::<S>(),
    );
    assert_eq!(
        back.p as *mut c_void,
        acc_deviceptr(data.as_mut_ptr().cast())
    );
    assert_eq!(back.n, 8);
    acc_detach(&mut s.p as *mut *mut f64 as *mut *mut c_void);
    acc_memcpy_from_device(
        (&mut back as *mut S).cast(),
        acc_deviceptr(sp),
        std::mem::size_of::<S>(),
    );
    assert_eq!(
        back.p,
        data.as_mut_ptr(),
        "detach restores the host pointer value"
    );
    acc_delete(data.as_mut_ptr().cast(), 64);
    acc_delete(sp, std::mem::size_of::<S>());
}

#[test]
fn async_queues_keep_order_and_wait() {
    let _g = lock();
    let n = 1 << 16;
    let mut x = vec![1.0f64; n];
    let h = x.as_mut_ptr() as *mut c_void;
    let bytes = n * 8;
    acc_create(h, bytes);
    for q in [1, 2] {
        acc_update_device_async(h, bytes, q); // both queues upload; queue 2 waits for queue 1 below
    }
    acc_wait_async(1, 2);
    let slow = Kernel::new(c"slow_inc", n)
        .args(&[Arg::of(&x)])
        .host(|r, a| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let p = a[0].ptr::<f64>();
            for i in r {
                // SAFETY: `i` is in the kernel's range of n, and `p` is `x`'s present copy of n doubles.
                unsafe { *p.add(i) += 1.0 };
            }
            0.0
        });
    accshim::parallel(here!())
        .present(&x, c"x")
        .async_(1)
        .num_gangs(1)
        .run(slow);
    assert_eq!(acc_async_test(1), 0, "queue 1 still busy");
    // A download into pageable memory is done when the call returns, as on CUDA.
    acc_update_self_async(h, bytes, 1);
    assert_eq!(
        x[0], 2.0,
        "upload, kernel, download ran in order on queue 1"
    );
    acc_wait(1);
    assert_eq!(acc_async_test(1), 1);
    // Default async queue.
    assert_eq!(acc_get_default_async(), -1);
    acc_set_default_async(3);
    assert_eq!(acc_get_default_async(), 3);
    acc_update_device_async(h, bytes, -1); // acc_async_noval goes to queue 3
    acc_wait_all();
    assert_eq!(acc_async_test_all(), 1);
    acc_set_default_async(-1);
    acc_delete(h, bytes);
}

static THREADED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_cb(_: *mut acc_prof_info, _: *mut acc_event_info, _: *mut acc_api_info) {
    THREADED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn constructs_from_many_threads() {
    let _g = lock();
    THREADED.store(0, Ordering::SeqCst);
    reg(acc_event_t::ENQUEUE_LAUNCH_START, count_cb);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let mut x = vec![1.0; 100];
                for _ in 0..25 {
                    construct(&mut x);
                }
                assert_eq!(x[0], 2f64.powi(25));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    unreg(acc_event_t::ENQUEUE_LAUNCH_START, count_cb);
    assert_eq!(THREADED.load(Ordering::SeqCst), 100);
}
