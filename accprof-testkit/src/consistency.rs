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
