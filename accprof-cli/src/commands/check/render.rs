//! The checker's findings as text (one block per finding), JSON, or SARIF 2.1.0.

use super::findings::{Finding, Kind, Place, Report};
use super::source::Line;
use serde_json::{json, Value};

pub fn text(r: &Report) -> String {
    let program = std::path::Path::new(&r.program)
        .file_name()
        .map_or(r.program.clone(), |n| n.to_string_lossy().into_owned());
    if r.findings.is_empty() {
        return format!(
            "accprof check: {program}: no data-clause problem found on the emulated device\n"
        );
    }
    let count = |l: super::Level| r.findings.iter().filter(|f| f.level() == l).count();
    let mut out = format!(
        "accprof check: {program}: {} finding(s): {} error(s), {} warning(s), {} note(s)\n",
        r.findings.len(),
        count(super::Level::Error),
        count(super::Level::Warning),
        count(super::Level::Note)
    );
    for f in &r.findings {
        let place = f.at.as_ref().or(f.construct.as_ref()).map(|l| l.short());
        out.push_str(&format!(
            "\n{}: {} of {}{}\n  {}\n{}  fix: {}\n",
            f.level().name(),
            f.kind.id(),
            f.variable,
            place.map_or(String::new(), |p| format!(" at {p}")),
            f.message,
            also_text(f),
            f.fix
        ));
    }
    out
}

/// Where a place shows: the access, else the construct.
fn shown_at(p: &Place) -> Option<&Line> {
    p.at.as_ref().or(p.construct.as_ref())
}

/// The line listing a finding's other places (`  the same at 3 more places: a.c:12, 40, 57`),
/// the file named where it changes; empty for a finding of one place.
fn also_text(f: &Finding) -> String {
    if f.also.is_empty() {
        return String::new();
    }
    let mut file =
        f.at.as_ref()
            .or(f.construct.as_ref())
            .map(|l| l.file.clone());
    let lines: Vec<String> = f
        .also
        .iter()
        .filter_map(shown_at)
        .map(|l| {
            if file.as_deref() == Some(l.file.as_str()) {
                l.line.to_string()
            } else {
                file = Some(l.file.clone());
                l.short()
            }
        })
        .collect();
    let what = match (f.kind, f.also.len()) {
        (Kind::HostMemoryInKernel, 1) => "kernel given it",
        (Kind::HostMemoryInKernel, _) => "kernels given it",
        (_, 1) => "place",
        _ => "places",
    };
    format!(
        "  the same at {} more {what} ({} in all): {}\n",
        f.also.len(),
        f.occurrences(),
        lines.join(", ")
    )
}

fn line_json(f: &Finding) -> (Value, Value, Value) {
    let file =
        f.at.as_ref()
            .or(f.construct.as_ref())
            .map_or(Value::Null, |l| json!(l.file));
    let line = f.at.as_ref().map_or(Value::Null, |l| json!(l.line));
    let construct = f.construct.as_ref().map_or(Value::Null, |l| json!(l.line));
    (file, line, construct)
}

pub fn json(r: &Report) -> String {
    let findings: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let (file, line, construct_line) = line_json(f);
            let lines: Vec<Value> = f
                .places()
                .map(|p| {
                    json!({
                        "file": shown_at(&p).map(|l| l.file.clone()),
                        "line": p.at.as_ref().map(|l| l.line),
                        "construct_line": p.construct.as_ref().map(|l| l.line),
                    })
                })
                .collect();
            json!({
                "kind": f.kind.id(),
                "level": f.level().name(),
                "variable": f.variable,
                "file": file,
                "line": line,
                "construct_line": construct_line,
                "message": f.message,
                "fix": f.fix,
                "occurrences": f.occurrences(),
                "lines": lines,
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&json!({ "findings": findings }))
        .unwrap_or_else(|_| "{\"findings\": []}".into());
    s.push('\n');
    s
}

fn uri(file: &str) -> String {
    if file.starts_with('/') {
        format!("file://{}", file.replace(' ', "%20"))
    } else {
        file.replace(' ', "%20")
    }
}

fn location(l: &Line, id: usize, text: &str) -> Value {
    json!({
        "id": id,
        "physicalLocation": {
            "artifactLocation": { "uri": uri(&l.file) },
            "region": { "startLine": l.line }
        },
        "message": { "text": text }
    })
}

pub fn sarif(r: &Report) -> String {
    let rules: Vec<Value> = Kind::ALL
        .iter()
        .map(|k| {
            json!({
                "id": k.id(),
                "name": k.id(),
                "shortDescription": { "text": k.summary() },
                "defaultConfiguration": { "level": k.level().name() }
            })
        })
        .collect();
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let index = Kind::ALL.iter().position(|k| *k == f.kind).unwrap_or(0);
            let mut res = json!({
                "ruleId": f.kind.id(),
                "ruleIndex": index,
                "level": f.level().name(),
                "message": { "text": format!("{} Fix: {}", capital(&f.message), f.fix) },
                "properties": { "variable": f.variable, "fix": f.fix }
            });
            let primary = f.at.as_ref().or(f.construct.as_ref());
            if let Some(l) = primary {
                res["locations"] = json!([location(l, 0, &f.variable)]);
            }
            let mut related = Vec::new();
            if let (Some(c), Some(_)) = (&f.construct, &f.at) {
                related.push(location(c, 1, "the construct"));
            }
            // The same cause's other places: one result, one fix.
            for p in &f.also {
                if let Some(l) = shown_at(p) {
                    let id = related.len() + 1;
                    related.push(location(l, id, &format!("{} again", f.variable)));
                }
            }
            if !related.is_empty() {
                res["relatedLocations"] = json!(related);
            }
            res
        })
        .collect();
    let log = json!({
        "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "accprof check",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "artifacts": [],
            "results": results
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect::<String>() + ".",
        None => String::new(),
    }
}
