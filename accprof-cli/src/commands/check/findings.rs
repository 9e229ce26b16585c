//! The checker's findings: read from the runtime's report, named, and given a message and a fix
//! in the program's language.

use crate::error::CliError;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The finding kinds, with the names the JSON and SARIF outputs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    ResultsDropped,
    StaleHostRead,
    StaleDeviceRead,
    HostMemoryInKernel,
    LeakAtExit,
    RedundantTransfer,
    UnusedTransfer,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::ResultsDropped,
        Kind::StaleHostRead,
        Kind::StaleDeviceRead,
        Kind::HostMemoryInKernel,
        Kind::LeakAtExit,
        Kind::RedundantTransfer,
        Kind::UnusedTransfer,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Kind::ResultsDropped => "results_dropped",
            Kind::StaleHostRead => "stale_host_read",
            Kind::StaleDeviceRead => "stale_device_read",
            Kind::HostMemoryInKernel => "host_memory_in_kernel",
            Kind::LeakAtExit => "leak_at_exit",
            Kind::RedundantTransfer => "redundant_transfer",
            Kind::UnusedTransfer => "unused_transfer",
        }
    }

    fn from_id(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.id() == s)
    }

    /// Errors give wrong results on a GPU; a leak holds device memory; waste only costs time.
    pub fn level(self) -> super::Level {
        use super::Level::*;
        match self {
            Kind::ResultsDropped
            | Kind::StaleHostRead
            | Kind::StaleDeviceRead
            | Kind::HostMemoryInKernel => Error,
            Kind::LeakAtExit => Warning,
            Kind::RedundantTransfer | Kind::UnusedTransfer => Note,
        }
    }

    /// One line on what the kind means (SARIF's rule description, the text's headings).
    pub fn summary(self) -> &'static str {
        match self {
            Kind::ResultsDropped => "a device copy changed by a kernel is released without a copy back",
            Kind::StaleHostRead => "the host uses an array whose device copy a kernel changed, before any update self or copyout",
            Kind::StaleDeviceRead => "a kernel uses a device copy after the host changed the array, without update device",
            Kind::HostMemoryInKernel => "a kernel is given host memory (a pointer passed by value, a member not attached)",
            Kind::LeakAtExit => "device data is still mapped when the program ends",
            Kind::RedundantTransfer => "a transfer moved bytes the destination already held",
            Kind::UnusedTransfer => "a transfer whose data was not read before it went back",
        }
    }
}

/// The program's language, from a source file's extension: the fix's directive syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Fortran,
}

impl Lang {
    fn of(file: &str) -> Lang {
        let ext = file.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        if ext.starts_with('f') {
            Lang::Fortran
        } else {
            Lang::C
        }
    }
    fn directive(self, body: &str) -> String {
        match self {
            Lang::C => format!("#pragma acc {body}"),
            Lang::Fortran => format!("!$acc {body}"),
        }
    }
}

/// A source line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Line {
    pub file: String,
    pub line: u32,
}

impl Line {
    fn of(v: &Value, key: &str) -> Option<Line> {
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
    fn text(&self) -> Option<String> {
        read_source(&self.file)?
            .lines()
            .nth(self.line.checked_sub(1)? as usize)
            .map(str::to_string)
    }
}

/// One finding, ready to print.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub variable: String,
    /// Where the problem shows (per kind: the host access, the host write, the release, the
    /// mapping, the transfer).
    pub at: Option<Line>,
    /// The construct it concerns.
    pub construct: Option<Line>,
    pub message: String,
    pub fix: String,
}

