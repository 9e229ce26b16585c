//! The tool's life in the process: registered, recording, finished (or disabled in a child).
//!
//! Recording starts on the first event, not at load: a program that never uses OpenACC gets no
//! thread and no file. At exit (atexit) every thread's buffer is flushed and the collector
//! writes the footer; events that still arrive after that (runtimes that shut down in their own
//! exit handlers) are appended directly, flagged `after_shutdown`. A forked child stops
//! recording: it has no collector thread, and its parent's trace is not its own.
//!
//! [`death`]: the other ways a process ends (fatal signals, exec, `_exit`) reach the same
//! final flush through a thread of ours, asked from the dying thread async-signal-safely.

pub mod death;
pub mod forked_child;
pub mod threads;

use crate::config::Config;
use crate::device::{cuda_events, cupti};
use crate::recorder::live;
use crate::recorder::message::{Message, Summary};
use crate::recorder::slots::{Pool, Registry};
use crate::recorder::{self, Recorder, State};
use crate::write::collector;
use std::sync::{Mutex, Once};
use std::time::Duration;

static HOOKS: Once = Once::new();
static REGISTRATION: Mutex<String> = Mutex::new(String::new());

/// Called once a runtime has our callback: arms the exit and fork hooks.
pub fn on_registered(how: &str) {
    // Before the runtime can call us: every timestamp must be read with the same clock.
    crate::clock::init();
    crate::self_time::init();
    // Strings in read-only segments need no comparison when seen again (crate::strings).
    crate::strings::publish_read_only(crate::modules::read_only_segments().0);
    if let Ok(mut r) = REGISTRATION.lock() {
        if r.is_empty() {
            r.push_str(how);
        }
    }
    recorder::set_starter(start);
    recorder::transition(State::Idle, State::Registered);
    HOOKS.call_once(|| {
        // SAFETY: registering plain extern "C" functions with libc.
        unsafe {
            libc::atexit(at_exit);
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(in_forked_child),
            );
        }
    });
}

fn start() {
    // CUPTI starts threads of its own here: they too leave the program's signals alone.
    threads::with_signals_blocked(start_recording);
}

fn start_recording() {
    crate::clock::init();
    let config = Config::from_env();
    for p in crate::heap::take_problems().iter().chain(&config.problems) {
        eprintln!("accprof: {p}");
    }
    let cupti_mode = config.cupti;
    let cuda_events_mode = config.cuda_events;
    let (tx, rx) = crossbeam_channel::unbounded();
    let registration = REGISTRATION.lock().map(|r| r.clone()).unwrap_or_default();
    let mut header = crate::write::output::header(&registration);
    // Before the runtime creates its CUDA context (this is its first event), so that CUPTI sees
    // all of its device work; CUPTI's buffers reach the collector through the recorder.
    if let Some(keys) = cupti::start(cupti_mode) {
        header.extra.extend(keys);
    }
    // Without CUPTI (or beside it, when asked), device times from CUDA events on the runtime's
    // streams.
    if let Some(keys) = cuda_events::start(cuda_events_mode, cupti::active()) {
        header.extra.extend(keys);
    }
    header.extra.extend(crate::heap::header_keys());
    crate::content::set(config.content);
    if config.content {
        header.extra.push((
            "content_hashes".into(),
            "uploads; synchronous downloads".into(),
        ));
    }
    // The trace is created here, before this first event is buffered: its live file must
    // exist before any thread takes a buffer, for the buffers to be the live file's slots.
    let opened = collector::Opened::create(&config, &header);
    if let Some(path) = opened.regular_file() {
        if let Err(e) = live::create(path, config.max_buffers, config.buffer_words) {
            eprintln!("accprof: {e}");
        }
    }
    let rec = Recorder {
        pool: Pool::new(
            config.buffer_words,
            config.max_buffers,
            Duration::from_millis(config.max_wait_ms),
            live::get(),
        ),
        registry: Registry::default(),
        tx: tx.clone(),
        config,
    };
    let Some(rec) = recorder::install(rec) else {
        return;
    };
    let spawned = threads::spawn("accprof-writer", move || collector::run(rec, rx, opened));
    if spawned.is_err() {
        eprintln!("accprof: cannot start the trace writer thread; this run is not recorded");
        recorder::set_state(State::Disabled);
        return;
    }
    recorder::set_state(State::Recording);
    death::arm();
}

/// Waits at most this long, before a fork, for running callbacks to end.
const FORK_WAIT: Duration = Duration::from_millis(2);
/// And at least this long.
const FORK_MIN_WAIT: Duration = Duration::from_micros(20);

extern "C" fn before_fork() {
    let _ = std::panic::catch_unwind(|| {
        if recorder::state() != State::Recording {
            return;
        }
        let Some(rec) = recorder::recorder() else {
            return;
        };
        recorder::fork_gate::set_pending(true);
        // A callback that looked at the gate just before it closed is still short of setting
        // its slot's flag for a few instructions: the first wait covers it, the flags the rest.
        wait_for_callbacks(rec, FORK_WAIT);
    });
}

extern "C" fn after_fork_in_parent() {
    recorder::fork_gate::set_pending(false);
}

extern "C" fn in_forked_child() {
    recorder::fork_gate::set_pending(false);
    forked_child::quiet_libgomp(crate::record::callback::this_thread_recorded());
    live::forget_in_child();
    crate::write::create::forget_in_child();
    // The child has no writer thread; recording there would fill buffers nobody drains.
    recorder::set_state(State::Disabled);
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(finish);
}

