//! Whether a kernel read an upload before it overwrote it: the upload half of unused_transfer
//! (`copy(b)` or `copyin(b)` where the kernel only writes `b`, which `copyout` or `create`
//! would have done without the copy).
//!
//! For the kernel's run, the device copy's pages (on the emulated device a mapping of their
//! own) are closed, and the kernel's first access to each is judged: a plain store (the
//! instruction is decoded, [`super::cpu`]) opens the page; a load or anything else means the
//! upload was read, and the watch ends. A page's first store does not prove the whole page
//! overwritten (a kernel over a grid's interior leaves each row's boundary columns alone), so
//! on a sample of pages (all of a small array; the first, the last and some between of a big
//! one) every access is seen, a store credits its bytes, and a load of bytes no store wrote
//! means the upload was read. The upload was unused when every page was first stored to, and
//! the sampled pages were wholly written, before any read.
//!
//! The runtime runs such a kernel on one thread (a page let through for one thread's access
//! would hide another thread's).

use super::cpu::{self, Effect};
use super::origin;
use super::pages::{self, page_size, protect, NONE, OPEN};
use super::step;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

/// What a kernel did to a watched upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every byte was overwritten before any was read.
    Overwritten,
    /// Some of it was read, or left as it was (or the watch could not tell).
    Used,
}

/// Arrays of at most this many pages are followed on every page.
const ALL_PAGES: usize = 16;
/// Pages followed in a bigger array.
const SAMPLED: usize = 8;

const UNTOUCHED: u8 = 0;
const STORED: u8 = 1;

/// What the handler learns about one watched upload. Allocated by [`arm`], read and freed by
/// [`finish`]; the handler only writes its atomics.
struct Judgement {
    /// Per page, its first access.
    first: Box<[AtomicU8]>,
    /// Per page, its place among the followed pages, or u32::MAX.
    followed: Box<[u32]>,
    /// Per followed page, one bit per byte: written by a store.
    bits: Box<[AtomicU64]>,
    /// Per followed page, how many of its bytes are written.
    written: Box<[AtomicU32]>,
    read: AtomicBool,
}

const FREE: u8 = 0;
const ARMED: u8 = 1;

struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
    lo: AtomicUsize,
    hi: AtomicUsize,
    judgement: AtomicPtr<Judgement>,
}

const SLOTS: usize = 256;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    lo: AtomicUsize::new(0),
    hi: AtomicUsize::new(0),
    judgement: AtomicPtr::new(std::ptr::null_mut()),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static ARMED_NOW: AtomicUsize = AtomicUsize::new(0);

fn words_per_page() -> usize {
    page_size() / 64
}

/// Watches the device copy `[dev, dev+bytes)`, which starts a mapping of its own, for the
/// kernel about to run. None when it cannot be watched.
pub fn arm(dev: usize, bytes: usize) -> Option<usize> {
    let p = page_size();
    if !dev.is_multiple_of(p) || bytes < p || !cpu::CAN_STEP {
        return None;
    }
    let (start, end) = pages::covering(dev, bytes)?;
    let n = (end - start) / p;
    let chosen: Vec<usize> = if n <= ALL_PAGES {
        (0..n).collect()
    } else {
        let mut v: Vec<usize> = (0..SAMPLED).map(|k| k * (n - 1) / (SAMPLED - 1)).collect();
        v.dedup();
        v
    };
    let mut followed = vec![u32::MAX; n].into_boxed_slice();
    for (k, &page) in chosen.iter().enumerate() {
        followed[page] = k as u32;
    }
    let j = Box::new(Judgement {
        first: (0..n).map(|_| AtomicU8::new(UNTOUCHED)).collect(),
        followed,
        bits: (0..chosen.len() * words_per_page())
            .map(|_| AtomicU64::new(0))
            .collect(),
        written: (0..chosen.len()).map(|_| AtomicU32::new(0)).collect(),
        read: AtomicBool::new(false),
    });
    let _lock = pages::lock();
    let i = TABLE
        .iter()
        .position(|s| s.state.load(Ordering::Acquire) == FREE)?;
    let s = &TABLE[i];
    s.start.store(start, Ordering::Relaxed);
    s.end.store(end, Ordering::Relaxed);
    s.lo.store(dev, Ordering::Relaxed);
    s.hi.store(dev + bytes, Ordering::Relaxed);
    s.judgement.store(Box::into_raw(j), Ordering::Release);
    s.state.store(ARMED, Ordering::Release);
    ARMED_NOW.fetch_add(1, Ordering::AcqRel);
    if !protect(start, end, NONE) {
        drop(take(s));
        return None;
    }
    Some(i)
}

/// Ends the watch `i` (the kernel is done) and says what the kernel did.
pub fn finish(i: usize) -> Verdict {
    let s = &TABLE[i];
    let (start, lo, hi, j) = {
        let _lock = pages::lock();
        let (start, end) = (
            s.start.load(Ordering::Relaxed),
            s.end.load(Ordering::Relaxed),
        );
        protect(start, end, OPEN);
        let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
        (start, lo, hi, take(s))
    };
    let Some(j) = j else {
        return Verdict::Used;
    };
    if j.read.load(Ordering::Acquire) {
        return Verdict::Used;
    }
    let p = page_size();
    for (k, first) in j.first.iter().enumerate() {
        if first.load(Ordering::Acquire) != STORED {
            return Verdict::Used;
        }
        let f = j.followed[k];
        if f != u32::MAX {
            let page = start + k * p;
            let need = hi.min(page + p) - lo.max(page);
            if j.written[f as usize].load(Ordering::Acquire) as usize != need {
                return Verdict::Used;
            }
        }
    }
    Verdict::Overwritten
}

