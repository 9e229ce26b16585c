//! The side pane: every recorded field of the selected event, and what follows from them
//! (duration, bandwidth, kernel geometry, source location).

use crate::state::kind::BarKind;
use crate::state::load::Loader;
use crate::state::pairing;
use crate::state::store::{BarRef, Store};
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::device::{copy_direction_name, memory_kind_name, record_name};
use accprof_timeline::format;
use accprof_trace::model::FieldType;
use accprof_trace::{Event, Field, StringTable};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// The full event behind the selection, as re-read from the file.
#[derive(Clone, Debug)]
pub struct Details {
    pub rec: u32,
    pub event: Option<Event>,
    pub strings: StringTable,
    pub error: Option<String>,
}

impl Details {
    /// Re-reads record `rec` from its trace.
    pub fn fetch(loader: &mut Loader, rec: u32) -> Self {
        match loader.fetch(rec) {
            Ok((ev, strings)) => Details {
                rec,
                event: Some(ev),
                strings,
                error: None,
            },
            Err(e) => Details {
                rec,
                event: None,
                strings: StringTable::default(),
                error: Some(e.to_string()),
            },
        }
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
            c.name()
                .map(str::to_string)
                .unwrap_or_else(|| (v as i64).to_string())
        }
        (Field::Bytes, _) => format!("{v} ({})", format::bytes(v)),
        (_, FieldType::String) => strings
            .get(accprof_trace::StrId(v as u32))
            .map(str::to_string)
            .unwrap_or_else(|| format!("<string {v}>")),
        (_, FieldType::Pointer) => format!("{v:#x}"),
        (_, FieldType::Signed) => (v as i64).to_string(),
        (_, FieldType::Unsigned) => v.to_string(),
    })
}

/// A duration with where it was measured: `18.0 us [host]`, `241.3 us [device]`.
pub fn timed(ns: u64, device: bool) -> String {
    format!(
        "{} {}",
        format::duration(ns),
        if device { "[device]" } else { "[host]" }
    )
}

/// A time since the trace's start to the nanosecond, `+223.460175 ms`: device records are often
/// microseconds long, and their start, end and call time are compared with each other.
fn at_ns(t: u64, origin: u64) -> String {
    format!("+{:.6} ms", t.saturating_sub(origin) as f64 / 1e6)
}

/// `8.13 GB/s [device]` (bytes per ns are GB/s).
fn rate(bytes: u64, ns: u64, device: bool) -> Option<String> {
    let r = format::gbps(bytes, ns)?;
    Some(format!(
        "{} {}",
        format::rate(Some(r)),
        if device { "[device]" } else { "[host]" }
    ))
}

fn key_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

fn kv(k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<16} "), key_style()),
        Span::raw(v),
    ])
}

/// The pane's lines for the current selection.
pub fn lines(
    selected: Option<BarRef>,
    details: Option<&Details>,
    store: &Store,
) -> Vec<Line<'static>> {
    let key = key_style();
    let mut out = Vec::new();
    let Some(sel) = selected else {
        out.push(Line::from("Nothing selected."));
        out.push(Line::from(""));
        out.push(Line::from("Click a bar, or use ↑/↓ and [ ]"));
        out.push(Line::from("to select an event. ? for help."));
        return out;
    };
    let rec = store.rec_of(sel);
    let (start, end) = store.span_of(sel);
    let is_device =
        BarKind::from_u8(store.lanes[sel.lane].tracks[sel.track].cat[sel.idx]).is_device();
    out.push(Line::from(Span::styled(
        store.label(rec),
        Style::default().add_modifier(Modifier::BOLD),
    )));
    out.push(kv("lane", store.lane_label(sel.lane)));
    if is_device {
        out.push(kv("device start", at_ns(start, store.origin)));
        out.push(kv("device end", at_ns(end, store.origin)));
    } else {
        out.push(kv(
            "start",
            format!("+{}", format::duration(start.saturating_sub(store.origin))),
        ));
    }
    out.push(kv("duration", timed(end - start, is_device)));
    let Some(d) = details.filter(|d| d.rec == rec) else {
        return out;
    };
    if let Some(e) = &d.error {
        out.push(Line::from(Span::styled(
            e.clone(),
            Style::default().fg(Color::Red),
        )));
        return out;
    }
    let Some(ev) = &d.event else { return out };
    let strings = &d.strings;
    if is_device {
        device_lines(store, sel, ev, strings, &mut out);
    } else {
        host_lines(store, sel, ev, strings, &mut out);
    }
    out.push(Line::from(""));
    out.push(Line::from(Span::styled(
        "recorded fields",
        key.add_modifier(Modifier::UNDERLINED),
    )));
    for f in Field::ALL {
        if let Some(v) = field_value(ev, f, strings) {
            out.push(kv(f.name(), v));
        }
    }
    out
}

/// `file:line-end (func)` of an event, when it has a location.
fn source_of(ev: &Event, strings: &StringTable) -> Option<String> {
    let file = strings.resolve(ev.src_file());
    let func = strings.resolve(ev.func_name());
    if file.is_none() && func.is_none() {
        return None;
    }
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
    Some(loc)
}

