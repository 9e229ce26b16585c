//! Dev-only test kit shared by the tests and the benchmark: synthetic traces.

pub mod synth;
