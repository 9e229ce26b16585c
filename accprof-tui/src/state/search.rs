//! Search and filter: which events match a query on source file, line, variable or kernel name.
//!
//! Queries:
//! - `laplace.c:40`: events at that file (name contains `laplace.c`) and line;
//! - `40` (digits only): events at line 40 of any file;
//! - anything else: events whose kernel or variable name, or source file, contains it
//!   (case-insensitive).
//!
//! Matching goes string by string first (a trace has few distinct strings), then record by
//! record over the compact columns, so filtering ten million events takes a fraction of a second.

use crate::state::kind::BarKind;
use crate::state::store::{Store, NO_STR};
use crate::state::track::Track;

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Query {
    Line(i32),
    FileLine(String, i32),
    Text(String),
}

fn parse(q: &str) -> Query {
    let q = q.trim();
    if let Ok(l) = q.parse::<i32>() {
        return Query::Line(l);
    }
    if let Some((file, line)) = q.rsplit_once(':') {
        if let Ok(l) = line.trim().parse::<i32>() {
            return Query::FileLine(file.trim().to_lowercase(), l);
        }
    }
    Query::Text(q.to_lowercase())
}

/// Which records match `query`, one flag per record.
pub fn matching_records(store: &Store, query: &str) -> Vec<bool> {
    let q = parse(query);
    let text = match &q {
        Query::Text(t) | Query::FileLine(t, _) => t.clone(),
        Query::Line(_) => String::new(),
    };
    let hit: Vec<bool> = (0..store.strings.len() as u32)
        .map(|id| {
            store
                .strings
                .get(id)
                .is_some_and(|s| s.to_lowercase().contains(&text))
        })
        .collect();
    let s_hit = |id: u32| id != NO_STR && hit[id as usize];
    let r = &store.records;
    (0..r.len())
        .map(|i| match &q {
            Query::Line(l) => r.line[i] == *l,
            Query::FileLine(_, l) => r.line[i] == *l && s_hit(r.file[i]),
            Query::Text(_) => s_hit(r.name[i]) || s_hit(r.file[i]),
        })
        .collect()
}

/// A row holding only the matching events, with each one's index in the full row.
#[derive(Clone, Debug, Default)]
pub struct FilteredTrack {
    pub track: Track,
    pub orig: Vec<u32>,
}

/// The timeline as the filter shows it.
#[derive(Clone, Debug)]
pub struct Filter {
    pub query: String,
    pub matches: usize,
    /// Per lane, per row.
    pub lanes: Vec<Vec<FilteredTrack>>,
}

impl Filter {
    pub fn build(store: &Store, query: &str) -> Filter {
        let hits = matching_records(store, query);
        let mut matches = 0;
        let lanes = store
            .lanes
            .iter()
            .map(|l| {
                l.tracks
                    .iter()
                    .map(|t| {
                        let mut f = FilteredTrack::default();
                        for i in 0..t.len() {
                            if hits[t.rec[i] as usize] {
                                f.track.push(
                                    t.start[i],
                                    t.end[i],
                                    BarKind::from_u8(t.cat[i]),
                                    t.rec[i],
                                );
                                f.orig.push(i as u32);
                            }
                        }
                        f.track.finish();
                        matches += f.orig.len();
                        f
                    })
                    .collect()
            })
            .collect();
        Filter {
            query: query.to_string(),
            matches,
            lanes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_by_shape() {
        assert_eq!(parse("40"), Query::Line(40));
        assert_eq!(
            parse("Laplace.c:40"),
            Query::FileLine("laplace.c".into(), 40)
        );
        assert_eq!(parse("Anew"), Query::Text("anew".into()));
    }
}
