//! fork() while other threads use the runtime: the child must find no lock held and a device it
//! can use.
//!
//! A child gets a copy of the parent's memory but only the thread that forked. A lock another
//! thread held at that moment (the present table, a cache, a queue's counts) stays locked in the
//! child for ever, and the emulated device's queue workers are gone. So fork is gated
//! (pthread_atfork): before it, new calls into the runtime wait at the gate, the calls already
//! inside finish, and the async queues drain, so that no runtime lock is held and no device work
//! is half done when the process is copied; after it, the parent reopens the gate, and the child
//! also gives its device fresh queue workers. The child keeps the parent's device data (the
//! emulated device's memory is part of the copy). A CUDA context does not survive fork: a child
//! that uses it gets CUDA's error.
//!
//! Cost on every entry point: one thread-local counter and, for the outermost call of a
//! thread, an increment and a decrement of one shared counter.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// What a fork does to the device: drain its queues before, give the child its own workers
/// after. The runtime sets them when it starts a device ([`on_fork`]), so that this module,
/// which every entry point enters, depends on nothing of the runtime's.
#[derive(Clone, Copy)]
pub struct DeviceHooks {
    pub drain: fn(),
    pub in_child: fn(),
}

static HOOKS: OnceLock<DeviceHooks> = OnceLock::new();

/// Sets what a fork does to the device (the first call wins: the hooks look the device up).
pub fn on_fork(hooks: DeviceHooks) {
    let _ = HOOKS.set(hooks);
}

/// Threads inside the runtime (outermost calls only).
static INSIDE: AtomicUsize = AtomicUsize::new(0);
/// Set from the fork's prepare handler until its parent or child handler.
static FORKING: AtomicBool = AtomicBool::new(false);
static REGISTERED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's nesting of runtime calls (a tool's callback calling the runtime).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread inside the runtime until the returned value is dropped: waits while
/// another thread forks.
#[inline]
pub fn enter() -> Inside {
    let depth = DEPTH.with(|d| d.replace(d.get() + 1));
    if depth == 0 {
        if !REGISTERED.load(Ordering::Relaxed) {
            register();
        }
        loop {
            INSIDE.fetch_add(1, Ordering::SeqCst);
            if !FORKING.load(Ordering::SeqCst) {
                break;
            }
            INSIDE.fetch_sub(1, Ordering::SeqCst);
            while FORKING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
    }
    Inside(())
}

/// Whether the calling thread is inside one of the runtime's entry points.
#[inline]
pub fn inside() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// A thread's presence inside the runtime, from [`enter`].
pub struct Inside(());

impl Drop for Inside {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            let v = d.get().saturating_sub(1);
            d.set(v);
            v
        });
        if depth == 0 {
            INSIDE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn register() {
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: three extern "C" functions without arguments, valid for the process's life.
        unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    }
}

/// Whether this thread is inside the runtime itself (a fork from a tool's callback).
fn own_count() -> usize {
    usize::from(DEPTH.with(Cell::get) > 0)
}

extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(prepare_now);
}

extern "C" fn parent() {
    FORKING.store(false, Ordering::SeqCst);
}

extern "C" fn child() {
    let _ = std::panic::catch_unwind(child_now);
}

fn prepare_now() {
    FORKING.store(true, Ordering::SeqCst);
    while INSIDE.load(Ordering::SeqCst) > own_count() {
        std::thread::yield_now();
    }
    // Device work queued before: a worker must not be inside a job (and its locks) when the
    // process is copied.
    if let Some(h) = HOOKS.get() {
        (h.drain)();
    }
}

fn child_now() {
    if let Some(h) = HOOKS.get() {
        (h.in_child)();
    }
    INSIDE.store(own_count(), Ordering::SeqCst);
    FORKING.store(false, Ordering::SeqCst);
}
