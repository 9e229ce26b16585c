//! The checker's SIGSEGV, SIGBUS and SIGTRAP handlers, and the chain to the handlers installed
//! before and after them.
//!
//! The handler sees every fault first. A fault in a guard (src/check/guard.rs,
//! src/check/upload_watch.rs) is resolved and the access retried; any other goes to the next
//! handler: the one the program (or libaccprof, or a language runtime) installed, or the default
//! action, so that a crash is the crash it would have been. SIGTRAP ends an access let through
//! for one instruction (src/check/step.rs); any other trap goes on the same way. A later
//! `sigaction` or `signal` for these signals while checking would replace the handler and leave
//! the guards' faults to code that does not know them: the shim exports both functions, and
//! while checking it keeps such a handler as the next one (and answers queries with it), as a
//! debugger's or sanitizer's runtime does. Without checking they pass straight to the C
//! library's.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The handler the program would have now, one per signal the checker handles (SIGSEGV,
/// SIGBUS, SIGTRAP).
struct Next([UnsafeCell<libc::sigaction>; 3]);
// SAFETY: written under NEXT_LOCK by `install` and the interposed sigaction; read by the
// handler, which may see a half-written entry only if the program installs a handler while
// another thread faults, a race the program has without the checker too.
unsafe impl Sync for Next {}
static NEXT: Next = Next([
    UnsafeCell::new(zeroed_action()),
    UnsafeCell::new(zeroed_action()),
    UnsafeCell::new(zeroed_action()),
]);
static NEXT_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
static INSTALLED: AtomicBool = AtomicBool::new(false);

const fn zeroed_action() -> libc::sigaction {
    // SAFETY: sigaction is plain data; all zeroes is SIG_DFL with no flags.
    unsafe { std::mem::zeroed() }
}

fn index(sig: c_int) -> Option<usize> {
    match sig {
        libc::SIGSEGV => Some(0),
        libc::SIGBUS => Some(1),
        libc::SIGTRAP if super::cpu::CAN_STEP => Some(2),
        _ => None,
    }
}

type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

/// The C library's sigaction (the next definition after the shim's).
fn real_sigaction() -> Option<SigactionFn> {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut p = REAL.load(Ordering::Acquire);
    if p == 0 {
        // SAFETY: looks a symbol up by a NUL-terminated name.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"sigaction".as_ptr()) } as usize;
        REAL.store(p, Ordering::Release);
    }
    // SAFETY: the C library's sigaction has this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, SigactionFn>(p) })
}

/// Installs the handler (once), keeping what was installed before as the next handler.
pub fn install() -> bool {
    if INSTALLED.load(Ordering::Acquire) {
        return true;
    }
    let Some(real) = real_sigaction() else {
        return false;
    };
    let _lock = NEXT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGTRAP] {
        let Some(i) = index(sig) else { continue };
        // SAFETY: the old action goes into our slot; our action is a valid handler that runs
        // on an alternate stack where the thread has one (a stack overflow stays the program's).
        // It leaves the signal unblocked: the program's own handler, which it calls, may touch
        // a guarded page (a counter beside a guarded array), and a fault with the signal
        // blocked would end the process. A fault inside the program's handler that is not the
        // checker's then reaches that handler again instead of ending the process at once.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            act.sa_flags =
                libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART | libc::SA_NODEFER;
            libc::sigemptyset(&mut act.sa_mask);
            if real(sig, &act, NEXT.0[i].get()) != 0 {
                return false;
            }
        }
    }
    INSTALLED.store(true, Ordering::Release);
    true
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if sig == libc::SIGTRAP {
        // SAFETY: the kernel's context for this signal.
        if let Some(pages) = unsafe { super::step::finish(ctx) } {
            for page in pages.into_iter().filter(|&p| p != 0) {
                if !super::upload_watch::restore(page) {
                    super::guard::restore(page);
                }
            }
            return;
        }
        chain(sig, info, ctx);
        return;
    }
    // SAFETY: the kernel's arguments for an SA_SIGINFO handler.
    let ours = unsafe {
        (*info).si_code > 0
            && (super::upload_watch::on_fault(info, ctx) || super::guard::on_fault(info, ctx))
    };
    if ours {
        return;
    }
    chain(sig, info, ctx);
}

/// Passes a signal that is not the checker's to the next handler, or to the default action.
fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(i) = index(sig) else { return };
    // SAFETY: see `Next`.
    let next = unsafe { *NEXT.0[i].get() };
    let h = next.sa_sigaction;
    if sig == libc::SIGTRAP && h == libc::SIG_IGN {
        return;
    }
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // The default action: put it back and let the fault happen again (or, for a signal
        // sent by kill or a trap, send it again), which now ends the process as it would have.
        let Some(real) = real_sigaction() else { return };
        // SAFETY: restores the default disposition; async-signal-safe.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            real(sig, &dfl, std::ptr::null_mut());
            if (*info).si_code <= 0 || sig == libc::SIGTRAP {
                libc::raise(sig);
            }
        }
        return;
    }
    if next.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program installed this three-argument handler for `sig`.
        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the program installed this one-argument handler for `sig`.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// The shim's `sigaction`: while the checker's handler is installed, SIGSEGV and SIGBUS
/// handlers become the next ones in its chain.
///
/// # Safety
/// The C library's contract for sigaction.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let Some(real) = real_sigaction() else {
        // SAFETY: errno is thread-local.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    };
    match index(sig) {
        Some(i) if INSTALLED.load(Ordering::Acquire) => {
            let _lock = NEXT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: `old` and `act` are the caller's (NULL or valid); NEXT is ours.
            unsafe {
                if !old.is_null() {
                    *old = *NEXT.0[i].get();
                }
                if !act.is_null() {
                    *NEXT.0[i].get() = *act;
                }
            }
            0
        }
        // SAFETY: the caller's arguments, passed on.
        _ => unsafe { real(sig, act, old) },
    }
}

/// The shim's `signal`, which glibc implements without its exported sigaction.
///
/// # Safety
/// The C library's contract for signal.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: a sigaction with the BSD semantics glibc's signal() gives.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if sigaction(sig, &act, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}
