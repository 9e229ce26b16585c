//! The program's source, when it is at hand: the language a file is written in (to word
//! directives in its syntax) and the statements around a construct's line (the loop that
//! encloses constructs, the line that closes a region, the clauses written on a directive).
//!
//! Files are found by the names the trace holds: an absolute path as it is, a relative one
//! against the current directory and then the profiled executable's directory. A file that
//! cannot be read simply gives no answer: advice then falls back to what the trace alone says.

mod calls;
mod scan;

pub use calls::callable_name;

use crate::model::Profile;
use std::path::{Path, PathBuf};

pub use scan::{LoopSpan, SourceText};

/// The language of a source file, by its name's extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Language {
    C,
    Fortran,
}

impl Language {
    /// Fortran for .f, .for, .f90, .f95, .f03, .f08 (any case); C (and C++) otherwise: the
    /// extensions the names from the program read the same way.
    pub fn of(file: &str) -> Language {
        match accprof_symbols::source_names::Syntax::of(file) {
            accprof_symbols::source_names::Syntax::Fortran => Language::Fortran,
            accprof_symbols::source_names::Syntax::C => Language::C,
        }
    }

    /// An OpenACC directive in this language: `#pragma acc wait(1)` or `!$acc wait(1)`.
    pub fn directive(self, body: &str) -> String {
        match self {
            Language::C => format!("#pragma acc {body}"),
            Language::Fortran => format!("!$acc {body}"),
        }
    }
}

/// The directive `body` in the syntax of `file`'s language (C when the file is unknown).
pub fn directive(file: Option<&str>, body: &str) -> String {
    Language::of(file.unwrap_or("")).directive(body)
}

/// The working directory the program ran in, as its trace's header says (key `cwd`).
pub fn working_directory(h: &accprof_trace::Header) -> Option<String> {
    h.extra
        .iter()
        .find(|(k, _)| k == "cwd")
        .map(|(_, v)| v.clone())
}

/// Where `file` (as the trace names it) is on this machine, if anywhere: an absolute path as
/// it is; a relative one from the current directory, the program's working directory when it
/// ran (so a report run from elsewhere finds it), then the program's own directory.
pub fn locate(p: &Profile, file: &str) -> Option<PathBuf> {
    let path = Path::new(file);
    if path.is_absolute() {
        return path.is_file().then(|| path.to_path_buf());
    }
    let run_dirs = p
        .sources
        .iter()
        .filter_map(|s| s.cwd.as_ref().map(PathBuf::from));
    let exe_dirs = p
        .sources
        .iter()
        .filter_map(|s| Path::new(&s.exe).parent().map(Path::to_path_buf));
    std::iter::once(PathBuf::from("."))
        .chain(run_dirs)
        .chain(exe_dirs)
        .map(|d| d.join(path))
        .find(|c| c.is_file())
}

/// Source files larger than this are not read (the largest generated sources are a few MB).
const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// The program's source files at hand: the files its constructs are in, and the other source
/// files of their directories (where the calls that repeat the constructs may be).
pub fn program_files(p: &Profile) -> Vec<String> {
    const MAX_FILES: usize = 512;
    let mut files: Vec<String> = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for c in &p.constructs {
        let Some(f) = c.location.file.as_deref() else {
            continue;
        };
        if files.iter().any(|k| k == f) {
            continue;
        }
        if let Some(path) = locate(p, f) {
            files.push(f.to_string());
            if let Some(d) = path.parent() {
                if !dirs.iter().any(|k| k == d) {
                    dirs.push(d.to_path_buf());
                }
            }
        }
    }
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut names: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && is_source_file(p))
            .collect();
        names.sort();
        for n in names {
            if files.len() >= MAX_FILES {
                return files;
            }
            let s = n.display().to_string();
            let known = files.iter().any(|k| locate(p, k).is_some_and(|l| l == n));
            if !known {
                files.push(s);
            }
        }
    }
    files
}

fn is_source_file(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(
        ext.as_str(),
        "c" | "h"
            | "cc"
            | "cpp"
            | "cxx"
            | "hpp"
            | "hh"
            | "hxx"
            | "f"
            | "for"
            | "ftn"
            | "f77"
            | "f90"
            | "f95"
            | "f03"
            | "f08"
    )
}

