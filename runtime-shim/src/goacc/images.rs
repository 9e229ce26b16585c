//! The offload images a program registers (GOMP_offload_register_ver): kept per host table, for
//! a backend that runs GCC's device code (the nvptx images on CUDA) and for the variables the
//! images declare (`acc declare` globals, src/goacc/globals.rs). The emulated device runs the
//! host-fallback functions and needs no image.
//!
//! Read on every construct, so the registry takes no lock: a child forked while another thread
//! held a lock here would wait for it forever. Images are pushed onto a list of leaked nodes
//! (a program registers a handful, in its constructors) and unregistering only marks a node
//! dead.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

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

struct Node {
    image: Image,
    live: AtomicBool,
    next: *mut Node,
}

/// The most recently registered image first.
static HEAD: AtomicPtr<Node> = AtomicPtr::new(std::ptr::null_mut());

pub fn register(
    version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    let node = Box::leak(Box::new(Node {
        image: Image {
            version,
            host_table: host_table as usize,
            target_type,
            target_data: target_data as usize,
        },
        live: AtomicBool::new(true),
        next: std::ptr::null_mut(),
    }));
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        node.next = head;
        match HEAD.compare_exchange_weak(head, node, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

pub fn unregister(
    _version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    let gone = Image {
        version: 0,
        host_table: host_table as usize,
        target_type,
        target_data: target_data as usize,
    };
    for node in nodes() {
        let i = &node.image;
        if i.host_table == gone.host_table
            && i.target_type == gone.target_type
            && i.target_data == gone.target_data
        {
            node.live.store(false, Ordering::Release);
        }
    }
}

fn nodes() -> impl Iterator<Item = &'static Node> {
    let mut p = HEAD.load(Ordering::Acquire);
    std::iter::from_fn(move || {
        // SAFETY: nodes are leaked, never freed, and fully written before they are published
        // (the Release of the compare-exchange that pushed them).
        let node = unsafe { p.as_ref() }?;
        p = node.next;
        Some(node)
    })
}

/// The images registered now, without allocating or locking.
pub fn registered() -> impl Iterator<Item = Image> {
    nodes()
        .filter(|n| n.live.load(Ordering::Acquire))
        .map(|n| n.image)
}

/// The nvptx images registered now.
fn nvptx_images() -> impl Iterator<Item = Image> {
    registered().filter(|i| {
        i.target_type == GOMP_DEVICE_NVIDIA_PTX && i.host_table != 0 && i.target_data != 0
    })
}

/// The launch dimensions GCC compiled into the nvptx image for the construct function `host_fn`
/// (gang, worker, vector; 0: decided at run time), where an nvptx image is registered.
///
/// GCC 12's image (gcc/config/nvptx/mkoffload.cc): the host table's function part lists the
/// host functions in the order of the image's function descriptors, each a name and three
/// unsigned shorts; the descriptor array is at offset 32 of the target data, its length at 40.
pub fn compiled_dims(host_fn: usize) -> Option<[u16; 3]> {
    for img in nvptx_images() {
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

/// An nvptx image's PTX objects (at offset 0 of the target data, `{code, size}` pairs, their
/// count at 8), as a kernel of it with no entry point yet: what the CUDA backend links once.
pub fn nvptx_image(img: Image) -> Option<crate::backend::GccKernel> {
    if img.target_type != GOMP_DEVICE_NVIDIA_PTX || img.target_data == 0 {
        return None;
    }
    let data = img.target_data as *const u8;
    // SAFETY: GCC's nvptx target data, alive while registered; the object array has the
    // count it states.
    let ptx: Vec<(usize, usize)> = unsafe {
        let (objs, n) = (
            *(data as *const usize),
            *(data.add(8) as *const u32) as usize,
        );
        if objs == 0 {
            return None;
        }
        (0..n)
            .map(|o| {
                let obj = (objs + o * 16) as *const usize;
                (*obj, *obj.add(1))
            })
            .collect()
    };
    Some(crate::backend::GccKernel {
        image: img.target_data,
        ptx: ptx.into(),
        entry: c"",
    })
}

/// GCC's nvptx kernel for the construct function `host_fn`: its image and the entry point's
/// name (the function descriptor's first field).
pub fn nvptx_kernel(host_fn: usize) -> Option<crate::backend::GccKernel> {
    for img in nvptx_images() {
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
            let (descs, num) = (
                *(data.add(32) as *const usize),
                *(data.add(40) as *const u32) as usize,
            );
            if i >= num || descs == 0 {
                continue;
            }
            let name = *((descs + i * 16) as *const *const std::ffi::c_char);
            if name.is_null() {
                continue;
            }
            let Some(image) = nvptx_image(img) else {
                continue;
            };
            return Some(crate::backend::GccKernel {
                entry: std::ffi::CStr::from_ptr(name),
                ..image
            });
        }
    }
    None
}
