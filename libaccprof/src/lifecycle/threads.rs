//! Threads of the tool's own (the trace writer, the crash finisher, and whatever CUPTI starts
//! while recording starts) block every signal, so that a signal reaches the program's threads
//! exactly as it would without accprof: a program that blocks SIGTERM and takes it with
//! `sigwait` in a thread of its own still gets it there, never in a thread of ours, where
//! its default action would end the process. The faults a thread's own instructions raise
//! (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP) stay open: a blocked one is forced through with
//! its default action, which ends the process, where a handler would have taken it (the data
//! checker's page guards, which may cover the malloc headers our threads touch).

use std::io;

/// Runs `f` with every signal but the faults above blocked on this thread, restoring the mask after: threads
/// created inside inherit the full mask from their first instruction (a mask set by the new
/// thread itself would leave a window in which a signal could land there).
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    let _restore = MaskGuard::block_all();
    f()
}

/// The thread's signal mask from before [`MaskGuard::block_all`], restored on drop (a panic
/// unwinding through `f` included).
struct MaskGuard(Option<libc::sigset_t>);

impl MaskGuard {
    fn block_all() -> Self {
        // SAFETY: sigset_t is plain data; sigfillset initialises it; pthread_sigmask changes
        // only this thread's mask and writes the old one into our variable.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            for sig in [
                libc::SIGSEGV,
                libc::SIGBUS,
                libc::SIGILL,
                libc::SIGFPE,
                libc::SIGTRAP,
            ] {
                libc::sigdelset(&mut all, sig);
            }
            MaskGuard(
                (libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0).then_some(old),
            )
        }
    }
}

impl Drop for MaskGuard {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores the mask saved by block_all.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
        }
    }
}

/// Starts a thread of the tool's own, named `name`, with every signal but the faults blocked.
pub fn spawn<F>(name: &str, f: F) -> io::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    with_signals_blocked(|| std::thread::Builder::new().name(name.into()).spawn(f))
}