/// What the checker found in one run.
#[derive(Debug)]
pub struct Report {
    pub program: String,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Reads the runtime's report; `trace` (the same run's) names the arrays.
    pub fn read(text: &str, trace: Option<&Path>) -> Result<Report, CliError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| CliError::new(format!("the checker's report is not JSON: {e}")))?;
        if v.get("accshim_check").and_then(Value::as_u64) != Some(1) {
            return Err(CliError::new(
                "the checker's report is of an unknown version (rebuild libaccshim.so and accprof together)",
            ));
        }
        let names = Names::load(trace);
        let mut findings = Vec::new();
        for f in v
            .get("findings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(kind) = f
                .get("kind")
                .and_then(Value::as_str)
                .and_then(Kind::from_id)
            else {
                continue;
            };
            let host = f
                .get("host")
                .and_then(Value::as_str)
                .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            let bytes = f.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            let given = f.get("name").and_then(Value::as_str).unwrap_or("");
            let variable = names.name(host, bytes, given);
            let raw = Raw {
                at: Line::of(f, "at"),
                construct: Line::of(f, "construct"),
                other: Line::of(f, "other"),
                write: f.get("write").and_then(Value::as_bool).unwrap_or(false),
                upload_overwritten: f.get("detail").and_then(Value::as_str)
                    == Some("upload_overwritten"),
            };
            findings.push(explain(kind, variable, bytes, raw));
        }
        findings.sort_by(|a, b| {
            (b.kind.level(), &a.at.as_ref().map(|l| (&l.file, l.line)))
                .cmp(&(a.kind.level(), &b.at.as_ref().map(|l| (&l.file, l.line))))
        });
        Ok(Report {
            program: v
                .get("program")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            findings,
        })
    }
}

/// The places of a finding as the runtime gave them.
struct Raw {
    at: Option<Line>,
    construct: Option<Line>,
    other: Option<Line>,
    write: bool,
    /// unused_transfer's upload half: the kernel overwrote the upload before reading it.
    upload_overwritten: bool,
}

/// The names of the run's arrays by host address, as `accprof report` and `advise` name them
/// (from the trace). The one place that names a finding's array.
struct Names {
    by_host: Vec<(u64, String, bool)>,
}

