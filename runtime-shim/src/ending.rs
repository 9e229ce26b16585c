//! How the process is ending, for the code that must not run the usual way then: the program's
//! exit is under way (its atexit handlers run, other threads may still be inside constructs), or
//! a runtime error is being reported. The runtime's exit handler and the error path read and set
//! these; neither needs the other.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

static EXITING: AtomicBool = AtomicBool::new(false);
static REPORTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread runs the program's exit (its atexit handlers).
    static EXITS_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Marks the process as exiting, run by this thread; true if it already was.
pub fn start_exit() -> bool {
    EXITS_HERE.with(|f| f.set(true));
    EXITING.swap(true, Ordering::AcqRel)
}

/// Whether the process is exiting: another thread's work can no longer be reported or
/// stopped, only left to the end of the process.
pub fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// Whether this thread is the one running the program's exit.
pub fn exits_here() -> bool {
    EXITS_HERE.with(Cell::get)
}

/// Marks a runtime error as being reported; true if one already was (by another thread).
pub fn start_report() -> bool {
    REPORTING.swap(true, Ordering::AcqRel)
}

/// Whether a runtime error is ending the program (the exit handler then leaves the device as
/// it is: it may be mid-operation).
pub fn reporting() -> bool {
    REPORTING.load(Ordering::Acquire)
}
