//! The CUDA backend, through cudarc's dynamically loaded driver API (no toolkit at build time).
//!
//! - One primary context per device; it is made current on whichever thread calls in.
//! - Queues are CUDA streams created on first use, blocking ones as libgomp's are (ordered with
//!   CUDA's legacy default stream); the synchronous queue is a non-blocking stream of its own
//!   whose work the runtime waits for. Before each synchronous copy or kernel it waits for an
//!   event recorded on the legacy stream, that is for the work queued so far on every queue:
//!   libgomp runs its synchronous copies and kernels on the legacy stream itself, and programs
//!   that read results without the wait the specification asks for get them there (the
//!   synchronous stream, not the legacy one, keeps other libraries' legacy-stream work out).
//! - Kernels are CUDA C, compiled once by NVRTC (for the device's compute capability) with a small
//!   prelude of reduction helpers, and cached by source address; PTX text is loaded as is.
//! - Copies of large pageable buffers go through pinned buffers, copied by several host threads
//!   in parallel: uploads are staged in pieces (stage_copy, upload_pipeline) and each chunk
//!   DMA'd as soon as it is staged, the first chunks small and doubling so the first DMA starts
//!   early; downloads DMA into every buffer at once and copy each chunk out as it lands.
//!   Pageable copies alone run at a fraction of the link's speed (see
//!   ../shared/reference/gpu.md). `ACCSHIM_STAGE_TRACE=1` prints each upload's timeline
//!   (upload_trace). Arrays of the program's static data copied again and again are
//!   registered (page-locked in place) and copied directly instead (static_pins).
//! - Reductions: each (stream, operator) has a pool of device cells that hold the identity when a
//!   kernel starts (reset in stream order only when the pool wraps), so a launch with a reduction
//!   enqueues no memset; max and min combine blocks with one native 64-bit atomic each. After a
//!   construct's last kernel, a one-thread kernel stores the results into mapped pinned memory:
//!   on the H200 a kernel starts ~1 us after the previous one ends, a device-to-host copy 4-6 us
//!   (CUPTI), and the loop of the Laplace example waits for that result every iteration.
//! - cudarc panics if libcuda is missing, so [`Cuda::count`] checks for it first and every entry
//!   from C runs inside catch_unwind (src/ffi).

mod block_cache;
mod gcc_kernels;
mod stage_copy;
mod stage_pool;
mod static_pins;
mod upload_pipeline;
mod upload_trace;

use crate::backend::deferred::Deferred;
use crate::backend::*;
use crate::error::AccError;
use cudarc::driver::sys::{
    self, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUresult, CUstream,
};
use stage_copy::{copy_to_staging, stores_at, Stores};
use stage_pool::{StagePool, Warm};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use upload_trace::UploadTrace;

/// Copies from pageable memory at least this big go through the pinned staging pipeline.
const STAGE_MIN: usize = 4 << 20;
/// Download chunk (= size of one pinned download buffer); `ACCSHIM_STAGE_CHUNK` overrides.
const STAGE_CHUNK: usize = 1 << 20;
/// Number of download buffers (and copy streams); `ACCSHIM_STAGE_BUFS` overrides.
const STAGE_BUFS: usize = 32;
/// Uploads (upload_pipeline): the first chunk, doubling up to the largest, so that the first
/// DMA starts after a small copy (`ACCSHIM_STAGE_FIRST` overrides)...
const STAGE_FIRST: usize = 64 << 10;
/// ...the largest chunk, one DMA and one upload buffer: 4 MiB copies reach 52-53 GB/s on the
/// H200 where 1 MiB copies reach 47-48 (`ACCSHIM_STAGE_UP_CHUNK` overrides)...
const STAGE_UP_CHUNK: usize = 4 << 20;
/// ...the upload buffers (`ACCSHIM_STAGE_UP_BUFS`)...
const STAGE_UP_BUFS: usize = 8;
/// ...and the largest piece of a chunk that one thread copies (`ACCSHIM_STAGE_PIECE`): on the
/// H200 256 KiB and 512 KiB were alike, 1 MiB slower (docs/performance/shim.md).
const STAGE_PIECE: usize = 256 << 10;
/// ...the smallest of the halving chunks at an upload's end (`ACCSHIM_STAGE_TAIL`, 0: none;
/// upload_pipeline says why): one piece, copied by one thread.
const STAGE_TAIL: usize = STAGE_PIECE;
/// ...written with demoted stores where the CPU has CLDEMOTE (stage_copy), except the first
/// bytes of each upload, written with non-temporal stores (`ACCSHIM_STAGE_NT_HEAD`): until the
/// pool's threads are all awake (most within 60 us, a few after 300-900 us on the H200
/// machine) each thread's copy speed holds the DMA back, and non-temporal stores with a
/// prefetch copy 2.7x faster per thread (10 against 3.8 GB/s); once all run, host memory is
/// the limit, and demoted lines, which the DMA reads from the cache, spare it
/// (docs/performance/shim.md has the paired measurements, with and without warm threads).
const STAGE_NT_HEAD: usize = 16 << 20;
/// Non-temporal copies prefetch their source this far ahead (`ACCSHIM_STAGE_PREFETCH`, 0: no
/// prefetch; stage_copy::copy_to_staging says why).
const STAGE_PREFETCH: usize = 2048;
/// After a staged copy the staging threads keep their CPUs from idling this long
/// (microseconds; `ACCSHIM_STAGE_WARM_US`, 0: off), as OpenMP runtimes keep theirs (Intel's
/// KMP_BLOCKTIME is also 200 ms by default). On the H100 and H200 machines a 64 MiB upload of
/// an array that the program last touched 90 ms earlier then had every staging thread copying
/// within 80 us instead of a third of them after 150-450 us, and gained about 2 GB/s; it costs
/// about half a CPU while the window lasts (stage_pool; docs/performance/shim.md)...
const STAGE_WARM_US: usize = 200_000;
/// ...by sleeping at most this long at a time (`ACCSHIM_STAGE_TICK_US`; the kernel's timer
/// slack adds up to 50 us). 20 us cost more CPU time for no more speed, 100 us gained less.
const STAGE_TICK_US: usize = 50;
/// Reduction cells per (stream, operator): cells hold the operator's identity when a kernel
/// starts; a pool is reset (one 8 KiB copy in stream order) only when its cells run out, so a
/// launch with a reduction needs no memset.
const RED_POOL: usize = 1024;

/// [`STORE_KERNEL`]: stores one reduction cell into its mapped pinned slot (`*slot = *cell`).
/// PTX, so that it needs no NVRTC (programs with PTX kernels only may have none); sm_52 PTX
/// JITs on every GPU the driver supports.
const STORE_KERNEL_PTX: &CStr = c"\
.version 6.0
.target sm_52
.address_size 64
.visible .entry accshim_store_reduction(.param .u64 cell, .param .u64 slot)
{
    .reg .b64 %rd<5>;
    .reg .f64 %fd<2>;
    ld.param.u64 %rd1, [cell];
    ld.param.u64 %rd2, [slot];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    ld.global.f64 %fd1, [%rd3];
    st.global.f64 [%rd4], %fd1;
    ret;
}
";

