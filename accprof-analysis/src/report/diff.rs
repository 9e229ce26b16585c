//! The comparison of two profiles as text (`accprof diff`).

use crate::diff::ProfileDiff;
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

/// The comparison as text.
pub fn render_text(before: &str, after: &str, d: &ProfileDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "before: {before}\nafter:  {after}\nAll times [host].\n");
    let s = &d.summary;
    let _ = writeln!(out, "{:<26} {:>14} {:>14} {:>9}", "", "before", "after", "change");
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
        let _ = writeln!(out, "{name:<26} {:>14} {:>14} {:>9}", f(b), f(a), change(b, a));
    }
    let _ = writeln!(out, "\nConstructs (largest change in host time first)");
    let _ = writeln!(
        out,
        "  {:<30} {:<15} {:>15} {:>23} {:>17} {:>25}",
        "location", "construct", "reached", "host time", "transfers", "bytes"
    );
    for c in &d.constructs {
        let loc = format!("{} {}", c.location.short(), c.location.function.as_deref().unwrap_or(""));
        let side = |present: bool, v: String| if present { v } else { "-".into() };
        let (hb, ha) = (c.before.is_some(), c.after.is_some());
        let pair = |b: String, a: String| format!("{} -> {}", side(hb, b), side(ha, a));
        let _ = writeln!(
            out,
            "  {:<30} {:<15} {:>15} {:>23} {:>17} {:>25}",
            loc.trim_end(),
            c.kind.label(),
            pair(thousands(c.reached.0), thousands(c.reached.1)),
            pair(duration(c.time_ns.0), duration(c.time_ns.1)),
            pair(thousands(c.transfers.0), thousands(c.transfers.1)),
            pair(bytes(c.bytes.0), bytes(c.bytes.1)),
        );
    }
    if !d.variables.is_empty() {
        let _ = writeln!(out, "\nTransfers by variable");
        let _ = writeln!(out, "  {:<24} {:<13} {:>19} {:>25} {:>23}", "variable", "direction", "count", "bytes", "time");
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
