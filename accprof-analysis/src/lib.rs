//! What an accprof trace says: the [`Profile`] (per construct, kernel and variable, with a
//! summary), the advice ([`advise()`] -> [`Finding`]s), the comparison of two profiles
//! ([`diff::diff`]) and the rendering of the report ([`report`]). Used by `accprof report`,
//! `accprof advise`, `accprof diff`, the TUI and `accprof plot`.
//!
//! # Building a profile
//!
//! ```no_run
//! use accprof_analysis::{advise, Profile};
//! // Streams the file: memory does not grow with the number of events.
//! let profile = Profile::from_path("accprof.laplace.1234.trace")?;
//! println!("{} compute constructs, {} in transfers", profile.constructs.len(),
//!          accprof_analysis::format::duration(profile.summary.transfers_ns()));
//! for f in advise(&profile) {
//!     println!("{}: {} -> {}", f.location.display(), f.title, f.change);
//! }
//! # Ok::<(), accprof_trace::TraceError>(())
//! ```
//!
//! - [`Profile::from_path`] / [`Profile::from_path_with_progress`] stream a trace file;
//!   [`Profile::from_trace`] takes a loaded [`accprof_trace::Trace`]; [`ProfileBuilder`] takes
//!   events one at a time (for a reader of your own, or `--follow`).
//! - [`merge`] sums the profiles of several traces (the ranks of one MPI job).
//!
//! # What the tables hold
//!
//! - [`Profile::summary`]: wall time, host time in compute constructs, kernel launches,
//!   transfers (bytes, GB/s via [`gbps`]), waits, device initialization and the untracked host
//!   time (the program's own work, outside every OpenACC event).
//! - [`Profile::constructs`]: per source file / function / line / device and [`ConstructKind`]
//!   (compute, data, enter/exit data, update, wait, init): times reached, host time
//!   (count/total/min/max, avg via [`Timing::avg_ns`]) and the operations inside it
//!   ([`ConstructChild`]: transfers, launches, waits, allocations, per line).
//! - [`Profile::kernels`]: launches, gang / worker / vector ranges, launch time.
//! - [`Profile::variables`]: per variable (or host address range when the runtime gives no
//!   name, as GCC) and [`Direction`]: transfers, bytes, time, GB/s.
//! - [`Profile::transfer_sites`], [`Profile::roundtrips`], [`Profile::slice_runs`],
//!   [`Profile::allocs`]: the patterns the advice rules read.
//!
//! Every duration is a [`Timing`] tagged with its [`TimeSource`]: `Host` (between the runtime's
//! start and end callbacks, on the host thread) or `Device` (the device's own records, where a
//! trace carries them). Every table row keeps a few [`EventRef`]s (the event's index in the trace and its
//! times), so that a UI can jump to the evidence; times are monotonic nanoseconds
//! (subtract [`ProfileSource::start_monotonic_ns`] for time since the start).
//!
//! # Advice
//!
//! [`advise()`] returns [`Finding`]s ordered by `estimated_saving_ns`: rule ([`Rule`]), title,
//! location (file, lines, function), evidence, the saving and the concrete change, e.g.
//! "wrap lines 57-80 in `#pragma acc data copy(A) create(Anew)`", with `events` and
//! `time_ranges` pointing at the evidence.
//!
//! Synthetic traces for tests and benchmarks are in the dev-only `accprof-testkit` crate.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod advise;
pub mod build;
pub mod diff;
pub mod host_fallback;
/// Durations, bytes and rates for people: the formatters every view shares.
pub use accprof_timeline::format;
pub mod load;
pub mod model;
pub mod occupancy;
pub mod report;
pub mod runtime_internal;
pub mod source;

pub use advise::{advise, Evidence, Finding, FindingLocation, Rule};
pub use build::ProfileBuilder;
pub use load::{merge, KernelNameNotes, Progress};
pub use model::*;