const PRELUDE: &str = r#"
#define ACCSHIM_BLOCK_REDUCE(NAME, OP, ATOMIC, IDENTITY)                                \
__device__ __forceinline__ void NAME(double *cell, double v) {                           \
    __shared__ double s_[32];                                                            \
    unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); \
    unsigned int n = blockDim.x * blockDim.y * blockDim.z;                              \
    unsigned int lane = t & 31, warp = t >> 5, nwarps = (n + 31) >> 5;                  \
    unsigned int live = (warp == nwarps - 1 && (n & 31)) ? (n & 31) : 32;                \
    for (unsigned int o = 16; o > 0; o >>= 1) {                                          \
        double u = __shfl_down_sync(__activemask(), v, o);                               \
        if (lane + o < live) v = OP(v, u);                                               \
    }                                                                                    \
    if (lane == 0) s_[warp] = v;                                                         \
    __syncthreads();                                                                     \
    if (nwarps == 1) {                                                                   \
        if (t == 0) ATOMIC(cell, s_[0]);                                                 \
    } else if (warp == 0) { /* n > 32: warp 0 is full */                                 \
        v = lane < nwarps ? s_[lane] : IDENTITY;                                         \
        for (unsigned int o = 16; o > 0; o >>= 1) v = OP(v, __shfl_down_sync(0xffffffffu, v, o)); \
        if (lane == 0) ATOMIC(cell, v);                                                  \
    }                                                                                    \
}
__device__ __forceinline__ double accshim_add_(double a, double b) { return a + b; }
__device__ __forceinline__ void accshim_atomic_add_(double *c, double v) { atomicAdd(c, v); }
/* max / min in one native atomic: a double's bits order like signed integers when the sign
   is clear and reversed as unsigned integers when it is set (NaN is ignored, as fmax does). */
__device__ __forceinline__ void accshim_atomic_max_(double *c, double v) {
    long long b = __double_as_longlong(v);
    if (v != v) return;
    if (b >= 0) atomicMax((long long *)c, b);
    else atomicMin((unsigned long long *)c, (unsigned long long)b);
}
__device__ __forceinline__ void accshim_atomic_min_(double *c, double v) {
    long long b = __double_as_longlong(v);
    if (v != v) return;
    if (b >= 0) atomicMin((long long *)c, b);
    else atomicMax((unsigned long long *)c, (unsigned long long)b);
}
ACCSHIM_BLOCK_REDUCE(accshim_reduce_sum, accshim_add_, accshim_atomic_add_, 0.0)
ACCSHIM_BLOCK_REDUCE(accshim_reduce_max, fmax, accshim_atomic_max_, -__longlong_as_double(0x7ff0000000000000ULL))
ACCSHIM_BLOCK_REDUCE(accshim_reduce_min, fmin, accshim_atomic_min_, __longlong_as_double(0x7ff0000000000000ULL))
#line 1
"#;

fn check(r: CUresult, what: &str) -> Result<()> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(AccError::OutOfMemory { bytes: 0 }),
        e => Err(AccError::Device(format!("{what}: {e:?}"))),
    }
}

/// A pointer that may cross threads (CUDA handles and pinned memory are thread-agnostic).
#[derive(Clone, Copy)]
struct P(usize);

/// The staging pipeline's shape, from the constants or the `ACCSHIM_STAGE_*` variables (for
/// measuring; docs/performance/shim.md).
#[derive(Clone, Copy, Debug)]
struct StageConfig {
    /// Downloads: chunk = buffer size, and the number of buffers (and copy streams).
    chunk: usize,
    bufs: usize,
    /// Uploads: the pipeline's shape (upload_pipeline).
    up: upload_pipeline::Shape,
    threads: usize,
    /// How the staging threads write the pinned upload buffers (stage_copy)...
    stores: Stores,
    /// ...except the first bytes of each upload (stage_copy::stores_at, [`STAGE_NT_HEAD`]).
    nt_head: usize,
    /// How far ahead non-temporal copies prefetch their source ([`STAGE_PREFETCH`]).
    prefetch: usize,
    /// Streams the upload buffers' DMAs are spread over (`ACCSHIM_STAGE_UP_STREAMS`, default
    /// one per buffer): on one stream the DMAs complete in the order issued.
    up_streams: usize,
    /// How long the staging threads keep their CPUs awake after a staged copy, and how often
    /// they wake meanwhile (`ACCSHIM_STAGE_WARM_US`, `ACCSHIM_STAGE_TICK_US`; stage_pool).
    warm: Warm,
}

impl StageConfig {
    fn from_env() -> StageConfig {
        // Byte sizes take K/M suffixes; counts and microseconds are plain numbers.
        let (bytes, var) = (crate::env::size, crate::env::count);
        let chunk = bytes("ACCSHIM_STAGE_CHUNK")
            .unwrap_or(STAGE_CHUNK)
            .clamp(64 << 10, 64 << 20);
        let bufs = var("ACCSHIM_STAGE_BUFS")
            .unwrap_or(STAGE_BUFS)
            .clamp(2, 256);
        let up_chunk = bytes("ACCSHIM_STAGE_UP_CHUNK")
            .unwrap_or(STAGE_UP_CHUNK)
            .clamp(64 << 10, 64 << 20);
        let up = upload_pipeline::Shape {
            first: bytes("ACCSHIM_STAGE_FIRST")
                .unwrap_or(STAGE_FIRST)
                .clamp(4 << 10, up_chunk),
            chunk: up_chunk,
            // Whole pages: a piece starts that far into its buffer, and non-temporal stores
            // need 16-byte alignment.
            piece: bytes("ACCSHIM_STAGE_PIECE")
                .unwrap_or(STAGE_PIECE)
                .clamp(4 << 10, up_chunk)
                / 4096
                * 4096,
            bufs: var("ACCSHIM_STAGE_UP_BUFS")
                .unwrap_or(STAGE_UP_BUFS)
                .clamp(2, 256),
            tail: bytes("ACCSHIM_STAGE_TAIL")
                .unwrap_or(STAGE_TAIL)
                .min(up_chunk),
        };
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        let threads = var("ACCSHIM_STAGE_THREADS")
            .unwrap_or(cores.clamp(1, 16))
            .clamp(1, 64);
        let stores = std::env::var("ACCSHIM_STAGE_STORES")
            .ok()
            .and_then(|v| Stores::parse(&v))
            .unwrap_or_else(Stores::best);
        let nt_head = bytes("ACCSHIM_STAGE_NT_HEAD").unwrap_or(STAGE_NT_HEAD);
        let prefetch = bytes("ACCSHIM_STAGE_PREFETCH")
            .unwrap_or(STAGE_PREFETCH)
            .min(1 << 20);
        let up_streams = var("ACCSHIM_STAGE_UP_STREAMS").unwrap_or(up.bufs);
        let us = |name: &str, default: usize| {
            Duration::from_micros(var(name).unwrap_or(default).min(10_000_000) as u64)
        };
        let warm = Warm {
            window: us("ACCSHIM_STAGE_WARM_US", STAGE_WARM_US),
            tick: us("ACCSHIM_STAGE_TICK_US", STAGE_TICK_US),
        };
        StageConfig {
            chunk,
            bufs,
            up,
            threads,
            stores,
            nt_head,
            prefetch,
            up_streams,
            warm,
        }
    }
}

/// Orders every stream of `st` after the work already queued on `s`, so that a staged copy sees
/// what the queue's earlier kernels and copies left.
fn copy_streams_after(st: &StageSet, s: CUstream) -> Result<()> {
    // SAFETY: `after` is an out-parameter on this frame; `s` and every stream of `st` are live
    // streams of our context (made by StageSet::add, freed only at shutdown), and the event is
    // destroyed only after the driver has taken the waits (destroying a recorded event is allowed).
    // Return codes other than the create's are ignored: a failed wait only loses ordering the
    // later queue wait restores.
    unsafe {
        let mut after: CUevent = std::ptr::null_mut();
        check(
            sys::cuEventCreate(&mut after, 2 /* DISABLE_TIMING */),
            "cuEventCreate",
        )?;
        sys::cuEventRecord(after, s);
        for cs in &st.streams {
            sys::cuStreamWaitEvent(cs.0 as CUstream, after, 0);
        }
        sys::cuEventDestroy_v2(after);
    }
    Ok(())
}

