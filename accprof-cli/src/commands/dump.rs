//! `accprof dump`: every event of a trace as one JSON object per line.
//!
//! The debugging view: field names are the OpenACC specification's, so what a runtime passed
//! can be compared with what the specification says it should pass.

use crate::error::CliError;
use accprof_symbols::{Resolve, ResolvingReader};
use accprof_trace::model::FieldType;
use accprof_trace::{Event, Field, StringTable, TraceReader};
use serde_json::{json, Map, Value};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Print every event of a trace as JSON, one object per line.
///
/// Field names are those of the OpenACC profiling interface (event_type, src_file, line_no,
/// var_name, bytes, ...). A start event and its end event are one object with both
/// timestamps (start_ns, end_ns: CLOCK_MONOTONIC nanoseconds). Source locations that the
/// runtime did not report but accprof attributed from the call site are resolved into
/// src_file / line_no / func_name and marked "location_attributed": true.
///
/// Example: accprof dump accprof.laplace.1234.trace | jq 'select(.event_type == "acc_ev_enqueue_upload_start")'
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The trace file.
    pub trace: PathBuf,
    /// Print the trace header (program, pid, host, rank, ...) as the first line.
    #[arg(long)]
    pub header: bool,
    /// Do not resolve call sites to source lines (faster; shows raw return addresses).
    #[arg(long)]
    pub no_symbols: bool,
    /// No progress bar (there is none either when stderr is not a terminal).
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let resolve = if args.no_symbols {
        Resolve::NOTHING
    } else {
        Resolve::LOCATIONS
    };
    let mut reader = ResolvingReader::new(TraceReader::open(&args.trace)?).resolving(resolve);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.header {
        let h = reader.header();
        let line = json!({
            "header": {
                "exe": h.exe, "args": h.args, "pid": h.pid, "hostname": h.hostname,
                "start_unix_ns": h.start_unix_ns, "start_monotonic_ns": h.start_monotonic_ns,
                "tool_version": h.tool_version, "mpi_rank": h.mpi_rank, "registration": h.registration,
            }
        });
        writeln!(out, "{line}")?;
    }
    let mut progress = crate::progress::ProgressBar::new(args.quiet);
    progress.phase(
        "dumping",
        std::fs::metadata(&args.trace).map_or(0, |m| m.len()),
        true,
    );
    let mut n = 0u32;
    while reader.advance()? {
        n = n.wrapping_add(1);
        if n.is_multiple_of(4096) {
            progress.set(reader.bytes_read());
        }
        let ev = reader.event();
        writeln!(out, "{}", event_json(ev, reader.strings()))?;
    }
    out.flush()?;
    progress.finish();
    for w in reader.warnings() {
        eprintln!("accprof: warning: {w}");
    }
    for w in reader
        .end_warning()
        .into_iter()
        .chain(reader.loss_warning())
    {
        eprintln!("accprof: warning: {w}");
    }
    if reader.dropped_total() > 0 {
        eprintln!(
            "accprof: warning: the tool dropped {} events while recording this trace",
            reader.dropped_total()
        );
    }
    Ok(())
}

/// One event as a JSON object with the specification's field names.
pub fn event_json(ev: &Event, strings: &StringTable) -> Value {
    let mut m = Map::new();
    let name = |k: accprof_abi::acc_event_t| {
        k.name()
            .map(Value::from)
            .unwrap_or_else(|| Value::from(k.0))
    };
    m.insert("event_type".into(), name(ev.kind));
    if ev.kind.shape() == accprof_abi::EventShape::Start {
        m.insert("end_event_type".into(), name(ev.kind.partner()));
    }
    m.insert("start_ns".into(), ev.start_ns.into());
    m.insert("end_ns".into(), ev.end_ns.into());
    m.insert("duration_ns".into(), ev.duration_ns().into());
    for f in Field::ALL {
        let Some(v) = ev.get(f) else { continue };
        let value = match (f, f.field_type()) {
            (Field::Flags, _) => continue,
            (Field::ParentConstruct, _) => accprof_abi::acc_construct_t(v as i32)
                .name()
                .map(Value::from)
                .unwrap_or_else(|| (v as i64).into()),
            (Field::DeviceApi, _) => accprof_abi::acc_device_api(v as i32)
                .name()
                .map(Value::from)
                .unwrap_or_else(|| (v as i64).into()),
            (_, FieldType::Unsigned) => v.into(),
            (_, FieldType::Signed) => (v as i64).into(),
            (_, FieldType::Pointer) => format!("{v:#x}").into(),
            (_, FieldType::String) => strings
                .get(accprof_trace::StrId(v as u32))
                .map(Value::from)
                .unwrap_or(Value::Null),
        };
        m.insert(f.name().into(), value);
    }
    let flags = ev.flags();
    if flags.contains(accprof_trace::EventFlags::ATTRIBUTED_LOCATION) {
        m.insert("location_attributed".into(), true.into());
    }
    let names = flags.names();
    if !names.is_empty() {
        m.insert("flags".into(), names.into());
    }
    Value::Object(m)
}
