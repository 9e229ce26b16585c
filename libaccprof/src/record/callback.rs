//! The one callback registered for every event.

use crate::record::thread_state::{Incoming, ThreadState};
use crate::recorder::{self, fork_gate, Recorder};
use accprof_abi::read::{ApiView, EventView, ProfView};
use accprof_abi::{acc_api_info, acc_event_info, acc_prof_info};
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

thread_local! {
    static THREAD: RefCell<Option<ThreadStateGuard>> = const { RefCell::new(None) };
}

/// Events recorded on threads whose own state was unavailable (see `record_orphan`).
static ORPHANS: Mutex<Option<ThreadState>> = Mutex::new(None);

/// Retires the thread's slot when the thread ends, so its last events are written.
struct ThreadStateGuard(ThreadState);

impl Drop for ThreadStateGuard {
    fn drop(&mut self) {
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
    // A thread is forking: return before anything, so that the runtime's lock (held around
    // this call) is let go as soon as it can be (recorder::fork_gate).
    if fork_gate::pending() {
        fork_gate::skip();
        return;
    }
    // Time first: everything after this is our own overhead, not the runtime's.
    let now = crate::clock::now();
    let t0 = crate::self_time::begin();
    // A panic must never unwind into the runtime's C frames; if one happens we lose this event.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: forwarded from our caller's contract.
        unsafe { record(now, prof, info, api) }
    }));
    crate::self_time::end_openacc(t0);
}

unsafe fn record(
    now: u64,
    prof: *mut acc_prof_info,
    info: *mut acc_event_info,
    api: *mut acc_api_info,
) {
    // The first event starts recording (creating the trace and its live file): that is the
    // tool's time, not the runtime's, so the event is timed again after it.
    let starting = recorder::state() == recorder::State::Registered;
    let Some(rec) = recorder::recorder_for_event() else {
        return;
    };
    let now = if starting { crate::clock::now() } else { now };
    // SAFETY: the runtime's pointers are valid for valid_bytes, or NULL, through the callback.
    let Some(prof) = (unsafe { ProfView::new(prof) }) else {
        return;
    };
    let kind = prof.event_type();
    // SAFETY: as above.
    let info = unsafe { EventView::new(info, kind) };
    // An end event takes its handles from its start; only starts and points read them.
    let api = if kind.shape() == accprof_abi::EventShape::End {
        None
    } else {
        // SAFETY: as above.
        unsafe { ApiView::new(api) }
    };
    if kind == accprof_abi::acc_event_t::ENQUEUE_LAUNCH_START {
        // Before the launch reaches the driver, so that CUPTI's callback already skips it.
        crate::device::cupti::runtime_reports_launches();
    }
    let inc = Incoming {
        now,
        kind,
        prof,
        info,
        api,
    };
    let handled = THREAD.try_with(|cell| match cell.try_borrow_mut() {
        Ok(mut st) => {
            let st = st.get_or_insert_with(|| ThreadStateGuard(ThreadState::new(rec)));
            let slot = st.0.slot();
            slot.in_callback.store(true, Ordering::Relaxed);
            if fork_gate::pending() {
                slot.in_callback.store(false, Ordering::Relaxed);
                fork_gate::skip();
                return true;
            }
            st.0.handle(rec, &inc);
            st.0.slot().in_callback.store(false, Ordering::Release);
            true
        }
        // Re-entered on this thread (a signal handler calling the runtime): not recordable.
        Err(_) => false,
    });
    if !matches!(handled, Ok(true)) {
        record_orphan(rec, &inc);
    }
}

/// Flushes and closes the calling thread's state at exit (the main thread's TLS destructors do
/// not run at `exit`).
pub fn finish_current_thread(rec: &Recorder) {
    let _ = THREAD.try_with(|cell| {
        if let Ok(mut st) = cell.try_borrow_mut() {
            if let Some(st) = st.as_mut() {
                st.0.close_open(rec, crate::clock::now());
                st.0.flush(rec);
            }
        }
    });
}

/// Records an event from a thread whose own state cannot be used (its thread-local storage is
/// being torn down, or the callback was re-entered). Rare, so a lock is fine here.
fn record_orphan(rec: &Recorder, inc: &Incoming<'_>) {
    if let Ok(mut o) = ORPHANS.lock() {
        o.get_or_insert_with(|| ThreadState::new(rec))
            .handle(rec, inc);
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

/// Whether the calling thread has recorded an event (it has state of its own). Reads a
/// thread-local only: safe in a forked child's fork handler.
pub fn this_thread_recorded() -> bool {
    THREAD
        .try_with(|cell| cell.try_borrow().is_ok_and(|st| st.is_some()))
        .unwrap_or(false)
}
