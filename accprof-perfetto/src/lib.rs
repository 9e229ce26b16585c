//! A streaming writer of Perfetto's native trace format for accprof timelines.
//!
//! Perfetto (ui.perfetto.dev, trace_processor) reads best its own protobuf format: a `Trace`
//! of `TracePacket`s carrying `TrackEvent`s, with strings interned. [`PerfettoWriter`] writes
//! that format to any `io::Write`, one packet at a time, in accprof's terms:
//!
//! - a process per MPI rank ([`PerfettoWriter::process`]),
//! - a track per host thread ([`thread`](PerfettoWriter::thread)), and named tracks under a
//!   process, a thread or a group of tracks ([`slice_track`](PerfettoWriter::slice_track): a
//!   device and its streams, an async queue),
//! - slices with name, category, source location and arguments ([`Event`]),
//! - counters such as bytes moved and device memory in use
//!   ([`counter_track`](PerfettoWriter::counter_track)),
//! - flows from a construct to the device work it issued ([`FlowId`]).
//!
//! ```
//! use accprof_perfetto::{Arg, ArgValue, CounterUnit, Event, PerfettoWriter};
//!
//! # fn main() -> std::io::Result<()> {
//! let mut w = PerfettoWriter::new(Vec::new());
//! let rank = w.process(4242, "laplace", &["rank 0"])?;
//! let main = w.thread(rank, 4242, "main")?;
//! let gpu = w.slice_track(rank, "device")?;
//! let stream = w.slice_track(gpu, "device stream 0x7")?;
//! let memory = w.counter_track(gpu, "device memory in use", CounterUnit::Bytes)?;
//!
//! let construct = w.name("acc_compute_construct");
//! let kernel = w.name("main_34_gpu");
//! let line = w.location("laplace.c", "main", 34);
//! let bytes = w.arg_name("bytes");
//! let flow = w.new_flow();
//!
//! let args = [Arg { name: bytes, value: ArgValue::Uint(4096) }];
//! w.slice(main, 1_000, 9_000, &Event::named(construct).location(line).args(&args).flows_out(&[flow]))?;
//! w.slice(stream, 2_000, 8_000, &Event::named(kernel).flows_in(&[flow]))?;
//! w.counter(memory, 1_500, 4096)?;
//! let (trace, stats) = w.finish()?;
//! assert_eq!(stats.events, 5); // two slices (begin and end each) and a counter value
//! assert_eq!(stats.bytes, trace.len() as u64);
//! # Ok(())
//! # }
//! ```

#![warn(clippy::undocumented_unsafe_blocks)]

mod event;
mod ids;
mod intern;
mod protos;
mod writer;

pub use event::{Arg, ArgValue, CounterUnit, CounterValue, Event};
pub use ids::{ArgNameId, CategoryId, FlowId, LocationId, NameId, StringId, TrackId};
pub use writer::{PerfettoWriter, Stats};
