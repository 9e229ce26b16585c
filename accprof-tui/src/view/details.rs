//! The side pane: every recorded field of the selected event, and what follows from them
//! (duration, bandwidth, kernel geometry, source location).

use crate::app::App;
use crate::state::viewport::fmt_duration;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::model::FieldType;
use accprof_trace::{Event, Field, StringTable};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Human-readable byte counts: `8 MiB`, `512 B`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn field_value(ev: &Event, f: Field, strings: &StringTable) -> Option<String> {
    let v = ev.get(f)?;
    Some(match (f, f.field_type()) {
        (Field::Flags, _) => {
            let names = ev.flags().names();
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        }
        (Field::ParentConstruct, _) => {
            let c = acc_construct_t(v as i64 as i32);
            c.name().map(str::to_string).unwrap_or_else(|| (v as i64).to_string())
        }
        (Field::Bytes, _) => format!("{v} ({})", fmt_bytes(v)),
        (_, FieldType::String) => {
            strings.get(accprof_trace::StrId(v as u32)).map(str::to_string).unwrap_or_else(|| format!("<string {v}>"))
        }
        (_, FieldType::Pointer) => format!("{v:#x}"),
        (_, FieldType::Signed) => (v as i64).to_string(),
        (_, FieldType::Unsigned) => v.to_string(),
    })
}

/// The pane's lines for the current selection.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let key = Style::default().fg(Color::DarkGray);
    let mut out = Vec::new();
    let Some(sel) = app.selected else {
        out.push(Line::from("Nothing selected."));
        out.push(Line::from(""));
        out.push(Line::from("Click a bar, or use ↑/↓ and [ ]"));
        out.push(Line::from("to select an event. ? for help."));
        return out;
    };
    let rec = app.store.rec_of(sel);
    let (start, end) = app.store.span_of(sel);
    let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<16} "), key), Span::raw(v)]);
    out.push(Line::from(Span::styled(app.store.label(rec), Style::default().add_modifier(Modifier::BOLD))));
    out.push(kv("lane", app.store.lane_label(sel.lane)));
    out.push(kv("start", format!("+{}", fmt_duration(start - app.store.origin))));
    out.push(kv("duration", fmt_duration(end - start)));
    let Some(d) = app.details.as_ref().filter(|d| d.rec == rec) else {
        return out;
    };
    if let Some(e) = &d.error {
        out.push(Line::from(Span::styled(e.clone(), Style::default().fg(Color::Red))));
        return out;
    }
    let Some(ev) = &d.event else { return out };
    let strings = &d.strings;
    let kind_name = ev.kind.name().map(str::to_string).unwrap_or_else(|| format!("event {}", ev.kind.0));
    out.push(kv("event", kind_name));
    // Source location first: it is what the user acts on.
    let file = strings.resolve(ev.src_file());
    let func = strings.resolve(ev.func_name());
    if file.is_some() || func.is_some() {
        let mut loc = file.unwrap_or("?").to_string();
        if let Some(l) = ev.line_no() {
            loc.push_str(&format!(":{l}"));
            if let Some(e) = ev.get_i64(Field::EndLineNo) {
                loc.push_str(&format!("-{e}"));
            }
        }
        if let Some(f) = func {
            loc.push_str(&format!(" ({f})"));
        }
        out.push(kv("source", loc));
    }
    if let Some(v) = strings.resolve(ev.var_name()) {
        out.push(kv("variable", v.to_string()));
    }
    if let Some(b) = ev.bytes() {
        out.push(kv("bytes", fmt_bytes(b)));
        let dur = ev.duration_ns();
        if dur > 0 && matches!(ev.kind, acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START) {
            out.push(kv("bandwidth", format!("{:.2} GB/s", b as f64 / dur as f64)));
        }
    }
    if ev.kind == acc_event_t::ENQUEUE_LAUNCH_START {
        let g = |f| ev.get(f).map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        out.push(kv("geometry", format!("{} gangs × {} workers × {} vector", g(Field::NumGangs), g(Field::NumWorkers), g(Field::VectorLength))));
    }
    out.push(Line::from(""));
    out.push(Line::from(Span::styled("recorded fields", key.add_modifier(Modifier::UNDERLINED))));
    for f in Field::ALL {
        if let Some(v) = field_value(ev, f, strings) {
            out.push(kv(f.name(), v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_naturally() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(8 << 20), "8 MiB");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
    }
}
