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

pub fn register(
    version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    let img = Image {
        version,
        host_table: host_table as usize,
        target_type,
        target_data: target_data as usize,
    };
    IMAGES.lock().unwrap_or_else(|e| e.into_inner()).push(img);
}

pub fn unregister(
    _version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    IMAGES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|i| {
            !(i.host_table == host_table as usize
                && i.target_type == target_type
                && i.target_data == target_data as usize)
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
            let t = i.host_table as *const usize;
            // SAFETY: GCC's host table is four pointers: function table start and end, variable
            // table start and end; it lives in the program's image for as long as it is
            // registered.
            let (start, end) = unsafe { (*t.add(2), *t.add(3)) };
            end.saturating_sub(start) / (2 * std::mem::size_of::<usize>())
        })
        .sum()
}

/// The launch dimensions GCC compiled into the nvptx image for the construct function `host_fn`
/// (gang, worker, vector; 0: decided at run time), where an nvptx image is registered.
///
/// GCC 12's image (gcc/config/nvptx/mkoffload.cc): the host table's function part lists the
/// host functions in the order of the image's function descriptors, each a name and three
/// unsigned shorts; the descriptor array is at offset 32 of the target data, its length at 40.
pub fn compiled_dims(host_fn: usize) -> Option<[u16; 3]> {
    for img in registered().iter().filter(|i| {
        i.target_type == GOMP_DEVICE_NVIDIA_PTX && i.host_table != 0 && i.target_data != 0
    }) {
        // SAFETY: GCC's host table and nvptx target data, as registered, live in the program's
        // image; the function table and descriptor array have the lengths they state.
        unsafe {
            let t = img.host_table as *const usize;
            let (start, end) = (*t, *t.add(1));
            let funcs =
                std::slice::from_raw_parts(start as *const usize, end.saturating_sub(start) / 8);
            let Some(i) = funcs.iter().position(|&f| f == host_fn) else {
                continue;
            };
            let data = img.target_data as *const u8;
            let descs = *(data.add(32) as *const usize);
            let num = *(data.add(40) as *const u32) as usize;
            if i >= num || descs == 0 {
                continue;
            }
            let dims = (descs + i * 16 + 8) as *const u16;
            return Some([*dims, *dims.add(1), *dims.add(2)]);
        }
    }
    None
}

/// GCC's nvptx kernel for the construct function `host_fn`: the image's PTX objects (at offset
/// 0 of the target data, `{code, size}` pairs, their count at 8) and the entry point's name
/// (the function descriptor's first field).
pub fn nvptx_kernel(host_fn: usize) -> Option<crate::backend::GccKernel> {
    for img in registered().iter().filter(|i| {
        i.target_type == GOMP_DEVICE_NVIDIA_PTX && i.host_table != 0 && i.target_data != 0
    }) {
        // SAFETY: as in compiled_dims: GCC's tables, alive while registered.
        unsafe {
            let t = img.host_table as *const usize;
            let (start, end) = (*t, *t.add(1));
            let funcs =
                std::slice::from_raw_parts(start as *const usize, end.saturating_sub(start) / 8);
            let Some(i) = funcs.iter().position(|&f| f == host_fn) else {
                continue;
            };
            let data = img.target_data as *const u8;
            let (objs, nobjs) = (
                *(data as *const usize),
                *(data.add(8) as *const u32) as usize,
            );
            let (descs, num) = (
                *(data.add(32) as *const usize),
                *(data.add(40) as *const u32) as usize,
            );
            if i >= num || descs == 0 || objs == 0 {
                continue;
            }
            let name = *((descs + i * 16) as *const *const std::ffi::c_char);
            if name.is_null() {
                continue;
            }
            let ptx: Vec<(usize, usize)> = (0..nobjs)
                .map(|o| {
                    let obj = (objs + o * 16) as *const usize;
                    (*obj, *obj.add(1))
                })
                .collect();
            return Some(crate::backend::GccKernel {
                image: img.target_data,
                ptx: ptx.into(),
                entry: std::ffi::CStr::from_ptr(name),
            });
        }
    }
    None
}