/// Reduction cells of one (stream, operator): the device cells, the mapped pinned slots their
/// results are stored into (host address and device address), and a pinned array of the
/// operator's identity that resets the cells.
struct RedPool {
    cells: CUdeviceptr,
    slots: P,
    slots_dev: CUdeviceptr,
    ident: P,
    next: usize,
}

/// A reduction result on its way to the host: the launch's stream and cell, the slot it is
/// stored into (host and device address), and where the runtime wants the value.
struct PendingRed {
    stream: P,
    cell: CUdeviceptr,
    slot: P,
    slot_dev: CUdeviceptr,
    dst: P,
}

/// Pinned buffers of one size, each with its copy stream and an event recorded after its last
/// copy.
struct StageSet {
    bufs: Vec<P>,
    streams: Vec<P>,
    events: Vec<P>,
}

impl StageSet {
    fn new(count: usize, size: usize) -> Result<StageSet> {
        let mut st = StageSet {
            bufs: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
        };
        for _ in 0..count {
            if let Err(e) = st.add(size) {
                st.free();
                return Err(e);
            }
        }
        Ok(st)
    }

    /// One more buffer with its stream and event; what was made before a failure is kept in
    /// `self`, for [`free`](Self::free).
    fn add(&mut self, size: usize) -> Result<()> {
        // SAFETY: each out-parameter is a local on this frame; the new stream and event are created in
        // our current context and recorded before anything waits on them.
        unsafe {
            let mut b: *mut c_void = std::ptr::null_mut();
            check(sys::cuMemHostAlloc(&mut b, size, 0), "cuMemHostAlloc")?;
            self.bufs.push(P(b as usize));
            let mut s: CUstream = std::ptr::null_mut();
            check(
                sys::cuStreamCreate(&mut s, 1 /* NON_BLOCKING */),
                "cuStreamCreate",
            )?;
            self.streams.push(P(s as usize));
            let mut e: CUevent = std::ptr::null_mut();
            check(
                sys::cuEventCreate(&mut e, 2 /* DISABLE_TIMING */),
                "cuEventCreate",
            )?;
            self.events.push(P(e as usize));
            // Recorded once so that the first wait on it returns at once.
            check(sys::cuEventRecord(e, s), "cuEventRecord")
        }
    }

    /// Releases the buffers, streams and events (the context must be idle).
    fn free(&mut self) {
        // SAFETY: the handles were made by `add` and are drained here, so each is freed once; the caller
        // guarantees the context is idle, so no DMA still uses a buffer.
        unsafe {
            for b in self.bufs.drain(..) {
                sys::cuMemFreeHost(b.0 as *mut c_void);
            }
            for s in self.streams.drain(..) {
                sys::cuStreamDestroy_v2(s.0 as CUstream);
            }
            for e in self.events.drain(..) {
                sys::cuEventDestroy_v2(e.0 as CUevent);
            }
        }
    }
}

/// The staging buffers: uploads use fewer, larger buffers than downloads (one DMA per buffer
/// each way; see the constants). Both sets are allocated at the first staged copy, whichever
/// its direction: pinning 32 MiB takes milliseconds (about 18 ms for the 32 download buffers on
/// the H200 machine), which belong at the start of a run, not in the copyout of its last
/// construct.
struct Staging {
    up: StageSet,
    down: StageSet,
}

pub struct Cuda {
    ordinal: i32,
    dev: CUdevice,
    ctx: CUcontext,
    name: String,
    driver: i32,
    arch: &'static str,
    sync_stream: CUstream,
    /// Recorded on the legacy default stream before a synchronous operation, which waits for
    /// it ([`Cuda::join_queues`]).
    join: P,
    streams: Mutex<HashMap<QueueId, (P, bool)>>, // stream, owned by us
    functions: Mutex<HashMap<(usize, usize), P>>,
    staging: Mutex<Option<Staging>>,
    /// Keyed by (stream, operator): a stream's launches use its pools in stream order, so a
    /// cell is reset only after every earlier use of it has completed.
    red: Mutex<HashMap<(usize, u8), RedPool>>,
    stage: StageConfig,
    /// Host jobs of the synchronous queue, run at its next wait (the runtime always waits for
    /// the synchronous queue before a construct returns), so a reduction does not stall the
    /// launches that follow it.
    sync_jobs: Mutex<Vec<HostJob>>,
    /// Reduction results waiting for [`Backend::flush_reduction`], oldest first.
    pending_red: Mutex<Vec<PendingRed>>,
    /// The kernel that stores reduction results into their slots, loaded on first use; `None`
    /// when it failed to load (results are then copied back).
    store_kernel: OnceLock<Option<P>>,
    /// The threads that copy between pageable memory and the staging buffers: started with the
    /// device (so that they are asleep and settled before the first copy, as when the upload
    /// figures were measured) and ended, joined, at shutdown, so that none outlives the device
    /// and acc_init/acc_shutdown cycles leave no threads behind. Used only under the `staging`
    /// lock.
    pool: Mutex<Option<StagePool>>,
    /// GCC-compiled programs' nvptx kernels (gcc_kernels.rs).
    gcc: gcc_kernels::GccKernels,
    /// Freed device blocks kept for an allocation of the same size (block_cache.rs).
    blocks: block_cache::BlockCache,
    /// Released blocks (and their sizes) that work queued before their release may still use,
    /// each with an event recorded on every stream that was busy then (src/backend/deferred.rs).
    released: Deferred<P, (CUdeviceptr, Option<usize>)>,
    /// The program's static arrays registered for direct copies (static_pins.rs), unless
    /// `ACCSHIM_PIN_STATIC=0`.
    pins: Option<static_pins::StaticPins>,
}

// SAFETY: the raw fields are CUDA handles (context, streams, events, pinned buffers) that the
// driver lets any thread of the process use; nothing is tied to the creating thread.
unsafe impl Send for Cuda {}
// SAFETY: the shared state behind the raw handles is behind the mutexes above or immutable after
// `open` (ctx, sync_stream, function handles); CUDA driver calls on one context are thread-safe.
unsafe impl Sync for Cuda {}

thread_local! {
    static BOUND: Cell<usize> = const { Cell::new(0) };
}

struct HostJobBox(HostJob);

unsafe extern "C" fn run_host_job(user: *mut c_void) {
    // SAFETY: made by Box::into_raw in host_fn, run once by the driver.
    let job = unsafe { Box::from_raw(user as *mut HostJobBox) };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job.0)).is_err() {
        eprintln!("accshim: a host function panicked in a CUDA stream callback");
        std::process::abort();
    }
}

impl Cuda {
    /// Number of CUDA devices; 0 when libcuda is missing or fails to initialise. Never panics.
    pub fn count() -> i32 {
        static COUNT: OnceLock<i32> = OnceLock::new();
        *COUNT.get_or_init(|| {
            if crate::env::flag("ACCSHIM_NO_CUDA") {
                return 0;
            }
            // SAFETY: only probes for the shared library.
            if !unsafe { sys::is_culib_present() } {
                return 0;
            }
            std::panic::catch_unwind(|| {
                if cudarc::driver::result::init().is_err() {
                    return 0;
                }
                cudarc::driver::result::device::get_count().unwrap_or(0)
            })
            .unwrap_or(0)
        })
    }

    fn bind(&self) {
        let key = self.ctx as usize;
        if BOUND.with(|b| b.get()) != key {
            // SAFETY: our primary context, retained until shutdown.
            unsafe { sys::cuCtxSetCurrent(self.ctx) };
            BOUND.with(|b| b.set(key));
        }
    }

