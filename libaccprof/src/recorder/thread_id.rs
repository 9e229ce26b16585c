//! The id the calling thread's OpenACC events carry, published for device records issued from
//! the same thread (CUPTI's driver callback runs on the issuing thread).

use std::cell::Cell;

thread_local! {
    /// The thread id this thread's events carry, for device records issued from it (CUPTI's
    /// driver callback runs on the issuing thread). i64::MIN until its first event.
    static THREAD_ID: Cell<i64> = const { Cell::new(i64::MIN) };
}

/// The id the calling thread's OpenACC events carry: the runtime's thread id, else the OS
/// thread id (also for a thread that has had no OpenACC event yet).
pub fn current_thread_id() -> i64 {
    match THREAD_ID.try_with(Cell::get) {
        Ok(t) if t != i64::MIN => t,
        // SAFETY: gettid has no preconditions.
        _ => i64::from(unsafe { libc::gettid() }),
    }
}

/// Publishes the id this thread's events carry.
pub fn set_current_thread_id(tid: i64) {
    let _ = THREAD_ID.try_with(|c| c.set(tid));
}

thread_local! {
    /// The innermost NVTX push/pop range open on this thread (0: none), for device records
    /// issued from it.
    static NVTX_RANGE: Cell<u32> = const { Cell::new(0) };
}

/// The innermost NVTX push/pop range open on the calling thread (0: none).
pub fn current_nvtx_range() -> u32 {
    NVTX_RANGE.try_with(Cell::get).unwrap_or(0)
}

/// Publishes the innermost NVTX push/pop range open on this thread.
pub fn set_current_nvtx_range(instance: u32) {
    let _ = NVTX_RANGE.try_with(|c| c.set(instance));
}
