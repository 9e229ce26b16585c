//! Putting what the binaries say about a trace's addresses into the trace itself (its symbols
//! chunk), while the binaries are still the ones that ran: the tool library does it at the
//! program's normal exit, `accprof run` after a run that was killed, `accprof symbolize` for
//! any trace.

use crate::{unnamed_host_data, DataKind, Symbolizer};
use accprof_trace::symbols::{scan, Site, VarKind};
use accprof_trace::{Field, SymbolTable, TraceError, TraceReader, TraceWriter};
use std::collections::BTreeSet;
use std::io::{Seek, SeekFrom};
use std::path::Path;

/// What [`symbolize_file`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbolized {
    /// The trace had a symbols chunk already: nothing was added.
    pub already: bool,
    /// Call sites and variables written.
    pub entries: usize,
    /// Bytes of a chunk cut short by a kill, dropped so that the new chunk can follow the
    /// last complete one.
    pub cut_bytes: u64,
    /// Modules that could not be read (gone, or rebuilt since the run), each once.
    pub warnings: Vec<String>,
    /// Events of a killed run folded in from its live file first
    /// ([`accprof_trace::fold::fold_into_trace`]).
    pub folded: u64,
    /// The trace was of version 1, whose chunks cannot take one more: it was written again as
    /// version 2, with the same header, strings, modules and events in the same order.
    pub upgraded: bool,
}

/// Resolves every address the events of the trace at `path` use (call sites of events without
/// a source file, allocation sites of heap blocks, host addresses of unnamed transfers)
/// against the binaries on disk that are still the builds that ran. Returns the table and one
/// line per module that could not be read.
pub fn resolve_trace(path: &Path) -> Result<(SymbolTable, Vec<String>), TraceError> {
    let mut reader = TraceReader::open(path)?;
    let mut code = BTreeSet::new();
    let mut allocations = BTreeSet::new();
    let mut data = BTreeSet::new();
    let mut elsewhere = BTreeSet::new();
    while let Some(ev) = reader.next_event()? {
        if let (Some(ra), None) = (ev.get(Field::ReturnAddress), ev.get(Field::SrcFile)) {
            code.insert(ra);
        }
        if crate::unnamed_device_block(&ev) && ev.kind == accprof_abi::acc_event_t::ALLOC {
            if let Some(ra) = ev.get(Field::ReturnAddress) {
                allocations.insert(ra);
            }
        }
        if unnamed_host_data(&ev) {
            match (ev.get(Field::AllocSite), ev.get(Field::HostPtr)) {
                (Some(site), _) => {
                    code.insert(site);
                    allocations.insert(site);
                }
                (None, Some(p)) => {
                    if reader.modules().iter().any(|m| m.contains(p)) {
                        data.insert(p);
                    } else if let Some(b) = ev.bytes() {
                        elsewhere.insert((p, b));
                    }
                }
                (None, None) => {}
            }
        }
    }
    let modules = reader.modules().to_vec();
    let mut sym = Symbolizer::new(&modules).with_header(reader.header());
    let mut table = SymbolTable::default();
    for ra in code {
        let Some(i) = modules.iter().rposition(|m| m.contains(ra)) else {
            continue;
        };
        let m = &modules[i];
        if let Some(loc) = sym.location_in_binary(m, ra) {
            table.module_mut(i as u32, &m.build_id).sites.insert(
                ra - m.bias,
                Site {
                    file: loc.file,
                    line: loc.line,
                    function: loc.function,
                },
            );
        }
    }
    for p in data {
        let Some(i) = modules.iter().rposition(|m| m.contains(p)) else {
            continue;
        };
        let m = &modules[i];
        let probe = p - m.bias;
        if let Some(d) = sym.data_in_binary(m, probe) {
            let entry = table.module_mut(i as u32, &m.build_id);
            let at = probe - d.offset;
            entry.kinds.insert(
                at,
                VarKind {
                    element_bytes: d.element_bytes.unwrap_or(0),
                    descriptor: d.kind == DataKind::Descriptor,
                },
            );
            entry.data.insert(at, (d.size, d.name));
        }
    }
    // The variables heap blocks were stored in, from the sources as they are now (the sites'
    // order on their lines comes from the table just made).
    let mut warnings = std::mem::take(&mut sym.warnings);
    let mut sym = Symbolizer::new(&modules)
        .with_symbols(&table)
        .with_header(reader.header());
    for site in allocations {
        let Some(i) = modules.iter().rposition(|m| m.contains(site)) else {
            continue;
        };
        let (_, name) = sym.allocation(site);
        let m = &modules[i];
        table
            .module_mut(i as u32, &m.build_id)
            .allocations
            .insert(site - m.bias, name);
    }
    // Stack arrays by where their frames were, else by size. The table keeps one name per
    // address, which readers take for the whole of what was moved there: a range inside an
    // array keeps its section.
    let placed = sym.place_stack(&elsewhere);
    for (p, bytes) in elsewhere {
        let name = match placed.get(&(p, bytes)) {
            Some(d) if d.offset == 0 => Some(d.name.clone()),
            Some(d) => Some(d.label(Some(bytes))),
            None => sym.resolve_stack(p, Some(bytes)).map(|d| d.name),
        };
        if let Some(name) = name {
            table.stack.insert(p, Some(name));
        }
    }
    warnings.append(&mut sym.warnings);
    warnings.dedup();
    Ok((table, warnings))
}