/// Frees the slot and hands its judgement back (with the protection lock held).
fn take(s: &Slot) -> Option<Box<Judgement>> {
    let p = s.judgement.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if s.state.swap(FREE, Ordering::AcqRel) == ARMED {
        ARMED_NOW.fetch_sub(1, Ordering::AcqRel);
    }
    // SAFETY: made by Box::into_raw in `arm`, taken once (the swap).
    (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
}

/// Closes a page let through for one instruction, if it is still watched. False when the page
/// is not a watched upload's.
pub fn restore(page: usize) -> bool {
    let _lock = pages::lock();
    let Some((s, j)) = watching(page) else {
        return false;
    };
    let k = (page - s.start.load(Ordering::Relaxed)) / page_size();
    let f = j.followed[k];
    let done = j.read.load(Ordering::Relaxed) || (f != u32::MAX && full(s, j, k, f as usize));
    if !done {
        protect(page, page + page_size(), NONE);
    }
    true
}

/// The armed watch whose pages hold `page` (with the lock held).
fn watching(page: usize) -> Option<(&'static Slot, &'static Judgement)> {
    if ARMED_NOW.load(Ordering::Acquire) == 0 {
        return None;
    }
    TABLE.iter().find_map(|s| {
        let armed = s.state.load(Ordering::Acquire) == ARMED
            && page >= s.start.load(Ordering::Relaxed)
            && page < s.end.load(Ordering::Relaxed);
        let j = s.judgement.load(Ordering::Acquire);
        // SAFETY: a judgement stays allocated while its slot is armed, and `take` frees it
        // only with the lock held, which the caller holds.
        (armed && !j.is_null()).then(|| (s, unsafe { &*j }))
    })
}

/// Whether followed page `k` (its place `f`) has every byte of the array written.
fn full(s: &Slot, j: &Judgement, k: usize, f: usize) -> bool {
    let p = page_size();
    let page = s.start.load(Ordering::Relaxed) + k * p;
    let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
    j.written[f].load(Ordering::Acquire) as usize == hi.min(page + p) - lo.max(page)
}

/// The handler's part: true when the fault was on a watched device copy and is resolved.
///
/// # Safety
/// Called from the SIGSEGV/SIGBUS handler with the kernel's `info` and `ctx`.
pub unsafe fn on_fault(info: *const libc::siginfo_t, ctx: *mut libc::c_void) -> bool {
    if ARMED_NOW.load(Ordering::Acquire) == 0 {
        return false;
    }
    // SAFETY: the kernel's siginfo for a fault carries the address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let p = page_size();
    let page = pages::page_of(addr);
    let _lock = pages::lock();
    let Some((s, j)) = watching(page) else {
        return false;
    };
    let start = s.start.load(Ordering::Relaxed);
    let (lo, hi) = (s.lo.load(Ordering::Relaxed), s.hi.load(Ordering::Relaxed));
    let k = (page - start) / p;
    // SAFETY: the handler's context.
    let r = unsafe { cpu::regs(ctx) };
    let effect = if origin::of(r.pc) == origin::KERNEL {
        // SAFETY: the instruction just faulted on `addr`.
        unsafe { cpu::effect(addr, &r) }
    } else {
        Effect::Other
    };
    // The operand's bytes on this page, within the array.
    let clip = |a: usize, n: usize| (a.max(page).max(lo), (a + n).min(page + p).min(hi));
    let f = j.followed[k];
    let used = |j: &Judgement| {
        j.read.store(true, Ordering::Release);
        protect(start, s.end.load(Ordering::Relaxed), OPEN);
        true
    };
    match effect {
        Effect::Store(a, n) => {
            let _ =
                j.first[k].compare_exchange(UNTOUCHED, STORED, Ordering::AcqRel, Ordering::Relaxed);
            if f == u32::MAX {
                protect(page, page + p, OPEN);
                return true;
            }
            let (from, to) = clip(a, n);
            let base = f as usize * words_per_page();
            let mut added = 0;
            for b in from..to {
                let off = b - page;
                let bit = 1u64 << (off % 64);
                if j.bits[base + off / 64].fetch_or(bit, Ordering::AcqRel) & bit == 0 {
                    added += 1;
                }
            }
            j.written[f as usize].fetch_add(added, Ordering::AcqRel);
            if full(s, j, k, f as usize) {
                protect(page, page + p, OPEN);
                return true;
            }
            // SAFETY: the handler's context.
            let stepped = unsafe { step::through(ctx, page) };
            stepped || used(j)
        }
        Effect::Load(a, n) if f != u32::MAX => {
            let (from, to) = clip(a, n);
            let base = f as usize * words_per_page();
            let all = (from..to).all(|b| {
                let off = b - page;
                j.bits[base + off / 64].load(Ordering::Acquire) & (1u64 << (off % 64)) != 0
            });
            // A load of the kernel's own results goes through; of the upload's, it was used.
            // SAFETY: the handler's context.
            (all && unsafe { step::through(ctx, page) }) || used(j)
        }
        _ => used(j),
    }
}