    /// Opens device `num`, or says why not (no libcuda, no device, driver error).
    pub fn open(num: i32) -> Result<Cuda> {
        let count = Cuda::count();
        if count == 0 {
            return Err(AccError::DeviceUnavailable(
                "no CUDA device (libcuda missing or no GPU)".into(),
            ));
        }
        if num < 0 || num >= count {
            return Err(AccError::DeviceUnavailable(format!(
                "CUDA device {num} (there are {count})"
            )));
        }
        // SAFETY: `num` was checked against the device count; every out-parameter is a local of this
        // frame; `name` has 256 bytes and the driver writes at most 255 plus a NUL, so CStr::from_ptr
        // finds the terminator inside it.
        unsafe {
            let dev = cudarc::driver::result::device::get(num)
                .map_err(|e| AccError::Device(format!("{e:?}")))?;
            let ctx = cudarc::driver::result::primary_ctx::retain(dev)
                .map_err(|e| AccError::Device(format!("{e:?}")))?;
            check(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
            BOUND.with(|b| b.set(ctx as usize));
            let mut name = [0 as std::ffi::c_char; 256];
            sys::cuDeviceGetName(name.as_mut_ptr(), 255, dev);
            let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            let attr = |a| {
                let mut v = 0;
                sys::cuDeviceGetAttribute(&mut v, a, dev);
                v
            };
            let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
            let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
            let mut driver = 0;
            sys::cuDriverGetVersion(&mut driver);
            let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
            let mut sync_stream: CUstream = std::ptr::null_mut();
            check(
                sys::cuStreamCreate(&mut sync_stream, 1 /* NON_BLOCKING */),
                "cuStreamCreate",
            )?;
            let mut join: CUevent = std::ptr::null_mut();
            check(
                sys::cuEventCreate(&mut join, 2 /* DISABLE_TIMING */),
                "cuEventCreate",
            )?;
            let stage = StageConfig::from_env();
            Ok(Cuda {
                ordinal: num,
                dev,
                ctx,
                name,
                driver,
                arch,
                sync_stream,
                join: P(join as usize),
                streams: Mutex::new(HashMap::new()),
                functions: Mutex::new(HashMap::new()),
                staging: Mutex::new(None),
                red: Mutex::new(HashMap::new()),
                stage,
                sync_jobs: Mutex::new(Vec::new()),
                pending_red: Mutex::new(Vec::new()),
                store_kernel: OnceLock::new(),
                gcc: gcc_kernels::GccKernels::default(),
                blocks: block_cache::BlockCache::default(),
                released: Deferred::default(),
                pins: (std::env::var_os("ACCSHIM_PIN_STATIC").is_none()
                    || crate::env::flag("ACCSHIM_PIN_STATIC"))
                .then(static_pins::StaticPins::default),
                pool: {
                    let c = P(ctx as usize);
                    // Each staging thread makes the context current once: the context outlives
                    // the pool, which shutdown drops before it releases the context.
                    Mutex::new(Some(StagePool::new(stage.threads, stage.warm, move || {
                        sys::cuCtxSetCurrent(c.0 as CUcontext);
                    })))
                },
            })
        }
    }

    fn stream(&self, q: QueueId) -> Result<CUstream> {
        if q == SYNC {
            return Ok(self.sync_stream);
        }
        let mut m = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, _)) = m.get(&q) {
            return Ok(s.0 as CUstream);
        }
        let mut s: CUstream = std::ptr::null_mut();
        // CU_STREAM_DEFAULT: a blocking stream, as libgomp's queues are.
        // SAFETY: `s` is a local out-parameter; the context is current (bound by the caller).
        let r = unsafe { sys::cuStreamCreate(&mut s, 0) };
        check(r, "cuStreamCreate")?;
        m.insert(q, (P(s as usize), true));
        Ok(s)
    }

    /// The stream of an operation on `q`; on the synchronous queue, ordered after the work
    /// queued so far on every async queue first.
    fn op_stream(&self, q: QueueId) -> Result<CUstream> {
        let s = self.stream(q)?;
        if q == SYNC {
            self.join_queues()?;
        }
        Ok(s)
    }

    /// Makes the synchronous stream wait for the work queued so far on the async queues'
    /// streams: an event recorded on the legacy default stream completes once the blocking
    /// streams' earlier work has (CUDA's implicit synchronisation), and the synchronous stream
    /// waits for it without blocking the host. One event serves every caller: a wait takes the
    /// event's latest record, which is at least as late as the caller's own. Nothing is done
    /// before the first async queue exists.
    fn join_queues(&self) -> Result<()> {
        if self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            return Ok(());
        }
        /// CU_STREAM_LEGACY: the legacy default stream, whatever the per-thread setting.
        const LEGACY: CUstream = 1 as CUstream;
        let e = self.join.0 as CUevent;
        // SAFETY: `e` is our event (destroyed only at shutdown), the synchronous stream ours.
        unsafe {
            check(sys::cuEventRecord(e, LEGACY), "cuEventRecord")?;
            check(
                sys::cuStreamWaitEvent(self.sync_stream, e, 0),
                "cuStreamWaitEvent",
            )
        }
    }

    /// An event recorded now on each stream with work not yet done: once all have completed,
    /// everything queued so far has run.
    fn busy_marks(&self) -> Result<Vec<P>> {
        let streams: Vec<CUstream> = std::iter::once(self.sync_stream)
            .chain(
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .map(|(s, _)| s.0 as CUstream),
            )
            .collect();
        let mut marks = Vec::new();
        for s in streams {
            // SAFETY: `s` is a live stream of our context; `e` a local out-parameter, recorded
            // on it and destroyed by `reap` or `shutdown`.
            unsafe {
                if sys::cuStreamQuery(s) == CUresult::CUDA_SUCCESS {
                    continue;
                }
                let mut e: CUevent = std::ptr::null_mut();
                check(
                    sys::cuEventCreate(&mut e, 2 /* DISABLE_TIMING */),
                    "cuEventCreate",
                )?;
                marks.push(P(e as usize));
                check(sys::cuEventRecord(e, s), "cuEventRecord")?;
            }
        }
        Ok(marks)
    }

    /// Keeps a block no queued work uses any more for a later allocation, or frees it.
    fn give_back(&self, dev: CUdeviceptr, size: Option<usize>) -> Result<()> {
        match size {
            Some(size) if self.blocks.keep(dev, size) => Ok(()),
            // SAFETY: `dev` is an allocation of ours (the runtime frees only what it
            // allocated), released once, and nothing queued uses it any more.
            _ => check(unsafe { sys::cuMemFree_v2(dev) }, "cuMemFree"),
        }
    }

    /// Gives back the released blocks whose streams have reached their events.
    fn reap(&self) {
        // SAFETY: the events are ours, recorded by busy_marks and not yet destroyed.
        let reached =
            |e: &P| unsafe { sys::cuEventQuery(e.0 as CUevent) } != CUresult::CUDA_ERROR_NOT_READY;
        for (marks, (dev, size)) in self.released.ready(reached) {
            for e in marks {
                // SAFETY: reached, so no stream still refers to it; destroyed once.
                unsafe { sys::cuEventDestroy_v2(e.0 as CUevent) };
            }
            let _ = self.give_back(dev, size);
        }
    }

    fn sync_if(&self, q: QueueId, s: CUstream) -> Result<()> {
        if q == SYNC {
            // SAFETY: `s` is a stream of our context (from `stream`), not yet destroyed.
            check(
                unsafe { sys::cuStreamSynchronize(s) },
                "cuStreamSynchronize",
            )
        } else {
            Ok(())
        }
    }

    fn function(&self, k: &LaunchSpec) -> Result<CUfunction> {
        let Some(src) = k.cuda_src else {
            return Err(AccError::InvalidArgument(format!(
                "kernel {} has no CUDA implementation",
                k.name.to_string_lossy()
            )));
        };
        let key = (src as usize, k.name.as_ptr() as usize);
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.0 as CUfunction);
        }
        // SAFETY: `cuda_src` comes from a CudaSrc, which always names `cuda_len` bytes of
        // 'static, immutable data.
        let bytes = unsafe { std::slice::from_raw_parts(src as *const u8, k.cuda_len) };
        // The C API passes whatever the program wrote: checked, not assumed to be UTF-8.
        let text = std::str::from_utf8(bytes).map_err(|e| {
            AccError::InvalidArgument(format!(
                "the CUDA source of kernel {} is not UTF-8 ({e})",
                k.name.to_string_lossy()
            ))
        })?;
        let trimmed = text.trim_start();
        let ptx: String = if trimmed.starts_with(".version")
            || (trimmed.starts_with("//") && text.contains(".entry"))
        {
            text.to_string()
        } else {
            // SAFETY: probes for the library only.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(AccError::Device(
                    "NVRTC (libnvrtc) not found: cannot compile CUDA C kernels".into(),
                ));
            }
            let opts = cudarc::nvrtc::CompileOptions {
                arch: Some(self.arch),
                ..Default::default()
            };
            let full = format!("{PRELUDE}{text}");
            match std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx_with_opts(full, opts)) {
                Ok(Ok(ptx)) => ptx.to_src(),
                Ok(Err(e)) => {
                    return Err(AccError::Device(format!(
                        "NVRTC failed on {}: {e:?}",
                        k.name.to_string_lossy()
                    )))
                }
                Err(_) => return Err(AccError::Device("NVRTC could not be loaded".into())),
            }
        };
        let cptx = std::ffi::CString::new(ptx)
            .map_err(|_| AccError::InvalidArgument("PTX with NUL".into()))?;
        // SAFETY: `cptx` is a NUL-terminated PTX string that outlives the call (the driver copies it);
        // the module is kept loaded for the process so the function handle stays valid.
        let f = unsafe {
            let module = cudarc::driver::result::module::load_data(cptx.as_ptr().cast())
                .map_err(|e| AccError::Device(format!("cuModuleLoadData: {e:?}")))?;
            cudarc::driver::result::module::get_function(module, k.name.to_owned()).map_err(
                |e| {
                    AccError::Device(format!(
                        "kernel {} not found: {e:?}",
                        k.name.to_string_lossy()
                    ))
                },
            )?
        };
        self.functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, P(f as usize));
        Ok(f)
    }

    /// A reduction cell for a launch on `s` (holding `op`'s identity when the launch runs) and the
    /// pinned slot for its result. A pool's first use and each wrap-around enqueue one copy of
    /// the identities on `s`, after every earlier launch that used the pool.
    fn red_cell(&self, s: CUstream, op: RedOp) -> Result<(CUdeviceptr, P, CUdeviceptr)> {
        let mut m = self.red.lock().unwrap_or_else(|e| e.into_inner());
        let pool = match m.entry((s as usize, op as u8)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            // SAFETY: every out-parameter is a local; the identity slice is the RED_POOL doubles just
            // allocated by cuMemHostAlloc (page-aligned, so aligned for f64) and not shared yet.
            std::collections::hash_map::Entry::Vacant(e) => unsafe {
                let mut cells: CUdeviceptr = 0;
                check(sys::cuMemAlloc_v2(&mut cells, RED_POOL * 8), "cuMemAlloc")?;
                let mut slots: *mut c_void = std::ptr::null_mut();
                check(
                    sys::cuMemHostAlloc(&mut slots, RED_POOL * 8, 2 /* DEVICEMAP */),
                    "cuMemHostAlloc",
                )?;
                let mut slots_dev: CUdeviceptr = 0;
                check(
                    sys::cuMemHostGetDevicePointer_v2(&mut slots_dev, slots, 0),
                    "cuMemHostGetDevicePointer",
                )?;
                let mut ident: *mut c_void = std::ptr::null_mut();
                check(
                    sys::cuMemHostAlloc(&mut ident, RED_POOL * 8, 0),
                    "cuMemHostAlloc",
                )?;
                // SAFETY: just allocated, RED_POOL doubles.
                std::slice::from_raw_parts_mut(ident as *mut f64, RED_POOL).fill(op.identity());
                e.insert(RedPool {
                    cells,
                    slots: P(slots as usize),
                    slots_dev,
                    ident: P(ident as usize),
                    next: 0,
                })
            },
        };
        let i = pool.next % RED_POOL;
        if i == 0 {
            check(
                // SAFETY: pinned source that never changes; device cells of the same size.
                unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        pool.cells,
                        pool.ident.0 as *const c_void,
                        RED_POOL * 8,
                        s,
                    )
                },
                "cuMemcpyHtoDAsync",
            )?;
        }
        pool.next += 1;
        Ok((
            pool.cells + (i * 8) as u64,
            P(pool.slots.0 + i * 8),
            pool.slots_dev + (i * 8) as u64,
        ))
    }

    /// Loads [`STORE_KERNEL_PTX`]; says once why not, and the results are then copied back.
    fn load_store_kernel(&self) -> Option<P> {
        // SAFETY: STORE_KERNEL_PTX is a 'static NUL-terminated PTX string; the module stays loaded, so
        // the function handle stays valid for the process.
        let loaded = unsafe {
            cudarc::driver::result::module::load_data(STORE_KERNEL_PTX.as_ptr().cast()).and_then(
                |m| cudarc::driver::result::module::get_function(m, STORE_KERNEL.to_owned()),
            )
        };
        match loaded {
            Ok(f) => Some(P(f as usize)),
            Err(e) => {
                eprintln!(
                    "accshim: reduction results are copied back ({e:?} loading the store kernel)"
                );
                None
            }
        }
    }

    /// Whether a large copy on queue `q` goes directly to or from the program's memory
    /// (static_pins.rs): only on the synchronous queue, where the call returns after the copy,
    /// as a staged copy does; an asynchronous staged upload has read the host bytes when it
    /// returns, which a direct one would not have.
    fn direct(&self, q: QueueId, host: usize, bytes: usize) -> bool {
        let Some(pins) = &self.pins else { return false };
        q == SYNC && pins.direct(host, bytes, &PinDriver)
    }

    /// The staging buffers, allocated on first use.
    fn staging<'a>(&self, g: &'a mut Option<Staging>) -> Result<&'a Staging> {
        if g.is_none() {
            let mut up = StageSet::new(self.stage.up.bufs, self.stage.up.chunk)?;
            let down =
                StageSet::new(self.stage.bufs, self.stage.chunk).inspect_err(|_| up.free())?;
            *g = Some(Staging { up, down });
        }
        Ok(g.as_ref().expect("made above"))
    }

    /// Pageable host -> device through the pinned upload buffers (upload_pipeline): the
    /// staging threads copy pieces of each chunk into its buffer and the thread that completes
    /// a chunk starts its DMA, on the buffers' streams ([`StageDma`]) ordered after the queue's
    /// earlier work; the queue then waits for all of them.
    fn staged_upload(&self, s: CUstream, dev: u64, host: *const u8, bytes: usize) -> Result<()> {
        let mut g = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let st = &self.staging(&mut g)?.up;
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool
            .as_ref()
            .ok_or_else(|| AccError::Device("the device is shut down".into()))?;
        copy_streams_after(st, s)?;
        let cfg = self.stage;
        let plan = std::sync::Arc::new(upload_pipeline::Upload::new(cfg.up, bytes));
        // The calling thread is one of the workers: it starts at once, while the pool's
        // threads are being woken.
        let helpers = cfg.threads.min(plan.pieces().len()).max(1) - 1;
        let trace = upload_trace::enabled().then(|| {
            std::sync::Arc::new(UploadTrace::start(
                s,
                bytes,
                plan.chunks().iter().map(|c| c.0).collect(),
                helpers + 1,
            ))
        });
        let streams = st.streams[..cfg.up_streams.clamp(1, st.streams.len())].to_vec();
        let dma = std::sync::Arc::new(StageDma {
            dev,
            bufs: st.bufs.clone(),
            streams,
            events: st.events.clone(),
            trace: trace.clone(),
        });
        let host_p = P(host as usize);
        // Worker `w` (0: the calling thread).
        let worker = move |w: usize, plan: &upload_pipeline::Upload, dma: &StageDma| {
            let copy = |off: usize, in_buf: usize, buf: usize, len: usize| {
                let stores = stores_at(cfg.stores, cfg.nt_head, off);
                // SAFETY: the plan's pieces lie inside the transfer (`host`, `bytes`, readable for the
                // call: Backend::upload's contract) and inside their pinned buffer; `run_with` returns only
                // after every worker is done, so `host` outlives all of them.
                let copy = || unsafe {
                    copy_to_staging(
                        (host_p.0 as *const u8).add(off),
                        (dma.bufs[buf].0 as *mut u8).add(in_buf),
                        len,
                        stores,
                        cfg.prefetch,
                    )
                };
                match &dma.trace {
                    Some(t) => t.timed(w, copy),
                    None => copy(),
                }
            };
            plan.work(copy, dma);
        };
        let jobs: Vec<HostJob> = (1..=helpers)
            .map(|w| {
                let (plan, dma) = (plan.clone(), dma.clone());
                Box::new(move || worker(w, &plan, &dma)) as HostJob
            })
            .collect();
        pool.run_with(jobs, || worker(0, &plan, &dma));
        // SAFETY: `s` and the staging events are live handles of our context.
        unsafe {
            for e in &st.events {
                sys::cuStreamWaitEvent(s, e.0 as CUevent, 0);
            }
        }
        if let Some(t) = trace {
            t.report();
        }
        if plan.failed() {
            return Err(AccError::Device("staged host-to-device copy failed".into()));
        }
        Ok(())
    }
}

