//! Page guards over the program's host arrays, and the fault handler that sees the program's
//! first access to a guarded one.
//!
//! A guard is a range of whole pages with a protection and a [`Watch`] that says what an access
//! means. The handler runs on the faulting thread, inside any code (malloc, a lock holder, a
//! kernel of the emulated device), so it takes no lock, allocates nothing and calls only
//! async-signal-safe functions: it looks the address up in a fixed table of atomics, records
//! the first access (the faulting instruction, a few words of the stack for a caller in the
//! program when the access is in a library, read or write, when), lifts the guard and returns,
//! so that the access completes as it would have without it. A fault in no guard goes on to the
//! handler installed before (the program's, libaccprof's) or to the default action, exactly
//! as without the checker.
//!
//! The program's own `sigaction`/`signal` calls for SIGSEGV and SIGBUS while the checker runs
//! are kept as that next handler instead of replacing ours (src/check/signals.rs).

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// What an access to a guarded range means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Watch {
    /// A kernel changed the device copy: any host access reads stale data (PROT_NONE). A word
    /// equal on both sides is not stale: that page alone is opened and the guard stays.
    Stale = 1,
    /// Host and device agree: the first host write makes them differ (PROT_READ).
    Synced = 2,
    /// Released from the device: the first host access is noted (PROT_NONE).
    Released = 3,
}

impl Watch {
    fn from_u8(v: u8) -> Option<Watch> {
        match v {
            1 => Some(Watch::Stale),
            2 => Some(Watch::Synced),
            3 => Some(Watch::Released),
            _ => None,
        }
    }
    fn protection(self) -> i32 {
        match self {
            Watch::Synced => libc::PROT_READ,
            Watch::Stale | Watch::Released => libc::PROT_NONE,
        }
    }
}

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ARMED: u8 = 2;
/// Lifted (by the handler or the runtime); its access is still to be read.
const SPENT: u8 = 3;

/// Guards at most this many ranges at once; further arrays are checked by content only.
pub const SLOTS: usize = 4096;
/// Stack words kept from a fault inside a library, to find the program's call.
pub const STACK_WORDS: usize = 48;
/// Faults on equal words that a stale guard tolerates (each opens one page) before it opens all.
const STALE_BUDGET: u32 = 64;

/// One guarded range and its first access.
pub struct Slot {
    state: AtomicU8,
    watch: AtomicU8,
    /// The guarded pages.
    start: AtomicUsize,
    end: AtomicUsize,
    /// The array inside them: an access to the rest of its first or last page is another
    /// variable's, which opens that page only.
    lo: AtomicUsize,
    hi: AtomicUsize,
    /// The device copy of `lo` (for [`Watch::Stale`]'s comparison), 0 if none.
    dev: AtomicU64,
    /// Faults on equal words so far.
    tolerated: AtomicU64,
    /// Set once by the access that is recorded.
    fired: AtomicU8,
    pub access: Access,
}

/// The recorded access.
pub struct Access {
    pub pc: AtomicUsize,
    pub addr: AtomicUsize,
    pub write: AtomicU8,
    /// 1 program host code, 2 a kernel of the emulated device, 3 the runtime itself.
    pub who: AtomicU8,
    pub time_ns: AtomicU64,
    pub stack: [AtomicUsize; STACK_WORDS],
}

pub const WHO_HOST: u8 = 1;
pub const WHO_KERNEL: u8 = 2;
pub const WHO_RUNTIME: u8 = 3;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    state: AtomicU8::new(FREE),
    watch: AtomicU8::new(0),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    lo: AtomicUsize::new(0),
    hi: AtomicUsize::new(0),
    dev: AtomicU64::new(0),
    tolerated: AtomicU64::new(0),
    fired: AtomicU8::new(0),
    access: Access {
        pc: AtomicUsize::new(0),
        addr: AtomicUsize::new(0),
        write: AtomicU8::new(0),
        who: AtomicU8::new(0),
        time_ns: AtomicU64::new(0),
        stack: [const { AtomicUsize::new(0) }; STACK_WORDS],
    },
};

static TABLE: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];
/// Handlers running now: a spent slot is reused only when none is.
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// Slots ever armed (the handler's scan stops there).
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// The shim's own code: a fault there is the runtime reading a guarded array.
static OWN_TEXT: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

pub fn page_size() -> usize {
    static SIZE: AtomicUsize = AtomicUsize::new(0);
    let s = SIZE.load(Ordering::Relaxed);
    if s != 0 {
        return s;
    }
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let v = if v > 0 { v as usize } else { 4096 };
    SIZE.store(v, Ordering::Relaxed);
    v
}

