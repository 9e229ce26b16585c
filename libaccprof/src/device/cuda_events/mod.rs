//! Device times from CUDA events, for when CUPTI is not there.
//!
//! Runtimes that hand out CUDA handles in acc_api_info (NVHPC, the bundled shim) name, for each
//! launch, upload and download, the CUDA context and the stream the work goes to. libaccprof
//! records a CUDA event on that stream at the operation's enqueue start and another at its end
//! ([`pending`]); the collector waits for the device to pass them, reads the time between them
//! and places them on CLOCK_MONOTONIC ([`anchor`]), and writes a device record of the kind the
//! CUPTI path writes (1001 kernel, 1002 copy), flagged `from_cuda_events` ([`records`]).
//! `accprof report` treats them like CUPTI's: tied to the runtime's operation by thread and
//! enqueue time, labelled \[device\].
//!
//! What the pair measures is what the stream did between the two records: the operation itself
//! when the runtime enqueues asynchronously (its launches), but for work the runtime waits for
//! before its end event (a synchronous copy) also the time the host took around it.
//!
//! `ACCPROF_CUDA_EVENTS`: `auto` (default) uses them when CUPTI is not recording and libcuda
//! loads; `on` also beside CUPTI (to compare the two) and says in one line why not when libcuda
//! does not load; `off` never. Rules kept: libcuda is opened with dlopen; no call into the
//! OpenACC runtime; no panic crosses into C (callers are inside catch_unwind); the hot path
//! takes no lock shared between threads, allocates nothing after warm-up and never waits.

pub mod anchor;
pub mod driver;
#[cfg(test)]
mod fake;
pub mod pending;
pub mod pool;
pub mod records;
pub mod tracker;

use driver::{Driver, Handle};
use pending::Pair;
use pool::Context;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// `ACCPROF_CUDA_EVENTS`: `auto` times with CUDA events only when CUPTI is not recording; `on`
/// also beside CUPTI, for comparison.
pub use crate::config::Switch as Mode;

/// Counters for the line printed at exit.
#[derive(Debug, Default)]
pub struct Stats {
    /// Device records written.
    pub written: AtomicU64,
    /// Operations not timed: no event to spare, or the thread's queue was full.
    pub skipped: AtomicU64,
    /// Operations whose events the driver refused or lost (context gone, driver shut down).
    pub failed: AtomicU64,
}

/// What the application threads and the collector share.
pub struct Shared {
    driver: Box<dyn Driver>,
    /// Every context seen; locked when a thread meets a context it has not used before.
    contexts: Mutex<Vec<Arc<Context>>>,
    /// Each thread's queue of pairs; locked when a thread starts and by the collector.
    queues: Mutex<Vec<crossbeam_channel::Receiver<Pair>>>,
    /// The collector's state; also taken by a thread shutting a device down (rare).
    tracker: Mutex<tracker::Tracker>,
    pub stats: Stats,
}

impl Shared {
    pub fn new(driver: Box<dyn Driver>) -> Self {
        Self {
            driver,
            contexts: Mutex::new(Vec::new()),
            queues: Mutex::new(Vec::new()),
            tracker: Mutex::new(tracker::Tracker::default()),
            stats: Stats::default(),
        }
    }

    pub fn driver(&self) -> &dyn Driver {
        &*self.driver
    }

    #[cfg(test)]
    fn fake(&self) -> Option<&fake::Fake> {
        self.driver.as_fake()
    }

    /// A new queue for a thread that starts recording.
    fn new_queue(&self) -> crossbeam_channel::Sender<Pair> {
        let (tx, rx) = crossbeam_channel::bounded(pending::QUEUE);
        if let Ok(mut q) = self.queues.lock() {
            q.push(rx);
        }
        tx
    }

    /// The open context with handle `ctx`, registered on first sight.
    fn context(&self, ctx: Handle) -> Arc<Context> {
        let Ok(mut v) = self.contexts.lock() else {
            return Arc::new(Context::new(ctx, 0));
        };
        if let Some(c) = v.iter().find(|c| c.ctx == ctx && !c.is_closed()) {
            return c.clone();
        }
        v.retain(|c| !c.is_closed());
        let c = Arc::new(Context::new(ctx, pool::MAX_EVENTS));
        v.push(c.clone());
        c
    }

    /// Moves every handed-over pair into `out`; forgets the queues of threads that ended.
    fn drain_into(&self, out: &mut Vec<Pair>) {
        let Ok(mut qs) = self.queues.lock() else {
            return;
        };
        qs.retain(|rx| loop {
            match rx.try_recv() {
                Ok(p) => out.push(p),
                Err(crossbeam_channel::TryRecvError::Empty) => break true,
                Err(crossbeam_channel::TryRecvError::Disconnected) => break false,
            }
        });
    }

