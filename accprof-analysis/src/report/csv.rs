//! The CSV report: one table with a `table` column (summary, construct, operation, kernel,
//! variable), so that one file loads into a spreadsheet or pandas and filters by table.

use super::Section;
use crate::model::*;
use std::fmt::Write;

pub const HEADER: &str = "trace,table,file,function,line,kind,name,direction,count,bytes,total_ns,min_ns,max_ns,avg_ns,time_source";

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

struct Row<'a> {
    trace: &'a str,
    table: &'a str,
    loc: Option<&'a Location>,
    line: Option<i64>,
    kind: &'a str,
    name: &'a str,
    direction: &'a str,
    count: u64,
    bytes: u64,
    time: Option<&'a Timing>,
}

fn row(out: &mut String, r: Row) {
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    let (total, min, max, avg, src) = match r.time {
        Some(t) => (
            t.total_ns.to_string(),
            t.min_ns.to_string(),
            t.max_ns.to_string(),
            t.avg_ns().to_string(),
            t.source.label(),
        ),
        None => (
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "",
        ),
    };
    let _ = writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(r.trace),
        r.table,
        field(r.loc.and_then(|l| l.file.as_deref()).unwrap_or("")),
        field(r.loc.and_then(|l| l.function.as_deref()).unwrap_or("")),
        opt(r.line),
        r.kind,
        field(r.name),
        r.direction,
        r.count,
        r.bytes,
        total,
        min,
        max,
        avg,
        src
    );
}

/// `accprof report --format csv`.
pub fn render(sections: &[Section], merged: Option<&Profile>) -> String {
    let mut out = String::new();
    out.push_str(HEADER);
    out.push('\n');
    let merged_section = merged.map(|m| Section {
        label: "merged".into(),
        profile: m.clone(),
    });
    for s in sections.iter().chain(merged_section.iter()) {
        profile(&mut out, &s.label, &s.profile);
    }
    out
}

fn profile(out: &mut String, label: &str, p: &Profile) {
    let s = &p.summary;
    let base = |table, kind, name, count, bytes, time| Row {
        trace: label,
        table,
        loc: None,
        line: None,
        kind,
        name,
        direction: "",
        count,
        bytes,
        time,
    };
    let mut wall = Timing::host();
    wall.add(s.wall_ns);
    let mut untracked = Timing::host();
    untracked.add(s.untracked_ns);
    row(out, base("summary", "wall", "wall time", 1, 0, Some(&wall)));
    row(
        out,
        base(
            "summary",
            "compute",
            "compute constructs",
            s.compute.count,
            0,
            Some(&s.compute),
        ),
    );
    row(
        out,
        base(
            "summary",
            "kernels",
            "kernel launches",
            s.kernels.count,
            0,
            Some(&s.kernels),
        ),
    );
    row(
        out,
        base(
            "summary",
            "upload",
            "host->device transfers",
            s.uploads.count,
            s.upload_bytes,
            Some(&s.uploads),
        ),
    );
    row(
        out,
        base(
            "summary",
            "download",
            "device->host transfers",
            s.downloads.count,
            s.download_bytes,
            Some(&s.downloads),
        ),
    );
    row(
        out,
        base(
            "summary",
            "data",
            "data constructs",
            s.data_constructs.count,
            0,
            Some(&s.data_constructs),
        ),
    );
    row(
        out,
        base("summary", "wait", "waits", s.waits.count, 0, Some(&s.waits)),
    );
    row(
        out,
        base(
            "summary",
            "init",
            "device initialization",
            s.device_init.count,
            0,
            Some(&s.device_init),
        ),
    );
    row(
        out,
        base(
            "summary",
            "untracked",
            "untracked host time",
            1,
            0,
            Some(&untracked),
        ),
    );
    for c in &p.constructs {
        row(
            out,
            Row {
                trace: label,
                table: "construct",
                loc: Some(&c.location),
                line: c.location.line,
                kind: c.kind.name(),
                name: c.construct_type.as_deref().unwrap_or(""),
                direction: "",
                count: c.reached,
                bytes: 0,
                time: Some(&c.time),
            },
        );
        for k in &c.children {
            let kind = match k.kind {
                ChildKind::Upload => "upload",
                ChildKind::Download => "download",
                ChildKind::Launch => "launch",
                ChildKind::Wait => "wait",
                ChildKind::Alloc => "alloc",
                ChildKind::Free => "free",
                ChildKind::Create => "create",
                ChildKind::Delete => "delete",
            };
            let name = k
                .kernel
                .and_then(|i| p.kernels.get(i))
                .map(|k| k.name.as_str())
                .unwrap_or("");
            row(
                out,
                Row {
                    trace: label,
                    table: "operation",
                    loc: Some(&c.location),
                    line: k.line.or(c.location.line),
                    kind,
                    name,
                    direction: "",
                    count: k.count,
                    bytes: k.bytes,
                    time: Some(&k.time),
                },
            );
        }
    }
    for k in &p.kernels {
        let loc = k
            .construct
            .and_then(|i| p.constructs.get(i))
            .map(|c| &c.location);
        row(
            out,
            Row {
                trace: label,
                table: "kernel",
                loc,
                line: loc.and_then(|l| l.line),
                kind: "kernel",
                name: &k.name,
                direction: "",
                count: k.launches,
                bytes: 0,
                time: Some(&k.time),
            },
        );
    }
    for v in &p.variables {
        let dir = match v.direction {
            Direction::HostToDevice => "host_to_device",
            Direction::DeviceToHost => "device_to_host",
        };
        row(
            out,
            Row {
                trace: label,
                table: "variable",
                loc: None,
                line: None,
                kind: "transfer",
                name: &v.name,
                direction: dir,
                count: v.count,
                bytes: v.bytes,
                time: Some(&v.time),
            },
        );
    }
}
