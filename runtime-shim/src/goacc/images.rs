//! The offload images a program registers (GOMP_offload_register_ver): kept per host table, for
//! a backend that runs GCC's device code (the nvptx images on CUDA). The emulated device runs
//! the host-fallback functions and needs none of them.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;

/// GCC's device numbers (gomp-constants.h): the images of another target are kept but unused.
pub const GOMP_DEVICE_NVIDIA_PTX: c_int = 5;

/// One registered image: GCC's host table (function and variable address ranges) and the
/// target's image descriptor, as the program's constructor passed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    pub version: c_uint,
    pub host_table: usize,
    pub target_type: c_int,
    pub target_data: usize,
}

static IMAGES: Mutex<Vec<Image>> = Mutex::new(Vec::new());

pub fn register(version: c_uint, host_table: *const c_void, target_type: c_int, target_data: *const c_void) {
    let img = Image { version, host_table: host_table as usize, target_type, target_data: target_data as usize };
    IMAGES.lock().unwrap_or_else(|e| e.into_inner()).push(img);
}

pub fn unregister(_version: c_uint, host_table: *const c_void, target_type: c_int, target_data: *const c_void) {
    IMAGES.lock().unwrap_or_else(|e| e.into_inner()).retain(|i| {
        !(i.host_table == host_table as usize && i.target_type == target_type && i.target_data == target_data as usize)
    });
}

/// The images registered now.
pub fn registered() -> Vec<Image> {
    IMAGES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The global variables the program's images declare for the device (`acc declare` globals: the
/// host table's variable part, pairs of address and size), over every image registered.
pub fn declared_variables() -> usize {
    registered()
        .iter()
        .filter(|i| i.host_table != 0)
        .map(|i| {
            // SAFETY: GCC's host table is four pointers: function table start and end, variable
            // table start and end; it lives in the program's image for as long as it is
            // registered.
            let t = i.host_table as *const usize;
            let (start, end) = unsafe { (*t.add(2), *t.add(3)) };
            end.saturating_sub(start) / (2 * std::mem::size_of::<usize>())
        })
        .sum()
}