/// Registration of the program's static arrays (static_pins), in the current context.
struct PinDriver;

impl static_pins::Driver for PinDriver {
    fn register(&self, start: usize, len: usize) -> bool {
        // SAFETY: a page-rounded range of the program's static data, mapped for the process's
        // lifetime (static_pins).
        unsafe { sys::cuMemHostRegister_v2(start as *mut c_void, len, 0) == CUresult::CUDA_SUCCESS }
    }

    fn unregister(&self, start: usize) {
        // SAFETY: a range this driver registered; quiesce ran first where copies may use it.
        unsafe { sys::cuMemHostUnregister(start as *mut c_void) };
    }

    fn quiesce(&self) {
        // SAFETY: waits for the current context.
        unsafe { sys::cuCtxSynchronize() };
    }
}

/// The upload pipeline's device side: buffer `b` is copied on stream `b` (modulo the streams
/// used), which records event `b` after each copy.
struct StageDma {
    dev: u64,
    bufs: Vec<P>,
    streams: Vec<P>,
    events: Vec<P>,
    trace: Option<std::sync::Arc<UploadTrace>>,
}

impl upload_pipeline::Dma for StageDma {
    fn issue(&self, buf: usize, off: usize, len: usize) -> bool {
        let cs = self.streams[buf % self.streams.len()].0 as CUstream;
        // SAFETY: a pinned buffer of at least `len` bytes, a device range inside the transfer.
        unsafe {
            let ok = sys::cuMemcpyHtoDAsync_v2(
                self.dev + off as u64,
                self.bufs[buf].0 as *const c_void,
                len,
                cs,
            ) == CUresult::CUDA_SUCCESS;
            let ok = ok
                & (sys::cuEventRecord(self.events[buf].0 as CUevent, cs) == CUresult::CUDA_SUCCESS);
            if let Some(t) = &self.trace {
                t.issued(off, cs);
            }
            ok
        }
    }

