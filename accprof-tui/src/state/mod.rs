//! The loaded traces, independent of how they are drawn: the compact event store, the loader
//! that fills it (once, or again and again while following), and the background analysis.
//! Nothing here knows about screens or keys; the views in [`crate::view`] read it.
//!
//! Modules from the bottom up: `kind` (categories), `track` (a row's events and prefix sums),
//! `constructs` and `device` (columns filled while reading), `store`, then what reads the store:
//! `load` (with `profile_feed`), `table`, `search`, `pairing`, `analysis`.

pub mod analysis;
pub mod constructs;
pub mod device;
pub mod findings;
pub mod kind;
pub mod load;
pub mod pairing;
pub mod profile_feed;
pub mod search;
pub mod store;
pub mod table;
pub mod track;

use analysis::Analysis;
use load::Loader;
use std::path::PathBuf;
use store::Store;

/// Everything known about the traces being shown.
#[derive(Debug)]
pub struct State {
    pub store: Store,
    pub loader: Loader,
    pub analysis: Analysis,
    /// Still reading what the running program appends (`--follow`).
    pub following: bool,
}

impl State {
    /// Opens the traces and reads every event there is now. `progress` is called now and then
    /// with (bytes read, total bytes) of the trace being read. Fails with the reader's one-line
    /// message on the first unreadable trace.
    ///
    /// The analysis's profiles are built from the same read, in a thread of their own, when
    /// a core is free for it ([`profile_feed::spare_core`]); else, or when that thread falls
    /// behind, or when following a growing trace, the analysis reads the traces again after
    /// the timeline is up: the timeline never waits for the findings.
    pub fn open(
        paths: &[PathBuf],
        follow: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Self, accprof_trace::TraceError> {
        let mut store = Store::new(follow);
        let mut loader = Loader::open(paths, &mut store, !follow && profile_feed::spare_core())?;
        loader.warn_no_end_marker = !follow;
        loader.poll(&mut store, progress)?;
        let analysis = Analysis::with_profiles(loader.finish_profiles());
        Ok(State {
            store,
            loader,
            analysis,
            following: follow,
        })
    }

    /// Reads what followed traces appended; returns how many events were added.
    pub fn poll_follow(&mut self) -> Result<usize, accprof_trace::TraceError> {
        self.loader.poll(&mut self.store, &mut |_, _| {})
    }

    /// Starts the advice analysis in the background.
    pub fn start_analysis(&mut self) {
        self.analysis.start(&self.store, &self.loader);
    }

    /// Runs the advice analysis and waits for it.
    pub fn run_analysis(&mut self) {
        self.analysis.run_blocking(&self.store, &self.loader);
    }

    /// Takes the analysis's results in if it finished; whether anything changed.
    pub fn poll_analysis(&mut self) -> bool {
        self.analysis.poll(&self.loader)
    }

    /// The trace files, in source order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.loader.paths()
    }
}
