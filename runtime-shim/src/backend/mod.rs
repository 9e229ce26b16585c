//! Device backends. The runtime above them owns the present table, the events and the OpenACC
//! semantics; a backend only allocates, copies, launches and orders work on queues.
//!
//! Queues: `SYNC` (-2) is the synchronous queue (work on it is complete when the call returns,
//! and a copy or kernel on it runs after the work queued so far on every async queue, as on
//! CUDA's legacy default stream, where libgomp runs its synchronous work); any other value is
//! an async queue, created on first use, whose work runs in submission order. An async copy to
//! the host is complete when the call returns, as CUDA's copies into pageable memory are.

pub mod cuda;
pub(crate) mod deferred;
pub mod emulated;

use crate::error::Result;
use crate::profiling::dispatch::ApiHandles;
use accprof_abi::acc_device_t;
use std::ffi::{c_char, c_void, CStr};
use std::ops::Range;
use std::sync::Arc;

/// Starts a long-lived thread of the runtime's own (an async queue's worker, a staging
/// thread) with every signal blocked, from its first instruction on (the mask is inherited from
/// this thread, blocked for the time of the spawn): the program's signals reach the program's
/// threads as they would without the runtime's. A program that blocks SIGTERM and takes it
/// with `sigwait` would otherwise have it delivered to a worker, whose default action ends the
/// process. The faults a thread's own instructions raise (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGTRAP) stay open: a queue's worker runs the program's kernels, whose page faults and
/// single steps the checker (and the program's own handlers) take; blocked, the kernel ends
/// the process on the first one instead.
pub fn spawn_worker<F, T>(name: String, f: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: sigset_t is plain data initialised by sigfillset; pthread_sigmask changes only
    // this thread's mask and is restored below.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
        ] {
            libc::sigdelset(&mut all, sig);
        }
        (libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0).then_some(old)
    };
    let spawned = std::thread::Builder::new().name(name).spawn(f);
    if let Some(old) = old {
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
    spawned
}

pub type QueueId = i64;
/// The synchronous queue.
pub const SYNC: QueueId = -2;

/// `acc_device_host_nonshm`: GCC's old number for a host device with separate memory, which is
/// exactly what the emulated device is. It is what `acc_get_device_type` and the events report
/// while the emulated device runs.
pub const ACC_DEVICE_EMULATED: acc_device_t = acc_device_t(3);

/// One kernel argument: 8 bytes, read as a device pointer, a signed integer or a double.
/// (C: `accshim_val`, a union of `void *`, `long long` and `double`.)
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Val(pub u64);

impl Val {
    pub fn ptr<T>(self) -> *mut T {
        self.0 as usize as *mut T
    }
    pub fn i64(self) -> i64 {
        self.0 as i64
    }
    pub fn usize(self) -> usize {
        self.0 as usize
    }
    pub fn f64(self) -> f64 {
        f64::from_bits(self.0)
    }
    pub fn from_i64(v: i64) -> Val {
        Val(v as u64)
    }
    pub fn from_f64(v: f64) -> Val {
        Val(v.to_bits())
    }
}

/// The resolved arguments a host kernel receives: device pointers already translated.
pub type Args<'a> = &'a [Val];

/// A kernel's host implementation: runs iterations `range` of the loop and returns its partial
/// reduction value (ignored when the kernel has no reduction).
pub type HostFn = dyn Fn(Range<usize>, &[Val]) -> f64 + Send + Sync;

/// C host kernel: `double fn(size_t begin, size_t end, const accshim_val *args, void *user)`.
pub type CHostFn = unsafe extern "C" fn(usize, usize, *const Val, *mut c_void) -> f64;

#[derive(Clone)]
pub enum HostKernel {
    Rust(Arc<HostFn>),
    C { f: CHostFn, user: usize },
}

impl HostKernel {
    pub fn call(&self, r: Range<usize>, args: &[Val]) -> f64 {
        match self {
            HostKernel::Rust(f) => f(r, args),
            // SAFETY: the C caller promised a function of this signature; args outlive the call.
            HostKernel::C { f, user } => unsafe {
                f(r.start, r.end, args.as_ptr(), *user as *mut c_void)
            },
        }
    }
}

/// A reduction over the kernel's iterations (doubles; max, min or sum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedOp {
    Sum,
    Max,
    Min,
}

impl RedOp {
    pub fn identity(self) -> f64 {
        match self {
            RedOp::Sum => 0.0,
            RedOp::Max => f64::NEG_INFINITY,
            RedOp::Min => f64::INFINITY,
        }
    }
    pub fn combine(self, a: f64, b: f64) -> f64 {
        match self {
            RedOp::Sum => a + b,
            RedOp::Max => a.max(b),
            RedOp::Min => a.min(b),
        }
    }
}

