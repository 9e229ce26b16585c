//! The tool's life in the process: registered, recording, finished (or disabled in a child).
//!
//! Recording starts on the first event, not at load: a program that never uses OpenACC gets no
//! thread and no file. At exit (atexit) every thread's buffer is flushed and the collector
//! writes the footer; events that still arrive after that (runtimes that shut down in their own
//! exit handlers) are appended directly, flagged `after_shutdown`. A forked child stops
//! recording: it has no collector thread, and its parent's trace is not its own.

use crate::collector::{self, Message, Summary};
use crate::config::Config;
use crate::slots::{Pool, Registry};
use crate::thread_state::{Incoming, ThreadState};
use accprof_trace::{Event, StrId, TraceWriter};
use crossbeam_channel::Sender;
use std::fs::File;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::time::Duration;

const IDLE: u8 = 0;
const REGISTERED: u8 = 1;
const RECORDING: u8 = 2;
const FINISHED: u8 = 3;
const DISABLED: u8 = 4;

static STATE: AtomicU8 = AtomicU8::new(IDLE);
static RECORDER: OnceLock<Recorder> = OnceLock::new();
static START: Once = Once::new();
static HOOKS: Once = Once::new();
static REGISTRATION: Mutex<String> = Mutex::new(String::new());

/// The writer, handed back by the collector at exit, for events that arrive after it.
static LATE: Mutex<Option<LateWriter>> = Mutex::new(None);
static LATE_LOST: AtomicU64 = AtomicU64::new(0);

pub struct LateWriter {
    pub writer: TraceWriter<File>,
    pub clock: crate::clock::Converter,
}

/// Everything shared by the recording threads and the collector.
pub struct Recorder {
    pub config: Config,
    pub pool: Pool,
    pub registry: Registry,
    pub tx: Sender<Message>,
    /// Events recorded on threads whose own state was unavailable (see `record_orphan`).
    orphans: Mutex<Option<ThreadState>>,
}

/// The recorder, if recording has started.
pub fn recorder() -> Option<&'static Recorder> {
    RECORDER.get()
}

/// The recorder to use for an event, starting recording on the first one; `None` when events
/// must be ignored (not registered, disabled after fork).
#[inline]
pub fn recorder_for_event() -> Option<&'static Recorder> {
    match STATE.load(Ordering::Acquire) {
        RECORDING | FINISHED => RECORDER.get(),
        REGISTERED => {
            START.call_once(start);
            RECORDER.get()
        }
        _ => None,
    }
}

/// Whether the exit flush has run: later events go straight to the file.
#[inline]
pub fn finished() -> bool {
    STATE.load(Ordering::Relaxed) == FINISHED
}

/// Called once a runtime has our callback: arms the exit and fork hooks.
pub fn on_registered(how: &str) {
    // Before the runtime can call us: every timestamp must be read with the same clock.
    crate::clock::init();
    if let Ok(mut r) = REGISTRATION.lock() {
        if r.is_empty() {
            r.push_str(how);
        }
    }
    let _ = STATE.compare_exchange(IDLE, REGISTERED, Ordering::AcqRel, Ordering::Acquire);
    HOOKS.call_once(|| {
        // SAFETY: registering plain extern "C" functions with libc.
        unsafe {
            libc::atexit(at_exit);
            libc::pthread_atfork(None, None, Some(in_forked_child));
        }
    });
}

fn start() {
    crate::clock::init();
    let config = Config::from_env();
    let cupti_mode = config.cupti;
    let cuda_events_mode = config.cuda_events;
    let (tx, rx) = crossbeam_channel::unbounded();
    let rec = Recorder {
        pool: Pool::new(config.buffer_words, config.max_buffers, Duration::from_millis(config.max_wait_ms)),
        registry: Registry::default(),
        tx: tx.clone(),
        orphans: Mutex::new(None),
        config,
    };
    let registration = REGISTRATION.lock().map(|r| r.clone()).unwrap_or_default();
    let mut header = crate::output::header(&registration);
    // Before the runtime creates its CUDA context (this is its first event), so that CUPTI sees
    // all of its device work; CUPTI's buffers reach the collector through the recorder.
    if let Some(keys) = crate::cupti::start(cupti_mode) {
        header.extra.extend(keys);
    }
    // Without CUPTI (or beside it, when asked), device times from CUDA events on the runtime's
    // streams.
    if let Some(keys) = crate::cuda_events::start(cuda_events_mode, crate::cupti::active()) {
        header.extra.extend(keys);
    }
    header.extra.extend(crate::heap::header_keys());
    if RECORDER.set(rec).is_err() {
        return;
    }
    let Some(rec) = RECORDER.get() else { return };
    let spawned = std::thread::Builder::new()
        .name("accprof-writer".into())
        .spawn(move || collector::run(rec, rx, tx, header));
    if spawned.is_err() {
        eprintln!("accprof: cannot start the trace writer thread; this run is not recorded");
        STATE.store(DISABLED, Ordering::Release);
        return;
    }
    STATE.store(RECORDING, Ordering::Release);
}