    fn wait(&self, buf: usize) -> bool {
        // SAFETY: an event of our context.
        let wait = || unsafe {
            sys::cuEventSynchronize(self.events[buf].0 as CUevent) == CUresult::CUDA_SUCCESS
        };
        match &self.trace {
            Some(t) => t.timed_wait(wait),
            None => wait(),
        }
    }
}

impl Cuda {
    /// Device-to-host into pageable memory, the upload pipeline run backwards: every pinned
    /// buffer's first DMA is issued at once (after the work already on `s`), and each staging
    /// thread, as a DMA into one of its buffers completes, copies that chunk out to `host` and
    /// issues the DMA of the next chunk for the buffer. The copy is complete when this returns.
    fn staged_download(&self, s: CUstream, host: *mut u8, dev: u64, bytes: usize) -> Result<()> {
        let mut g = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let st = &self.staging(&mut g)?.down;
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool
            .as_ref()
            .ok_or_else(|| AccError::Device("the device is shut down".into()))?;
        copy_streams_after(st, s)?;
        let cfg = self.stage;
        // Equal chunks: here the tail (the last copy out) is what waits, not the head.
        let chunks: std::sync::Arc<Vec<(usize, usize)>> = std::sync::Arc::new(
            (0..bytes)
                .step_by(cfg.chunk)
                .map(|off| (off, cfg.chunk.min(bytes - off)))
                .collect(),
        );
        let threads = cfg.threads.min(chunks.len()).max(1);
        let (bufs, streams, events) = (st.bufs.clone(), st.streams.clone(), st.events.clone());
        let host_p = P(host as usize);
        let failed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let jobs: Vec<HostJob> = (0..threads)
            .map(|t| {
                let (bufs, streams, events, failed, chunks) = (
                    bufs.clone(),
                    streams.clone(),
                    events.clone(),
                    failed.clone(),
                    chunks.clone(),
                );
                // SAFETY: `bufs`, `streams` and `events` are live handles of the download StageSet (freed only
                // at shutdown, under the staging lock we hold); each chunk (off, len) lies inside the
                // transfer, `host` has `bytes` writable bytes (Backend::download's contract) and `len` <= the
                // buffer size; thread t alone uses buffers b % threads == t, so no two threads touch one buffer;
                // `pool.run` returns only after every job is done, so `host` outlives them.
                Box::new(move || unsafe {
                    // As in staged_upload: thread t owns the buffers b with b % threads == t and
                    // so every chunk c with c % bufs == b.
                    let dma = |c: usize| {
                        let b = c % cfg.bufs;
                        let (off, len) = chunks[c];
                        let cs = streams[b].0 as CUstream;
                        let ok = sys::cuMemcpyDtoHAsync_v2(
                            bufs[b].0 as *mut c_void,
                            dev + off as u64,
                            len,
                            cs,
                        ) == CUresult::CUDA_SUCCESS;
                        sys::cuEventRecord(events[b].0 as CUevent, cs);
                        ok
                    };
                    let mut ok = true;
                    for c in (0..chunks.len().min(cfg.bufs)).filter(|c| c % threads == t) {
                        ok &= dma(c);
                    }
                    for (c, &(off, len)) in chunks.iter().enumerate() {
                        let b = c % cfg.bufs;
                        if b % threads != t {
                            continue;
                        }
                        ok &= sys::cuEventSynchronize(events[b].0 as CUevent)
                            == CUresult::CUDA_SUCCESS;
                        std::ptr::copy_nonoverlapping(
                            bufs[b].0 as *const u8,
                            (host_p.0 as *mut u8).add(off),
                            len,
                        );
                        if c + cfg.bufs < chunks.len() {
                            ok &= dma(c + cfg.bufs);
                        }
                    }
                    if !ok {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }) as HostJob
            })
            .collect();
        pool.run(jobs);
        if failed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(AccError::Device("staged device-to-host copy failed".into()));
        }
        Ok(())
    }
}

