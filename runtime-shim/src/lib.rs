//! accshim: an OpenACC runtime library that emits the complete `acc_prof` event stream.
//!
//! - Backends: CUDA (cudarc, dynamically loaded: no toolkit needed to build) and an emulated
//!   discrete device for machines without a GPU (src/backend).
//! - The standard runtime API with the specification's C names (src/ffi/api.rs), the profiling
//!   registration entry points (src/ffi/prof.rs), and a construct API that hand-lowered directive
//!   code calls, from Rust ([`construct`]) or C (include/accshim.h, src/ffi/construct.rs).
//! - The present table with structured and dynamic reference counts (src/present.rs, src/data.rs).
//! - The events of each directive, in order, for all three ways in (src/sequence.rs).
//! - The profiling interface: tool loading, the callback registry and dispatch (src/profiling).
//!
//! See README.md for usage and for which events are dispatched where.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod backend;
pub mod check;
pub mod construct;
pub mod data;
pub mod dropped;
pub mod elf_symbols;
pub mod ending;
pub mod env;
pub mod error;
pub mod ffi;
pub mod fork;
pub mod goacc;
pub mod host_memory;
pub mod loc;
pub mod members;
pub mod present;
pub mod profiling;
pub mod runtime;
pub mod sequence;

pub use backend::{RedOp, Val, ACC_DEVICE_EMULATED};
pub use construct::{
    data as data_region, enter_data, exit_data, kernels, parallel, serial, update, wait, Arg,
    Compute, Kernel,
};
pub use data::{Clause, ClauseKind};
pub use loc::Loc;

/// `acc_async_sync` and `acc_async_noval`.
pub const ACC_ASYNC_SYNC: i64 = runtime::ACC_ASYNC_SYNC;
pub const ACC_ASYNC_NOVAL: i64 = runtime::ACC_ASYNC_NOVAL;
