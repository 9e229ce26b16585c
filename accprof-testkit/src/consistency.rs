//! The consistency check: every view of one trace (report, export, plot, the TUI's
//! tables) must give the same counts and totals. Each view's test extracts its figures into a
//! [`ViewFigures`] under shared keys (`"compute constructs"`, `"launches"`, ...);
//! [`check_consistent`] compares every key that two or more views give.
//!
//! ```
//! use accprof_testkit::consistency::{check_consistent, ViewFigures};
//! let mut report = ViewFigures::new("report");
//! report.set("launches", 20);
//! let mut tui = ViewFigures::new("tui");
//! tui.set("launches", 20);
//! assert_eq!(check_consistent(&[report, tui]), Ok(1));
//! ```

use std::collections::BTreeMap;
use std::fmt::Display;

/// The figures one view gives for a trace, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewFigures {
    pub view: String,
    pub figures: BTreeMap<String, String>,
}

impl ViewFigures {
    pub fn new(view: &str) -> Self {
        Self {
            view: view.into(),
            figures: BTreeMap::new(),
        }
    }

    /// Records `key`'s value in this view (numbers and formatted texts compare as text).
    pub fn set(&mut self, key: &str, value: impl Display) -> &mut Self {
        self.figures.insert(key.into(), value.to_string());
        self
    }
}

/// Compares every key given by two or more views. `Ok` with the number of comparisons made (a
/// test should check it is not zero), or every disagreement, one per line.
pub fn check_consistent(views: &[ViewFigures]) -> Result<usize, String> {
    let mut compared = 0;
    let mut wrong = Vec::new();
    for (i, a) in views.iter().enumerate() {
        for b in &views[i + 1..] {
            for (key, va) in &a.figures {
                let Some(vb) = b.figures.get(key) else {
                    continue;
                };
                compared += 1;
                if va != vb {
                    wrong.push(format!("{key}: {} says {va}, {} says {vb}", a.view, b.view));
                }
            }
        }
    }
    if wrong.is_empty() {
        Ok(compared)
    } else {
        Err(wrong.join("\n"))
    }
}

/// A trace whose data region ends where only its source says: `region.c` (written into `dir`
/// beside the trace) opens `#pragma acc data` at line 30 and closes its block at line 50, while
/// the runtime placed the region's exit at line 45, a statement inside it (as GCC does). The
/// region copies `A` in and out; a compute construct at line 40 runs inside it; the header
/// announces device activity and every transfer and launch has its device record. Every view
/// that closes regions (report, advise, diff, plot, the TUI's analysis) must put the exit at 50.
pub fn data_region_trace(dir: &std::path::Path) -> std::path::PathBuf {
    data_region_trace_with(dir, true)
}

/// [`data_region_trace`], with its device records and the header's device activity when
/// `device`, else its host events only (views count those rows themselves).
pub fn data_region_trace_with(dir: &std::path::Path, device: bool) -> std::path::PathBuf {
    use crate::builder::{construct, TraceBuilder};
    use accprof_abi::{acc_construct_t, acc_event_t};
    use accprof_trace::{device, Field};
    let src = dir.join("region.c");
    let mut text = String::new();
    for line in 1..=60 {
        text.push_str(match line {
            30 => "#pragma acc data copy(A[0:n])",
            31 => "{",
            39 => "#pragma acc parallel loop",
            40 => "  for (int i = 0; i < n; i++) A[i] += 1;",
            45 => "  step(A, n);",
            50 => "}",
            _ => "  ;",
        });
        text.push('\n');
    }
    std::fs::write(&src, text).expect("the source is written");
    let file = src.to_str().expect("a UTF-8 path");
    let mut s = TraceBuilder::new("/bench/region", 7, None);
    if device {
        s.header
            .extra
            .push(("device_activity".into(), "cupti".into()));
    }
    let mib = 1u64 << 20;
    let at = |s: &mut TraceBuilder, line: i64| {
        s.at(file, "main", line);
        s.events
            .last_mut()
            .expect("an event")
            .set_i64(Field::EndLineNo, line);
    };
    // The region's transfers name it as their parent construct, as runtimes report them.
    let of_region = |s: &mut TraceBuilder| {
        construct(
            s.events.last_mut().expect("an event"),
            acc_construct_t::DATA,
        );
    };
    s.transfer(
        acc_event_t::ENQUEUE_UPLOAD_START,
        2_000,
        4_000,
        0,
        "A",
        8 * mib,
        None,
    );
    at(&mut s, 30);
    of_region(&mut s);
    construct(
        s.ev(acc_event_t::ENTER_DATA_START, 1_000, 5_000, 0),
        acc_construct_t::DATA,
    );
    at(&mut s, 30);
    s.launch(6_500, 8_000, 0, "main_40_gpu", (64, 1, 128), None);
    at(&mut s, 40);
    construct(
        s.ev(acc_event_t::COMPUTE_CONSTRUCT_START, 6_000, 9_000, 0),
        acc_construct_t::PARALLEL,
    );
    at(&mut s, 40);
    s.transfer(
        acc_event_t::ENQUEUE_DOWNLOAD_START,
        11_000,
        13_000,
        0,
        "A",
        8 * mib,
        None,
    );
    at(&mut s, 45);
    of_region(&mut s);
    construct(
        s.ev(acc_event_t::EXIT_DATA_START, 10_000, 14_000, 0),
        acc_construct_t::DATA,
    );
    at(&mut s, 45);
    let trace = dir.join("region.trace");
    if !device {
        s.write(&trace);
        return trace;
    }
    s.device_copy(
        2_600,
        3_600,
        Some(0x42),
        Some((0, 2_500)),
        device::COPY_HTOD,
        8 * mib,
        Some("A"),
    );
    s.device_kernel(7_000, 7_800, Some(0x42), Some((0, 6_600)), "main_40_gpu");
    s.device_copy(
        11_600,
        12_600,
        Some(0x42),
        Some((0, 11_500)),
        device::COPY_DTOH,
        8 * mib,
        Some("A"),
    );
    s.write(&trace);
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disagreements_are_named() {
        let mut a = ViewFigures::new("report");
        a.set("launches", 3).set("uploads", 2);
        let mut b = ViewFigures::new("export");
        b.set("launches", 4).set("events", 9);
        assert_eq!(
            check_consistent(&[a.clone(), b]),
            Err("launches: report says 3, export says 4".into())
        );
        assert_eq!(check_consistent(&[a]), Ok(0));
    }
}
