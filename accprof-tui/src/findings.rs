//! Advice findings for the findings panel.

use crate::app::App;
use std::path::PathBuf;

/// Fills the app's findings for the traces (see the analysis crate).
pub fn attach(app: &mut App, _traces: &[PathBuf]) {
    app.findings_note = "The advice engine (accprof-analysis) is not available in this build.".into();
}
