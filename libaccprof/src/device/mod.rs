//! Device activity: kernels, copies and memsets with device times.
//!
//! - [`cupti`]: from CUPTI, when it is there.
//! - [`cuda_events`]: from CUDA events recorded on the streams a runtime hands out in
//!   acc_api_info, when CUPTI is not there.

pub mod cuda_events;
pub mod cupti;
