//! `acc_prof_register`, `acc_prof_unregister`, `acc_prof_lookup`: exported so that a tool can
//! find them with dlsym from its constructor, before the runtime initialises.

use super::guard;
use crate::profiling::registry;
use accprof_abi::{acc_event_t, acc_prof_callback, acc_query_fn, acc_register_t};
use std::ffi::{c_char, CStr};

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

/// Runtime-specific query functions. The shim offers the CUDA handle getters, so a tool can
/// reach the device's native context and streams.
#[no_mangle]
pub unsafe extern "C" fn acc_prof_lookup(name: *const c_char) -> acc_query_fn {
    guard("acc_prof_lookup", || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the tool passes a NUL-terminated name.
        let name = unsafe { CStr::from_ptr(name) }.to_bytes();
        type Q = unsafe extern "C" fn();
        // SAFETY: the tool casts the result back to the named function's real type.
        unsafe {
            match name {
                b"acc_get_cuda_stream" => Some(std::mem::transmute::<usize, Q>(
                    super::api::acc_get_cuda_stream as *const () as usize,
                )),
                b"acc_get_current_cuda_context" => Some(std::mem::transmute::<usize, Q>(
                    super::api::acc_get_current_cuda_context as *const () as usize,
                )),
                b"acc_get_current_cuda_device" => Some(std::mem::transmute::<usize, Q>(
                    super::api::acc_get_current_cuda_device as *const () as usize,
                )),
                _ => None,
            }
        }
    })
}
