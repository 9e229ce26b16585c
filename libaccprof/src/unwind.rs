//! Finding where in the application a construct was called from.
//!
//! When the runtime reports no source file (GCC), the tool records the return address of the
//! first stack frame that belongs neither to the tool nor to the runtime: the instruction after
//! the application's call into the runtime, i.e. the construct's `#pragma acc` line. It is
//! resolved to file:line after the run (accprof-symbols); here we only walk the stack.
//!
//! The walk uses the unwinder of libgcc_s (which std links in), driven by the `.eh_frame` that
//! GCC emits by default on x86-64. It costs about a microsecond, which is why it runs only on
//! construct start events and only when the runtime gives no location.

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

/// Address ranges of the code to skip, as (start, end) pairs: this library, the runtime that
/// calls us, and libc (never the application; without it, a runtime linked into the executable
/// would have its constructs attributed to `__libc_start_main`).
static SKIP: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// Remembers the text ranges of the tool and of the runtime whose function lives at
/// `runtime_fn` (its acc_prof_register). Called at registration, before any event.
pub fn set_skip_ranges(runtime_fn: *const c_void) {
    let own = crate::modules::module_range_of(set_skip_ranges as *const c_void);
    let runtime = crate::modules::module_range_of(runtime_fn);
    if let Some((s, e)) = own {
        SKIP[0].store(s, Ordering::Relaxed);
        SKIP[1].store(e, Ordering::Relaxed);
    }
    if let Some((s, e)) = runtime {
        // A runtime linked into the executable itself gives us the executable's range: then
        // every frame is "runtime", the walk finds nothing, and that is right (such a runtime
        // reports its own locations).
        SKIP[2].store(s, Ordering::Relaxed);
        SKIP[3].store(e, Ordering::Relaxed);
    }
    if let Some((s, e)) = crate::modules::module_range_of(libc::exit as *const c_void) {
        SKIP[4].store(s, Ordering::Relaxed);
        SKIP[5].store(e, Ordering::Relaxed);
    }
}

#[inline]
fn skipped(ip: u64) -> bool {
    let in_range = |a: usize| {
        let s = SKIP[a].load(Ordering::Relaxed);
        let e = SKIP[a + 1].load(Ordering::Relaxed);
        s <= ip && ip < e
    };
    in_range(0) || in_range(2) || in_range(4)
}

struct Walk {
    found: u64,
    frames: u32,
}

extern "C" fn visit(ctx: *mut UnwindContext, arg: *mut c_void) -> UnwindReasonCode {
    // SAFETY: `arg` is the `Walk` that `caller_return_address` passed, alive for the walk.
    let walk = unsafe { &mut *(arg as *mut Walk) };
    // SAFETY: ctx is the context the unwinder hands its callback.
    let ip = unsafe { _Unwind_GetIP(ctx) } as u64;
    walk.frames += 1;
    if ip == 0 || walk.frames > 64 {
        return URC_NORMAL_STOP;
    }
    if !skipped(ip) {
        walk.found = ip;
        return URC_NORMAL_STOP;
    }
    URC_NO_REASON
}

/// The return address of the innermost frame outside the tool and the runtime, if any.
#[inline(never)]
pub fn caller_return_address() -> Option<u64> {
    if SKIP[1].load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut walk = Walk { found: 0, frames: 0 };
    // SAFETY: the callback only touches `walk`, which outlives the call.
    unsafe { _Unwind_Backtrace(visit, &mut walk as *mut Walk as *mut c_void) };
    (walk.found != 0).then_some(walk.found)
}
