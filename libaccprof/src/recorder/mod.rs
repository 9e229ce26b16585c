//! The bottom of the tool: the recorder every stage shares, the state it is in, the messages to
//! the writer thread and what it reports back. Depends on no other stage.
//!
//! - [`slots`]: per-thread event buffers and the pool they are recycled through.
//! - [`message`]: what the recording threads and device sources send the writer thread.
//! - [`late`]: events after the exit flush, appended straight to the file.
//! - [`live`]: the live file, whose shared mapping holds the buffers so a killed run keeps them.
//! - [`fork_gate`]: callbacks kept short while a thread forks.
//! - [`thread_id`]: the id a thread's events carry, for device records issued from it.

pub mod fork_gate;
pub mod late;
pub mod live;
pub mod message;
pub mod slots;
pub mod thread_id;

use crate::config::Config;
use crossbeam_channel::Sender;
use message::Message;
use slots::{Pool, Registry};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Once, OnceLock};

/// The tool's life in the process: registered, recording, finished (or disabled in a child).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum State {
    Idle = 0,
    Registered = 1,
    Recording = 2,
    Finished = 3,
    Disabled = 4,
}

static RECORDER: OnceLock<Recorder> = OnceLock::new();
static START: Once = Once::new();
/// What starts recording on the first event (lifecycle's start), set at registration.
static STARTER: OnceLock<fn()> = OnceLock::new();

/// The writer thread's OS id, so that a crash on it does not wait for itself.
static WRITER_TID: AtomicI32 = AtomicI32::new(-1);

/// Called by the writer thread when it starts.
pub fn set_writer_tid() {
    // SAFETY: gettid has no preconditions.
    WRITER_TID.store(unsafe { libc::gettid() }, Ordering::Release);
}

/// The writer thread's OS id, -1 before it runs. Async-signal-safe.
pub fn writer_tid() -> i32 {
    WRITER_TID.load(Ordering::Acquire)
}

/// Everything shared by the recording threads and the collector.
pub struct Recorder {
    pub config: Config,
    pub pool: Pool,
    pub registry: Registry,
    pub tx: Sender<Message>,
}

impl Recorder {
    /// A recorder with the environment's settings, no live file and no writer (its channel's
    /// other end is dropped): for unit tests of what recording threads keep.
    #[cfg(test)]
    pub fn for_tests() -> Recorder {
        let config = Config::from_env();
        Recorder {
            pool: Pool::new(
                config.buffer_words,
                config.max_buffers,
                std::time::Duration::from_millis(config.max_wait_ms),
                None,
            ),
            registry: Registry::default(),
            tx: crossbeam_channel::unbounded().0,
            config,
        }
    }

    /// Asks the collector to write out everything buffered so far (at runtime shutdown).
    pub fn request_flush(&self) {
        let _ = self.tx.send(Message::Flush);
    }
}

pub fn state() -> State {
    match crate::hot::state() {
        0 => State::Idle,
        1 => State::Registered,
        2 => State::Recording,
        3 => State::Finished,
        _ => State::Disabled,
    }
}

pub fn set_state(s: State) {
    crate::hot::set_state(s as u8);
}

/// Moves from `from` to `to`; false when the state was not `from`.
pub fn transition(from: State, to: State) -> bool {
    crate::hot::transition(from as u8, to as u8)
}

/// Remembers how recording starts; called at registration, before the first event.
pub fn set_starter(start: fn()) {
    let _ = STARTER.set(start);
}

/// Installs the recorder; `None` if one was installed already.
pub fn install(rec: Recorder) -> Option<&'static Recorder> {
    RECORDER.set(rec).ok()?;
    let rec = RECORDER.get()?;
    crate::hot::set_recorder(rec as *const Recorder as *const u8);
    Some(rec)
}

/// The recorder, if recording has started.
#[inline(always)]
pub fn recorder() -> Option<&'static Recorder> {
    // SAFETY: the hot line holds null or the address of RECORDER's value, which is set once and
    // never dropped.
    unsafe { (crate::hot::recorder() as *const Recorder).as_ref() }
}

/// The recorder to use for an event, starting recording on the first one; `None` when events
/// must be ignored (not registered, disabled after fork).
#[inline]
pub fn recorder_for_event() -> Option<&'static Recorder> {
    const RECORDING: u8 = State::Recording as u8;
    const FINISHED: u8 = State::Finished as u8;
    const REGISTERED: u8 = State::Registered as u8;
    match crate::hot::state() {
        RECORDING | FINISHED => RECORDER.get(),
        REGISTERED => {
            if let Some(start) = STARTER.get() {
                START.call_once(start);
            }
            RECORDER.get()
        }
        _ => None,
    }
}

/// Whether the exit flush has run: later events go straight to the file.
#[inline]
pub fn finished() -> bool {
    crate::hot::load() & crate::hot::STATE_MASK == State::Finished as u32
}
