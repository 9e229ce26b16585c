//! CUDA backend (filled in below the emulated one; see module docs in the full version).

use super::*;
use crate::error::AccError;

pub struct Cuda;

impl Cuda {
    /// Opens device `num`, or says why not (no libcuda, no device, driver error).
    pub fn open(_num: i32) -> Result<Cuda> {
        Err(AccError::DeviceUnavailable("CUDA backend not built yet".into()))
    }

    /// Number of CUDA devices, 0 when libcuda is missing. Never panics.
    pub fn count() -> i32 {
        0
    }
}

/// Opens device `num` as a boxed backend.
pub fn open_boxed(num: i32) -> Result<Box<dyn Backend>> {
    Cuda::open(num).map(|_| unreachable!())
}
