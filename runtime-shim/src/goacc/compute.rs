//! GOACC_parallel_keyed: parallel, kernels and serial constructs (GCC lowers all three to it).
//! On the emulated device the construct's host-fallback function runs as the kernel, given the
//! array of the mapped DEVICE addresses (the emulated device's own memory) in place of the host
//! addresses libgomp's host fallback would pass: data semantics are a discrete GPU's.

use super::mapping::{
    self, map_structured, unmap_structured, unsupported, Mapped, Vars, FLAG_HOST_FALLBACK, NOWHERE,
};
use super::varargs::LaunchTags;
use crate::backend::{HostKernel, LaunchSpec, Val, SYNC};
use crate::error::Result;
use crate::profiling::dispatch::{self, LaunchInfo};
use crate::runtime::{op_for, Op};
use crate::sequence::{self, ComputeSteps};
use accprof_abi::{acc_construct_t, acc_device_t};
use std::ffi::{c_void, CStr};

/// The offloaded function's type: it takes the array of (device) addresses.
type OmpFn = unsafe extern "C" fn(*mut c_void);

/// Runs the construct function `user` with the device addresses `args` (the emulated device's
/// host-kernel signature; it returns no reduction: GCC's function combines its own).
unsafe extern "C" fn call_construct_fn(
    _begin: usize,
    _end: usize,
    args: *const Val,
    user: *mut c_void,
) -> f64 {
    // SAFETY: `user` is the OmpFn GCC passed to GOACC_parallel_keyed; `args` holds one 8-byte
    // slot per mapped variable, the layout GCC's function reads its data block with.
    super::globals::with_device_copies(|| unsafe {
        let f: OmpFn = std::mem::transmute::<*mut c_void, OmpFn>(user);
        f(args as *mut c_void);
    });
    0.0
}

/// GOACC_parallel_keyed's body.
///
/// # Safety
/// `f` is GCC's offloaded function and `vars` its map arrays.
pub unsafe fn parallel(
    flags: i32,
    f: usize,
    vars: Vars,
    tags: std::result::Result<LaunchTags, String>,
) {
    let tags = tags.unwrap_or_else(|why| unsupported("compute construct", &why));
    vars.check("compute construct", mapping::compute_kind);
    if f == 0 {
        unsupported("compute construct", "a NULL construct function");
    }
    // Only a tool sees which construct it is (or an error line): no lookup otherwise.
    let construct = if dispatch::enabled() {
        super::directive::compute_kind(crate::loc::call_site())
    } else {
        acc_construct_t::PARALLEL
    };
    if flags & FLAG_HOST_FALLBACK != 0 {
        // if(false): the construct runs on the host with the host's data, as libgomp does, and
        // is reported as running there.
        let mut host: Vec<usize> = (0..vars.len()).map(|i| vars.host(i)).collect();
        super::fallback::compute_on_host(construct, || {
            // SAFETY: `f` is GCC's construct function (the caller's contract).
            unsafe { std::mem::transmute::<usize, OmpFn>(f)(host.as_mut_ptr().cast()) }
        });
        return;
    }
    let rt = mapping::device(construct, "compute construct");
    let async_ = tags
        .async_
        .map_or(crate::runtime::ACC_ASYNC_SYNC, i64::from);
    (|| -> Result<()> {
        let op = op_for(rt, construct, false, &NOWHERE, async_)?;
        let steps = ComputeSteps {
            map: |op: &Op| map_structured(op, &vars, true),
            launch: |implicit: &Op, mapped: &Mapped| launch(implicit, f, &tags, mapped),
            unmap: |implicit: &Op, mapped: Mapped| unmap_structured(implicit, &mapped),
        };
        mapping::with_wait_clause(&tags.waits, |wait| sequence::compute(&op, wait, steps))
    })()
    .unwrap_or_else(|e| {
        let kind = super::directive::compute_kind(crate::loc::call_site());
        crate::error::fatal(&e, crate::construct::construct_name(kind), &NOWHERE)
    })
}

/// Launches the construct function `f` on `op`'s queue (implicit) with the device addresses
/// of `mapped`.
fn launch(op: &Op, f: usize, tags: &LaunchTags, mapped: &Mapped) -> Result<()> {
    let rt = op.rt;
    for &p in &mapped.absent_pointers {
        eprintln!(
            "accshim: warning: the construct's function gets NULL for the pointer {p:#x}: the data it points to is not on the device (a missing data clause?); on a GPU the kernel would fault there"
        );
    }

    let name = super::names::kernel_name(f);
    // Dimensions given at run time, else those GCC compiled into the nvptx image; 0 where
    // the device would decide (the event then carries none: see LaunchInfo).
    let compiled = super::images::compiled_dims(f).unwrap_or([0; 3]);
    let pick = |d: usize| {
        if tags.dims[d] != 0 {
            tags.dims[d]
        } else {
            u32::from(compiled[d])
        }
    };
    let (g, w, v) = (pick(0), pick(1), pick(2));
    let on_gpu = rt.device_type == acc_device_t::NVIDIA;
    let gcc = if on_gpu {
        match super::images::nvptx_kernel(f) {
            Some(k) => Some(k),
            None => unsupported(
                "compute construct",
                &format!("running {} on the CUDA device without its nvptx image (build with -foffload=nvptx-none, or run with ACC_DEVICE_TYPE=emulated)", name.to_string_lossy()),
            ),
        }
    } else {
        None
    };
    // On the GPU the launch is named as the device names the kernel (the nvptx entry,
    // `main$_omp_fn$0`), as libgomp's plugin names it: a tool matches its device records
    // (CUPTI's kernel names) to the launch by that name.
    let name = gcc.as_ref().map_or(name, |k| k.entry);
    let spec = LaunchSpec {
        name,
        host: (!on_gpu).then_some(HostKernel::C {
            f: call_construct_fn,
            user: f,
        }),
        cuda_src: None,
        cuda_len: 0,
        work: 1,
        gangs: g,
        workers: w,
        vector: v,
        args: mapped.devaddrs.clone(),
        inline: mapped.inline.clone(),
        reduction: None,
        gcc,
    };
    let li = LaunchInfo {
        kernel_name: name.as_ptr(),
        num_gangs: g as usize,
        num_workers: w as usize,
        vector_length: v as usize,
    };
    let t = dispatch::launch_start(&op.ctx, &li);
    let r = rt.backend.launch(op.q, &spec, None);
    dispatch::launch_end(&op.ctx, &li, t);
    r?;
    if op.q != SYNC && !on_gpu && super::globals::swapping() {
        // The kernel swaps declared globals into the host's variables: the host must not
        // run beside it (src/goacc/globals.rs).
        rt.backend.wait(op.q)?;
    }
    Ok(())
}

/// A kernel name for `CStr` users that need one before any lookup.
pub const UNKNOWN_KERNEL: &CStr = c"gcc_omp_fn";
