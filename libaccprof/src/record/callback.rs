//! The one callback registered for every event.
//!
//! The common case (recording, no fork pending, not measuring itself) reads one word
//! (crate::hot), the clock, and the thread's state and slot from a table keyed by the thread
//! pointer; anything else
//! takes [`slow`]: the first event of the process or of a thread, a fork, ACCPROF_SELF_TIME,
//! events after the exit flush, a callback re-entered on its thread.

use crate::record::thread_state::{Call, ThreadBox, ThreadState};
use crate::recorder::slots::Slot;
use crate::recorder::{self, fork_gate, Recorder};
use crate::{bench_stage, hot};
use accprof_abi::{acc_api_info, acc_event_info, acc_prof_info};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

thread_local! {
    /// The thread's state, once it has recorded an event; null before, and after the thread
    /// began to end. Read when neither table has an entry for the thread.
    static CURRENT: Cell<*mut ThreadState> = const { Cell::new(std::ptr::null_mut()) };
    /// Owns the thread's state and retires it when the thread ends (set up on the thread's
    /// first event, off the common path).
    static OWNER: RefCell<Option<ThreadStateGuard>> = const { RefCell::new(None) };
}

/// The recording threads' states, found by the thread pointer (the x86-64 ABI keeps it at
/// `%fs:0`; a register read, where reaching a thread-local variable from a shared library
/// calls into the loader and reads two or three cache lines of its tables: about five lines
/// per callback when the caches are cold), in two direct-mapped tables: first the entries in
/// the hot word's page (crate::hot), which a callback has just read, then [`BY_THREAD`] for a
/// thread whose entry there another thread holds, then [`CURRENT`]. Each entry is claimed and
/// released by its own thread only. An entry's `slot` is the state's slot, read beside the
/// state (not through it): one dependent load fewer before the re-entry flag, which matters
/// when the caches are cold.
type Entry = hot::ThreadEntry;

const THREADS: usize = 1024;
static BY_THREAD: [Entry; THREADS] = [const {
    Entry {
        thread: AtomicUsize::new(0),
        state: AtomicPtr::new(std::ptr::null_mut()),
        slot: AtomicPtr::new(std::ptr::null_mut()),
    }
}; THREADS];

/// The calling thread's thread pointer (never 0 for a running thread).
#[inline(always)]
fn thread_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: %fs:0 holds the thread pointer itself (x86-64 ELF TLS ABI); the read has no
        // side effects.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

