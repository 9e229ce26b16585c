//! `acc_prof_register`, `acc_prof_unregister`, `acc_prof_lookup`: exported so that a tool can
//! find them with dlsym from its constructor, before the runtime initialises.

use super::guard;
use crate::profiling::registry;
use crate::runtime;
use accprof_abi::{acc_event_t, acc_prof_callback, acc_query_fn, acc_register_t};
use std::ffi::c_char;

#[no_mangle]
pub unsafe extern "C" fn acc_prof_register(
    ev: acc_event_t,
    cb: acc_prof_callback,
    reg: acc_register_t,
) {
    guard("acc_prof_register", || registry::register(ev, cb, reg))
}

#[no_mangle]
pub unsafe extern "C" fn acc_prof_unregister(
    ev: acc_event_t,
    cb: acc_prof_callback,
    reg: acc_register_t,
) {
    guard("acc_prof_unregister", || registry::unregister(ev, cb, reg))
}

/// Runtime-specific query functions (see [`runtime::tool_lookup`]).
#[no_mangle]
pub unsafe extern "C" fn acc_prof_lookup(name: *const c_char) -> acc_query_fn {
    // SAFETY: the tool's NUL-terminated name (or NULL), passed on.
    unsafe { runtime::tool_lookup(name) }
}
