//! The checker's findings: read from the runtime's report, named, and given a message and a fix
//! in the program's language.

use super::clauses;
use super::names::{Name, Names};
use super::source::{Lang, Line};
use crate::error::CliError;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The finding kinds, with the names the JSON and SARIF outputs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
    /// The other places of the same cause, in the order the run met them: one finding for
    /// one fix (see [`group`]).
    pub also: Vec<Place>,
    /// Lost results whose later use by the host could not be watched (an array on the stack
    /// or too small for a page guard): the program is wrong only if it reads them.
    pub unconfirmed: bool,
}

/// Where one occurrence of a finding's cause showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    pub at: Option<Line>,
    pub construct: Option<Line>,
}

impl Finding {
    /// How much it matters: its kind's level, a warning for lost results nobody was seen to
    /// read (correct programs drop scratch results on purpose).
    pub fn level(&self) -> super::Level {
        if self.unconfirmed {
            super::Level::Warning
        } else {
            self.kind.level()
        }
    }

    /// Every place of the finding, its own first.
    pub fn places(&self) -> impl Iterator<Item = Place> + '_ {
        std::iter::once(Place {
            at: self.at.clone(),
            construct: self.construct.clone(),
        })
        .chain(self.also.iter().cloned())
    }

    /// How many places showed the cause.
    pub fn occurrences(&self) -> usize {
        1 + self.also.len()
    }
}