impl Backend for Cuda {
    fn device_type(&self) -> acc_device_t {
        acc_device_t::NVIDIA
    }

    fn describe(&self) -> String {
        format!(
            "CUDA device {} ({}, {}, driver {})",
            self.ordinal, self.name, self.arch, self.driver
        )
    }

    fn properties(&self) -> Properties {
        self.bind();
        let (free, total) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
        Properties {
            memory: total,
            free_memory: free,
            name: self.name.clone(),
            vendor: "NVIDIA".into(),
            driver: format!("{}.{}", self.driver / 1000, (self.driver % 1000) / 10),
        }
    }

    fn handles(&self, q: Option<QueueId>) -> ApiHandles {
        ApiHandles {
            device_api: accprof_abi::acc_device_api::CUDA,
            device: self.dev as usize as *const c_void,
            context: self.ctx as *const c_void,
            stream: q
                .and_then(|q| self.stream(q).ok())
                .map_or(std::ptr::null(), |s| s as *const c_void),
        }
    }

    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.bind();
        self.reap();
        if let Some(d) = self.blocks.take(bytes.max(1)) {
            return Ok(d);
        }
        let mut d: CUdeviceptr = 0;
        // SAFETY: `d` is a local out-parameter; the context is bound above.
        let mut r = unsafe { sys::cuMemAlloc_v2(&mut d, bytes.max(1)) };
        if r == CUresult::CUDA_ERROR_OUT_OF_MEMORY && self.blocks.release_all() {
            // SAFETY: as above.
            r = unsafe { sys::cuMemAlloc_v2(&mut d, bytes.max(1)) };
        }
        match r {
            CUresult::CUDA_SUCCESS => Ok(d),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(AccError::OutOfMemory { bytes }),
            e => Err(AccError::Device(format!("cuMemAlloc({bytes}): {e:?}"))),
        }
    }

    fn free(&self, _q: QueueId, dev: u64) -> Result<()> {
        self.bind();
        // Memory from cuMemAlloc cannot be freed in stream order, and a kept block may be handed
        // out again for any queue: it waits for the work queued so far on every stream, without
        // blocking the host (the queue it was released on is one of them).
        let size = self.allocation_size(dev);
        let marks = self.busy_marks()?;
        let r = if marks.is_empty() {
            self.give_back(dev, size)
        } else {
            self.released.push(marks, (dev, size));
            Ok(())
        };
        self.reap();
        r
    }

    fn allocation_size(&self, dev: u64) -> Option<usize> {
        self.bind();
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: two out-parameters on the stack; the driver only looks the address up.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, dev) };
        (r == CUresult::CUDA_SUCCESS && base == dev).then_some(size)
    }

    fn check_device_range(&self, dev: u64, bytes: usize) -> Result<()> {
        self.bind();
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: two out-parameters on the stack; the driver only looks the address up.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, dev) };
        if r != CUresult::CUDA_SUCCESS {
            // Not an allocation the driver can name (another allocator's, host memory mapped
            // for the device): the copy itself refuses what the device cannot reach.
            return Ok(());
        }
        if dev
            .checked_add(bytes as u64)
            .is_some_and(|end| end <= base + size as u64)
        {
            Ok(())
        } else {
            Err(AccError::InvalidArgument(format!(
                "[{dev:#x},+{bytes}] runs past the end of its device allocation [{base:#x},+{size}]"
            )))
        }
    }

    fn upload(&self, q: QueueId, dev: u64, host: *const u8, bytes: usize) -> Result<()> {
        self.bind();
        let s = self.op_stream(q)?;
        if bytes >= STAGE_MIN && !self.direct(q, host as usize, bytes) {
            self.staged_upload(s, dev, host, bytes)?;
        } else {
            check(
                // SAFETY: `host` names `bytes` readable bytes (Backend::upload's contract: the runtime passes
                // a mapped host range) and `dev` an allocation of at least that size; `s` is our stream.
                unsafe { sys::cuMemcpyHtoDAsync_v2(dev, host.cast(), bytes, s) },
                "cuMemcpyHtoDAsync",
            )?;
        }
        self.sync_if(q, s)
    }

    fn download(&self, q: QueueId, host: *mut u8, dev: u64, bytes: usize) -> Result<()> {
        self.bind();
        let s = self.op_stream(q)?;
        if bytes >= STAGE_MIN && !self.direct(q, host as usize, bytes) {
            // Pageable downloads are synchronous for the host anyway; staged, they run at
            // several times the driver's pageable rate.
            return self.staged_download(s, host, dev, bytes);
        }
        check(
            // SAFETY: `host` names `bytes` writable bytes (Backend::download's contract) and `dev` an
            // allocation of at least that size; `s` is our stream.
            unsafe { sys::cuMemcpyDtoHAsync_v2(host.cast(), dev, bytes, s) },
            "cuMemcpyDtoHAsync",
        )?;
        self.sync_if(q, s)
    }

    fn copy_d2d(&self, q: QueueId, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.bind();
        let s = self.op_stream(q)?;
        check(
            // SAFETY: both ranges are device allocations of `bytes` bytes (the runtime's contract); `s` is our stream.
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s) },
            "cuMemcpyDtoDAsync",
        )?;
        self.sync_if(q, s)
    }

    fn launch(&self, q: QueueId, k: &LaunchSpec, slot: Option<RedSlot>) -> Result<Option<u64>> {
        self.bind();
        let s = self.op_stream(q)?;
        if let Some(g) = &k.gcc {
            let args: Vec<u64> = k.args.iter().map(|v| v.0).collect();
            self.gcc.launch(
                self.dev,
                s,
                g,
                &args,
                &k.inline,
                [k.gangs, k.workers, k.vector],
            )?;
            return Ok(None);
        }
        if !k.inline.is_empty() {
            return Err(AccError::InvalidArgument(format!(
                "kernel {} takes values with its arguments, which only GCC's kernels do",
                k.name.to_string_lossy()
            )));
        }
        let f = self.function(k)?;
        let mut vals: Vec<u64> = k.args.iter().map(|v| v.0).collect();
        let mut red = None;
        if let Some(op) = k.reduction {
            let (cell, slot, slot_dev) = self.red_cell(s, op)?;
            vals.push(cell);
            red = Some((cell, slot, slot_dev));
        }
        let mut params: Vec<*mut c_void> = vals
            .iter_mut()
            .map(|v| v as *mut u64 as *mut c_void)
            .collect();
        // SAFETY: `params` holds one pointer per kernel parameter (the args, then the reduction cell),
        // each to a u64 in `vals`, which outlives the call (the driver copies parameters at launch);
        // `f` and `s` are live handles of our context.
        unsafe {
            check(
                sys::cuLaunchKernel(
                    f,
                    k.gangs,
                    1,
                    1,
                    k.vector,
                    k.workers,
                    1,
                    0,
                    s,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
                "cuLaunchKernel",
            )?;
        }
        if let (Some((cell, slot, slot_dev)), Some(RedSlot(dst))) = (red, slot) {
            let pending = PendingRed {
                stream: P(s as usize),
                cell,
                slot,
                slot_dev,
                dst: P(dst as usize),
            };
            self.pending_red
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(pending);
        }
        Ok(red.map(|(cell, _, _)| cell))
    }

    fn reduction_store_kernel(&self) -> Option<&'static CStr> {
        self.bind();
        self.store_kernel
            .get_or_init(|| self.load_store_kernel())
            .map(|_| STORE_KERNEL)
    }

    fn flush_reduction(&self, q: QueueId) -> Result<()> {
        self.bind();
        let s = self.stream(q)?;
        let Some(p) = take_oldest(&self.pending_red, |p| p.stream.0 == s as usize) else {
            return Ok(());
        };
        match *self.store_kernel.get_or_init(|| self.load_store_kernel()) {
            Some(f) => {
                let (mut cell, mut slot_dev) = (p.cell, p.slot_dev);
                let mut params = [
                    &mut cell as *mut u64 as *mut c_void,
                    &mut slot_dev as *mut u64 as *mut c_void,
                ];
                check(
                    // SAFETY: the store kernel takes (const double *cell, double *slot); both are
                    // live device addresses, and `params` outlives the launch call.
                    unsafe {
                        sys::cuLaunchKernel(
                            f.0 as CUfunction,
                            1,
                            1,
                            1,
                            1,
                            1,
                            1,
                            0,
                            s,
                            params.as_mut_ptr(),
                            std::ptr::null_mut(),
                        )
                    },
                    "cuLaunchKernel",
                )?;
            }
            None => check(
                // SAFETY: a pinned slot of 8 bytes and a device cell of 8 bytes.
                unsafe { sys::cuMemcpyDtoHAsync_v2(p.slot.0 as *mut c_void, p.cell, 8, s) },
                "cuMemcpyDtoHAsync",
            )?,
        }
        let (slot, dst) = (p.slot, p.dst);
        // SAFETY: the slot is written by the work queued before this job; dst is the runtime's
        // slot for this launch.
        self.host_fn(
            q,
            Box::new(move || unsafe { *(dst.0 as *mut f64) = *(slot.0 as *const f64) }),
        )
    }

    fn host_fn(&self, q: QueueId, job: HostJob) -> Result<()> {
        self.bind();
        let s = self.stream(q)?;
        if q == SYNC {
            self.sync_jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(job);
            return Ok(());
        }
        let user = Box::into_raw(Box::new(HostJobBox(job))) as *mut c_void;
        // SAFETY: `user` is a leaked Box<HostJobBox> that `run_host_job` takes back exactly once when
        // the stream runs it; `s` is a live stream.
        check(
            unsafe { sys::cuLaunchHostFunc(s, Some(run_host_job), user) },
            "cuLaunchHostFunc",
        )
    }

    fn wait(&self, q: QueueId) -> Result<()> {
        self.bind();
        if q != SYNC
            && !self
                .streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&q)
        {
            return Ok(());
        }
        let s = self.stream(q)?;
        check(
            // SAFETY: `s` is a live stream of our context.
            unsafe { sys::cuStreamSynchronize(s) },
            "cuStreamSynchronize",
        )?;
        if q == SYNC {
            let jobs =
                std::mem::take(&mut *self.sync_jobs.lock().unwrap_or_else(|e| e.into_inner()));
            for job in jobs {
                job();
            }
        }
        self.reap();
        Ok(())
    }

    fn test(&self, q: QueueId) -> bool {
        self.bind();
        let s = match self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&q)
        {
            Some((s, _)) => s.0 as CUstream,
            None if q == SYNC => self.sync_stream,
            None => return true,
        };
        // SAFETY: `s` is a live stream of our context (or the synchronous one).
        let r = unsafe { sys::cuStreamQuery(s) };
        r != CUresult::CUDA_ERROR_NOT_READY
    }

    fn queues(&self) -> Vec<QueueId> {
        let mut v: Vec<_> = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        v.sort_unstable();
        v
    }

    fn queue_wait(&self, waiter: QueueId, on: QueueId) -> Result<()> {
        self.bind();
        if waiter == on {
            return Ok(());
        }
        let on_s = self.stream(on)?;
        if waiter == SYNC {
            // SAFETY: `on_s` is a live stream of our context.
            return check(
                unsafe { sys::cuStreamSynchronize(on_s) },
                "cuStreamSynchronize",
            );
        }
        let w = self.stream(waiter)?;
        // SAFETY: `e` is a local out-parameter; both streams are live; the event is destroyed after
        // the wait is enqueued, which the driver allows.
        unsafe {
            let mut e: CUevent = std::ptr::null_mut();
            check(sys::cuEventCreate(&mut e, 2), "cuEventCreate")?;
            sys::cuEventRecord(e, on_s);
            let r = sys::cuStreamWaitEvent(w, e, 0);
            sys::cuEventDestroy_v2(e);
            check(r, "cuStreamWaitEvent")
        }
    }

    fn native_stream(&self, q: QueueId) -> *mut c_void {
        self.bind();
        self.stream(q)
            .map_or(std::ptr::null_mut(), |s| s as *mut c_void)
    }

    fn set_native_stream(&self, q: QueueId, stream: *mut c_void) -> bool {
        if stream.is_null() {
            return false;
        }
        let mut m = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((old, owned)) = m.insert(q, (P(stream as usize), false)) {
            if owned {
                // SAFETY: `old` is a stream we created (owned) and just removed from the map, so it is
                // synchronized and destroyed once.
                unsafe {
                    sys::cuStreamSynchronize(old.0 as CUstream);
                    sys::cuStreamDestroy_v2(old.0 as CUstream);
                }
            }
        }
        true
    }

    fn image_variable(&self, image: &GccKernel, name: &CStr) -> Result<Option<(u64, usize)>> {
        self.bind();
        self.gcc.variable(image, name).map(Some)
    }

    fn shutdown(&self) {
        self.bind();
        // SAFETY: shutdown runs with no other operation on this device; every handle freed here is
        // ours and removed from its map or Option before it is freed, so each is freed once.
        unsafe {
            sys::cuCtxSynchronize();
            for (_, (s, owned)) in self
                .streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain()
            {
                if owned {
                    sys::cuStreamDestroy_v2(s.0 as CUstream);
                }
            }
            if let Some(mut st) = self
                .staging
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                st.up.free();
                st.down.free();
            }
            // Joins the staging threads, which have the context current.
            drop(self.pool.lock().unwrap_or_else(|e| e.into_inner()).take());
            for (_, p) in self.red.lock().unwrap_or_else(|e| e.into_inner()).drain() {
                sys::cuMemFree_v2(p.cells);
                sys::cuMemFreeHost(p.slots.0 as *mut c_void);
                sys::cuMemFreeHost(p.ident.0 as *mut c_void);
            }
            // The device is idle: every released block is unused.
            for (marks, (dev, _)) in self.released.take_all() {
                for e in marks {
                    sys::cuEventDestroy_v2(e.0 as CUevent);
                }
                sys::cuMemFree_v2(dev);
            }
            self.blocks.release_all();
            if let Some(pins) = &self.pins {
                pins.release_all(&PinDriver);
            }
            sys::cuStreamDestroy_v2(self.sync_stream);
            sys::cuEventDestroy_v2(self.join.0 as CUevent);
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
        BOUND.with(|b| b.set(0));
    }
}

/// Opens device `num` as a boxed backend.
pub fn open_boxed(num: i32) -> Result<Box<dyn Backend>> {
    Cuda::open(num).map(|c| Box::new(c) as Box<dyn Backend>)
}