#[inline(always)]
fn hash_of(tp: usize) -> u64 {
    (tp as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The thread's entries: in the hot page, and in [`BY_THREAD`].
#[inline(always)]
fn entries_of(tp: usize) -> [&'static Entry; 2] {
    let h = hash_of(tp);
    [
        hot::thread_entry(h),
        &BY_THREAD[(h >> 54) as usize % THREADS],
    ]
}

/// The state and slot an entry holds for the thread `tp`, if it is that thread's.
#[inline(always)]
fn held(e: &Entry, tp: usize) -> Option<(*mut ThreadState, *const Slot)> {
    (tp != 0 && e.thread.load(Ordering::Relaxed) == tp).then(|| {
        (
            e.state.load(Ordering::Relaxed).cast(),
            e.slot.load(Ordering::Relaxed).cast_const().cast(),
        )
    })
}

/// The calling thread's state: from the tables, else from [`CURRENT`]; null if none.
#[inline(always)]
fn current() -> *mut ThreadState {
    current_with_slot().0
}

/// The calling thread's state and its slot (both null if none).
#[inline(always)]
fn current_with_slot() -> (*mut ThreadState, *const Slot) {
    let tp = thread_pointer();
    match held(hot::thread_entry(hash_of(tp)), tp) {
        Some(found) => found,
        None => current_elsewhere(tp),
    }
}

/// The second table, then the thread-local variable.
#[cold]
fn current_elsewhere(tp: usize) -> (*mut ThreadState, *const Slot) {
    if let Some(found) = held(entries_of(tp)[1], tp) {
        return found;
    }
    let st = CURRENT.try_with(Cell::get).unwrap_or(std::ptr::null_mut());
    // SAFETY: a non-null CURRENT is this thread's live state.
    let slot = unsafe { st.as_ref() }.map_or(std::ptr::null(), |s| s.slot() as *const Slot);
    (st, slot)
}

/// Makes `st` the calling thread's state (CURRENT, and the first table entry for the thread
/// that is free), or with null, none.
fn set_current(st: *mut ThreadState) {
    let _ = CURRENT.try_with(|c| c.set(st));
    let tp = thread_pointer();
    if tp == 0 {
        return;
    }
    let entries = entries_of(tp);
    if st.is_null() {
        for e in entries {
            if e.thread.load(Ordering::Relaxed) == tp {
                e.state.store(std::ptr::null_mut(), Ordering::Relaxed);
                e.slot.store(std::ptr::null_mut(), Ordering::Relaxed);
                e.thread.store(0, Ordering::Release);
            }
        }
        return;
    }
    // SAFETY: `st` is this thread's live state (the caller's).
    let slot = unsafe { &*st }.slot() as *const Slot as *mut Slot;
    for e in entries {
        if e.thread.load(Ordering::Relaxed) == tp
            || e.thread
                .compare_exchange(0, tp, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            e.slot.store(slot.cast(), Ordering::Release);
            e.state.store(st.cast(), Ordering::Release);
            return;
        }
    }
}

/// Events recorded on threads whose own state was unavailable (see `record_orphan`).
static ORPHANS: Mutex<Option<ThreadBox>> = Mutex::new(None);

/// The thread's state, dropped after it is retired when the thread ends.
struct ThreadStateGuard(ThreadBox);

impl Drop for ThreadStateGuard {
    fn drop(&mut self) {
        // Later events of this thread (other thread-local destructors calling the runtime)
        // are orphans.
        set_current(std::ptr::null_mut());
        // CURRENT no longer points at the state, and no callback of this thread is running
        // (destructors run after the thread's code); the box drops it after this.
        if let Some(rec) = recorder::recorder() {
            self.0.retire(rec);
        }
    }
}

/// The callback the runtime calls for every event (`acc_prof_callback`).
///
/// # Safety
/// Called by an OpenACC runtime with the pointers the specification describes (any of which
/// may be NULL); never called by Rust code except the benchmarks.
pub unsafe extern "C" fn on_event(
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    let word = hot::load();
    if word & !(hot::TSC | hot::SELF_TIME | hot::LAUNCH_SWITCH) != recorder::State::Recording as u32
    {
        // SAFETY: forwarded.
        return unsafe { slow(word, prof, info, api) };
    }
    if word & hot::SELF_TIME != 0 {
        // SAFETY: forwarded.
        return unsafe { timed(word, prof, info, api) };
    }
    // SAFETY: forwarded.
    unsafe { common(word, prof, info, api) }
}

/// The common case, timed (ACCPROF_SELF_TIME).
#[cold]
#[inline(never)]
unsafe fn timed(
    word: u32,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    let t0 = crate::self_time::begin();
    // SAFETY: forwarded.
    unsafe { common(word, prof, info, api) };
    crate::self_time::end_openacc(t0);
}

/// Recording, no fork pending: the thread's state, if it has one, takes the event.
#[inline(always)]
unsafe fn common(
    word: u32,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    // Time first: everything after this is our own overhead, not the runtime's.
    let now = crate::clock::now_for(word);
    let (st, slot) = current_with_slot();
    // SAFETY: a non-null state is this thread's live state, and `slot` its slot (null with
    // it); the flag below keeps a re-entered callback (a signal handler calling the runtime)
    // from using them twice.
    let (Some(st), Some(slot)) = (unsafe { st.as_mut() }, unsafe { slot.as_ref() }) else {
        // SAFETY: forwarded.
        return unsafe { slow(word, prof, info, api) };
    };
    if slot.in_callback.load(Ordering::Relaxed) {
        // SAFETY: forwarded.
        return unsafe { slow(word, prof, info, api) };
    }
    slot.in_callback.store(true, Ordering::Relaxed);
    // Looked at again now that the flag is set: a thread about to fork or exit sets its bit,
    // waits, then reads the flags (recorder::fork_gate, lifecycle::finish_as).
    let again = hot::load();
    if again & (hot::STATE_MASK | hot::FORK_PENDING) != recorder::State::Recording as u32 {
        slot.in_callback.store(false, Ordering::Relaxed);
        // SAFETY: forwarded.
        return unsafe { slow(again, prof, info, api) };
    }
    if bench_stage::stops_after(bench_stage::PROLOGUE) {
        slot.in_callback.store(false, Ordering::Release);
        return;
    }
    let st_ptr: *mut ThreadState = st;
    // A panic must never unwind into the runtime's C frames; if one happens we lose this event.
    // The closure takes the callback's arguments by value: the runtime's structures are read
    // inside it, once.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        // SAFETY: forwarded from our caller's contract; `st_ptr` is this thread's state,
        // used by this callback only (the flag above).
        unsafe { on_call(&mut *st_ptr, now, prof, info, api) }
    }));
    slot.in_callback.store(false, Ordering::Release);
}

/// The common case's work, inside the panic guard.
///
/// # Safety
/// As for [`on_event`].
#[inline(always)]
unsafe fn on_call(
    st: &mut ThreadState,
    now: u64,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    // SAFETY: forwarded.
    let Some(c) = (unsafe { Call::new(now, prof, info, api) }) else {
        return;
    };
    if bench_stage::stops_after(bench_stage::VIEWS) {
        std::hint::black_box(&c);
        return;
    }
    if let Some(rec) = recorder::recorder() {
        st.handle(rec, &c);
    }
}

