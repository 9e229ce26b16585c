//! A forked child's only thread, when it ran OpenACC constructs in the parent: libgomp's
//! dispatch turned off for it (see [`quiet_libgomp`]).

use accprof_abi::{acc_event_t, acc_register_t};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// libgomp's `acc_prof_unregister`, when libgomp is the runtime we registered with: found at
/// registration, because a forked child may not look it up.
static LIBGOMP_UNREGISTER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Registration found libgomp's `acc_prof_unregister` at `f`.
pub fn remember_libgomp_unregister(f: *mut c_void) {
    LIBGOMP_UNREGISTER.store(f, Ordering::Release);
}

/// In a forked child, on its only thread, when that thread ran OpenACC constructs in the
/// parent: turns libgomp's callback dispatch off for the thread (the specification's
/// per-thread toggle, `acc_prof_unregister(acc_ev_none, NULL, acc_toggle_per_thread)`).
///
/// libgomp dispatches every event under one global lock and has no fork handler for it: a
/// child forked while another thread was dispatching inherits the lock held by a thread that
/// does not exist there, and its first construct waits forever. With dispatch off for the
/// thread, libgomp checks the thread's flag before it takes the lock, so the child's
/// constructs never reach it. The toggle itself takes no lock and allocates nothing for a
/// thread libgomp knows already; a thread that never ran a construct is left alone (the
/// toggle would initialise libgomp's device there). Threads the child starts later are not
/// covered. The child records nothing in any case (lifecycle).
pub fn quiet_libgomp(thread_ran_constructs: bool) {
    let f = LIBGOMP_UNREGISTER.load(Ordering::Acquire);
    if f.is_null() || !thread_ran_constructs {
        return;
    }
    // SAFETY: libgomp's acc_prof_unregister, found by remember_libgomp_unregister; with
    // acc_ev_none, a NULL callback and acc_toggle_per_thread it only clears a flag of the
    // calling thread's libgomp state.
    unsafe {
        let unregister = std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(acc_event_t, accprof_abi::acc_prof_callback, acc_register_t),
        >(f);
        unregister(acc_event_t::NONE, None, acc_register_t::TOGGLE_PER_THREAD);
    }
}
