//! The comparison of two profiles as text (`accprof diff`).

use crate::diff::{ConstructDiff, ProfileDiff};
use crate::format::{bytes, duration, thousands};
use std::fmt::Write;

fn change(b: u64, a: u64) -> String {
    if b == 0 && a == 0 {
        "=".into()
    } else if b == 0 {
        "new".into()
    } else {
        let pct = (a as f64 - b as f64) * 100.0 / b as f64;
        format!("{pct:+.1}%")
    }
}

/// Where a construct is: `app.c:12 -> 13` when the edit moved it, `a.c:12 -> b.c:13` across files.
fn location(c: &ConstructDiff) -> String {
    let before = c.location.short();
    match &c.moved_to {
        Some(to)
            if to.file.as_deref().map(|f| f.rsplit('/').next())
                == c.location.file.as_deref().map(|f| f.rsplit('/').next()) =>
        {
            format!(
                "{before} -> {}",
                to.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into())
            )
        }
        Some(to) => format!("{before} -> {}", to.short()),
        None => before,
    }
}

/// The comparison as text.
pub fn render_text(before: &str, after: &str, d: &ProfileDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "before: {before}\nafter:  {after}\nAll times [host].\n"
    );
    let s = &d.summary;
    let _ = writeln!(
        out,
        "{:<26} {:>14} {:>14} {:>9}",
        "", "before", "after", "change"
    );
    type Row = (&'static str, (u64, u64), fn(u64) -> String);
    let rows: [Row; 9] = [
        ("wall time", s.wall_ns, duration),
        ("compute constructs", s.compute_ns, duration),
        ("kernel launches", s.kernel_ns, duration),
        ("data transfers", s.transfer_ns, duration),
        ("transfers", s.transfers, thousands),
        ("bytes transferred", s.transfer_bytes, bytes),
        ("waits", s.wait_ns, duration),
        ("device initialization", s.device_init_ns, duration),
        ("untracked host time", s.untracked_ns, duration),
    ];
    for (name, (b, a), f) in rows {
        let _ = writeln!(
            out,
            "{name:<26} {:>14} {:>14} {:>9}",
            f(b),
            f(a),
            change(b, a)
        );
    }
    let _ =
        writeln!(out, "\nConstructs (paired across the edit by function, kind, order and nearby lines; largest change in host time first)");
    let _ = writeln!(
        out,
        "  {:<36} {:<16} {:>15} {:>23} {:>17} {:>25}",
        "location", "construct", "reached", "host time", "transfers", "bytes"
    );
    for c in &d.constructs {
        let loc = format!(
            "{} {}",
            location(c),
            c.location.function.as_deref().unwrap_or("")
        );
        let side = |present: bool, v: String| if present { v } else { "-".into() };
        let (hb, ha) = (c.before.is_some(), c.after.is_some());
        let pair = |b: String, a: String| format!("{} -> {}", side(hb, b), side(ha, a));
        let _ = writeln!(
            out,
            "  {:<36} {:<16} {:>15} {:>23} {:>17} {:>25}",
            loc.trim_end(),
            c.label(),
            pair(thousands(c.reached.0), thousands(c.reached.1)),
            pair(duration(c.time_ns.0), duration(c.time_ns.1)),
            pair(thousands(c.transfers.0), thousands(c.transfers.1)),
            pair(bytes(c.bytes.0), bytes(c.bytes.1)),
        );
    }
    let unmatched = |removed: bool| -> Vec<String> {
        d.constructs
            .iter()
            .filter(|c| {
                if removed {
                    c.after.is_none()
                } else {
                    c.before.is_none()
                }
            })
            .map(|c| {
                format!(
                    "{} {} ({})",
                    c.location.short(),
                    c.location.function.as_deref().unwrap_or("?"),
                    c.label()
                )
            })
            .collect()
    };
    for (removed, title) in [
        (true, "Removed (only before)"),
        (false, "Added (only after)"),
    ] {
        let list = unmatched(removed);
        if !list.is_empty() {
            let _ = writeln!(out, "\n{title}: {}", list.join(", "));
        }
    }
    if !d.variables.is_empty() {
        let _ = writeln!(out, "\nTransfers by variable");
        let _ = writeln!(
            out,
            "  {:<24} {:<13} {:>19} {:>25} {:>23}",
            "variable", "direction", "count", "bytes", "time"
        );
        for v in &d.variables {
            let _ = writeln!(
                out,
                "  {:<24} {:<13} {:>19} {:>25} {:>23}",
                v.name,
                v.direction.label(),
                format!("{} -> {}", thousands(v.count.0), thousands(v.count.1)),
                format!("{} -> {}", bytes(v.bytes.0), bytes(v.bytes.1)),
                format!("{} -> {}", duration(v.time_ns.0), duration(v.time_ns.1)),
            );
        }
    }
    out
}