/// Findings of one cause made one: the same kind and array at the same construct (a kernel's
/// results read stale at several host lines), or, for host memory given to kernels, the same
/// array in every construct (one pointer passed by value, one `present` each, or one data
/// region's `deviceptr`/attach for them all).
fn group(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut index: std::collections::HashMap<(Kind, String, Option<Line>), usize> =
        std::collections::HashMap::new();
    for f in findings {
        let construct = match f.kind {
            Kind::HostMemoryInKernel => None,
            _ => f.construct.clone(),
        };
        match index.entry((f.kind, f.variable.clone(), construct)) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let g = &mut out[*e.get()];
                let place = Place {
                    at: f.at,
                    construct: f.construct,
                };
                if !g.places().any(|p| p == place) {
                    g.also.push(place);
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(f);
            }
        }
    }
    for g in &mut out {
        g.also.sort_by_key(|p| {
            p.at.clone()
                .or(p.construct.clone())
                .map(|l| (l.file, l.line))
        });
    }
    out
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
            let name = names.name(host, bytes, given);
            let raw = Raw {
                at: Line::of(f, "at"),
                construct: Line::of(f, "construct"),
                other: Line::of(f, "other"),
                write: f.get("write").and_then(Value::as_bool).unwrap_or(false),
                upload_overwritten: f.get("detail").and_then(Value::as_str)
                    == Some("upload_overwritten"),
                unwatched: f.get("detail").and_then(Value::as_str) == Some("unwatched"),
            };
            findings.push((host, explain(kind, name, bytes, raw)));
        }
        // A kernel given the host copy leaves the device copy as it was: the copies of it
        // then look redundant or unused, a consequence of that error and not waste to remove.
        let by_value: Vec<u64> = findings
            .iter()
            .filter(|(_, f)| f.kind == Kind::HostMemoryInKernel)
            .map(|&(h, _)| h)
            .collect();
        let findings = findings
            .into_iter()
            .filter(|(h, f)| {
                !(by_value.contains(h)
                    && matches!(f.kind, Kind::RedundantTransfer | Kind::UnusedTransfer))
            })
            .map(|(_, f)| f)
            .collect();
        let mut findings = group(findings);
        findings.sort_by(|a, b| {
            (b.level(), &a.at.as_ref().map(|l| (&l.file, l.line)))
                .cmp(&(a.level(), &b.at.as_ref().map(|l| (&l.file, l.line))))
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
    /// results_dropped where no guard could see the host's later reads.
    unwatched: bool,
}

fn at(l: &Option<Line>) -> String {
    l.as_ref()
        .map_or("an unknown line".into(), |l| format!("line {}", l.line))
}

fn explain(kind: Kind, name: Name, bytes: u64, r: Raw) -> Finding {
    let lang = Lang::of(
        r.at.as_ref()
            .or(r.construct.as_ref())
            .map_or("", |l| l.file.as_str()),
    );
    let v = &name.variable;
    let item = clauses::item(&name, bytes, r.at.as_ref().or(r.construct.as_ref()), lang);
    // A directive of the fix with the array as its clause takes it (`{}` in `body`).
    let directive = |body: &str| clauses::directive(lang, body, &item, &name);
    // The directive at `line` with the array moved into `clause`.
    let moved = |line: &Option<Line>, clause: &str, replacing: &[&str]| match &item {
        Some(x) => clauses::moved(line.as_ref(), lang, x, clause, replacing),
        None => format!(
            "{} for {v} (under the name your code holds it by)",
            clauses::moved(line.as_ref(), lang, "...", clause, &[])
        ),
    };
    let directive_text = r.at.as_ref().and_then(Line::text);
    let is_update = directive_text
        .as_ref()
        .is_some_and(|t| t.contains("update"));
    let (message, fix) = match kind {
        Kind::StaleHostRead => (
            format!(
                "the host {} {v} at {}, but the kernel at {} changed its device copy and no update self or copyout brought the results back: on a GPU the host sees the old values",
                if r.write { "writes" } else { "reads" },
                at(&r.at),
                at(&r.construct)
            ),
            directive("update self({})"),
        ),
        Kind::StaleDeviceRead if r.unwatched => (
            format!(
                "the host changes {v} after it is copied to the device at {}, and the kernel at {} uses its device copy without an update device: on a GPU the kernel computes with the old values (where the host writes could not be watched: the array is on the stack or smaller than a page)",
                at(&r.at),
                at(&r.construct)
            ),
            directive("update device({})"),
        ),
        Kind::StaleDeviceRead => (
            format!(
                "the host changes {v} at {}, and the kernel at {} uses its device copy without an update device: on a GPU the kernel computes with the old values",
                at(&r.at),
                at(&r.construct)
            ),
            directive("update device({})"),
        ),
        Kind::ResultsDropped if r.unwatched => (
            format!(
                "the kernel at {} changes the device copy of {v}, and it is released at {} without a copy back: if the host uses {v} after that, it sees the old values (its reads could not be watched: the array is on the stack or smaller than a page)",
                at(&r.construct),
                at(&r.at),
            ),
            moved(&r.at, "copy", &["copyin", "pcopyin", "present_or_copyin"]),
        ),
        Kind::ResultsDropped => (
            format!(
                "the kernel at {} changes the device copy of {v}, and it is released at {} without a copy back; the host then uses the old values at {}",
                at(&r.construct),
                at(&r.at),
                at(&r.other)
            ),
            moved(&r.at, "copy", &["copyin", "pcopyin", "present_or_copyin"]),
        ),
        Kind::HostMemoryInKernel => {
            let construct = r.construct.clone().or(r.at.clone());
            (
                format!(
                    "the kernel at {} is given the host address of {v} (GCC passes a pointer it does not map by value): on a GPU it dereferences host memory, which faults or reads the host's copy",
                    at(&construct)
                ),
                if construct
                    .as_ref()
                    .is_none_or(|l| clauses::kernel_names(l, v))
                {
                    moved(&construct, "present", &[])
                } else {
                    // The kernel's function holds the array under another name (a pointer
                    // parameter): a clause naming `v` there would not compile.
                    format!(
                        "{} for {v} (under the name the kernel's function holds it by)",
                        clauses::moved(construct.as_ref(), lang, "...", "present", &[])
                    )
                },
            )
        }
        Kind::LeakAtExit => (
            format!(
                "{v} is mapped at {} (enter data) and still on the device when the program ends: an exit data is missing",
                at(&r.at)
            ),
            directive("exit data delete({})"),
        ),
        Kind::RedundantTransfer if r.write => (
            format!(
                "the copy of {v} back to the host at {} moves {bytes} bytes the host already holds: nothing on the device changed them",
                at(&r.at)
            ),
            if is_update {
                format!("remove {}", directive("update self({})"))
            } else if directive_text.as_ref().is_some_and(|t| t.contains("exit")) {
                moved(
                    &r.at,
                    "delete",
                    &["copyout", "pcopyout", "present_or_copyout"],
                )
            } else {
                moved(&r.at, "copyin", &["copy", "pcopy", "present_or_copy"])
            },
        ),
        Kind::RedundantTransfer => (
            format!(
                "the update of {v} at {} sends the device {bytes} bytes it already holds",
                at(&r.at)
            ),
            format!("remove {}", directive("update device({})")),
        ),
        Kind::UnusedTransfer if r.upload_overwritten => {
            // copy(x) wants copyout(x); copyin(x) (or an update device) wants create(x).
            let copy_clause = ["copy", "pcopy"]
                .iter()
                .any(|c| clauses::names_in(r.at.as_ref(), lang, c, v));
            (
                format!(
                    "{v} is copied to the device at {} and the kernel at {} overwrites it before reading it: the copy in moves {bytes} bytes for nothing",
                    at(&r.at),
                    at(&r.construct)
                ),
                if is_update {
                    format!("remove {}", directive("update device({})"))
                } else if copy_clause {
                    moved(&r.at, "copyout", &["copy", "pcopy", "present_or_copy"])
                } else {
                    moved(&r.at, "create", &["copyin", "pcopyin", "present_or_copyin"])
                },
            )
        }
        Kind::UnusedTransfer => (
            format!(
                "{v} is copied back to the host at {} and sent to the device again at {} without the host reading it: keep it on the device between them",
                at(&r.at),
                at(&r.construct)
            ),
            directive("data copy({})"),
        ),
    };
    // A std::vector's data goes into the clause through a pointer: declared first.
    let fix = match name
        .clause
        .as_deref()
        .and_then(accprof_symbols::pointer_for)
    {
        Some((pointer, declaration)) if fix.contains(&pointer) => format!("{declaration} {fix}"),
        _ => fix,
    };
    Finding {
        kind,
        variable: name.variable,
        unconfirmed: kind == Kind::ResultsDropped && r.unwatched,
        at: r.at,
        construct: r.construct,
        message,
        fix,
        also: Vec::new(),
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