/// Everything but the common case.
#[cold]
#[inline(never)]
unsafe fn slow(
    word: u32,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    // A thread is forking: return before anything, so that the runtime's lock (held around
    // this call) is let go as soon as it can be (recorder::fork_gate).
    if word & hot::FORK_PENDING != 0 {
        fork_gate::skip();
        return;
    }
    let now = crate::clock::now_for(word);
    let t0 = crate::self_time::begin();
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: forwarded from our caller's contract.
        unsafe { record(now, prof, info, api) }
    }));
    if started.unwrap_or(false) {
        crate::self_time::end_start(t0);
    } else {
        crate::self_time::end_openacc(t0);
    }
}

/// Records an event off the common path; true when this event started recording.
unsafe fn record(
    now: u64,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) -> bool {
    // The first event starts recording (creating the trace and its live file): that is the
    // tool's time, not the runtime's, so the event is timed again after it.
    let starting = recorder::state() == recorder::State::Registered;
    let Some(rec) = recorder::recorder_for_event() else {
        return false;
    };
    let now = if starting { crate::clock::now() } else { now };
    // SAFETY: forwarded.
    let Some(c) = (unsafe { Call::new(now, prof, info, api) }) else {
        return starting;
    };
    let handled = thread_state(rec).is_some_and(|st| {
        let slot = st.slot();
        if slot.in_callback.load(Ordering::Relaxed) {
            // Re-entered on this thread (a signal handler calling the runtime).
            return false;
        }
        slot.in_callback.store(true, Ordering::Relaxed);
        if fork_gate::pending() {
            slot.in_callback.store(false, Ordering::Relaxed);
            fork_gate::skip();
            return true;
        }
        st.handle(rec, &c);
        st.slot().in_callback.store(false, Ordering::Release);
        true
    });
    if !handled {
        record_orphan(rec, &c);
    }
    starting
}

/// Runs `f` on the calling thread's state as a callback would (starting recording on the first
/// event, keeping out of a fork's way, never re-entered), with the time now: for the program's
/// NVTX calls. `None` when nothing may be recorded now.
pub fn with_recording_thread<R>(
    f: impl FnOnce(&mut ThreadState, &Recorder, u64) -> R,
) -> Option<R> {
    let word = hot::load();
    if word & hot::FORK_PENDING != 0 {
        return None;
    }
    let now = crate::clock::now_for(word);
    let rec = recorder::recorder_for_event()?;
    let st = thread_state(rec)?;
    let slot = st.slot();
    if slot.in_callback.load(Ordering::Relaxed) {
        return None;
    }
    slot.in_callback.store(true, Ordering::Relaxed);
    let r = if fork_gate::pending() {
        None
    } else {
        Some(f(st, rec, now))
    };
    st.slot().in_callback.store(false, Ordering::Release);
    r
}

/// The calling thread's state, made on its first event; `None` while the thread ends.
fn thread_state(rec: &Recorder) -> Option<&'static mut ThreadState> {
    let p = current();
    if !p.is_null() {
        // SAFETY: a non-null CURRENT is this thread's live state; callers use it for one
        // callback, and re-entry is refused through its slot's flag.
        return Some(unsafe { &mut *p });
    }
    // The guard's destructor must be able to run: it cannot once the thread is ending.
    OWNER
        .try_with(|o| {
            let mut o = o.try_borrow_mut().ok()?;
            if o.is_some() {
                // Retired already: the thread is ending.
                return None;
            }
            let b = ThreadState::boxed(rec);
            let p = b.state_ptr();
            *o = Some(ThreadStateGuard(b));
            set_current(p);
            // SAFETY: just made; owned by the guard until the thread ends.
            Some(unsafe { &mut *p })
        })
        .ok()
        .flatten()
}

/// Flushes and closes the calling thread's state at exit (the main thread's TLS destructors do
/// not run at `exit`).
pub fn finish_current_thread(rec: &Recorder) {
    let p = current();
    // SAFETY: a non-null CURRENT is this thread's live state, and this thread is not inside
    // a callback (it is running the exit flush).
    if let Some(st) = unsafe { p.as_mut() } {
        st.close_open(rec, crate::clock::now());
        st.flush(rec);
    }
}

/// Records an event from a thread whose own state cannot be used (its thread-local storage is
/// being torn down, or the callback was re-entered). Rare, so a lock is fine here.
fn record_orphan(rec: &Recorder, c: &Call) {
    if let Ok(mut o) = ORPHANS.lock() {
        o.get_or_insert_with(|| ThreadState::boxed(rec))
            .handle(rec, c);
    }
}

/// Hands the orphan events to the collector (at exit).
pub fn flush_orphans(rec: &Recorder) {
    if let Ok(mut o) = ORPHANS.lock() {
        if let Some(st) = o.as_mut() {
            st.flush(rec);
        }
    }
}

/// Whether the calling thread has recorded an event (it has state of its own). Reads atomics
/// and a thread-local only: safe in a forked child's fork handler.
pub fn this_thread_recorded() -> bool {
    !current().is_null()
}