/// Everything a backend needs to run one kernel.
#[derive(Clone)]
pub struct LaunchSpec {
    pub name: &'static CStr,
    pub host: Option<HostKernel>,
    /// CUDA C source (compiled by NVRTC, entry point `name`) or PTX text (starts with ".version"
    /// or "//"). Parameters: the args, then (with a reduction) a `double *` result cell.
    pub cuda_src: Option<*const c_char>,
    /// Length of `cuda_src` in bytes (it need not be NUL-terminated).
    pub cuda_len: usize,
    pub work: usize,
    pub gangs: u32,
    pub workers: u32,
    pub vector: u32,
    pub args: Vec<Val>,
    /// Values the kernel reads through `args[i]` that travel with the arguments (a GCC
    /// construct's firstprivate scalars): (i, the value's bytes, zero-padded). The backend puts
    /// them in memory the kernel can read for its whole run and sets `args[i]` to their address.
    pub inline: Vec<(usize, u64)>,
    pub reduction: Option<RedOp>,
    /// A kernel of a GCC-compiled program's nvptx image (CUDA backend).
    pub gcc: Option<GccKernel>,
}

/// A kernel GCC compiled into a program's nvptx offload image: its PTX objects (linked into one
/// module, once per image) and its entry point. GCC's convention: one parameter, the device
/// address of an array holding the construct's mapped device addresses (the launch's `args`).
#[derive(Clone, Debug)]
pub struct GccKernel {
    /// The image (its target data's address): the module cache's key.
    pub image: usize,
    /// (address, length) of each PTX object of the image.
    pub ptx: Arc<[(usize, usize)]>,
    pub entry: &'static CStr,
}

// SAFETY: `cuda_src` is the only raw pointer, and it points at a 'static, immutable string
// (CudaSrc is built only from 'static strings), so moving it to another thread is sound.
unsafe impl Send for LaunchSpec {}
// SAFETY: as for Send: the pointed-to string is immutable for the program's life.
unsafe impl Sync for LaunchSpec {}

/// Where a reduction's result lands: host memory the backend writes when the kernel (and the
/// result's copy back) completes in queue order.
#[derive(Clone, Copy, Debug)]
pub struct RedSlot(pub *mut f64);
/// Removes and returns the oldest of `pending` that `is_mine` accepts: the reduction result a
/// [`Backend::flush_reduction`] on one queue returns next (both backends keep them in launch order).
pub(crate) fn take_oldest<T>(
    pending: &std::sync::Mutex<Vec<T>>,
    is_mine: impl Fn(&T) -> bool,
) -> Option<T> {
    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    let i = pending.iter().position(is_mine)?;
    Some(pending.remove(i))
}

/// The kernel both backends return reduction results with ([`Backend::reduction_store_kernel`]).
pub const STORE_KERNEL: &CStr = c"accshim_store_reduction";
// SAFETY: the slot is a heap f64 the construct leaks for one launch: the backend writes the
// reduction's result into it in queue order, and the one host job that completes the reduction,
// queued after that write, reads and frees it; nothing else touches it meanwhile, and heap
// memory carries no thread affinity, so the pointer may travel to the thread doing the write.
unsafe impl Send for RedSlot {}

/// A host function run in queue order.
pub type HostJob = Box<dyn FnOnce() + Send>;

/// What a device can report through acc_get_property.
#[derive(Clone, Debug, Default)]
pub struct Properties {
    pub memory: usize,
    pub free_memory: usize,
    pub name: String,
    pub vendor: String,
    pub driver: String,
}

pub trait Backend: Send + Sync {
    /// What `acc_get_device_type` and the events report.
    fn device_type(&self) -> acc_device_t;
    fn describe(&self) -> String;
    fn properties(&self) -> Properties;
    /// Handles for `acc_api_info`; `q` selects the async handle (stream).
    fn handles(&self, q: Option<QueueId>) -> ApiHandles;

    fn alloc(&self, bytes: usize) -> Result<u64>;
    /// Releases `dev` (released on queue `q`): the memory is given back, or handed out again,
    /// only after the work already queued on every queue is done, as a GPU's driver keeps freed
    /// memory alive for the work queued before the free (src/backend/deferred.rs). The call
    /// never waits for that work.
    fn free(&self, q: QueueId, dev: u64) -> Result<()>;
    /// The size in bytes of the allocation that starts at `dev`, None if none starts there
    /// (acc_free's free event reports it).
    fn allocation_size(&self, dev: u64) -> Option<usize>;
    /// Refuses `[dev, dev+bytes)` when it is known not to lie inside one device allocation: the
    /// device arguments of the acc_memcpy routines come straight from the program, and a byte
    /// count past the allocation's end would otherwise read or write whatever follows it.
    fn check_device_range(&self, dev: u64, bytes: usize) -> Result<()>;

