//! Finding where in the application a construct was called from.
//!
//! When the runtime reports no source file (GCC), the tool records the return address of the
//! first stack frame that belongs neither to the tool nor to the runtime: the instruction after
//! the application's call into the runtime, i.e. the construct's `#pragma acc` line. It is
//! resolved to file:line after the run (accprof-symbols); here we only walk the stack.
//!
//! The walk uses the unwinder of libgcc_s (which std links in), driven by the `.eh_frame` that
//! GCC emits by default on x86-64. It runs only on construct start events and only when the
//! runtime gives no location, and for heap blocks of at least ACCPROF_HEAP_MIN_BYTES
//! ([`heap_caller`], with its own set of modules to skip).
//!
//! A walk costs about 14,000 instructions (callgrind, GCC's Laplace: 3-4 us, two per iteration,
//! about 1% of the data-region loop on the H200), and a loop reaches the same construct from the
//! same stack depth again and again. So [`caller_return_address`] keeps, per thread, where on the
//! stack the walk found the application's return address (the slot just below the runtime
//! entry's frame, [`Shortcut`]): the next construct of the same kind from the same stack
//! position reads that slot instead of walking, and trusts what it reads only if an earlier
//! walk from there found that very address. Anything else, and every 256th use, walks again.

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
    fn _Unwind_GetCFA(ctx: *mut UnwindContext) -> usize;
}

/// Address ranges of code whose frames a walk skips, as (start, end) pairs; (0, 0) is unused.
pub struct SkipSet<const P: usize> {
    ranges: [AtomicU64; P],
}

impl<const P: usize> SkipSet<P> {
    const fn new() -> Self {
        SkipSet {
            ranges: [const { AtomicU64::new(0) }; P],
        }
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
    let exe = crate::modules::loaded_modules()
        .into_iter()
        .next()
        .map(|m| (m.start, m.end));
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
    HEAP_SKIP.set(
        3,
        by_symbol(c"_gfortran_os_error_at").or_else(|| by_symbol(c"_gfortran_runtime_error")),
    );
    // Last: it arms the walk.
    HEAP_SKIP.set(0, own_range());
}

struct Walk<'a> {
    found: u64,
    /// Where the found return address is stored: just below the canonical frame address of the
    /// frame before it (the runtime's entry point, which the application called). 0 if unknown.
    slot: usize,
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
        // x86-64: a call pushes the return address just below the callee's CFA, which is what
        // libgcc's context holds while it reports the caller's frame.
        // SAFETY: as above.
        let cfa = unsafe { _Unwind_GetCFA(ctx) };
        if cfg!(target_arch = "x86_64") && cfa >= 8 {
            walk.slot = cfa - 8;
        }
        return URC_NORMAL_STOP;
    }
    URC_NO_REASON
}

