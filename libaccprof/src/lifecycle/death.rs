//! Endings that skip atexit: fatal signals (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL; SIGTERM,
//! SIGINT, SIGHUP, SIGQUIT when they end the process by their default action), exec and
//! `_exit`. Each reaches the same final flush as exit, with every event that completed before.
//!
//! The dying thread may be in any state (inside malloc, holding a runtime lock, in a signal
//! handler, in a vfork child), so it does nothing but async-signal-safe calls: it writes one
//! byte to a pipe and waits, bounded, for the reply. A thread of ours (the finisher), started
//! with recording and otherwise asleep in `read`, does the flush as a normal thread: it takes
//! every thread's buffer (skipping one that is busy at the moment of death: a thread cannot
//! be waited for once it is dead), lets the writer write them and the footer, and replies.
//! Then the signal goes on to the handler the program had installed before us, or to its
//! default action with the same signal (re-raised), so exit status, core dump and the
//! program's own handler are what they would have been without accprof. Handlers are
//! installed with SA_ONSTACK, so a stack overflow reaches the program's alternate stack as
//! before; ours uses a few hundred bytes of it.
//!
//! A program that installs its own handler after recording has started replaces ours; its
//! crashes then end the trace without a footer, like SIGKILL, and what was not written yet is
//! recovered from the live file (recorder::live, docs/trace-format.md).

