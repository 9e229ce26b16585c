//! The recording threads' side: the callback the runtime calls, and what each thread keeps.
//!
//! - [`callback`]: reads the fields the runtime filled, joins start and end, hands the result
//!   to [`thread_state`].
//! - [`thread_state`]: the open-construct stack, string interning, the thread's buffer.
//! - [`nvtx`]: a thread's NVTX ranges and the events they become (entry points: crate::nvtx).

pub mod callback;
pub mod nvtx;
pub mod thread_state;
