//! Folding a killed run's live file into its trace: the events the trace lacks are appended
//! as ordinary chunks, each slot's behind a slot-written record, so that the trace alone holds
//! them (a trace copied elsewhere without its `.live` file keeps them) and a reader that still
//! finds the live file takes nothing from it twice.

use crate::live::{in_use, live_path};
use crate::model::StrId;
use crate::recover::{recover, HeapBlocks};
use crate::symbols::scan;
use crate::{TraceError, TraceReader, TraceWriter};
use std::io::{Seek, SeekFrom};
use std::path::Path;

/// Events per appended events chunk: well under the 64 MiB payload limit.
const EVENTS_PER_CHUNK: usize = 65_536;

/// Appends to the trace at `path` what its live file holds that the trace does not, then
/// removes the live file. Returns how many events were folded in: 0 when there is no live
/// file, the trace ended cleanly, or the live file holds nothing new. A live file that a
/// running process still holds is left alone (0); one that is damaged or foreign is an error.
/// A chunk cut short at the end of the trace by the kill is dropped first.
pub fn fold_into_trace(path: &Path) -> Result<u64, TraceError> {
    let label = path.display().to_string();
    let io = |source| TraceError::Io {
        path: label.clone(),
        source,
    };
    let live = live_path(path);
    if !live.exists() || in_use(&live) {
        return Ok(0);
    }
    let found = scan(path)?;
    let mut reader = TraceReader::open(path)?.without_live_file();
    let mut blocks = HeapBlocks::default();
    while let Some(e) = reader.next_event()? {
        blocks.see(&e);
    }
    if reader.footer().is_some() || found.version < 2 {
        return Ok(0);
    }
    let mut recovered =
        recover(&live, reader.header().pid, reader.slots_written()).map_err(|why| {
            TraceError::Corrupt {
                path: live.display().to_string(),
                offset: 0,
                what: format!("the live file cannot be folded in: {why}"),
            }
        })?;
    recovered.name_heap_blocks(&blocks);
    let count = recovered.len() as u64;
    if count > 0 {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io)?;
        file.set_len(found.complete_end).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let mut w = TraceWriter::append(file, found.next_seq);
        w.write_strings(
            recovered
                .strings
                .iter()
                .map(|(id, bytes)| (StrId(*id), &bytes[..])),
        )
        .map_err(io)?;
        for s in &recovered.slots {
            w.write_slot_written(s.slot, s.generation, s.events.len() as u64)
                .map_err(io)?;
            for chunk in s.events.chunks(EVENTS_PER_CHUNK) {
                w.write_events(chunk).map_err(io)?;
            }
        }
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
    }
    std::fs::remove_file(&live).map_err(|source| TraceError::Io {
        path: live.display().to_string(),
        source,
    })?;
    Ok(count)
}
