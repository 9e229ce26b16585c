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
//! Cost on every entry point: a thread-local counter and, for the outermost call of a thread,
//! one sequentially consistent store to a flag of the thread's own (no shared counter whose
//! cache line every thread would fight over).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// The device's part (set by the runtime when it initialises one): drain its queues before a
/// fork, give the child its own queue workers after. Function pointers, so that this module
/// depends on no other: every entry point uses it.
static BEFORE: AtomicUsize = AtomicUsize::new(0);
static IN_CHILD: AtomicUsize = AtomicUsize::new(0);

/// Sets what the device in use does around a fork.
pub fn on_fork(before: fn(), in_child: fn()) {
    BEFORE.store(before as usize, Ordering::Release);
    IN_CHILD.store(in_child as usize, Ordering::Release);
}

fn call(hook: &AtomicUsize) {
    let f = hook.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `on_fork` stores here, and only `fn()` pointers.
        let f = unsafe { std::mem::transmute::<usize, fn()>(f) };
        f();
    }
}

/// Set from the fork's prepare handler until its parent or child handler.
static FORKING: AtomicBool = AtomicBool::new(false);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// One thread's presence flag; a list of them, leaked, reused after their thread ends.
struct Slot {
    inside: AtomicBool,
    taken: AtomicBool,
    next: *mut Slot,
}

static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());

fn slots() -> impl Iterator<Item = &'static Slot> {
    let mut p = SLOTS.load(Ordering::Acquire);
    std::iter::from_fn(move || {
        // SAFETY: slots are leaked, never freed, and fully written before they are published.
        let s = unsafe { p.as_ref() }?;
        p = s.next;
        Some(s)
    })
}

/// A slot for the calling thread: a free one, else a new one.
fn claim() -> &'static Slot {
    if let Some(s) = slots().find(|s| {
        s.taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) {
        return s;
    }
    let slot = Box::leak(Box::new(Slot {
        inside: AtomicBool::new(false),
        taken: AtomicBool::new(true),
        next: std::ptr::null_mut(),
    }));
    let mut head = SLOTS.load(Ordering::Acquire);
    loop {
        slot.next = head;
        match SLOTS.compare_exchange_weak(head, slot, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return slot,
            Err(now) => head = now,
        }
    }
}

/// Gives the calling thread's slot back when the thread ends.
struct Mine(&'static Slot);

impl Drop for Mine {
    fn drop(&mut self) {
        STATE.with(|st| st.set((0, std::ptr::null())));
        self.0.inside.store(false, Ordering::SeqCst);
        self.0.taken.store(false, Ordering::Release);
    }
}

thread_local! {
    /// This thread's nesting of runtime calls (a tool's callback calling the runtime), and its
    /// slot (null until its first call).
    static STATE: Cell<(usize, *const Slot)> = const { Cell::new((0, std::ptr::null())) };
    /// Set with the slot: its destructor gives the slot back.
    static OWNER: Cell<Option<Mine>> = const { Cell::new(None) };
}

/// The calling thread's slot, claimed on its first call into the runtime; None while the
/// thread is exiting.
#[cold]
fn first_slot() -> Option<&'static Slot> {
    let slot = claim();
    if OWNER.try_with(|o| o.set(Some(Mine(slot)))).is_err() {
        slot.taken.store(false, Ordering::Release);
        return None;
    }
    Some(slot)
}

/// Marks the calling thread inside the runtime until the returned value is dropped: waits while
/// another thread forks.
#[inline]
pub fn enter() -> Inside {
    let Ok((depth, slot)) = STATE.try_with(Cell::get) else {
        return Inside(None); // the thread is exiting: not gated
    };
    if depth > 0 {
        let _ = STATE.try_with(|st| st.set((depth + 1, slot)));
        return Inside(Some(()));
    }
    if !REGISTERED.load(Ordering::Relaxed) {
        register();
    }
    // SAFETY: slots are leaked, never freed.
    let slot = match unsafe { slot.as_ref() } {
        Some(s) => s,
        None => match first_slot() {
            Some(s) => s,
            None => return Inside(None),
        },
    };
    loop {
        slot.inside.store(true, Ordering::SeqCst);
        if !FORKING.load(Ordering::SeqCst) {
            break;
        }
        slot.inside.store(false, Ordering::SeqCst);
        while FORKING.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
    let _ = STATE.try_with(|st| st.set((1, slot)));
    Inside(Some(()))
}

/// Whether the calling thread is inside one of the runtime's entry points.
#[inline]
pub fn inside() -> bool {
    STATE.try_with(|s| s.get().0 > 0).unwrap_or(false)
}

/// A thread's presence inside the runtime, from [`enter`] (None: not counted).
pub struct Inside(Option<()>);

impl Drop for Inside {
    fn drop(&mut self) {
        if self.0.is_none() {
            return;
        }
        let _ = STATE.try_with(|st| {
            let (depth, slot) = st.get();
            st.set((depth.saturating_sub(1), slot));
            if depth == 1 {
                // SAFETY: slots are leaked, never freed.
                if let Some(s) = unsafe { slot.as_ref() } {
                    s.inside.store(false, Ordering::Release);
                }
            }
        });
    }
}

fn register() {
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: three extern "C" functions without arguments, valid for the process's life.
        unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    }
}

/// The calling thread's slot, if it has one.
fn own_slot() -> Option<*const Slot> {
    STATE
        .try_with(|st| st.get().1)
        .ok()
        .filter(|p| !p.is_null())
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
    // Every other thread out of the runtime (a fork from a tool's callback is inside it).
    let mine = own_slot();
    for s in slots().filter(|&s| Some(s as *const Slot) != mine) {
        while s.inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
    // Device work queued before: a worker must not be inside a job (and its locks) when the
    // process is copied.
    call(&BEFORE);
}

fn child_now() {
    call(&IN_CHILD);
    // The other threads' slots: their threads are not in the child.
    let mine = own_slot();
    for s in slots().filter(|&s| Some(s as *const Slot) != mine) {
        s.inside.store(false, Ordering::SeqCst);
        s.taken.store(false, Ordering::SeqCst);
    }
    FORKING.store(false, Ordering::SeqCst);
}
