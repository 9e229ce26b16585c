//! Pages and their protection: the one place the checker calls mprotect, under one lock.
//!
//! Two guards may cover the same page (malloc puts small arrays side by side), so a page's
//! protection is decided from every guard over it, and deciding and applying it must not
//! interleave with another thread's decision on the same page: a lift that opened the page after
//! a neighbour's arm had closed it would leave the neighbour blind, and a close after the last
//! guard's lift would leave a page protected with no guard to answer its fault. The lock is a
//! spin lock because the fault handler takes it too (no mutex there); it is held only around
//! decisions and mprotect calls, never across an access to guarded memory. A thread that faults
//! while holding it (a signal handler of the program touching a guarded page in the middle of
//! a change) goes on without it rather than deadlock.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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

/// The page holding `addr`.
pub fn page_of(addr: usize) -> usize {
    addr & !(page_size() - 1)
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

/// Protections from the most to the least restrictive: a page two guards want differently gets
/// the lower one.
pub const NONE: i32 = libc::PROT_NONE;
pub const READ: i32 = libc::PROT_READ;
pub const OPEN: i32 = libc::PROT_READ | libc::PROT_WRITE;

/// Sets the protection of the pages `[start, end)`.
pub fn protect(start: usize, end: usize, prot: i32) -> bool {
    if end <= start {
        return true;
    }
    // SAFETY: whole pages of the program's memory (or the emulated device's) that the checker
    // guards; only the protection changes.
    unsafe { libc::mprotect(start as *mut libc::c_void, end - start, prot) == 0 }
}

static LOCK: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread holds [`LOCK`].
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Holds the protection lock until dropped (see the module's comment).
pub struct Locked(bool);

pub fn lock() -> Locked {
    if HOLDING.with(Cell::get) {
        // A fault taken while this thread changes protections: go on without the lock.
        return Locked(false);
    }
    let mut spins = 0u32;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 100 {
            std::hint::spin_loop();
        } else {
            // SAFETY: sched_yield has no preconditions and is async-signal-safe.
            unsafe { libc::sched_yield() };
        }
    }
    HOLDING.with(|h| h.set(true));
    Locked(true)
}

impl Drop for Locked {
    fn drop(&mut self) {
        if self.0 {
            HOLDING.with(|h| h.set(false));
            LOCK.store(false, Ordering::Release);
        }
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
