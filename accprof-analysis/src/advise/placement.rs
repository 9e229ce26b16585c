//! Where a data region goes: at the innermost loop that encloses every repetition of the
//! constructs that move the arrays, across function boundaries. A function whose constructs
//! move arrays on every call repeats because a loop calls it: the region belongs in that loop
//! (a region inside the function would still copy on every call). Loops and calls are read from
//! the source files at hand (the constructs' files and their neighbours).

use crate::model::{Construct, Profile};
use crate::source::{self, callable_name, LoopSpan, SourceText};
use std::collections::HashMap;

/// A call on the way from the region's loop down to the constructs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub file: String,
    pub line: i64,
    /// The function called there.
    pub callee: String,
}

/// A loop that repeats some constructs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub file: String,
    /// The function the loop is in, as the source names it.
    pub function: Option<String>,
    pub the_loop: LoopSpan,
    /// The calls from the loop down to the constructs, outermost first (empty when the loop is
    /// in the constructs' own function).
    pub calls: Vec<Call>,
}

impl Placement {
    /// `heat.c:34-36 (main; it calls sweep at line 35)`: where the loop is, and the calls in
    /// it that reach the constructs.
    pub fn describe(&self) -> String {
        let file = self.file.rsplit('/').next().unwrap_or(&self.file);
        let direct: Vec<String> = self
            .calls
            .iter()
            .filter(|c| {
                c.file == self.file && c.line >= self.the_loop.start && c.line <= self.the_loop.end
            })
            .map(|c| format!("{} at line {}", c.callee, c.line))
            .collect();
        let mut what: Vec<String> = self.function.iter().cloned().collect();
        if !direct.is_empty() {
            what.push(format!("it calls {}", join_and(&direct)));
        }
        let mut s = if self.the_loop.end > self.the_loop.start {
            format!("{file}:{}-{}", self.the_loop.start, self.the_loop.end)
        } else {
            format!("{file}:{}", self.the_loop.start)
        };
        if !what.is_empty() {
            s.push_str(&format!(" ({})", what.join("; ")));
        }
        s
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Source files read once per advice run.
#[derive(Default)]
pub(crate) struct Sources {
    files: HashMap<String, Option<SourceText>>,
    /// The program's source files at hand (the constructs' files and their neighbours).
    program: Option<Vec<String>>,
}

impl Sources {
    fn get(&mut self, p: &Profile, file: &str) -> Option<&SourceText> {
        self.files
            .entry(file.to_string())
            .or_insert_with(|| source::read(p, file))
            .as_ref()
    }

    fn program(&mut self, p: &Profile) -> Vec<String> {
        self.program
            .get_or_insert_with(|| source::program_files(p))
            .clone()
    }
}

/// Whether the program uses `name` after the loop of `place`, in the rest of the loop's
/// function (freeing it is no use): `None` without the source.
pub(crate) fn used_after(
    p: &Profile,
    sources: &mut Sources,
    place: &Placement,
    name: &str,
) -> Option<bool> {
    let src = sources.get(p, &place.file)?;
    let base = accprof_symbols::base_name(name);
    // A member's name (`g->a`): its last part is what the source writes near it.
    let word = base.rsplit(['>', '.', '%']).next().unwrap_or(base);
    let fortran = src.language == crate::source::Language::Fortran;
    let lines = src.lines();
    let from = usize::try_from(place.the_loop.end).ok()?;
    for (i, l) in lines.iter().enumerate().skip(from) {
        let n = i as i64 + 1;
        if src.function_at(n) != place.function {
            break;
        }
        let code = if fortran {
            l.split('!').next().unwrap_or("").to_ascii_lowercase()
        } else {
            l.split("//").next().unwrap_or("").to_string()
        };
        let frees = ["free(", "delete", "deallocate", "acc_free"]
            .iter()
            .any(|f| code.contains(f));
        let word = if fortran {
            word.to_ascii_lowercase()
        } else {
            word.to_string()
        };
        if !frees && has_word(&code, &word) {
            return Some(true);
        }
    }
    Some(false)
}

/// Whether the first construct that moved `v` assigns to it before reading it, in the
/// source (`None` without the source, or when its body names the array otherwise).
pub(crate) fn written_first(
    p: &Profile,
    sources: &mut Sources,
    v: &crate::advise::VarTraffic,
) -> Option<bool> {
    let first = v.first_site()?;
    let c = p.construct(first.construct)?;
    let (file, line) = (c.location.file.as_deref()?, c.location.line?);
    sources
        .get(p, file)?
        .written_before_read(line, accprof_symbols::base_name(v.name()))
}

fn has_word(line: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(word)
        .any(|(i, _)| !line[..i].ends_with(is_word) && !line[i + word.len()..].starts_with(is_word))
}

/// How far up the calls the search goes.
const MAX_CALL_DEPTH: usize = 4;

/// The loops that repeat the constructs `cs` of one function, innermost first: the loops of
/// that function around them, then the loops around its call (when the program calls it from
/// one place), and so on up.
fn loops_above(p: &Profile, sources: &mut Sources, cs: &[&Construct]) -> Vec<Placement> {
    let Some(first) = cs.first() else {
        return Vec::new();
    };
    let Some(file) = first.location.file.clone() else {
        return Vec::new();
    };
    let starts: Vec<i64> = cs.iter().filter_map(|c| c.location.line).collect();
    let (Some(&lo), Some(&hi)) = (starts.iter().min(), starts.iter().max()) else {
        return Vec::new();
    };
    // The file must still be the one that ran.
    if source::read_matching(p, &file, &starts).is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut file = file;
    let (mut lo, mut hi) = (lo, hi);
    let mut calls: Vec<Call> = Vec::new();
    let mut function = first
        .location
        .function
        .as_deref()
        .map(|f| callable_name(f).to_string());
    for _ in 0..=MAX_CALL_DEPTH {
        let Some(src) = sources.get(p, &file) else {
            break;
        };
        // A construct's directive comes after its loop's header; a call may be on the header's
        // own line, a loop of one line (`for (...) f.step();`).
        let header_holds = !calls.is_empty();
        let mut loops: Vec<LoopSpan> = src
            .loops()
            .into_iter()
            .filter(|l| (l.start < lo || (header_holds && l.start == lo)) && l.end >= hi)
            .collect();
        loops.sort_by_key(|l| l.end - l.start);
        let in_function = src.function_at(lo);
        for l in loops {
            // A loop of another function never encloses a line of this one.
            if src.function_at(l.start) != in_function {
                continue;
            }
            out.push(Placement {
                file: file.clone(),
                function: in_function.clone(),
                the_loop: l,
                calls: calls.clone(),
            });
        }
        // Up to the caller: only when the program calls the function from one place.
        let Some(name) = function.clone().or(in_function) else {
            break;
        };
        let mut sites: Vec<(String, i64)> = Vec::new();
        for f in sources.program(p) {
            if let Some(s) = sources.get(p, &f) {
                for line in s.calls_of(&name) {
                    // A recursive call is no caller.
                    if s.function_at(line).as_deref() != Some(name.as_str()) {
                        sites.push((f.clone(), line));
                    }
                }
            }
        }
        // Files of other programs may sit in the same directory: the files this program's
        // constructs are in come first.
        let traced: Vec<&(String, i64)> = sites
            .iter()
            .filter(|(f, _)| {
                p.constructs
                    .iter()
                    .any(|c| c.location.file.as_deref() == Some(f))
            })
            .collect();
        let site = match (traced.as_slice(), sites.as_slice()) {
            ([one], _) => *one,
            ([], [one]) => one,
            _ => break,
        };
        let (caller_file, line) = site;
        calls.insert(
            0,
            Call {
                file: caller_file.clone(),
                line: *line,
                callee: name.clone(),
            },
        );
        file = caller_file.clone();
        (lo, hi) = (*line, *line);
        function = sources.get(p, &file).and_then(|s| s.function_at(*line));
        if function.is_none() {
            break;
        }
    }
    out
}

/// The innermost loop around every repetition of the constructs `groups` (each group: the
/// constructs of one function), if the sources show one.
pub(crate) fn place(
    p: &Profile,
    sources: &mut Sources,
    groups: &[Vec<&Construct>],
) -> Option<Placement> {
    let mut per_group = groups.iter().map(|g| loops_above(p, sources, g));
    let first = per_group.next()?;
    let rest: Vec<Vec<Placement>> = per_group.collect();
    let same = |a: &Placement, b: &Placement| a.file == b.file && a.the_loop == b.the_loop;
    let mut found = first
        .into_iter()
        .find(|cand| rest.iter().all(|g| g.iter().any(|o| same(cand, o))))?;
    // The calls of every group, for the wording.
    for g in &rest {
        if let Some(o) = g.iter().find(|o| same(&found, o)) {
            for c in &o.calls {
                if !found.calls.contains(c) {
                    found.calls.push(c.clone());
                }
            }
        }
    }
    Some(found)
}