/// The whole pages inside `[addr, addr+bytes)`, if any.
pub fn interior(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    let p = page_size();
    let start = addr.checked_next_multiple_of(p)?;
    let end = (addr.checked_add(bytes)? / p) * p;
    (end > start).then_some((start, end))
}

/// The pages that hold any of `[addr, addr+bytes)`.
pub fn covering(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    let p = page_size();
    let start = (addr / p) * p;
    let end = addr
        .checked_add(bytes.max(1))?
        .checked_next_multiple_of(p)?;
    Some((start, end))
}

/// Records the shim's text range, so that the handler can tell the runtime's accesses.
pub fn set_own_text(start: usize, end: usize) {
    OWN_TEXT[0].store(start, Ordering::Relaxed);
    OWN_TEXT[1].store(end, Ordering::Relaxed);
}

fn protect(start: usize, end: usize, prot: i32) -> bool {
    // SAFETY: the range is whole pages of the program's memory that the checker guards; only
    // the protection changes.
    unsafe { libc::mprotect(start as *mut libc::c_void, end - start, prot) == 0 }
}

/// Guards the pages `[start, end)` over the array `[lo, hi)` with `watch`; `dev` is the
/// array's device copy, for a stale guard. Returns the slot, or None when the table is full or
/// the pages cannot be protected.
pub fn arm(
    (start, end): (usize, usize),
    (lo, hi): (usize, usize),
    watch: Watch,
    dev: u64,
) -> Option<usize> {
    let i = claim()?;
    let s = &TABLE[i];
    s.watch.store(watch as u8, Ordering::Relaxed);
    s.start.store(start, Ordering::Relaxed);
    s.end.store(end, Ordering::Relaxed);
    s.lo.store(lo, Ordering::Relaxed);
    s.hi.store(hi, Ordering::Relaxed);
    s.dev.store(dev, Ordering::Relaxed);
    s.tolerated.store(0, Ordering::Relaxed);
    s.fired.store(0, Ordering::Relaxed);
    s.access.pc.store(0, Ordering::Relaxed);
    s.access.who.store(0, Ordering::Relaxed);
    BOUNDS[0].fetch_min(start, Ordering::AcqRel);
    BOUNDS[1].fetch_max(end, Ordering::AcqRel);
    HIGH.fetch_max(i + 1, Ordering::AcqRel);
    s.state.store(ARMED, Ordering::Release);
    if protect(start, end, watch.protection()) {
        Some(i)
    } else {
        s.state.store(FREE, Ordering::Release);
        None
    }
}

fn claim() -> Option<usize> {
    TABLE.iter().position(|s| {
        s.state
            .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    })
}

/// Lifts guard `i` (the pages become read-write) and returns whether an access fired it.
pub fn lift(i: usize) -> bool {
    let s = &TABLE[i];
    let (start, end) = (
        s.start.load(Ordering::Relaxed),
        s.end.load(Ordering::Relaxed),
    );
    if s.state
        .compare_exchange(ARMED, SPENT, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        protect(start, end, libc::PROT_READ | libc::PROT_WRITE);
    }
    fired(i)
}

/// Whether guard `i` has been fired by an access (and is lifted).
pub fn fired(i: usize) -> bool {
    TABLE[i].fired.load(Ordering::Acquire) == 1
}

/// The slot's recorded access, to read once it has fired.
pub fn access(i: usize) -> &'static Access {
    &TABLE[i].access
}

/// Lifts guard `i` and frees its slot. A fault already on its way finds no guard and is
/// retried once (see [`on_fault`]), which then succeeds.
pub fn release(i: usize) {
    lift(i);
    TABLE[i].state.store(FREE, Ordering::Release);
}