    #[cfg(test)]
    fn drain_queues(&self) -> Vec<Pair> {
        let mut v = Vec::new();
        self.drain_into(&mut v);
        v
    }

    /// Device records for every pair the device has passed (`wait`: keep polling up to that
    /// long for the rest). `host_call_ns` is left in the hot path's clock unit.
    pub fn collect(
        &self,
        only: Option<Handle>,
        wait: Option<Duration>,
    ) -> Vec<accprof_trace::Event> {
        let mut out = Vec::new();
        let Ok(mut t) = self.tracker.lock() else {
            return out;
        };
        let mut fresh = Vec::new();
        self.drain_into(&mut fresh);
        t.add(fresh);
        if t.waiting() == 0 {
            return out;
        }
        let pass = t.complete(
            self.driver(),
            &crate::clock::monotonic_ns,
            only,
            wait,
            &mut out,
        );
        self.stats
            .written
            .fetch_add(pass.written, Ordering::Relaxed);
        self.stats.failed.fetch_add(pass.failed, Ordering::Relaxed);
        out
    }

    /// Before the runtime shuts down the device of context `ctx`: finishes its pairs (waiting
    /// up to `wait`), then destroys our events and stream there and stops using it.
    pub fn close_context(&self, ctx: Handle, wait: Duration) -> Vec<accprof_trace::Event> {
        let out = self.collect(Some(ctx), Some(wait));
        let d = self.driver();
        if let Ok(mut t) = self.tracker.lock() {
            let given_up = t.forget_context(d, ctx);
            self.stats.failed.fetch_add(given_up, Ordering::Relaxed);
        }
        let cs: Vec<Arc<Context>> = self
            .contexts
            .lock()
            .map(|v| v.iter().filter(|c| c.ctx == ctx).cloned().collect())
            .unwrap_or_default();
        for c in cs {
            let _ = driver::with_context(d, ctx, || c.close(d));
        }
        out
    }
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// Whether device records come from CUDA events in this run.
pub fn active() -> bool {
    SHARED.get().is_some()
}

/// Decides, once recording starts, whether to time operations with CUDA events. Returns the
/// trace header's keys when it does.
pub fn start(mode: Mode, cupti_active: bool) -> Option<Vec<(String, String)>> {
    if mode == Mode::Off || (mode == Mode::Auto && cupti_active) {
        return None;
    }
    let lib = match std::panic::catch_unwind(driver::load)
        .unwrap_or_else(|_| Err("libcuda could not be loaded".into()))
    {
        Ok(l) => l,
        Err(why) => {
            if mode == Mode::On {
                eprintln!("accprof: ACCPROF_CUDA_EVENTS=on but {why}; recording without CUDA-event device times");
            }
            return None;
        }
    };
    let path = lib.path.clone();
    SHARED.set(Shared::new(Box::new(lib))).ok()?;
    let mut keys = Vec::new();
    if !cupti_active {
        // Readers keep construct spans for device records only when this key is there.
        keys.push(("device_activity".into(), "cuda_events".into()));
    }
    keys.push((
        "cuda_events".into(),
        if mode == Mode::On {
            "on".into()
        } else {
            "auto (CUPTI not recording)".into()
        },
    ));
    keys.push(("cuda_library".into(), path));
    Some(keys)
}

/// The calling thread's recorder of event pairs, when CUDA events are in use.
pub fn thread_events() -> Option<pending::ThreadEvents> {
    SHARED.get().map(pending::ThreadEvents::new)
}

/// The collector's sweep: device records of the pairs the device has passed.
pub fn collect() -> Vec<accprof_trace::Event> {
    SHARED
        .get()
        .map(|s| s.collect(None, None))
        .unwrap_or_default()
}

/// At exit: waits up to `wait` for the device to finish what was handed over.
pub fn collect_all(wait: Duration) -> Vec<accprof_trace::Event> {
    SHARED
        .get()
        .map(|s| s.collect(None, Some(wait)))
        .unwrap_or_default()
}

/// At the runtime's device shutdown (its context may be destroyed right after).
pub fn device_shutdown(ctx: Handle) -> Vec<accprof_trace::Event> {
    SHARED
        .get()
        .map(|s| s.close_context(ctx, Duration::from_secs(2)))
        .unwrap_or_default()
}

/// `(written, skipped, failed)`, for the line printed at exit.
pub fn counts() -> (u64, u64, u64) {
    SHARED.get().map_or((0, 0, 0), |s| {
        (
            s.stats.written.load(Ordering::Relaxed),
            s.stats.skipped.load(Ordering::Relaxed),
            s.stats.failed.load(Ordering::Relaxed),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_stays_out_of_cuptis_way_and_off_is_off() {
        assert_eq!(start(Mode::Auto, true), None);
        assert_eq!(start(Mode::Off, false), None);
    }
}