impl Names {
    fn load(trace: Option<&Path>) -> Names {
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

    fn name(&self, host: u64, bytes: u64, given: &str) -> String {
        let traced = self.by_host.iter().find(|(h, _, _)| *h == host);
        match traced {
            Some((_, n, true)) => n.clone(),
            _ if !given.is_empty() => given.to_string(),
            Some((_, n, false)) => n.clone(),
            None => format!("host {host:#x}+{bytes}"),
        }
    }
}

/// The array as a clause names it: the name alone (a C array, a Fortran array), or a section
/// where the source declares it as a pointer to a known type.
fn section(variable: &str, bytes: u64, source: Option<&Line>, lang: Lang) -> String {
    let plain = variable
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%' || c == '.');
    if !plain || lang == Lang::Fortran {
        return variable.to_string();
    }
    let Some(text) = source.and_then(|l| read_source(&l.file)) else {
        return variable.to_string();
    };
    for (ty, size) in [
        ("double", 8),
        ("float", 4),
        ("int", 4),
        ("long", 8),
        ("char", 1),
    ] {
        let pointer = text.lines().any(|l| {
            let l: String = l.split_whitespace().collect::<Vec<_>>().join(" ");
            l.contains(&format!("{ty} *{variable}"))
                || l.contains(&format!("{ty}* {variable}"))
                || l.contains(&format!("{ty} * {variable}"))
        });
        if pointer && bytes.is_multiple_of(size) {
            return format!("{variable}[0:{}]", bytes / size);
        }
    }
    variable.to_string()
}

fn at(l: &Option<Line>) -> String {
    l.as_ref()
        .map_or("an unknown line".into(), |l| format!("line {}", l.line))
}

/// The directive at `line` with `var` given `clause`: taken out of the clause it is in among
/// `replacing` (the clause dropped when it names nothing else), or added to the directive when
/// it is in none of them, as the fix for a construct's data clauses.
fn with_clause(
    line: &Option<Line>,
    lang: Lang,
    var: &str,
    clause: &str,
    replacing: &[&str],
) -> String {
    let text = line
        .as_ref()
        .and_then(Line::text)
        .map(|t| t.trim().to_string());
    match text {
        Some(t) if t.contains("acc") => {
            let (directive, comment) = split_comment(&t, lang);
            let directive = directive.trim_end_matches('\\').trim_end();
            let moved = replacing
                .iter()
                .find_map(|from| take_from_clause(directive, from, var));
            let fixed = match moved {
                Some((rest, item)) => format!("{rest} {clause}({item})"),
                None => format!("{directive} {clause}({var})"),
            };
            match comment {
                Some(c) => format!("{fixed} {c}"),
                None => fixed,
            }
        }
        _ => lang.directive(&format!("data {clause}({var})")),
    }
}

/// A directive line's text and its trailing comment, if any.
fn split_comment(t: &str, lang: Lang) -> (&str, Option<&str>) {
    let at = match lang {
        Lang::C => t.find("/*").or_else(|| t.find("//")),
        // The directive's own `!$acc` is not a comment.
        Lang::Fortran => t
            .char_indices()
            .skip(1)
            .find(|&(i, c)| c == '!' && !t[i..].starts_with("!$acc"))
            .map(|(i, _)| i),
    };
    match at {
        Some(i) => (t[..i].trim_end(), Some(t[i..].trim())),
        None => (t, None),
    }
}

/// The directive with `var` taken out of its `clause(...)` list, and the list's item that
/// named it (`b` or `b[0:n]`); None when no such clause names it.
fn take_from_clause(directive: &str, clause: &str, var: &str) -> Option<(String, String)> {
    let base = |item: &str| {
        item.trim()
            .split(['[', '(', ':'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let want = base(var);
    let mut from = 0;
    while let Some(k) = directive[from..].find(&format!("{clause}(")) {
        let start = from + k;
        // A whole word: `copy(` is not the end of `pcopy(`.
        let whole = start == 0
            || !directive[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let open = start + clause.len();
        let close = matching_paren(directive, open)?;
        if whole {
            let items = split_items(&directive[open + 1..close]);
            if let Some(i) = items.iter().position(|it| base(it) == want) {
                let item = items[i].trim().to_string();
                let rest: Vec<&str> = items
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, it)| it.trim())
                    .collect();
                let replaced = if rest.is_empty() {
                    String::new()
                } else {
                    format!("{clause}({})", rest.join(", "))
                };
                let out = format!(
                    "{}{}{}",
                    &directive[..start],
                    replaced,
                    &directive[close + 1..]
                );
                let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
                return Some((out, item));
            }
        }
        from = close + 1;
    }
    None
}

/// The index of the parenthesis closing the one at `open`.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A clause's list split at its top-level commas (`a[0:n], b` is two items).
fn split_items(list: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items
}

fn explain(kind: Kind, variable: String, bytes: u64, r: Raw) -> Finding {
    let lang = Lang::of(
        r.at.as_ref()
            .or(r.construct.as_ref())
            .map_or("", |l| l.file.as_str()),
    );
    let v = &variable;
    let x = section(v, bytes, r.at.as_ref().or(r.construct.as_ref()), lang);
    let (message, fix) = match kind {
        Kind::StaleHostRead => (
            format!(
                "the host {} {v} at {}, but the kernel at {} changed its device copy and no update self or copyout brought the results back: on a GPU the host sees the old values",
                if r.write { "writes" } else { "reads" },
                at(&r.at),
                at(&r.construct)
            ),
            lang.directive(&format!("update self({x})")),
        ),
        Kind::StaleDeviceRead => (
            format!(
                "the host changes {v} at {}, and the kernel at {} uses its device copy without an update device: on a GPU the kernel computes with the old values",
                at(&r.at),
                at(&r.construct)
            ),
            lang.directive(&format!("update device({x})")),
        ),
        Kind::ResultsDropped => (
            format!(
                "the kernel at {} changes the device copy of {v}, and it is released at {} without a copy back; the host {} the old values at {}",
                at(&r.construct),
                at(&r.at),
                if r.other.is_some() { "then uses" } else { "keeps" },
                at(&r.other)
            ),
            with_clause(&r.at, lang, &x, "copy", &["copyin", "pcopyin", "present_or_copyin"]),
        ),
        Kind::HostMemoryInKernel => (
            format!(
                "the kernel at {} is given the host address of {v} (GCC passes a pointer it does not map by value): on a GPU it dereferences host memory, which faults or reads the host's copy",
                at(&r.construct.clone().or(r.at.clone()))
            ),
            with_clause(&r.construct.clone().or(r.at.clone()), lang, &x, "present", &[]),
        ),
        Kind::LeakAtExit => (
            format!(
                "{v} is mapped at {} (enter data) and still on the device when the program ends: an exit data is missing",
                at(&r.at)
            ),
            lang.directive(&format!("exit data delete({x})")),
        ),
        Kind::RedundantTransfer => {
            let update = r.at.as_ref().and_then(Line::text).is_some_and(|t| t.contains("update"));
            if r.write {
                (
                    format!(
                        "the copy of {v} back to the host at {} moves {bytes} bytes the host already holds: nothing on the device changed them",
                        at(&r.at)
                    ),
                    if update {
                        format!("remove {}", lang.directive(&format!("update self({x})")))
                    } else {
                        with_clause(&r.at, lang, &x, "copyin", &["copy", "pcopy", "present_or_copy"])
                    },
                )
            } else {
                (
                    format!(
                        "the update of {v} at {} sends the device {bytes} bytes it already holds",
                        at(&r.at)
                    ),
                    format!("remove {}", lang.directive(&format!("update device({x})"))),
                )
            }
        }
        Kind::UnusedTransfer if r.upload_overwritten => {
            // copy(x) wants copyout(x); copyin(x) (or an update device) wants create(x).
            let copy_clause = r.at.as_ref().and_then(Line::text).is_some_and(|t| {
                take_from_clause(split_comment(t.trim(), lang).0, "copy", v).is_some()
                    || take_from_clause(split_comment(t.trim(), lang).0, "pcopy", v).is_some()
            });
            let update = r.at.as_ref().and_then(Line::text).is_some_and(|t| t.contains("update"));
            (
                format!(
                    "{v} is copied to the device at {} and the kernel at {} overwrites it before reading it: the copy in moves {bytes} bytes for nothing",
                    at(&r.at),
                    at(&r.construct)
                ),
                if update {
                    format!("remove {}", lang.directive(&format!("update device({x})")))
                } else if copy_clause {
                    with_clause(&r.at, lang, &x, "copyout", &["copy", "pcopy", "present_or_copy"])
                } else {
                    with_clause(&r.at, lang, &x, "create", &["copyin", "pcopyin", "present_or_copyin"])
                },
            )
        }
        Kind::UnusedTransfer => (
            format!(
                "{v} is copied back to the host at {} and sent to the device again at {} without the host reading it: keep it on the device between them",
                at(&r.at),
                at(&r.construct)
            ),
            lang.directive(&format!("data copy({x})")),
        ),
    };
    Finding {
        kind,
        variable,
        at: r.at,
        construct: r.construct,
        message,
        fix,
    }
}

/// Keeps the runtime's report beside the trace (`TRACE.check.json`), where `accprof advise`
/// finds it.
pub fn keep_beside(trace: &Path, text: &str) -> Result<(), CliError> {
    let p = beside(trace);
    std::fs::write(&p, text)
        .map_err(|e| CliError::new(format!("{}: cannot write: {e}", p.display())))
}

pub fn beside(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".check.json");
    PathBuf::from(s)
}

/// A source file a finding names, if it is a regular file of at most 64 MiB: the name comes
/// with the trace, and a FIFO or a /proc file there must not hang or flood the command.
fn read_source(file: &str) -> Option<String> {
    let bytes = accprof_trace::files::read_regular(Path::new(file), 64 << 20).ok()?;
    String::from_utf8(bytes).ok()
}