/// The first return address outside `skip`, and the stack slot that holds it (0 if unknown).
#[inline(always)]
fn walk(skip: &dyn Fn(u64) -> bool) -> Option<(u64, usize)> {
    let mut w = Walk {
        found: 0,
        slot: 0,
        frames: 0,
        skip,
    };
    // SAFETY: the callback only touches `w`, which outlives the call.
    unsafe { _Unwind_Backtrace(visit, &mut w as *mut Walk<'_> as *mut c_void) };
    (w.found != 0).then_some((w.found, w.slot))
}

/// Return addresses a shortcut trusts, per stack position.
const KNOWN_PER_SHORTCUT: usize = 8;
/// Stack positions remembered per thread.
const SHORTCUTS: usize = 8;
/// A trusted read is checked by a full walk this often all the same.
const VERIFY_EVERY: u32 = 256;

/// Where a walk from one stack position (`sp`: this function's frame, so the runtime's frames
/// above it are the same ones as long as the event kind is the same) found the application's
/// return address, and which addresses walks from there have found.
#[derive(Clone, Copy)]
struct Shortcut {
    sp: usize,
    kind: u32,
    slot: usize,
    known: [u64; KNOWN_PER_SHORTCUT],
    uses: u32,
}

const EMPTY: Shortcut = Shortcut {
    sp: 0,
    kind: 0,
    slot: 0,
    known: [0; KNOWN_PER_SHORTCUT],
    uses: 0,
};

/// A recording thread's shortcuts (kept in its state: a thread-local of a loaded library is
/// reached through the loader's `__tls_get_addr`).
pub struct Shortcuts {
    entries: [Shortcut; SHORTCUTS],
    next: usize,
}

impl Default for Shortcuts {
    fn default() -> Self {
        Shortcuts {
            entries: [EMPTY; SHORTCUTS],
            next: 0,
        }
    }
}

impl Shortcuts {
    /// A return address an earlier walk from this position found and the slot holds now.
    fn lookup(&mut self, sp: usize, kind: u32) -> Option<u64> {
        let e = self
            .entries
            .iter_mut()
            .find(|e| e.sp == sp && e.kind == kind && e.slot != 0)?;
        e.uses = e.uses.wrapping_add(1);
        if e.uses % VERIFY_EVERY == 0 {
            return None;
        }
        // SAFETY: `slot` lies above `sp` in this thread's stack (checked when it was learned),
        // and the same position means the same live frames: the read is of mapped stack.
        let ra = unsafe { (e.slot as *const u64).read_volatile() };
        // Unused entries of `known` are 0: a zero word is never a return address.
        (ra != 0 && e.known.contains(&ra)).then_some(ra)
    }

    /// A walk from `sp` found no slot holding its result: nothing there is to be trusted.
    fn forget(&mut self, sp: usize, kind: u32) {
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.sp == sp && e.kind == kind)
        {
            *e = EMPTY;
        }
    }

    /// Learns what a walk from `sp` found (`slot` holds `ra`).
    fn learn(&mut self, sp: usize, kind: u32, ra: u64, slot: usize) {
        let i = match self
            .entries
            .iter()
            .position(|e| e.sp == sp && e.kind == kind)
        {
            Some(i) if self.entries[i].slot == slot => i,
            Some(i) => {
                // Another layout from the same position: start over there.
                self.entries[i] = Shortcut {
                    sp,
                    kind,
                    slot,
                    ..EMPTY
                };
                i
            }
            None => {
                let i = self.next;
                self.next = (self.next + 1) % SHORTCUTS;
                self.entries[i] = Shortcut {
                    sp,
                    kind,
                    slot,
                    ..EMPTY
                };
                i
            }
        };
        let e = &mut self.entries[i];
        if !e.known.contains(&ra) {
            // Full: the oldest address goes.
            e.known.rotate_right(1);
            e.known[0] = ra;
        }
    }
}

/// The return address of the innermost frame outside the tool and the runtime, if any, for
/// an event of `kind` (module docs: a shortcut per stack position and kind).
#[inline(never)]
pub fn caller_return_address(shortcuts: &mut Shortcuts, kind: u32) -> Option<u64> {
    if !CONSTRUCT_SKIP.armed() {
        return None;
    }
    let marker = 0u8;
    let sp = std::hint::black_box(&marker) as *const u8 as usize;
    if let Some(ra) = shortcuts.lookup(sp, kind) {
        return Some(ra);
    }
    let (ra, slot) = walk(&|ip| CONSTRUCT_SKIP.skips(ip))?;
    // SAFETY: a slot above this frame is in this thread's live stack.
    let holds_ra = slot > sp && unsafe { (slot as *const u64).read_volatile() } == ra;
    if holds_ra {
        shortcuts.learn(sp, kind, ra, slot);
    } else {
        shortcuts.forget(sp, kind);
    }
    Some(ra)
}

/// Up to this many frames of the application are kept by [`application_frames`].
const MAX_APPLICATION_FRAMES: usize = 16;

struct Frames {
    /// (return address, canonical frame address of the frame below it), per frame visited.
    visited: [(u64, u64); 64],
    n: usize,
}

extern "C" fn visit_all(ctx: *mut UnwindContext, arg: *mut c_void) -> UnwindReasonCode {
    // SAFETY: `arg` is the `Frames` that `application_frames` passed, alive for the walk.
    let f = unsafe { &mut *(arg as *mut Frames) };
    // SAFETY: ctx is the context the unwinder hands its callback.
    let (ip, cfa) = unsafe { (_Unwind_GetIP(ctx) as u64, _Unwind_GetCFA(ctx) as u64) };
    if ip == 0 || f.n == f.visited.len() {
        return URC_NORMAL_STOP;
    }
    f.visited[f.n] = (ip, cfa);
    f.n += 1;
    URC_NO_REASON
}

/// The application's frames on the calling thread's stack, innermost first: each frame's
/// return address (inside its function) and its own canonical frame address, which is where
/// the debug information places the function's local arrays (`DW_OP_fbreg` from
/// `DW_OP_call_frame_cfa`). Read once, when the trace is created: `main`'s frame stays where
/// it is for the whole run, so readers can tell apart its local arrays of one size
/// (accprof_symbols::stack_frames).
pub fn application_frames() -> Vec<(u64, u64)> {
    if !CONSTRUCT_SKIP.armed() {
        return Vec::new();
    }
    let mut f = Frames {
        visited: [(0, 0); 64],
        n: 0,
    };
    // SAFETY: the callback only touches `f`, which outlives the call.
    unsafe { _Unwind_Backtrace(visit_all, &mut f as *mut Frames as *mut c_void) };
    // libgcc reports a frame with the CFA of the frame it was unwound from (the callee's: the
    // caller's stack pointer at the call); the frame's own CFA comes with the next frame.
    f.visited[..f.n]
        .windows(2)
        .filter(|w| !CONSTRUCT_SKIP.skips(w[0].0))
        .map(|w| (w[0].0, w[1].1))
        .take(MAX_APPLICATION_FRAMES)
        .collect()
}

/// The return address of the innermost frame outside the tool, libc and the language
/// runtimes: where the application asked for a heap block.
#[inline(never)]
pub fn heap_caller() -> Option<u64> {
    if !HEAP_SKIP.armed() {
        return None;
    }
    walk(&|ip| HEAP_SKIP.skips(ip)).map(|(ra, _)| ra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortcut_trusts_only_what_a_walk_found_in_that_slot() {
        let mut stack = [0u64; 4];
        let p = stack.as_mut_ptr();
        // SAFETY: within `stack`.
        let (slot, other) = unsafe { (p.add(2), p.add(3)) };
        // SAFETY: the closure is only called with `slot` and `other`, both inside the live
        // local `stack`, which nothing else borrows while it is written.
        let put = |at: *mut u64, v: u64| unsafe { at.write_volatile(v) };
        let mut s = Shortcuts {
            entries: [EMPTY; SHORTCUTS],
            next: 0,
        };
        assert_eq!(s.lookup(100, 16), None, "nothing learned");
        put(slot, 0xAAAA);
        s.learn(100, 16, 0xAAAA, slot as usize);
        assert_eq!(s.lookup(100, 16), Some(0xAAAA));
        assert_eq!(s.lookup(100, 10), None, "another event kind");
        assert_eq!(s.lookup(101, 16), None, "another stack position");
        put(slot, 0xBBBB);
        assert_eq!(
            s.lookup(100, 16),
            None,
            "an address no walk found there: walk"
        );
        s.learn(100, 16, 0xBBBB, slot as usize);
        assert_eq!(s.lookup(100, 16), Some(0xBBBB));
        put(slot, 0xAAAA);
        assert_eq!(s.lookup(100, 16), Some(0xAAAA), "both call sites are known");
        let walks = (0..2 * VERIFY_EVERY)
            .filter(|_| s.lookup(100, 16).is_none())
            .count();
        assert_eq!(walks, 2, "every {VERIFY_EVERY}th use walks all the same");
        // Another slot from the same position: what was known there is dropped.
        put(other, 0xCCCC);
        s.learn(100, 16, 0xCCCC, other as usize);
        put(other, 0xAAAA);
        assert_eq!(s.lookup(100, 16), None);
        put(other, 0xCCCC);
        assert_eq!(s.lookup(100, 16), Some(0xCCCC));
        put(other, 0);
        assert_eq!(
            s.lookup(100, 16),
            None,
            "a zero word is no return address, though unused entries are 0"
        );
        put(other, 0xCCCC);
        s.forget(100, 16);
        assert_eq!(s.lookup(100, 16), None, "forgotten");
    }
}