/// Asks the collector to write out everything buffered so far (at runtime shutdown).
pub fn request_flush(rec: &Recorder) {
    let _ = rec.tx.send(Message::Flush);
}

/// Records an event from a thread whose own state cannot be used (its thread-local storage is
/// being torn down, or the callback was re-entered). Rare, so a lock is fine here.
pub fn record_orphan(rec: &Recorder, inc: &Incoming<'_>) {
    if let Ok(mut o) = rec.orphans.lock() {
        o.get_or_insert_with(|| ThreadState::new(rec)).handle(rec, inc);
    }
}

/// Appends one event after the final flush, directly, under a lock: the program is exiting.
pub fn write_late(new_strings: &mut Vec<(StrId, Box<[u8]>)>, mut e: Event) {
    let Ok(mut late) = LATE.lock() else { return };
    match late.as_mut() {
        Some(w) => {
            e.start_ns = w.clock.to_ns(e.start_ns);
            e.end_ns = w.clock.to_ns(e.end_ns);
            let strings: Vec<(StrId, Box<[u8]>)> = std::mem::take(new_strings);
            let ok = w.writer.write_strings(strings.iter().map(|(id, b)| (*id, &b[..]))).is_ok()
                && w.writer.write_events(&[e]).is_ok();
            if !ok {
                LATE_LOST.fetch_add(1, Ordering::Relaxed);
            }
        }
        None => {
            LATE_LOST.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Where the collector leaves the writer at exit.
pub fn hand_over_late_writer(writer: TraceWriter<File>, clock: crate::clock::Converter) {
    if let Ok(mut late) = LATE.lock() {
        *late = Some(LateWriter { writer, clock });
    }
}

extern "C" fn in_forked_child() {
    // The child has no writer thread; recording there would fill buffers nobody drains.
    STATE.store(DISABLED, Ordering::Release);
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(finish);
}

/// Flushes every thread, waits for the collector, and says where the trace is.
pub fn finish() {
    if STATE.compare_exchange(RECORDING, FINISHED, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // Registered but never an event: nothing to write, nothing to say, unless asked.
        if STATE.load(Ordering::Acquire) == REGISTERED {
            let cfg = Config::from_env();
            if !cfg.quiet {
                eprintln!("accprof: the OpenACC runtime reported no events; no trace written");
            }
        }
        return;
    }
    let Some(rec) = RECORDER.get() else { return };
    // Device records still in CUPTI's buffers go to the collector before its final flush.
    crate::cupti::flush();
    crate::callback::finish_current_thread(rec);
    if let Ok(mut o) = rec.orphans.lock() {
        if let Some(st) = o.as_mut() {
            st.flush(rec);
        }
    }
    for slot in rec.registry.snapshot() {
        slot.with_batch(|batch, _| {
            crate::slots::ship(batch, &rec.tx);
            slot.closed.store(true, Ordering::Release);
        });
    }
    let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
    if rec.tx.send(Message::Shutdown(reply_tx)).is_err() {
        return;
    }
    // Bounded: a stuck disk must not hang the program's exit forever.
    let summary = match reply_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(s) => s,
        Err(_) => {
            eprintln!("accprof: the trace writer did not finish within 30 s; the trace may be incomplete");
            return;
        }
    };
    say_where(rec, &summary);
    // Asked for explicitly: printed even with ACCPROF_QUIET.
    if let Some(line) = crate::self_time::line() {
        eprintln!("{line}");
    }
    if let (Some(target), Some(path)) = (&rec.config.report, &summary.path) {
        crate::output::run_report(target, path);
    }
}

fn say_where(rec: &Recorder, s: &Summary) {
    if let Some(err) = &s.error {
        // Said when it happened already; repeat the consequence once.
        eprintln!("accprof: {err}");
        return;
    }
    if rec.config.quiet {
        return;
    }
    match &s.path {
        Some(p) => {
            let mut line = format!("accprof: {} events recorded to {}", s.events, p.display());
            if s.dropped > 0 {
                line.push_str(&format!(
                    " ({} events DROPPED because the trace writer fell behind; raise ACCPROF_MAX_BUFFER_MB)",
                    s.dropped
                ));
            }
            let (device, device_dropped) = crate::cupti::counts();
            if crate::cupti::active() {
                line.push_str(&format!(", {device} of them device records from CUPTI"));
            }
            if device_dropped > 0 {
                line.push_str(&format!(" (CUPTI DROPPED {device_dropped} device records)"));
            }
            let (timed, skipped, failed) = crate::cuda_events::counts();
            if crate::cuda_events::active() {
                line.push_str(&format!(", {timed} device records from CUDA events"));
            }
            if skipped + failed > 0 {
                line.push_str(&format!(" ({} launches and copies NOT timed with CUDA events: {skipped} found no free event, {failed} the driver refused)", skipped + failed));
            }
            let (_, heap_lost) = crate::heap::counts();
            if heap_lost > 0 {
                line.push_str(&format!(
                    " (heap allocation records LOST: {heap_lost}; heap blocks are not named after that point)"
                ));
            }
            eprintln!("{line}");
        }
        None => eprintln!("accprof: the OpenACC runtime reported no events; no trace written"),
    }
}
