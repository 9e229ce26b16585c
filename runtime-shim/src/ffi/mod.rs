//! The C ABI: the standard runtime API (api.rs), the profiling registration entry points
//! (prof.rs) and the construct API for hand-lowered C (construct.rs).
//!
//! No Rust panic may unwind into C: every exported body runs inside `guard`, which turns a
//! panic into an error message and abort (what the runtime does for any fatal error).
//!
//! The safety contract of every `unsafe extern "C"` function here is its C declaration's in
//! include/openacc.h and include/accshim.h (and the OpenACC specification's for the standard
//! routines): pointers are NULL or valid for the sizes and lifetimes given there. It is stated
//! once here rather than repeated on each of the ~80 entry points.
#![allow(clippy::missing_safety_doc)]

pub mod api;
pub mod construct;
pub mod prof;

pub(crate) use crate::error::guard;