thread_local! {
    /// The last fault this thread let retry without a guard: the same one again is not ours.
    static RETRIED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The lowest and highest address ever guarded: a fault outside is never ours.
static BOUNDS: [AtomicUsize; 2] = [AtomicUsize::new(usize::MAX), AtomicUsize::new(0)];

/// Whether an armed guard covers `addr` (its protection is the checker's, not the program's).
pub fn guarded(addr: usize) -> bool {
    let high = HIGH.load(Ordering::Acquire).min(SLOTS);
    TABLE[..high].iter().any(|s| {
        s.state.load(Ordering::Acquire) == ARMED
            && addr >= s.start.load(Ordering::Relaxed)
            && addr < s.end.load(Ordering::Relaxed)
    })
}

/// Runs the handler's part for one fault. True when the fault was in a guard and is resolved
/// (the instruction may be retried); false when it is not ours.
///
/// # Safety
/// Called from the SIGSEGV/SIGBUS handler with the kernel's `info` and `ctx`.
pub unsafe fn on_fault(info: *const libc::siginfo_t, ctx: *const libc::c_void) -> bool {
    IN_HANDLER.fetch_add(1, Ordering::AcqRel);
    // SAFETY: the caller's contract.
    let r = unsafe { handle(info, ctx) };
    IN_HANDLER.fetch_sub(1, Ordering::AcqRel);
    r
}

unsafe fn handle(info: *const libc::siginfo_t, ctx: *const libc::c_void) -> bool {
    // SAFETY: the kernel's siginfo for a fault carries the address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let high = HIGH.load(Ordering::Acquire).min(SLOTS);
    let page = addr & !(page_size() - 1);
    for s in &TABLE[..high] {
        let state = s.state.load(Ordering::Acquire);
        if state != ARMED && state != SPENT {
            continue;
        }
        let (start, end) = (
            s.start.load(Ordering::Relaxed),
            s.end.load(Ordering::Relaxed),
        );
        if addr < start || addr >= end {
            continue;
        }
        if state != ARMED {
            // Lifted while this fault was on its way: the access completes on retry. Opening
            // the page again is harmless (the guard is lifted).
            protect(page, page + page_size(), libc::PROT_READ | libc::PROT_WRITE);
            return true;
        }
        let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
        if addr < lo || addr >= hi {
            // Another variable sharing the array's first or last page.
            protect(page, page + page_size(), libc::PROT_READ | libc::PROT_WRITE);
            return true;
        }
        // SAFETY: the kernel's ucontext for this signal.
        let (pc, sp, write) = unsafe { registers(ctx) };
        let who = if in_kernel() {
            WHO_KERNEL
        } else if in_own_text(pc) || in_runtime() {
            WHO_RUNTIME
        } else {
            WHO_HOST
        };
        let watch = Watch::from_u8(s.watch.load(Ordering::Relaxed));
        if watch == Some(Watch::Stale) && who != WHO_RUNTIME && !differs(s, addr, lo) {
            // Not stale where it looked: open that page only, within a budget.
            if s.tolerated.fetch_add(1, Ordering::Relaxed) < u64::from(STALE_BUDGET) {
                protect(page, page + page_size(), libc::PROT_READ | libc::PROT_WRITE);
                return true;
            }
            s.fired.store(2, Ordering::Release);
            protect(start, end, libc::PROT_READ | libc::PROT_WRITE);
            s.state.store(SPENT, Ordering::Release);
            return true;
        }
        if s.fired
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let a = &s.access;
            a.addr.store(addr, Ordering::Relaxed);
            a.write.store(u8::from(write), Ordering::Relaxed);
            a.who.store(who, Ordering::Relaxed);
            a.time_ns.store(now_ns(), Ordering::Relaxed);
            if who == WHO_HOST && !in_program_text(pc) {
                save_stack(sp, &a.stack);
            } else {
                a.stack[0].store(0, Ordering::Relaxed);
            }
            a.pc.store(pc, Ordering::Release);
        }
        protect(start, end, libc::PROT_READ | libc::PROT_WRITE);
        s.state.store(SPENT, Ordering::Release);
        return true;
    }
    // In no guard. A guard lifted and freed after this fault was raised leaves the access
    // possible now: retry it once. Faults outside every address ever guarded, and the same
    // fault twice, are not ours.
    if addr < BOUNDS[0].load(Ordering::Acquire) || addr >= BOUNDS[1].load(Ordering::Acquire) {
        return false;
    }
    let again = RETRIED.with(|r| r.replace(addr)) == addr;
    if again {
        RETRIED.with(|r| r.set(0));
    }
    !again
}

/// Whether the word at `addr` differs between the host copy (its page opened for reading a
/// moment) and the device copy.
fn differs(s: &Slot, addr: usize, lo: usize) -> bool {
    let dev = s.dev.load(Ordering::Relaxed) as usize;
    if dev == 0 {
        return true;
    }
    let word = addr & !7;
    let page = word & !(page_size() - 1);
    if !protect(page, page + page_size(), libc::PROT_READ) {
        return true;
    }
    // SAFETY: a word of the guarded host array, readable now; the device copy is the emulated
    // device's memory (never guarded) at the same offset.
    let (host, device) = unsafe {
        (
            (word as *const u64).read_volatile(),
            ((dev + (word - lo)) as *const u64).read_unaligned(),
        )
    };
    protect(page, page + page_size(), libc::PROT_NONE);
    host != device
}