/// A host (acc_prof) event: its fields, and the device's time for the same work when device
/// records of it exist.
fn host_lines(
    store: &Store,
    sel: BarRef,
    ev: &Event,
    strings: &StringTable,
    out: &mut Vec<Line<'static>>,
) {
    let work = pairing::device_work_of(store, sel);
    // The device's duration goes right under the host's.
    if !work.is_empty() {
        let dev_ns: u64 = work.iter().map(|r| r.duration()).sum();
        out.push(kv("duration", timed(dev_ns, true)));
        if work.len() > 1 {
            out.push(kv(
                "device records",
                format!("{} (durations summed)", work.len()),
            ));
        }
        let first = work.iter().map(|r| r.start).min().unwrap_or(0);
        let last = work.iter().map(|r| r.end).max().unwrap_or(0);
        out.push(kv("device start", at_ns(first, store.origin)));
        out.push(kv("device end", at_ns(last, store.origin)));
    }
    let kind_name = ev
        .kind
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| format!("event {}", ev.kind.0));
    out.push(kv("event", kind_name));
    // Source location first: it is what the user acts on.
    if let Some(loc) = source_of(ev, strings) {
        out.push(kv("source", loc));
    }
    if let Some(v) = strings.resolve(ev.var_name()) {
        out.push(kv("variable", v.to_string()));
    }
    if let Some(b) = ev.bytes() {
        out.push(kv("bytes", format::bytes(b)));
        if matches!(
            ev.kind,
            acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START
        ) {
            if !work.is_empty() {
                let dev_ns: u64 = work.iter().map(|r| r.duration()).sum();
                out.extend(rate(b, dev_ns, true).map(|r| kv("bandwidth", r)));
            }
            out.extend(rate(b, ev.duration_ns(), false).map(|r| kv("bandwidth", r)));
        }
    }
    if ev.kind == acc_event_t::ENQUEUE_LAUNCH_START {
        let g = |f| {
            ev.get(f)
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into())
        };
        out.push(kv(
            "geometry",
            format!(
                "{} gangs × {} workers × {} vector",
                g(Field::NumGangs),
                g(Field::NumWorkers),
                g(Field::VectorLength)
            ),
        ));
    }
}

/// A device record: what ran, when the host asked for it, and the construct it belongs to.
fn device_lines(
    store: &Store,
    sel: BarRef,
    ev: &Event,
    strings: &StringTable,
    out: &mut Vec<Line<'static>>,
) {
    let op = record_name(ev.kind).unwrap_or("device record");
    out.push(kv("event", format!("{op} (kind {})", ev.kind.0)));
    if let Some(k) = strings.resolve(ev.kernel_name()) {
        out.push(kv("kernel", k.to_string()));
    }
    if let Some(v) = strings.resolve(ev.var_name()) {
        let how = if ev
            .flags()
            .contains(accprof_trace::EventFlags::ATTRIBUTED_NAME)
        {
            " (symbol table)"
        } else {
            ""
        };
        out.push(kv("variable", format!("{v}{how}")));
    }
    if let Some(b) = ev.bytes() {
        out.push(kv("bytes", format::bytes(b)));
        out.extend(rate(b, ev.duration_ns(), true).map(|r| kv("bandwidth", r)));
    }
    if let Some(ck) = ev.get(Field::CopyKind) {
        let (dir, src, dst) = accprof_trace::device::split_copy_kind(ck);
        let (word, words) = copy_direction_name(dir);
        out.push(kv("direction", format!("{word} ({words})")));
        out.push(kv(
            "memory",
            format!("{} → {}", memory_kind_name(src), memory_kind_name(dst)),
        ));
    }
    if let Some(s) = ev.get(Field::AsyncHandle) {
        out.push(kv("stream", format!("{s:#x}")));
    }
    if let Some(c) = ev.get(Field::CorrelationId) {
        out.push(kv("correlation id", c.to_string()));
    }
    let (start, _) = store.span_of(sel);
    let dev = store.device.find(store.rec_of(sel));
    match dev.and_then(|d| d.host_call) {
        Some(call) => {
            out.push(kv("host call", at_ns(call, store.origin)));
            let delay = if start >= call {
                format::duration(start - call)
            } else {
                format!("-{}", format::duration(call - start))
            };
            out.push(kv("call → start", delay));
        }
        None => out.push(kv("host call", "not seen by the tool".into())),
    }
    if let Some(t) = ev.thread() {
        out.push(kv("issued by", format!("thread {t}")));
    }
    let side = dev
        .map(|d| pairing::host_side_of(store, &d))
        .unwrap_or_default();
    if let Some(c) = side.construct {
        let rec = store.rec_of(c);
        out.push(kv("construct", store.what(rec)));
        out.extend(store.location(rec).map(|l| kv("source", l)));
    } else {
        out.push(kv("construct", "none open on the issuing thread".into()));
    }
    if let Some(e) = side.enqueue {
        let (a, b) = store.span_of(e);
        out.push(kv("host enqueue", store.label(store.rec_of(e))));
        out.push(kv("enqueue duration", timed(b - a, false)));
    }
}
