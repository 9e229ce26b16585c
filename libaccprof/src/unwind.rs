//! Finding where in the application a construct was called from.
//!
//! When the runtime reports no source file (GCC), the tool records the return address of the
//! first stack frame that belongs neither to the tool nor to the runtime: the instruction after
//! the application's call into the runtime, i.e. the construct's `#pragma acc` line. It is
//! resolved to file:line after the run (accprof-symbols); here we only walk the stack.
//!
//! The walk uses the unwinder of libgcc_s (which std links in), driven by the `.eh_frame` that
//! GCC emits by default on x86-64. It costs about a microsecond, which is why it runs only on
//! construct start events and only when the runtime gives no location, and for heap blocks of at
//! least ACCPROF_HEAP_MIN_BYTES ([`heap_caller`], with its own set of modules to skip).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

#[repr(C)]
struct UnwindContext {
    _private: [u8; 0],
}

type UnwindReasonCode = c_int;
const URC_NO_REASON: UnwindReasonCode = 0;
const URC_NORMAL_STOP: UnwindReasonCode = 4;

type TraceFn = extern "C" fn(*mut UnwindContext, *mut c_void) -> UnwindReasonCode;

extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> UnwindReasonCode;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
}

/// Address ranges of code whose frames a walk skips, as (start, end) pairs; (0, 0) is unused.
pub struct SkipSet<const P: usize> {
    ranges: [AtomicU64; P],
}

impl<const P: usize> SkipSet<P> {
    const fn new() -> Self {
        SkipSet { ranges: [const { AtomicU64::new(0) }; P] }
    }

    fn set(&self, pair: usize, range: Option<(u64, u64)>) {
        if let (Some((s, e)), true) = (range, 2 * pair + 1 < P) {
            self.ranges[2 * pair].store(s, Ordering::Relaxed);
            self.ranges[2 * pair + 1].store(e, Ordering::Release);
        }
    }

    fn armed(&self) -> bool {
        P >= 2 && self.ranges[1].load(Ordering::Acquire) != 0
    }

    #[inline]
    fn skips(&self, ip: u64) -> bool {
        self.ranges.chunks_exact(2).any(|r| {
            let s = r[0].load(Ordering::Relaxed);
            let e = r[1].load(Ordering::Relaxed);
            s <= ip && ip < e
        })
    }
}

/// For constructs: this library, the runtime that calls us, and libc (never the application;
/// without it, a runtime linked into the executable would have its constructs attributed to
/// `__libc_start_main`).
static CONSTRUCT_SKIP: SkipSet<6> = SkipSet::new();

/// For heap blocks: this library, libc, and the language runtimes whose allocation functions
/// call malloc for the application (libstdc++'s operator new, libgfortran), so that a block is
/// attributed to the application's line. Not the OpenACC runtime: its own buffers are not the
/// application's arrays.
static HEAP_SKIP: SkipSet<8> = SkipSet::new();

/// The main executable's range: never skipped, whatever a symbol lookup says (a program may
/// define its own operator new).
fn outside_executable(range: Option<(u64, u64)>) -> Option<(u64, u64)> {
    let exe = crate::modules::loaded_modules().into_iter().next().map(|m| (m.start, m.end));
    range.filter(|r| Some(*r) != exe)
}

fn own_range() -> Option<(u64, u64)> {
    crate::modules::module_range_of(set_skip_ranges as *const c_void)
}

fn libc_range() -> Option<(u64, u64)> {
    outside_executable(crate::modules::module_range_of(libc::exit as *const c_void))
}

/// Remembers the text ranges of the tool and of the runtime whose function lives at
/// `runtime_fn` (its acc_prof_register). Called at registration, before any event.
pub fn set_skip_ranges(runtime_fn: *const c_void) {
    CONSTRUCT_SKIP.set(0, own_range());
    // A runtime linked into the executable itself gives us the executable's range: then every
    // frame is "runtime", the walk finds nothing, and that is right (such a runtime reports its
    // own locations).
    CONSTRUCT_SKIP.set(1, crate::modules::module_range_of(runtime_fn));
    CONSTRUCT_SKIP.set(2, libc_range());
}

/// Arms [`heap_caller`]: called by the heap hooks' initialisation, at library load.
pub fn set_heap_skip_ranges() {
    let by_symbol = |name: &std::ffi::CStr| {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the global scope.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        if p.is_null() {
            None
        } else {
            outside_executable(crate::modules::module_range_of(p))
        }
    };
    HEAP_SKIP.set(1, libc_range());
    HEAP_SKIP.set(2, by_symbol(c"_Znwm"));
    HEAP_SKIP.set(3, by_symbol(c"_gfortran_os_error_at").or_else(|| by_symbol(c"_gfortran_runtime_error")));
    // Last: it arms the walk.
    HEAP_SKIP.set(0, own_range());
}

struct Walk<'a> {
    found: u64,
    frames: u32,
    skip: &'a dyn Fn(u64) -> bool,
}

extern "C" fn visit(ctx: *mut UnwindContext, arg: *mut c_void) -> UnwindReasonCode {
    // SAFETY: `arg` is the `Walk` that `walk` passed, alive for the walk.
    let walk = unsafe { &mut *(arg as *mut Walk<'_>) };
    // SAFETY: ctx is the context the unwinder hands its callback.
    let ip = unsafe { _Unwind_GetIP(ctx) } as u64;
    walk.frames += 1;
    if ip == 0 || walk.frames > 64 {
        return URC_NORMAL_STOP;
    }
    if !(walk.skip)(ip) {
        walk.found = ip;
        return URC_NORMAL_STOP;
    }
    URC_NO_REASON
}

#[inline(always)]
fn walk(skip: &dyn Fn(u64) -> bool) -> Option<u64> {
    let mut w = Walk { found: 0, frames: 0, skip };
    // SAFETY: the callback only touches `w`, which outlives the call.
    unsafe { _Unwind_Backtrace(visit, &mut w as *mut Walk<'_> as *mut c_void) };
    (w.found != 0).then_some(w.found)
}

/// The return address of the innermost frame outside the tool and the runtime, if any.
#[inline(never)]
pub fn caller_return_address() -> Option<u64> {
    if !CONSTRUCT_SKIP.armed() {
        return None;
    }
    walk(&|ip| CONSTRUCT_SKIP.skips(ip))
}

/// The return address of the innermost frame outside the tool, libc and the language
/// runtimes: where the application asked for a heap block.
#[inline(never)]
pub fn heap_caller() -> Option<u64> {
    if !HEAP_SKIP.armed() {
        return None;
    }
    walk(&|ip| HEAP_SKIP.skips(ip))
}