thread_local! {
    /// The checker's own code runs on this thread (its comparisons call the C library).
    static RUNTIME: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as the runtime's until dropped: an access to a guarded page from
/// there (through the C library's memcmp, say) is not the program's.
pub fn runtime_scope() -> impl Drop {
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            RUNTIME.with(|r| r.set(r.get().saturating_sub(1)));
        }
    }
    RUNTIME.with(|r| r.set(r.get() + 1));
    Scope
}

/// Whether the calling thread is inside the runtime: in the checker's code, or in one of the
/// runtime's entry points (the program's own code runs there only as kernels).
fn in_runtime() -> bool {
    RUNTIME.with(std::cell::Cell::get) > 0 || crate::fork::inside()
}

/// Tells whether the calling thread runs a kernel of the emulated device (set by the runtime).
static KERNEL_PROBE: AtomicUsize = AtomicUsize::new(0);

pub fn set_kernel_probe(probe: fn() -> bool) {
    KERNEL_PROBE.store(probe as usize, Ordering::Release);
}

fn in_kernel() -> bool {
    let p = KERNEL_PROBE.load(Ordering::Acquire);
    // SAFETY: stored from a `fn() -> bool` by set_kernel_probe.
    p != 0 && unsafe { std::mem::transmute::<usize, fn() -> bool>(p) }()
}

fn in_own_text(pc: usize) -> bool {
    pc >= OWN_TEXT[0].load(Ordering::Relaxed) && pc < OWN_TEXT[1].load(Ordering::Relaxed)
}

/// Whether `pc` lies in the program's own code (its executable or a library of its own), as
/// opposed to the C, Fortran or C++ runtime libraries, from the table [`set_program_text`]
/// filled.
fn in_program_text(pc: usize) -> bool {
    let n = PROGRAM_RANGES.load(Ordering::Acquire).min(MAX_RANGES);
    PROGRAM_TEXT[..n]
        .iter()
        .any(|r| pc >= r[0].load(Ordering::Relaxed) && pc < r[1].load(Ordering::Relaxed))
}

const MAX_RANGES: usize = 64;
static PROGRAM_TEXT: [[AtomicUsize; 2]; MAX_RANGES] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; MAX_RANGES];
static PROGRAM_RANGES: AtomicUsize = AtomicUsize::new(0);

/// The code ranges of the program's own modules (set once, when checking starts).
pub fn set_program_text(ranges: &[(usize, usize)]) {
    for (slot, &(s, e)) in PROGRAM_TEXT.iter().zip(ranges) {
        slot[0].store(s, Ordering::Relaxed);
        slot[1].store(e, Ordering::Relaxed);
    }
    PROGRAM_RANGES.store(ranges.len().min(MAX_RANGES), Ordering::Release);
}

/// Whether an address is in the program's own code (for the resolution of a saved stack).
pub fn is_program_code(pc: usize) -> bool {
    in_program_text(pc)
}

/// Copies the words above `sp` that point into the program's code: the return addresses of
/// the calls that led into the library where the access happened, innermost first.
fn save_stack(sp: usize, out: &[AtomicUsize; STACK_WORDS]) {
    let mut words = [0usize; 256];
    let local = libc::iovec {
        iov_base: words.as_mut_ptr().cast(),
        iov_len: std::mem::size_of_val(&words),
    };
    let remote = libc::iovec {
        iov_base: sp as *mut libc::c_void,
        iov_len: std::mem::size_of_val(&words),
    };
    // SAFETY: reads our own stack into a local; a range past the stack's end is cut short by
    // the kernel, never a fault.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    let got = if n > 0 { n as usize / 8 } else { 0 };
    let mut k = 0;
    for &w in &words[..got] {
        if k == STACK_WORDS {
            break;
        }
        if in_program_text(w) {
            out[k].store(w, Ordering::Relaxed);
            k += 1;
        }
    }
    if k < STACK_WORDS {
        out[k].store(0, Ordering::Relaxed);
    }
}

/// The faulting instruction, the stack pointer and whether the access was a write.
unsafe fn registers(ctx: *const libc::c_void) -> (usize, usize, bool) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: the kernel passes a ucontext_t to an SA_SIGINFO handler.
        let g = unsafe { &(*uc).uc_mcontext.gregs };
        let pc = g[libc::REG_RIP as usize] as usize;
        let sp = g[libc::REG_RSP as usize] as usize;
        // Page-fault error code bit 1: the access was a write.
        let write = g[libc::REG_ERR as usize] & 2 != 0;
        (pc, sp, write)
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: as above.
        let m = unsafe { &(*uc).uc_mcontext };
        // ESR's WnR bit is in the fault's ESR record, not kept here: reads and writes are told
        // apart on x86-64 only.
        (m.pc as usize, m.sp as usize, false)
    }
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec; async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