use super::Ending;
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The signals whose default action ends the process: crashes first, then requests to end.
const FATAL: [c_int; 9] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGABRT,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];
/// Requests to end: a program with its own handler for one of these may well carry on (and
/// ends through exit, whose flush is the normal one), so the flush runs only when the signal
/// is going to end the process by its default action. Crashes are flushed first in any case.
const REQUESTS: [c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Request bytes above the signal numbers.
const REQUEST_EXEC: u8 = 200;
const REQUEST_EXIT: u8 = 201;

/// How long a dying thread waits for the flush to take its next step (a thread's buffer, a
/// chunk written: each far shorter). A flush that does not move waits on a lock the dying
/// thread holds (the allocator's, for a program that dies inside malloc or free) and never
/// will: the process goes on dying, and what was not written is in the live file.
const STALL_MS: i64 = 250;
/// How long a dying thread waits for the flush in all, however it moves: long enough for a
/// few hundred MB of buffers, short enough that a slow disk does not keep a crashed program
/// alive.
const FLUSH_WAIT_MS: i64 = 10_000;
/// How often a waiting thread looks at the flush's progress.
const LOOK_EVERY_MS: i64 = 20;

/// Write end of the request pipe and read end of the reply pipe; -1 until armed.
static REQUEST_FD: AtomicI32 = AtomicI32::new(-1);
static REPLY_FD: AtomicI32 = AtomicI32::new(-1);
/// The process the pipes and the finisher belong to (a fork or vfork child is another).
static ARMED_PID: AtomicI32 = AtomicI32::new(-1);
static FINISHER_TID: AtomicI32 = AtomicI32::new(-1);
/// Set by the first ending that asks for the flush: there is only one.
static ASKED: AtomicBool = AtomicBool::new(false);
/// Set by the finisher when the flush asked for is done: a second thread dying at the same
/// time waits for it too instead of ending the process under the first one's flush.
static DONE: AtomicBool = AtomicBool::new(false);

/// The program's handlers from before ours, one per entry of [`FATAL`].
struct OldActions([UnsafeCell<MaybeUninit<libc::sigaction>>; FATAL.len()]);
// SAFETY: each entry is written once by `arm` before our handler for that signal is installed,
// and only read after.
unsafe impl Sync for OldActions {}
static OLD: OldActions =
    OldActions([const { UnsafeCell::new(MaybeUninit::uninit()) }; FATAL.len()]);
static OLD_SAVED: AtomicBool = AtomicBool::new(false);

/// Starts the finisher and installs the signal handlers. Called once, when recording starts.
pub fn arm() {
    let mut request = [0 as c_int; 2];
    let mut reply = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into each array.
    let ok = unsafe {
        libc::pipe2(request.as_mut_ptr(), libc::O_CLOEXEC) == 0
            && libc::pipe2(reply.as_mut_ptr(), libc::O_CLOEXEC) == 0
    };
    if !ok {
        eprintln!("accprof: cannot create the pipes for the crash flush; a crash or exec loses the last buffered events");
        return;
    }
    let (request_read, reply_write) = (request[0], reply[1]);
    let spawned = super::threads::spawn("accprof-finisher", move || {
        finisher(request_read, reply_write)
    });
    if spawned.is_err() {
        eprintln!("accprof: cannot start the crash-flush thread; a crash or exec loses the last buffered events");
        return;
    }
    REQUEST_FD.store(request[1], Ordering::Release);
    REPLY_FD.store(reply[0], Ordering::Release);
    // SAFETY: getpid has no preconditions.
    ARMED_PID.store(unsafe { libc::getpid() }, Ordering::Release);
    install_handlers();
    resolve_exec_functions();
}

fn install_handlers() {
    for (i, &sig) in FATAL.iter().enumerate() {
        // SAFETY: sigaction writes the old action into the slot reserved for this signal and
        // reads our zeroed-then-filled struct, before our handler can run.
        unsafe {
            let old = (*OLD.0[i].get()).as_mut_ptr();
            if libc::sigaction(sig, std::ptr::null(), old) != 0
                || (*old).sa_sigaction == libc::SIG_IGN
            {
                // Ignored (nohup, a shell's background job): it stays ignored, untouched.
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_fatal as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    OLD_SAVED.store(true, Ordering::Release);
}

/// The finisher thread: sleeps until a dying thread asks, flushes, replies.
fn finisher(request: c_int, reply: c_int) {
    crate::heap::ignore_this_thread();
    // SAFETY: gettid has no preconditions.
    FINISHER_TID.store(unsafe { libc::gettid() }, Ordering::Release);
    loop {
        let mut byte = 0u8;
        // SAFETY: reads one byte into our buffer.
        let n = unsafe { libc::read(request, (&mut byte as *mut u8).cast(), 1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n != 1 {
            return;
        }
        let ending = match byte {
            REQUEST_EXEC => Ending::Replaced("exec"),
            REQUEST_EXIT => Ending::Replaced("_exit"),
            sig => Ending::Signal(c_int::from(sig)),
        };
        let _ = std::panic::catch_unwind(|| super::finish_as(ending));
        DONE.store(true, Ordering::Release);
        // SAFETY: writes one byte from our buffer.
        unsafe { libc::write(reply, (&byte as *const u8).cast(), 1) };
    }
}

/// Asks the finisher for the final flush and waits for it, bounded. Async-signal-safe: only
/// atomics and system calls. Does nothing in a process that is not the one recording (a
/// fork or vfork child), on the finisher itself, or when the flush was asked already.
fn flush_from_anywhere(request: u8) {
    let request_fd = REQUEST_FD.load(Ordering::Acquire);
    let reply_fd = REPLY_FD.load(Ordering::Acquire);
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    if request_fd < 0 || pid != ARMED_PID.load(Ordering::Acquire) {
        return;
    }
    // The writer and the finisher cannot wait for themselves.
    if tid == FINISHER_TID.load(Ordering::Acquire) || tid == crate::recorder::writer_tid() {
        return;
    }
    if !matches!(
        crate::recorder::state(),
        crate::recorder::State::Recording | crate::recorder::State::Finished
    ) {
        return;
    }
    if ASKED.swap(true, Ordering::AcqRel) {
        wait_until_done();
        return;
    }
    // SAFETY: writes one byte from our buffer to our pipe.
    if unsafe { libc::write(request_fd, (&request as *const u8).cast(), 1) } != 1 {
        return;
    }
    wait_for_flush(|slice_ms| {
        let mut pfd = libc::pollfd {
            fd: reply_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polls one descriptor of ours.
        let r = unsafe { libc::poll(&mut pfd, 1, slice_ms as c_int) };
        if r > 0 {
            let mut byte = 0u8;
            // SAFETY: reads one byte into our buffer.
            unsafe { libc::read(reply_fd, (&mut byte as *mut u8).cast(), 1) };
            return true;
        }
        // An error other than an interruption: nothing to wait for.
        r < 0 && errno() != libc::EINTR
    });
}

/// Waits, bounded, for a flush another thread asked for. Async-signal-safe.
fn wait_until_done() {
    wait_for_flush(|slice_ms| {
        if DONE.load(Ordering::Acquire) {
            return true;
        }
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: slice_ms * 1_000_000,
        };
        // SAFETY: nanosleep is async-signal-safe and reads our struct.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
        DONE.load(Ordering::Acquire)
    });
}

/// Calls `wait(slice_ms)` (which waits at most that long and says whether the flush is over)
/// until the flush is over, it has not moved for [`STALL_MS`], or [`FLUSH_WAIT_MS`] have
/// passed. Async-signal-safe.
fn wait_for_flush(mut wait: impl FnMut(i64) -> bool) {
    let start = now_ms();
    let mut seen = crate::progress::steps();
    let mut moved_at = start;
    loop {
        let now = now_ms();
        let p = crate::progress::steps();
        if p != seen {
            seen = p;
            moved_at = now;
        }
        if now - start >= FLUSH_WAIT_MS || now - moved_at >= STALL_MS {
            return;
        }
        if wait(LOOK_EVERY_MS) {
            return;
        }
    }
}

/// Before exec or `_exit` replace or end the process: the final flush, if this process is
/// recording. Async-signal-safe (exec may be called from a signal handler or a vfork child).
pub fn before_replaced(exit: bool) {
    flush_from_anywhere(if exit { REQUEST_EXIT } else { REQUEST_EXEC });
}

extern "C" fn on_fatal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let saved_errno = errno();
    let handled_by_program =
        REQUESTS.contains(&sig) && old_action(sig).is_some_and(|a| a.sa_sigaction != libc::SIG_DFL);
    if let (Ok(request), false) = (u8::try_from(sig), handled_by_program) {
        flush_from_anywhere(request);
    }
    chain(sig, info, ctx);
    set_errno(saved_errno);
}

/// The program's action for `sig` from before ours, once saved.
fn old_action(sig: c_int) -> Option<&'static libc::sigaction> {
    let i = FATAL
        .iter()
        .position(|&s| s == sig)
        .filter(|_| OLD_SAVED.load(Ordering::Acquire))?;
    // SAFETY: written by `arm` before our handler was installed (OLD_SAVED).
    Some(unsafe { (*OLD.0[i].get()).assume_init_ref() })
}

/// Hands the signal on as if accprof had never been there.
fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let Some(old) = old_action(sig) else {
        default_and_raise(sig);
        return;
    };
    match old.sa_sigaction {
        libc::SIG_DFL => default_and_raise(sig),
        libc::SIG_IGN => {
            // Ignored before us: a fault raised again is the kernel's to handle, abort()
            // resets and raises by itself.
            // SAFETY: installs the program's own earlier action.
            unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
        }
        handler => {
            if old.sa_flags & libc::SA_RESETHAND != 0 {
                // SAFETY: a one-shot handler: the next one gets the default, as it would have.
                unsafe { set_default(sig) };
            }
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the program registered this function with SA_SIGINFO's signature.
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(handler) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the program registered this function with signal()'s signature.
                let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
                f(sig);
            }
        }
    }
}

/// The default action, with the same signal: delivered when our handler returns (the signal
/// is blocked while it runs), or again by the faulting instruction.
fn default_and_raise(sig: c_int) {
    // SAFETY: sigaction and raise are async-signal-safe.
    unsafe {
        set_default(sig);
        libc::raise(sig);
    }
}

/// # Safety
/// Async-signal-safe; changes the process's disposition of `sig`.
unsafe fn set_default(sig: c_int) {
    // SAFETY: as documented.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut());
    }
}

/// The conventional name of a fatal signal, for the exit line.
pub fn signal_name(sig: c_int) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        n => format!("signal {n}"),
    }
}

fn now_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes our struct.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

fn errno() -> c_int {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn set_errno(v: c_int) {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = v };
}

/// The C library's exec functions, found once (dlsym is not async-signal-safe, so never on
/// the exec path itself once recording has started).
pub mod real {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicPtr, Ordering};

    pub static EXECVP: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static EXECVPE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    pub static FEXECVE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

    /// The next definition of `name` after ours, cached in `slot`.
    pub fn get(slot: &AtomicPtr<c_void>, name: &std::ffi::CStr) -> *mut c_void {
        let p = slot.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        // SAFETY: dlsym with a NUL-terminated name.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        slot.store(p, Ordering::Release);
        p
    }
}

fn resolve_exec_functions() {
    real::get(&real::EXECVP, c"execvp");
    real::get(&real::EXECVPE, c"execvpe");
    real::get(&real::FEXECVE, c"fexecve");
}
