//! libaccprof: the accprof tool library.
//!
//! Loaded into an OpenACC program with `LD_PRELOAD=libaccprof.so` or `ACC_PROFLIB=libaccprof.so`
//! (or both), it registers one callback for every event of the OpenACC profiling interface and
//! records each event into a trace file (format: docs/trace-format.md).
//!
//! How the pieces fit, bottom first:
//! - `recorder`: the recorder every stage shares, its state, per-thread buffers, the messages
//!   to the writer thread and the summary it reports back. Depends on no stage.
//! - `record`: the callback the runtime calls for every event and what each thread keeps.
//! - `write`: one background thread that writes full buffers to the file in chunks.
//! - `device`: device activity from CUPTI, or from CUDA events when CUPTI is not there.
//! - `heap`: names heap arrays by their allocation site.
//! - `lifecycle`: start on the first event, flush at runtime shutdown and exit, fork handling,
//!   the one line printed at exit, ACCPROF_REPORT.
//! - `registration`: how the callback gets registered (the spec's way and libgomp's).
//! - `nvtx`: the program's NVTX annotations (libaccprof is an NVTX tool).
//! - [`api`]: every C symbol the library exports.
//! - leaves: `clock`, `config`, `hot` (the word every callback reads first), `modules`,
//!   `progress` (how far the final flush has got), `self_time`, `sink` (the trace file or stream
//!   written to), `strings`, `unwind`.
//!
//! Rules the hot path keeps (the runtime calls us under its own global lock): no lock shared
//! between threads, no allocation after warm-up, no call into the OpenACC runtime, and no panic
//! escaping into C.
//!
//! Everything is private to the library but [`api`] (the C symbols) and [`mod@bench`] (what the
//! benchmarks and the library's own tests drive).

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod api;
mod bench_stage;
mod clock;
mod config;
mod content;
mod device;
mod heap;
mod hot;
mod lifecycle;
mod modules;
mod nvtx;
mod progress;
mod record;
mod recorder;
mod registration;
mod self_time;
mod sink;
mod strings;
mod unwind;
mod write;

/// What benchmarks and tests drive: register with a fake runtime, call the callback, finish.
pub mod bench {
    pub use crate::content::hash as content_hash;
    pub use crate::lifecycle::finish;
    pub use crate::record::callback::on_event;
    pub use crate::registration::register_with;
}