/// The text of `file`, when it is at hand.
pub fn read(p: &Profile, file: &str) -> Option<SourceText> {
    let path = locate(p, file)?;
    // The name comes from the trace: a regular file only, and no larger than a source file.
    let bytes = accprof_trace::files::read_regular(&path, MAX_SOURCE_BYTES).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(SourceText::new(Language::of(file), &text))
}

/// The text of `file` when it is at hand and still the one the program was built from: each of
/// `directive_lines` (lines where the trace saw constructs) holds an OpenACC directive. A file
/// edited since the run (the user's next step) gives no answer rather than wrong lines.
pub fn read_matching(p: &Profile, file: &str, directive_lines: &[i64]) -> Option<SourceText> {
    let src = read(p, file)?;
    directive_lines
        .iter()
        .all(|&l| src.is_directive(l))
        .then_some(src)
}

/// The data regions of a profile whose source is at hand, each from its directive's line to the
/// closing line of its block (`}` or `!$acc end data`): where every view puts a region's exit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionEnds {
    /// (file, function, directive line, closing line).
    regions: Vec<(String, Option<String>, i64, i64)>,
}

impl RegionEnds {
    /// The regions of `p`'s data constructs that were entered, read from their sources.
    pub fn of(p: &Profile) -> RegionEnds {
        use crate::model::ConstructKind;
        let mut cache: std::collections::HashMap<String, Option<SourceText>> =
            std::collections::HashMap::new();
        let mut regions = Vec::new();
        for c in &p.constructs {
            let (Some(file), Some(line)) = (c.location.file.as_deref(), c.location.line) else {
                continue;
            };
            if c.kind != ConstructKind::Data || c.reached == 0 {
                continue;
            }
            let src = cache
                .entry(file.to_owned())
                .or_insert_with(|| read(p, file));
            let Some(end) = src
                .as_ref()
                .filter(|s| s.is_directive(line))
                .and_then(|s| s.region_end(line))
            else {
                continue;
            };
            regions.push((file.to_owned(), c.location.function.clone(), line, end));
        }
        RegionEnds { regions }
    }

    /// The closing line of the region that begins at `line` of `file`, if one does.
    pub fn closing_of(&self, file: &str, line: i64) -> Option<i64> {
        self.regions
            .iter()
            .find(|(f, _, start, _)| f == file && *start == line)
            .map(|r| r.3)
    }

    /// Where a data region's exit that the runtime reported at `line` (in `function`, when
    /// known) belongs: the closing line of the innermost region holding that line strictly
    /// inside it (GCC reports an exit at its line table's last statement, or the loop header
    /// after the pragma). None for a line where a region begins (a nested region's entry) or
    /// outside every region.
    pub fn exit_line(&self, file: &str, function: Option<&str>, line: i64) -> Option<i64> {
        let same = |f: &String, func: &Option<String>| {
            f == file && function.is_none_or(|name| func.as_deref() == Some(name))
        };
        if self
            .regions
            .iter()
            .any(|(f, func, start, _)| same(f, func) && *start == line)
        {
            return None;
        }
        self.regions
            .iter()
            .filter(|(f, func, start, end)| same(f, func) && *start < line && line < *end)
            .min_by_key(|(_, _, start, end)| end - start)
            .map(|r| r.3)
    }
}

/// Gives data regions the closing line of their block from the source, where the file is at
/// hand ([`RegionEnds`]): an entry row without an end line gets the line of its region's `}`
/// (or `!$acc end data`), and an exit row that the runtime placed on a statement inside the
/// region moves to that closing line ([`RegionEnds::exit_line`]).
pub fn close_regions(p: &mut Profile) {
    let ends = RegionEnds::of(p);
    for c in &mut p.constructs {
        let (Some(file), Some(line)) = (c.location.file.as_deref(), c.location.line) else {
            continue;
        };
        if c.is_exit_only() {
            if let Some(end) = ends.exit_line(file, c.location.function.as_deref(), line) {
                c.location.line = Some(end);
            }
        } else if c.kind == crate::model::ConstructKind::Data && c.location.end_line.is_none() {
            c.location.end_line = ends.closing_of(file, line);
        }
    }
}
