//! Letting one access through a guarded page without lifting its guard.
//!
//! An access that means nothing to the guards (another variable on a page an array shares, a
//! read of an array whose page is closed for its neighbour's sake, a store the checker wants to
//! count) must complete as if the page were open, and the page must be closed again right
//! after. On x86-64 the handler opens the page, sets the trap flag and returns: the thread runs
//! the one instruction and takes SIGTRAP, whose handler ([`finish`]) hands the pages back to be
//! closed by whoever guards them. Another thread's access to the page in that window is not
//! seen: the checker misses it, it never reports it wrong.
//!
//! The pages opened are per thread (an instruction may fault on two pages before it completes).

use super::cpu;
use super::pages;
use std::cell::Cell;

const MAX: usize = 4;

thread_local! {
    static OPENED: [Cell<usize>; MAX] = const { [const { Cell::new(0) }; MAX] };
}

/// Opens `page` for the one instruction the thread is about to retry. False where this cannot
/// be done (not x86-64, or the instruction already has as many pages open as kept): the caller
/// then opens the page for good.
///
/// # Safety
/// From the fault handler, with its context; the caller holds the protection lock.
pub unsafe fn through(ctx: *mut libc::c_void, page: usize) -> bool {
    if !cpu::CAN_STEP {
        return false;
    }
    let kept = OPENED.with(|o| {
        let free = o.iter().find(|c| c.get() == 0 || c.get() == page);
        free.map(|c| c.set(page)).is_some()
    });
    if !kept {
        return false;
    }
    pages::protect(page, page + pages::page_size(), pages::OPEN);
    // SAFETY: the caller's context.
    unsafe { cpu::set_trap_flag(ctx, true) };
    true
}

/// On SIGTRAP: the pages this thread opened for one instruction, which is now done; the trap
/// flag is cleared. None when the thread opened none (the trap is not the checker's).
///
/// # Safety
/// From the SIGTRAP handler, with its context.
pub unsafe fn finish(ctx: *mut libc::c_void) -> Option<[usize; MAX]> {
    let pages = OPENED.with(|o| {
        let mut p = [0; MAX];
        for (slot, c) in p.iter_mut().zip(o) {
            *slot = c.replace(0);
        }
        p
    });
    if pages.iter().all(|&p| p == 0) {
        return None;
    }
    // SAFETY: the caller's context.
    unsafe { cpu::set_trap_flag(ctx, false) };
    Some(pages)
}