/// How long the exit flush waits for callbacks that began before it to finish their event.
const EXIT_WAIT: Duration = Duration::from_millis(100);
/// The same when the process is dying (a fatal signal, exec, `_exit`).
const DEATH_WAIT: Duration = Duration::from_millis(2);

/// Waits at least FORK_MIN_WAIT (a callback that read the state just before it changed sets
/// its flag within a few instructions) and at most `bound` until no thread is in a callback.
fn wait_for_callbacks(rec: &Recorder, bound: Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < FORK_MIN_WAIT
        || (rec.registry.any_in_callback() != Some(false) && start.elapsed() < bound)
    {
        std::hint::spin_loop();
    }
}

/// How the process is ending, for the final flush.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ending {
    /// exit, or return from main: everything, the report included.
    Exit,
    /// A fatal signal: the dying thread waits, so no report, and threads busy in their
    /// buffer at the moment of death are skipped rather than waited for.
    Signal(i32),
    /// exec (or `_exit`, which also skips atexit): as for a signal.
    Replaced(&'static str),
}

/// One final flush at a time: a thread that dies while another one is exiting waits for that
/// flush to be done before it lets the process go.
static FINISHING: Mutex<()> = Mutex::new(());

/// Flushes every thread, waits for the collector, and says where the trace is.
pub fn finish() {
    finish_as(Ending::Exit);
}

/// The final flush, for any ending.
pub fn finish_as(ending: Ending) {
    // A forked child (disabled) must not take the lock: a parent thread may have held it at
    // the fork, and nobody would release it in the child.
    if recorder::state() == State::Disabled {
        return;
    }
    let _one_at_a_time = FINISHING.lock();
    if !recorder::transition(State::Recording, State::Finished) {
        // Registered but never an event: nothing to write, nothing to say, unless asked.
        if recorder::state() == State::Registered {
            let cfg = Config::from_env();
            if !cfg.quiet {
                eprintln!("accprof: the OpenACC runtime reported no events; no trace written");
            }
        }
        return;
    }
    let Some(rec) = recorder::recorder() else {
        return;
    };
    // Device records still in CUPTI's buffers go to the collector before its final flush.
    cupti::flush();
    crate::progress::note();
    crate::record::callback::finish_current_thread(rec);
    crate::record::callback::flush_orphans(rec);
    // Callbacks that saw the state before it changed finish their event; the writer then
    // reads every thread's buffer in place. A thread stopped inside a callback (a signal
    // ending) is not waited for long: what it committed before is read all the same.
    wait_for_callbacks(
        rec,
        if ending == Ending::Exit {
            EXIT_WAIT
        } else {
            DEATH_WAIT
        },
    );
    // A FIFO's reader that never came is not waited for any more.
    collector::program_ending();
    crate::progress::note();
    let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
    if rec.tx.send(Message::Shutdown(reply_tx)).is_err() {
        return;
    }
    // Bounded: a stuck disk must not hang the program's exit forever.
    let summary = match reply_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(s) => s,
        Err(_) => {
            eprintln!(
                "accprof: the trace writer did not finish within 30 s; the trace may be incomplete"
            );
            return;
        }
    };
    if ending == Ending::Exit {
        crate::write::symbols::append_at_exit(&rec.config, &summary);
    }
    // After the symbols, so that it counts the events threads still running at exit added
    // meanwhile.
    say_where(rec, &summary, ending);
    // Asked for explicitly: printed even with ACCPROF_QUIET.
    if let Some(line) = crate::self_time::line() {
        eprintln!("{line}");
    }
    if ending != Ending::Exit {
        return;
    }
    if let (Some(target), Some(path)) = (&rec.config.report, &summary.path) {
        crate::write::output::run_report(target, path);
    }
}

fn say_where(rec: &Recorder, s: &Summary, ending: Ending) {
    if let Some(err) = &s.error {
        eprintln!("accprof: {err}");
    }
    if s.failed {
        // Said once, when it happened (or just above).
        return;
    }
    if rec.config.quiet {
        return;
    }
    match &s.path {
        Some(p) => {
            let late = recorder::late::written();
            let mut line = format!(
                "accprof: {} events recorded to {}",
                s.events + late,
                p.display()
            );
            match ending {
                Ending::Exit => {}
                Ending::Signal(sig) => {
                    line.push_str(&format!(" before {}", death::signal_name(sig)))
                }
                Ending::Replaced(how) => line.push_str(&format!(" before {how}")),
            }
            if late > 0 {
                line.push_str(&format!(
                    " ({late} of them after the exit began, from threads still running; they add more until the process ends)"
                ));
            }
            if s.dropped > 0 {
                let threads = rec.registry.peak_threads();
                if threads >= rec.pool.max_buffers() {
                    // Every buffer was held by a recording thread: the writer had none to free.
                    line.push_str(&format!(
                        " ({} events DROPPED: {threads} threads recorded at once and each holds one of the {} buffers; lower ACCPROF_BUFFER_EVENTS or raise ACCPROF_MAX_BUFFER_MB)",
                        s.dropped,
                        rec.pool.max_buffers()
                    ));
                } else {
                    line.push_str(&format!(
                        " ({} events DROPPED because the trace writer fell behind; raise ACCPROF_MAX_BUFFER_MB)",
                        s.dropped
                    ));
                }
            }
            let (device, device_dropped) = cupti::counts();
            if cupti::active() {
                line.push_str(&format!(", {device} of them device records from CUPTI"));
            }
            if device_dropped > 0 {
                line.push_str(&format!(" (CUPTI DROPPED {device_dropped} device records)"));
            }
            let (timed, skipped, failed) = cuda_events::counts();
            if cuda_events::active() {
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
