//! The writer thread's side: batches into chunks in the trace file.
//!
//! - [`collector`]: the one background thread that writes.
//! - [`output`]: where the trace goes, its header, and the report run at exit.
//! - [`create`]: the trace file created at that name, never through what is there already.
//! - [`symbols`]: the trace's symbols chunk, resolved at exit.

pub mod collector;
pub mod create;
pub mod output;
pub mod symbols;
