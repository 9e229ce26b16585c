//! At a normal exit, after the footer: the source lines and names of every address the trace
//! uses, resolved from the binaries while they are still the builds that ran, appended as the
//! trace's symbols chunk (docs/trace-format.md). A rebuild in place, a deleted binary or a copy
//! of the trace to another machine then leaves its lines intact.
//!
//! It runs on the exiting thread, outside every callback, after the collector has written the
//! footer: it reads the trace back (so it adds nothing to recording) and resolves each distinct
//! address once. Fatal signals, exec and `_exit` skip it (no allocation or file parsing there);
//! `accprof run` does the same from outside for such runs. ACCPROF_SYMBOLS=off turns it off.

use crate::config::Config;
use crate::recorder::message::Summary;
use std::time::Instant;

/// Resolves and appends the symbols chunk of the finished trace `summary` names.
pub fn append_at_exit(config: &Config, summary: &Summary) {
    if !config.symbols || summary.failed {
        return;
    }
    let Some(path) = &summary.path else { return };
    // A trace streamed to a FIFO or device cannot be read back.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return;
    }
    let started = Instant::now();
    let table = match accprof_symbols::resolve_trace(path) {
        Ok((table, _unreadable)) => table,
        Err(e) => {
            // Readers say which modules they cannot read; a trace that does not read back is
            // worth a line now.
            eprintln!("accprof: source lines not kept in the trace: {e}");
            return;
        }
    };
    if table.is_empty() {
        return;
    }
    let written =
        crate::recorder::late::with_writer(|w| w.write_symbols(&table).and_then(|_| w.flush()));
    if let Some(Err(e)) = written {
        eprintln!("accprof: source lines not kept in {}: {e}", path.display());
    }
    // With the tool's other self-measurements: what keeping the lines cost the exit.
    if crate::config::flag_value("ACCPROF_SELF_TIME", false) {
        eprintln!(
            "accprof: self time: {} call sites and variables resolved into the trace at exit in {:.1} ms",
            table.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}