    /// Host to device. On an async queue the host memory is read when the copy runs.
    fn upload(&self, q: QueueId, dev: u64, host: *const u8, bytes: usize) -> Result<()>;
    /// Device to host. On an async queue the host memory is written when the copy runs.
    fn download(&self, q: QueueId, host: *mut u8, dev: u64, bytes: usize) -> Result<()>;
    fn copy_d2d(&self, q: QueueId, dst: u64, src: u64, bytes: usize) -> Result<()>;
    /// Writes an 8-byte value into device memory (pointer attachment).
    fn write_u64(&self, q: QueueId, dev: u64, value: u64) -> Result<()> {
        let boxed = Box::new(value);
        self.upload(q, dev, (&*boxed as *const u64).cast(), 8)?;
        // Keep the source alive until the copy has run.
        self.host_fn(q, Box::new(move || drop(boxed)))
    }

    /// Launches; with a reduction, its result is written to `slot` in queue order, at the
    /// latest after the [`Backend::flush_reduction`] on `q` that takes it. Returns the device
    /// address of the reduction's result cell (the source of its download event), None without
    /// a reduction.
    fn launch(&self, q: QueueId, k: &LaunchSpec, slot: Option<RedSlot>) -> Result<Option<u64>>;
    /// Enqueues the return of the oldest reduction result launched on `q` and not yet returned.
    /// The runtime calls it after the last kernel of a compute construct, so that a return does
    /// not sit between two kernels of the construct (on a GPU each one stalls the next kernel).
    fn flush_reduction(&self, _q: QueueId) -> Result<()> {
        Ok(())
    }
    /// The kernel with which [`Backend::flush_reduction`] returns a result, when it uses one
    /// instead of a copy: the runtime reports it as a launch, so that a tool sees every kernel
    /// the device runs.
    fn reduction_store_kernel(&self) -> Option<&'static CStr> {
        None
    }
    /// Runs `job` on the host after the work queued on `q` so far.
    fn host_fn(&self, q: QueueId, job: HostJob) -> Result<()>;
    /// Runs `job` on the host in `q`'s order, once the work queued so far on every queue has
    /// run too: the work that memory released now waits for before it is given back
    /// ([`Backend::free`]). Queue `q`'s later work waits for it.
    fn host_fn_after_all(&self, q: QueueId, job: HostJob) -> Result<()> {
        for other in self.queues() {
            self.queue_wait(q, other)?;
        }
        self.host_fn(q, job)
    }

    /// Blocks until `q` is empty.
    fn wait(&self, q: QueueId) -> Result<()>;
    /// True if `q` is empty (an unknown queue is empty).
    fn test(&self, q: QueueId) -> bool;
    /// Queues that exist (have been used).
    fn queues(&self) -> Vec<QueueId>;
    /// Makes `waiter` wait for the work queued on `on` so far, without blocking the host.
    fn queue_wait(&self, waiter: QueueId, on: QueueId) -> Result<()>;

    /// The native stream of a queue (acc_get_cuda_stream); null where there is none.
    fn native_stream(&self, q: QueueId) -> *mut c_void;
    /// Uses `stream` for queue `q` (acc_set_cuda_stream). False if not supported.
    fn set_native_stream(&self, q: QueueId, stream: *mut c_void) -> bool;

    /// Waits for everything and releases the device.
    fn shutdown(&self);

    /// The device address and size of the variable `name` of GCC's nvptx `image` (an `acc
    /// declare` global), linking the image if it is not yet; None where the backend runs no
    /// GCC images.
    fn image_variable(&self, _image: &GccKernel, _name: &CStr) -> Result<Option<(u64, usize)>> {
        Ok(None)
    }

    /// In the child of a fork (src/fork.rs), with every queue drained before it: the threads
    /// that ran the queues' work are not in the child; give it its own.
    fn after_fork_in_child(&self) {}

    /// Whether a device address is also a host pointer to the device copy's bytes (the emulated
    /// device), so that the runtime may read a device copy from a job run in queue order.
    fn device_memory_is_host_readable(&self) -> bool {
        false
    }
}

/// Splits `0..n` into at most `parts` contiguous chunks.
pub fn chunks(n: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, n.max(1));
    let base = n / parts;
    let extra = n % parts;
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for i in 0..parts {
        let len = base + usize::from(i < extra);
        out.push(start..start + len);
        start += len;
    }
    out
}

/// A kernel's argument block as it lies at device address `base`: `args`, then the `inline`
/// values one word each, with the `args[i]` of each value pointing at its word.
pub fn args_with_inline(args: &[u64], inline: &[(usize, u64)], base: u64) -> Vec<u64> {
    let mut block = Vec::with_capacity(args.len() + inline.len());
    block.extend_from_slice(args);
    for (j, &(i, value)) in inline.iter().enumerate() {
        block[i] = base + ((args.len() + j) * 8) as u64;
        block.push(value);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_values_follow_the_arguments_that_point_at_them() {
        let block = args_with_inline(&[0x1000, 0, 0x2000, 0], &[(1, 7), (3, 9)], 0x500);
        assert_eq!(block, vec![0x1000, 0x520, 0x2000, 0x528, 7, 9]);
        assert_eq!(args_with_inline(&[5], &[], 0x500), vec![5]);
    }
}
