//! Where a finding is in the program's source: a file and line, the line's text, and the
//! language its directives are written in.

use accprof_analysis::source::Language;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The program's language, from a source file's extension: the fix's directive syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Fortran,
}

impl Lang {
    pub fn of(file: &str) -> Lang {
        match Language::of(file) {
            Language::Fortran => Lang::Fortran,
            Language::C => Lang::C,
        }
    }
    pub fn language(self) -> Language {
        match self {
            Lang::Fortran => Language::Fortran,
            Lang::C => Language::C,
        }
    }
    pub fn directive(self, body: &str) -> String {
        match self {
            Lang::C => format!("#pragma acc {body}"),
            Lang::Fortran => format!("!$acc {body}"),
        }
    }
}

/// A source line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Line {
    pub file: String,
    pub line: u32,
}

impl Line {
    pub fn of(v: &Value, key: &str) -> Option<Line> {
        let o = v.get(key)?;
        Some(Line {
            file: o.get("file")?.as_str()?.to_string(),
            line: u32::try_from(o.get("line")?.as_u64()?).ok()?,
        })
    }
    pub fn short(&self) -> String {
        let f = Path::new(&self.file)
            .file_name()
            .map_or(self.file.clone(), |n| n.to_string_lossy().into_owned());
        format!("{f}:{}", self.line)
    }
    /// The line's text, if the file is there.
    pub fn text(&self) -> Option<String> {
        read_source(&self.file)?
            .lines()
            .nth(self.line.checked_sub(1)? as usize)
            .map(str::to_string)
    }
}

/// A source file a finding names, if it is a regular file of at most 64 MiB: the name comes
/// with the trace, and a FIFO or a /proc file there must not hang or flood the command.
pub fn read_source(file: &str) -> Option<String> {
    let bytes = accprof_trace::files::read_regular(Path::new(file), 64 << 20).ok()?;
    String::from_utf8(bytes).ok()
}
