//! Dev-only test kit (never shipped: `publish = false`, a dev-dependency of the crates that use
//! it): traces made up for tests and benchmarks, written with accprof-trace's `TraceWriter` the
//! way the tool library writes them (events in the order each thread finished them).
//!
//! - [`builder`]: [`TraceBuilder`], a small trace built event by event (`ev`, `transfer`,
//!   `launch`, `point`, device records), plus [`builder::laplace_like`] and
//!   [`builder::write_repeated`] for million-event traces from a template.
//! - [`laplace`]: streaming generators of any size, in constant memory: the seeds' Laplace solver
//!   (naive and with a data region) and launches and transfers outside any construct on several
//!   threads ([`laplace::Shape`]).
//! - [`consistency`]: the check that every view of a trace gives the same counts and totals.
//!
//! `cargo run --release -p accprof-testkit --example synth_trace -- naive 10000000 big.trace`
//! writes a benchmark trace.

pub mod builder;
pub mod consistency;
pub mod laplace;

pub use builder::TraceBuilder;
