//! Runtime errors. The specification says an error in a data clause, an API call or an async
//! argument is a runtime error: like GCC's libgomp, the shim prints one line on stderr and ends
//! the program with status 1 (exit, not abort). Nothing here unwinds into C.

use crate::ending;
use crate::loc::Loc;
use std::ffi::CStr;
use std::fmt;

/// The error classes of OpenACC 3.x (`acc_error_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccError {
    /// Data was required present but is not (`acc_error_not_present`).
    NotPresent {
        host: usize,
        bytes: usize,
        name: String,
    },
    /// Part of a host range is present and part is not (`acc_error_partly_present`).
    PartlyPresent {
        host: usize,
        bytes: usize,
        name: String,
        present_host: usize,
        present_bytes: usize,
    },
    /// An async argument that is neither a queue number nor acc_async_noval/acc_async_sync.
    InvalidAsync(i64),
    /// The requested device type or number is not available (`acc_error_device_unavailable`).
    DeviceUnavailable(String),
    /// The device could not allocate (`acc_error_out_of_memory`).
    OutOfMemory { bytes: usize },
    /// A device (driver) operation failed.
    Device(String),
    /// A data routine's pointer argument `arg` (data_arg, or a memcpy routine's source or
    /// destination) is NULL with a nonzero byte count (`acc_error_invalid_null_pointer`); the
    /// error line names the routine.
    InvalidNullPointer { arg: &'static str, bytes: usize },
    /// An argument that the specification forbids (NULL where data is required, unmapping data
    /// that was not mapped, freeing a pointer that is not device memory, ...).
    InvalidArgument(String),
}

impl AccError {
    /// The specification's name for this class.
    pub fn class(&self) -> &'static str {
        match self {
            AccError::NotPresent { .. } => "acc_error_not_present",
            AccError::PartlyPresent { .. } => "acc_error_partly_present",
            AccError::InvalidAsync(_) => "acc_error_invalid_async",
            AccError::DeviceUnavailable(_) => "acc_error_device_unavailable",
            AccError::OutOfMemory { .. } => "acc_error_out_of_memory",
            AccError::Device(_) => "acc_error_device_failure",
            AccError::InvalidNullPointer { .. } => "acc_error_invalid_null_pointer",
            AccError::InvalidArgument(_) => "acc_error_invalid_argument",
        }
    }
}

impl AccError {
    /// `[addr, addr+bytes)` does not fit in the address space: a byte count like SIZE_MAX, or a
    /// garbage address. `what` says whose range it is ("data", "device address").
    pub fn past_address_space(what: &str, addr: u64, bytes: usize, name: &str) -> AccError {
        AccError::InvalidArgument(format!(
            "{what} [{addr:#x},+{bytes}]{} runs past the end of the address space",
            named(name)
        ))
    }
}

fn named(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" ({name})")
    }
}

impl fmt::Display for AccError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccError::NotPresent { host, bytes, name } => {
                write!(f, "data [{host:#x},+{bytes}]{} is not present on the device", named(name))
            }
            AccError::PartlyPresent { host, bytes, name, present_host, present_bytes } => write!(
                f,
                "data [{host:#x},+{bytes}]{} is partly present on the device: present is [{present_host:#x},+{present_bytes}]",
                named(name)
            ),
            AccError::InvalidAsync(a) => write!(f, "invalid async argument {a}"),
            AccError::DeviceUnavailable(s) => write!(f, "device unavailable: {s}"),
            AccError::OutOfMemory { bytes } => write!(f, "out of device memory allocating {bytes} bytes"),
            AccError::Device(s) => write!(f, "device failure: {s}"),
            AccError::InvalidNullPointer { arg, bytes } => {
                write!(f, "{arg} is a null pointer and bytes is {bytes}")
            }
            AccError::InvalidArgument(s) => write!(f, "{s}"),
        }
    }
}

pub type Result<T> = std::result::Result<T, AccError>;

/// Reports a runtime error and ends the program, as the specification requires: one line
/// naming the class, the directive or routine (`what`) and where it is in the source (its
/// `loc`, else the line of the GCC entry point's call from the program's debug information),
/// then `exit(1)`, as libgomp ends on an error: the program's stdio buffers are flushed and its
/// atexit handlers run (a tool's too), and no core is dumped for a user's error.
#[cold]
pub fn fatal(err: &AccError, what: &str, loc: &Loc) -> ! {
    stop(format!(
        "accshim: OpenACC runtime error [{}] in {what}{}: {err}",
        err.class(),
        place(loc)
    ))
}

/// Refuses what the runtime cannot do without risking a wrong result: one line naming the
/// directive (and its source line), then `exit(1)` as for an error.
#[cold]
pub fn unsupported(what: &str, why: &str) -> ! {
    stop(format!(
        "accshim: {what}{}: {why} is not supported by accshim; stopping before any wrong result",
        place(&Loc::UNKNOWN)
    ))
}

/// ` at file:line`: the location the caller gave, else that of the GCC entry point this thread
/// is in (from the return address), else "".
fn place(loc: &Loc) -> String {
    if !loc.file.is_null() && loc.line >= 0 {
        // SAFETY: Loc pointers are NUL-terminated static strings.
        let file = unsafe { CStr::from_ptr(loc.file) }.to_string_lossy();
        return format!(" at {file}:{}", loc.line);
    }
    crate::loc::describe_call(crate::loc::call_site())
}

/// Prints `line` and ends the program with status 1. Only the first thread to get here does:
/// one that comes after, or while the program is already exiting (main returned while this
/// thread was in a construct), waits for the end of the process instead, because exit() must
/// not run twice at once and the process's end is already under way. A routine called from an
/// atexit handler after the runtime's (on the exiting thread) ends with `_exit(1)` after
/// flushing stdio, as exit() may not be called again there.
fn stop(line: String) -> ! {
    let first = !ending::start_report();
    if first && ending::exiting() && !ending::exits_here() {
        wait_for_the_end();
    }
    if !first {
        wait_for_the_end();
    }
    eprintln!("{line}");
    if ending::exiting() {
        // SAFETY: fflush(NULL) flushes every open stream; _exit ends the process at once.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(1)
        }
    }
    std::process::exit(1)
}

/// Blocks this thread until the process ends (another thread is ending it).
fn wait_for_the_end() -> ! {
    loop {
        std::thread::park();
    }
}

/// Unwraps, or reports and ends the program ([`fatal`]).
pub trait OrFatal<T> {
    fn or_fatal(self, what: &str, loc: &Loc) -> T;
}

impl<T> OrFatal<T> for Result<T> {
    #[inline]
    fn or_fatal(self, what: &str, loc: &Loc) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fatal(&e, what, loc),
        }
    }
}

/// Runs `f`, aborting with a message if it panics: the body of every function that C calls
/// (an entry point of the program's, a tool's registration), so that no Rust panic unwinds
/// into C. A panic is the runtime's own fault, not the program's: it aborts.
#[inline]
pub(crate) fn guard<R>(name: &str, f: impl FnOnce() -> R) -> R {
    // A fork waits until the call returns (src/fork.rs).
    let _inside = crate::fork::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            eprintln!("accshim: internal error in {name}: {msg}");
            std::process::abort()
        }
    }
}
