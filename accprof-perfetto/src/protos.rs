//! Perfetto's trace messages, as prost types: the subset of google/perfetto's protos that accprof
//! writes, vendored under `proto/` with the upstream field numbers.
//!
//! `perfetto.protos.rs` is generated, never edited by hand: run the generator in `codegen/`
//! (see the crate README) after changing a `.proto` file, and commit both.

#![allow(missing_docs, dead_code, clippy::all, rustdoc::all)]

include!("protos/perfetto.protos.rs");
