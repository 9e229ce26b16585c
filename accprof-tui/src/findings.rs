//! Advice findings from accprof-analysis, computed in a background thread so that opening a
//! large trace is not held up by the analysis pass; the panel says "analysing" until they land.

use crate::app::App;
use crate::state::findings::Finding;
use accprof_analysis::format::duration;
use accprof_analysis::{advise, Profile};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, TryRecvError};

/// Per trace (source index), its findings; or the error that stopped the analysis.
type JobResult = Result<Vec<(usize, accprof_analysis::Finding)>, String>;

/// A running analysis.
#[derive(Debug)]
pub struct FindingsJob {
    rx: Receiver<JobResult>,
}

/// Starts analysing the traces.
pub fn start(paths: Vec<PathBuf>) -> FindingsJob {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            match Profile::from_path(p) {
                Ok(profile) => all.extend(advise(&profile).into_iter().map(|f| (i, f))),
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            }
        }
        all.sort_by_key(|f| std::cmp::Reverse(f.1.estimated_saving_ns));
        let _ = tx.send(Ok(all));
    });
    FindingsJob { rx }
}

/// Starts the analysis for the app's traces.
pub fn attach(app: &mut App) {
    let Some(loader) = &app.loader else { return };
    app.findings_job = Some(start(loader.paths()));
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
        Ok(list) => {
            app.findings = list.into_iter().map(|(src, f)| convert(app, src, &f)).collect();
            app.findings_note = "No findings: accprof has no advice for this trace.".into();
        }
        Err(e) => app.findings_note = format!("The analysis failed: {e}"),
    }
    true
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
