//! The advice rules, one file each.

mod alloc_churn;
mod async_queues;
mod create_instead_of_copy;
mod data_region;
mod device_idle_gaps;
mod init_early;
mod kernels_scalars;
mod launch_geometry;
mod sequential_kernels;
mod short_kernels;
mod update_in_loop;
mod whole_array;

#[cfg(test)]
mod testing;

pub use alloc_churn::AllocChurn;
pub use async_queues::AsyncQueues;
pub use create_instead_of_copy::CreateInsteadOfCopy;
pub use data_region::DataRegion;
pub use device_idle_gaps::DeviceIdleGaps;
pub use init_early::InitEarly;
pub use kernels_scalars::KernelsScalars;
pub use launch_geometry::LaunchGeometryRule;
pub use sequential_kernels::SequentialKernel;
pub use short_kernels::ShortKernels;
pub use update_in_loop::UpdateInLoop;
pub use whole_array::WholeArray;
