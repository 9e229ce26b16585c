//! The names of a run's arrays, as `accprof report` and `advise` give them (from the trace),
//! and what of a name goes into a data clause. The one place that names a finding's array.

use accprof_symbols::{base_name, is_source_text};
use std::path::Path;

/// A finding's array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    /// The array as the report shows it: its source name (`T`, `grid%u`), else a label that
    /// says what the memory is (`heap@util.c:12`, `host 0x7f..+800`).
    pub variable: String,
    /// The array as a data clause takes it, as the trace's name writes it (`T[0:nx*ny]`, `A`),
    /// when that is source text.
    pub clause: Option<String>,
}

/// The trace's named arrays by host address: (address, name, whether the name is the source's).
pub struct Names {
    by_host: Vec<(u64, String, bool)>,
}

impl Names {
    pub fn load(trace: Option<&Path>) -> Names {
        let by_host = trace
            .and_then(|t| accprof_analysis::Profile::from_path(t).ok())
            .map(|p| {
                p.variables
                    .iter()
                    .filter_map(|v| Some((v.host_ptr?, v.name.clone(), v.named)))
                    .collect()
            })
            .unwrap_or_default();
        Names { by_host }
    }

    /// The array at `host` of `bytes`; `given` is the runtime's name for it (the clause's
    /// text, or the symbol table's name of a global), if any.
    pub fn name(&self, host: u64, bytes: u64, given: &str) -> Name {
        let traced = self.by_host.iter().find(|(h, _, _)| *h == host);
        let label = match traced {
            Some((_, n, true)) => n.clone(),
            _ if !given.is_empty() => given.to_string(),
            Some((_, n, false)) => n.clone(),
            None => format!("host {host:#x}+{bytes}"),
        };
        let clause = is_source_text(&label).then(|| label.clone());
        let variable = if clause.is_some() {
            base_name(&label).to_string()
        } else {
            label
        };
        Name { variable, clause }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[(u64, &str, bool)]) -> Names {
        Names {
            by_host: list
                .iter()
                .map(|&(h, n, s)| (h, n.to_string(), s))
                .collect(),
        }
    }

    #[test]
    fn a_source_name_goes_into_clauses_and_a_label_only_into_words() {
        let n = names(&[(0x10, "T[0:nx*ny]", true), (0x20, "heap@a.c:3", false)]);
        assert_eq!(
            n.name(0x10, 80, ""),
            Name {
                variable: "T".into(),
                clause: Some("T[0:nx*ny]".into())
            }
        );
        assert_eq!(n.name(0x20, 80, "").clause, None);
        assert_eq!(n.name(0x20, 80, "").variable, "heap@a.c:3");
        // The runtime's name beats a label of the trace.
        assert_eq!(n.name(0x20, 80, "b").clause.as_deref(), Some("b"));
        assert_eq!(n.name(0x30, 80, "").variable, "host 0x30+80");
    }
}
