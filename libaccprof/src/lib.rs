//! libaccprof: the accprof tool library.
//!
//! Loaded into an OpenACC program with `LD_PRELOAD=libaccprof.so` or `ACC_PROFLIB=libaccprof.so`
//! (or both), it registers one callback for every event of the OpenACC profiling interface and
//! records each event into a trace file (format: docs/trace-format.md).
//!
//! How the pieces fit:
//! - [`registration`]: the exported `acc_register_library`, and the constructor that registers
//!   through `acc_prof_register` directly for runtimes that never call it (GCC's libgomp).
//! - [`callback`]: the function the runtime calls for every event: reads the fields the runtime
//!   filled, joins start and end, hands the result to [`thread_state`].
//! - [`thread_state`]: per-thread buffers ([`slots`]), the open-construct stack, string interning.
//! - [`collector`]: one background thread that writes full buffers to the file in chunks.
//! - [`cupti`]: device activity (kernels, copies, memsets with device times) from CUPTI, when it
//!   is there.
//! - [`cuda_events`]: device times from CUDA events recorded on the streams a runtime hands out
//!   in acc_api_info, when CUPTI is not there.
//! - [`heap`]: names heap arrays by their allocation site: malloc & co. interposed when
//!   LD_PRELOADed, big blocks queued to the collector, which tags events whose host pointer lies
//!   in one.
//! - [`lifecycle`]: start on the first event, flush at runtime shutdown and exit, fork handling,
//!   the one line printed at exit, ACCPROF_REPORT.
//!
//! Rules the hot path keeps (the runtime calls us under its own global lock): no lock shared
//! between threads, no allocation after warm-up, no call into the OpenACC runtime, and no panic
//! escaping into C.

pub mod callback;
pub mod clock;
pub mod collector;
pub mod config;
pub mod cuda_events;
pub mod cupti;
pub mod heap;
pub mod lifecycle;
pub mod modules;
pub mod output;
pub mod registration;
pub mod self_time;
pub mod slots;
pub mod strings;
pub mod thread_state;
pub mod unwind;

pub use callback::on_event;
