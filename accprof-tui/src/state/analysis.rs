//! Advice findings from accprof-analysis, computed in a background thread so that opening a
//! large trace is not held up by the analysis pass; the findings panel says "analysing" until
//! they land. The same pass gives the constructs table its device-timed kernel and transfer rows
//! (see [`crate::state::table`]).

use crate::state::findings::Finding;
use crate::state::load::Loader;
use crate::state::profile_feed::ProfileJob;
use crate::state::store::Store;
use crate::state::table::{profile_rows, ProfileRow, TableRow};
use accprof_analysis::source::RegionEnds;
use accprof_analysis::{advise, Profile};
use accprof_timeline::format::duration;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, TryRecvError};

/// Per trace (source index), its findings and its profile's kernel and transfer rows (for traces
/// with device records), and each trace's data regions; or the error that stopped the analysis.
type JobResult = Result<
    (
        Vec<(usize, accprof_analysis::Finding)>,
        Vec<(usize, ProfileRow)>,
        Vec<RegionEnds>,
    ),
    String,
>;

/// What the analysis gave, and the run in progress if any.
#[derive(Debug)]
pub struct Analysis {
    pub findings: Vec<Finding>,
    /// Why `findings` is empty (analysis running, failed, or nothing to advise).
    pub note: String,
    /// Kernel and transfer rows of traces with device records; empty until the analysis is done.
    pub profile_rows: Vec<TableRow>,
    /// Why `profile_rows` is missing when the analysis failed.
    pub error: Option<String>,
    /// Per trace (source index), its data regions as its profile closed them, for the table's
    /// host rows of their exits; empty until the analysis is done.
    pub region_ends: Vec<RegionEnds>,
    job: Option<Receiver<JobResult>>,
    /// Profiles built while the traces were read, for the first analysis.
    built: Vec<ProfileJob>,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis {
            findings: Vec::new(),
            note: "No findings.".into(),
            profile_rows: Vec::new(),
            error: None,
            region_ends: Vec::new(),
            job: None,
            built: Vec::new(),
        }
    }
}

impl Analysis {
    /// Whether an analysis is running.
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    /// The analysis of traces whose profiles were built while they were read, one per trace
    /// in source order: the first [`Analysis::start`] takes them instead of reading again.
    pub fn with_profiles(built: Vec<ProfileJob>) -> Self {
        Analysis {
            built,
            ..Analysis::default()
        }
    }

    /// Starts analysing the loaded traces: from the profiles built while reading them, else
    /// (traces that grew since, `--follow`) by reading them again.
    pub fn start(&mut self, store: &Store, loader: &Loader) {
        let device = store.sources.iter().map(|s| s.device_activity).collect();
        let reread = |p: PathBuf| Profile::from_path(&p).map_err(|e| e.to_string());
        let built = std::mem::take(&mut self.built);
        let profiles: Vec<ProfileSource> = if built.is_empty() {
            let job = |p: PathBuf| Box::new(move || reread(p)) as ProfileSource;
            loader.paths().into_iter().map(job).collect()
        } else {
            // A feed given up while loading (its builder fell behind) is read again here.
            let job = |(job, p): (ProfileJob, PathBuf)| {
                Box::new(move || job.wait().map_or_else(|| reread(p), Ok)) as ProfileSource
            };
            built.into_iter().zip(loader.paths()).map(job).collect()
        };
        self.job = Some(spawn(profiles, device));
        self.note = "Analysing the trace for advice…".into();
    }

    /// Runs the analysis and waits for it (tests, and tools that want the findings at once).
    pub fn run_blocking(&mut self, store: &Store, loader: &Loader) {
        self.start(store, loader);
        if let Some(rx) = self.job.take() {
            let res = rx
                .recv()
                .unwrap_or_else(|_| Err("the analysis stopped unexpectedly".into()));
            self.take(res, loader);
        }
    }

    /// Takes the results in if the analysis finished. Returns whether anything changed.
    pub fn poll(&mut self, loader: &Loader) -> bool {
        let Some(rx) = &self.job else { return false };
        let res = match rx.try_recv() {
            Ok(r) => r,
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => Err("the analysis stopped unexpectedly".into()),
        };
        self.job = None;
        self.take(res, loader);
        true
    }

    fn take(&mut self, res: JobResult, loader: &Loader) {
        match res {
            Ok((list, rows, region_ends)) => {
                self.region_ends = region_ends;
                self.findings = list
                    .into_iter()
                    .map(|(src, f)| convert(loader, src, &f))
                    .collect();
                self.note = "No findings: accprof has no advice for this trace.".into();
                self.profile_rows = rows
                    .into_iter()
                    .map(|(src, r)| convert_row(loader, src, r))
                    .collect();
                self.error = None;
            }
            Err(e) => {
                self.note = format!("The analysis failed: {e}");
                self.error = Some(e);
            }
        }
    }
}

/// Where one trace's profile comes from, run in the analysis thread.
type ProfileSource = Box<dyn FnOnce() -> Result<Profile, String> + Send>;

/// Analyses the traces in a thread; `device[i]` says whether trace `i` has device records (then
/// its table rows for kernels and transfers come from the profile).
fn spawn(profiles: Vec<ProfileSource>, device: Vec<bool>) -> Receiver<JobResult> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut rows = Vec::new();
        let mut region_ends = Vec::new();
        for (i, profile) in profiles.into_iter().enumerate() {
            match profile() {
                Ok(profile) => {
                    region_ends.push(RegionEnds::of(&profile));
                    all.extend(advise(&profile).into_iter().map(|f| (i, f)));
                    if device.get(i).copied().unwrap_or(false) {
                        rows.extend(profile_rows(&profile).into_iter().map(|r| (i, r)));
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        all.sort_by_key(|f| std::cmp::Reverse(f.1.estimated_saving_ns));
        let _ = tx.send(Ok((all, rows, region_ends)));
    });
    rx
}

fn convert_row(loader: &Loader, source: usize, r: ProfileRow) -> TableRow {
    let jump = r.sample.and_then(|i| loader.rec_for(source, i));
    TableRow { jump, ..r.row }
}

fn convert(loader: &Loader, source: usize, f: &accprof_analysis::Finding) -> Finding {
    let evidence = f
        .events
        .first()
        .and_then(|e| loader.rec_for(source, e.index));
    let mut detail = vec![
        format!("at {}", f.location.display()),
        format!("change: {}", f.change),
    ];
    if f.estimated_saving_ns > 0 {
        detail.push(format!(
            "estimated saving: {}",
            duration(f.estimated_saving_ns)
        ));
    }
    detail.extend(f.evidence.details.iter().cloned());
    Finding {
        title: f.title.clone(),
        detail: detail.join("\n"),
        evidence,
    }
}