/// Adds a symbols chunk to the finished trace at `path` (a program that has exited, or was
/// killed), unless it has one. A killed run's live file is folded into the trace first, so
/// that the trace alone holds every event. A chunk cut short at the end by a kill is dropped
/// first: nothing could read it, and a chunk appended after it would be read as its payload.
pub fn symbolize_file(path: &Path) -> Result<Symbolized, TraceError> {
    let label = path.display().to_string();
    let io = |source| TraceError::Io {
        path: label.clone(),
        source,
    };
    // Anything appended now would be followed by the running program's own chunks (its
    // footer included), which would then read as damage.
    if accprof_trace::live::being_written(path) {
        return Err(TraceError::StillRunning { path: label });
    }
    let folded = accprof_trace::fold::fold_into_trace(path)?;
    let found = scan(path)?;
    if found.symbols_chunks > 0 {
        return Ok(Symbolized {
            already: true,
            folded,
            ..Symbolized::default()
        });
    }
    let size = std::fs::metadata(path).map_err(io)?.len();
    let (table, warnings) = resolve_trace(path)?;
    let upgraded = found.version < 2 && !table.is_empty();
    let mut out = Symbolized {
        warnings,
        folded,
        upgraded,
        ..Symbolized::default()
    };
    if table.is_empty() {
        return Ok(out);
    }
    let (found, size) = if upgraded {
        // Version 1 chunks have no sequence numbers: an appended chunk could not be told from
        // a stale one. The same trace written again as version 2 can take it.
        rewrite_as_current_version(path)?;
        (scan(path)?, std::fs::metadata(path).map_err(io)?.len())
    } else {
        (found, size)
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io)?;
    if file.metadata().map_err(io)?.len() != size {
        return Err(TraceError::Corrupt {
            path: label.clone(),
            offset: size,
            what: "the trace is still being written (its program is running); symbolize it once it has ended".into(),
        });
    }
    out.cut_bytes = size - found.complete_end;
    file.set_len(found.complete_end).map_err(io)?;
    file.seek(SeekFrom::End(0)).map_err(io)?;
    let mut w = TraceWriter::append(file, found.next_seq);
    if let Err(e) = w.write_symbols(&table) {
        w.cut_partial_chunk(found.complete_end);
        return Err(io(e));
    }
    out.entries = table.len();
    Ok(out)
}

/// Writes the finished trace at `path` again in the current format version: the same header,
/// strings, modules, events (in their order, so that event numbers stay), drops and footer.
fn rewrite_as_current_version(path: &Path) -> Result<(), TraceError> {
    let label = path.display().to_string();
    let io = |source| TraceError::Io {
        path: label.clone(),
        source,
    };
    let t = accprof_trace::Trace::load(path)?;
    if let Some(w) = &t.truncation_warning {
        return Err(TraceError::Corrupt {
            path: label.clone(),
            offset: 0,
            what: format!("a damaged version 1 trace is not rewritten: {w}"),
        });
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.v2.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = TraceWriter::new(std::io::BufWriter::new(file), &t.header).map_err(io)?;
    let strings: Vec<(accprof_trace::StrId, &[u8])> =
        t.strings.iter().map(|(id, s)| (id, s.as_bytes())).collect();
    let written = (|| {
        w.write_strings(strings)?;
        w.write_modules(&t.modules)?;
        w.write_events(&t.events)?;
        w.write_drops(&t.drops)?;
        if let Some(f) = &t.footer {
            w.write_footer(f)?;
        }
        w.flush()
    })();
    written.map_err(io)?;
    drop(w);
    std::fs::rename(&tmp, path).map_err(io)
}
