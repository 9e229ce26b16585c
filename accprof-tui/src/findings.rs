//! Advice findings from accprof-analysis, computed in a background thread so that opening a
//! large trace is not held up by the analysis pass; the panel says "analysing" until they land.
//! The same pass gives the constructs table its device-timed kernel and transfer rows (see
//! [`crate::state::table`]).

use crate::app::App;
use crate::state::findings::Finding;
use crate::state::table::{profile_rows, ProfileRow, TableRow};
use accprof_analysis::format::duration;
use accprof_analysis::{advise, Profile};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, TryRecvError};

/// Per trace (source index), its findings and its profile's kernel and transfer rows (for traces
/// with device records); or the error that stopped the analysis.
type JobResult = Result<(Vec<(usize, accprof_analysis::Finding)>, Vec<(usize, ProfileRow)>), String>;

/// A running analysis.
#[derive(Debug)]
pub struct FindingsJob {
    rx: Receiver<JobResult>,
}

/// Starts analysing the traces; `device[i]` says whether trace `i` has device records (then its
/// table rows for kernels and transfers come from the profile).
pub fn start(paths: Vec<PathBuf>, device: Vec<bool>) -> FindingsJob {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut rows = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            match Profile::from_path(p) {
                Ok(profile) => {
                    all.extend(advise(&profile).into_iter().map(|f| (i, f)));
                    if device.get(i).copied().unwrap_or(false) {
                        rows.extend(profile_rows(&profile).into_iter().map(|r| (i, r)));
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            }
        }
        all.sort_by_key(|f| std::cmp::Reverse(f.1.estimated_saving_ns));
        let _ = tx.send(Ok((all, rows)));
    });
    FindingsJob { rx }
}

/// Starts the analysis for the app's traces.
pub fn attach(app: &mut App) {
    let Some(loader) = &app.loader else { return };
    let device = app.store.sources.iter().map(|s| s.device_activity).collect();
    app.findings_job = Some(start(loader.paths(), device));
    app.findings_note = "Analysing the trace for advice…".into();
}

/// Runs the analysis and waits for it (tests, and tools that want the findings at once).
pub fn attach_blocking(app: &mut App) {
    attach(app);
    if let Some(job) = app.findings_job.take() {
        let res = job.rx.recv().unwrap_or_else(|_| Err("the analysis stopped unexpectedly".into()));
        let (tx, rx) = channel();
        let _ = tx.send(res);
        app.findings_job = Some(FindingsJob { rx });
        poll(app);
    }
}

/// Takes the findings in if the analysis finished. Returns whether anything changed.
pub fn poll(app: &mut App) -> bool {
    let Some(job) = &app.findings_job else { return false };
    let res = match job.rx.try_recv() {
        Ok(r) => r,
        Err(TryRecvError::Empty) => return false,
        Err(TryRecvError::Disconnected) => Err("the analysis stopped unexpectedly".into()),
    };
    app.findings_job = None;
    match res {
        Ok((list, rows)) => {
            app.findings = list.into_iter().map(|(src, f)| convert(app, src, &f)).collect();
            app.findings_note = "No findings: accprof has no advice for this trace.".into();
            app.profile_rows = rows.into_iter().map(|(src, r)| convert_row(app, src, r)).collect();
            app.profile_error = None;
        }
        Err(e) => {
            app.findings_note = format!("The analysis failed: {e}");
            app.profile_error = Some(e);
        }
    }
    app.refresh_table();
    true
}

fn convert_row(app: &App, source: usize, r: ProfileRow) -> TableRow {
    let jump = r.sample.and_then(|i| app.loader.as_ref()?.rec_for(source, i));
    TableRow { jump, ..r.row }
}

fn convert(app: &App, source: usize, f: &accprof_analysis::Finding) -> Finding {
    let evidence = f.events.first().and_then(|e| app.loader.as_ref()?.rec_for(source, e.index));
    let mut detail = vec![format!("at {}", f.location.display()), format!("change: {}", f.change)];
    if f.estimated_saving_ns > 0 {
        detail.push(format!("estimated saving: {}", duration(f.estimated_saving_ns)));
    }
    detail.extend(f.evidence.details.iter().cloned());
    Finding { title: f.title.clone(), detail: detail.join("\n"), evidence }
}
