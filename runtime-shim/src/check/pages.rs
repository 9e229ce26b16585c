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
//!
//! The lock knows its holder by the thread pointer, not by a thread-local: a thread-local of a
//! loaded library is reached through the thread's TLS vector, which glibc allocates on the
//! heap when the thread is made, so it may share a page with an array the checker closes
//! ([`tls_vector`]).

use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The holder's [`this_thread`], 0 when free.
static LOCK: AtomicUsize = AtomicUsize::new(0);

/// This thread, as a number no other live thread has, read without thread-local storage.
#[inline]
fn this_thread() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: %fs:0 holds the thread control block's own address on x86-64 Linux (glibc
        // and musl); reading it touches no memory but that block.
        unsafe {
            core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: gettid has no preconditions and is async-signal-safe.
        unsafe { libc::gettid() as usize }
    }
}

/// The address of this thread's TLS vector (glibc's `dtv`, the second word of the thread
/// control block on x86-64), through which every thread-local of a loaded library is reached;
/// None where that layout is not known.
pub fn tls_vector() -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    {
        let dtv: usize;
        // SAFETY: as in `this_thread`: a read of the thread control block.
        unsafe {
            core::arch::asm!("mov {}, fs:8", out(reg) dtv, options(nostack, readonly, preserves_flags))
        };
        (dtv != 0).then_some(dtv)
    }
    #[cfg(not(all(target_arch = "x86_64", target_env = "gnu")))]
    {
        None
    }
}

/// Holds the protection lock until dropped (see the module's comment).
pub struct Locked(bool);

pub fn lock() -> Locked {
    let me = this_thread();
    if LOCK.load(Ordering::Relaxed) == me {
        // A fault taken while this thread changes protections: go on without the lock.
        return Locked(false);
    }
    let mut spins = 0u32;
    while LOCK
        .compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed)
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
    Locked(true)
}

impl Drop for Locked {
    fn drop(&mut self) {
        if self.0 {
            LOCK.store(0, Ordering::Release);
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
