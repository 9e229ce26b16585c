//! Where a callback's time goes, one stage at a time (the per-stage benchmark: built only with
//! the `bench-stages` feature, `libaccprof/benches/harness/stages.sh`; a shipped build compiles
//! every test here to `false`).
//!
//! `ACCPROF_BENCH_STAGE`, read when the library registers, stops each callback after one stage:
//! the harness loads several copies of the library, each registered under its own setting, and
//! times them in one process.

#[cfg(feature = "bench-stages")]
use std::sync::atomic::{AtomicU8, Ordering};

/// The callback returns after its prologue (hot word, clock, thread state, re-entry flag).
pub const PROLOGUE: u8 = 1;
/// ... after entering the panic guard and reading the event's kind (the runtime's structures
/// are read whole, later, when the record is built).
pub const VIEWS: u8 = 2;
/// ... after building the record on the thread's stack of open events (never in the buffer's
/// free words), but not committing it to the buffer.
pub const NO_EMIT: u8 = 3;

#[cfg(feature = "bench-stages")]
static STAGE: AtomicU8 = AtomicU8::new(0);

/// Reads `ACCPROF_BENCH_STAGE` (`prologue`, `views`, `no-emit`; anything else: `full`).
pub fn read_env() {
    #[cfg(feature = "bench-stages")]
    {
        let stage = match std::env::var("ACCPROF_BENCH_STAGE")
            .as_deref()
            .unwrap_or("")
        {
            "prologue" => PROLOGUE,
            "views" => VIEWS,
            "no-emit" => NO_EMIT,
            _ => 0,
        };
        STAGE.store(stage, Ordering::Relaxed);
    }
}

/// Whether callbacks stop after `stage`.
#[inline(always)]
pub fn stops_after(stage: u8) -> bool {
    #[cfg(feature = "bench-stages")]
    {
        STAGE.load(Ordering::Relaxed) == stage
    }
    #[cfg(not(feature = "bench-stages"))]
    {
        let _ = stage;
        false
    }
}
