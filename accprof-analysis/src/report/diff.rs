//! The comparison of two profiles as text (`accprof diff`).

use crate::diff::{ConstructDiff, ProfileDiff, Runs};
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
    let sp = &d.spread;
    let runs = (sp.wall_ns.0.runs, sp.wall_ns.1.runs);
    let several = runs.0 > 1 && runs.1 > 1;
    let _ = writeln!(
        out,
        "before: {before}\nafter:  {after}\nAll times [host]{}.\n",
        if several {
            format!(
                "; medians of {} and {} runs, with their range (min-max)",
                runs.0, runs.1
            )
        } else {
            String::new()
        }
    );
    let s = &d.summary;
    if several {
        let _ = writeln!(
            out,
            "{:<26} {:>14} {:>14} {:>9}  {:>21} {:>21}  verdict",
            "", "before", "after", "change", "range before", "range after"
        );
    } else {
        let _ = writeln!(
            out,
            "{:<26} {:>14} {:>14} {:>9}",
            "", "before", "after", "change"
        );
    }
    type Row<'a> = (
        &'static str,
        (u64, u64),
        fn(u64) -> String,
        Option<&'a (Runs, Runs)>,
    );
    let rows: [Row; 9] = [
        ("wall time", s.wall_ns, duration, Some(&sp.wall_ns)),
        (
            "compute constructs",
            s.compute_ns,
            duration,
            Some(&sp.compute_ns),
        ),
        (
            "kernel launches",
            s.kernel_ns,
            duration,
            Some(&sp.kernel_ns),
        ),
        (
            "data transfers",
            s.transfer_ns,
            duration,
            Some(&sp.transfer_ns),
        ),
        ("transfers", s.transfers, thousands, None),
        ("bytes transferred", s.transfer_bytes, bytes, None),
        ("waits", s.wait_ns, duration, Some(&sp.wait_ns)),
        (
            "device initialization",
            s.device_init_ns,
            duration,
            Some(&sp.device_init_ns),
        ),
        (
            "untracked host time",
            s.untracked_ns,
            duration,
            Some(&sp.untracked_ns),
        ),
    ];
    for (name, (b, a), f, spread) in rows {
        let mut line = format!("{name:<26} {:>14} {:>14} {:>9}", f(b), f(a), change(b, a));
        if let (true, Some((rb, ra))) = (several, spread) {
            let range = |r: &Runs| format!("{}-{}", duration(r.min), duration(r.max));
            let verdict = match Runs::within_noise(rb, ra) {
                Some(true) if b != a => "within run-to-run noise",
                _ => "",
            };
            line.push_str(&format!("  {:>21} {:>21}  {verdict}", range(rb), range(ra)));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if !several {
        let _ = writeln!(
            out,
            "\nOne run per side: times vary from run to run (on a busy machine by tens of percent), so a change in a time may be noise; counts and bytes do not vary. For medians and their spread, give several traces per side: accprof diff B1 B2 B3 -- A1 A2 A3."
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
