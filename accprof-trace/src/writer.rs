//! Appending a trace, one self-contained chunk at a time.
//!
//! A file is the 16-byte file header followed by chunks, framed as [`crate::chunk`] says.
//!
//! Each chunk is assembled in memory and handed to the underlying writer in one `write_all`, so a
//! program killed at any moment leaves every earlier chunk whole and at most one partial chunk at
//! the end, which the reader reports as a truncated tail.

use crate::chunk::{ChunkHeader, ChunkKind, CHUNK_HEADER_LEN, FILE_HEADER_LEN, MAX_CHUNK_PAYLOAD};
use crate::encode::{EventEncoder, FieldEncoder};
use crate::header::{Footer, Header, Module};
use crate::model::{Event, StrId};
use crate::varint::{put_blob, put_u64, zigzag};
use crate::{FILE_MAGIC, FORMAT_VERSION};
use std::io::{self, Write};

/// Events per chunk at most, so that a chunk stays a few hundred KiB.
const EVENTS_PER_CHUNK: usize = 16384;

/// Writes a trace to `W`. Keeps one scratch buffer, reused for every chunk.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    chunk: Vec<u8>,
    payload: Vec<u8>,
    bytes_written: u64,
    /// The sequence number of the next chunk.
    seq: u32,
    /// Events chunks encoded by [`stage_events`](Self::stage_events), not written yet.
    staged: Staged,
}

/// Events chunks encoded straight from a thread buffer's words, each built after room for
/// its header and event count so that it is written without a copy.
#[derive(Debug, Default)]
struct Staged {
    encoder: FieldEncoder,
    /// Each chunk's bytes (from [`STAGED_ROOM`]) and events.
    chunks: Vec<(Vec<u8>, usize)>,
    /// Buffers of chunks written, for the next ones.
    spare: Vec<Vec<u8>>,
}

/// The room before a staged chunk's events: its header and, just before the events, the
/// event count (a varint of at most 3 bytes: [`EVENTS_PER_CHUNK`] < 2^21).
const STAGED_ROOM: usize = CHUNK_HEADER_LEN + 3;
const _: () = assert!(EVENTS_PER_CHUNK < 1 << 21);

impl<W: Write> TraceWriter<W> {
    /// Writes the file header and the header chunk.
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        let mut w = TraceWriter::<io::Sink> {
            out: io::sink(),
            chunk: Vec::new(),
            payload: Vec::new(),
            bytes_written: 0,
            seq: 0,
            staged: Staged::default(),
        };
        let mut payload = Vec::new();
        header.encode(&mut payload);
        w.frame(ChunkKind::Header, &payload);
        // One write for the file header and the header chunk: a process that dies while the
        // file is being created leaves it empty or with a whole header, never half of one.
        let mut first = Vec::with_capacity(FILE_HEADER_LEN + w.chunk.len());
        first.extend_from_slice(&FILE_MAGIC);
        first.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        first.extend_from_slice(&0u16.to_le_bytes());
        first.extend_from_slice(&0u32.to_le_bytes());
        first.extend_from_slice(&w.chunk);
        out.write_all(&first)?;
        Ok(Self {
            out,
            chunk: w.chunk,
            payload,
            bytes_written: first.len() as u64,
            seq: w.seq,
            staged: Staged::default(),
        })
    }

    /// Appends chunks to a version 2 trace that already has chunks up to sequence number
    /// `next_seq - 1` ([`crate::symbols::scan`] finds it); `out` writes at the end of the last
    /// complete chunk.
    pub fn append(out: W, next_seq: u32) -> Self {
        Self {
            out,
            chunk: Vec::new(),
            payload: Vec::new(),
            bytes_written: 0,
            seq: next_seq,
            staged: Staged::default(),
        }
    }

    /// Writes what the binaries said about the trace's addresses (a symbols chunk).
    pub fn write_symbols(&mut self, table: &crate::symbols::SymbolTable) -> io::Result<()> {
        let payload = table.encode();
        if payload.len() > MAX_CHUNK_PAYLOAD {
            return Err(io::Error::other("the symbols chunk would exceed 64 MiB"));
        }
        self.emit(ChunkKind::Symbols, &payload)
    }

    /// Defines strings that later events refer to by id.
    pub fn write_strings<'a>(
        &mut self,
        defs: impl IntoIterator<Item = (StrId, &'a [u8])>,
    ) -> io::Result<()> {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        for (id, bytes) in defs {
            put_u64(&mut payload, u64::from(id.0));
            put_blob(&mut payload, bytes);
        }
        let r = if payload.is_empty() {
            Ok(())
        } else {
            self.emit(ChunkKind::Strings, &payload)
        };
        self.payload = payload;
        r
    }

    /// Records loaded modules (new ones; earlier ones stay known to the reader).
    pub fn write_modules(&mut self, modules: &[Module]) -> io::Result<()> {
        if modules.is_empty() {
            return Ok(());
        }
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        for m in modules {
            m.encode(&mut payload);
        }
        let r = self.emit(ChunkKind::Modules, &payload);
        self.payload = payload;
        r
    }

    /// Appends events, in as many chunks as their number needs.
    pub fn write_events(&mut self, events: &[Event]) -> io::Result<()> {
        for batch in events.chunks(EVENTS_PER_CHUNK) {
            let mut payload = std::mem::take(&mut self.payload);
            payload.clear();
            put_u64(&mut payload, batch.len() as u64);
            let mut enc = EventEncoder::new();
            for e in batch {
                enc.encode(e, &mut payload);
            }
            let r = self.emit(ChunkKind::Events, &payload);
            self.payload = payload;
            r?;
        }
        Ok(())
    }

    /// Encodes the events in `words`, a thread buffer's committed words (crate::packed: raw
    /// records and packed events), straight into events chunks, which
    /// [`write_staged`](Self::write_staged) writes after whatever must precede them (the
    /// strings and modules the events refer to). `each` sees every event once it is read and
    /// before it is encoded, to convert its times and add fields. Stops at words that do not
    /// decode; returns the events encoded.
    pub fn stage_events(&mut self, words: &[u64], mut each: impl FnMut(&mut FieldEncoder)) -> u64 {
        let st = &mut self.staged;
        let mut words = words;
        let mut total = 0;
        while !words.is_empty() {
            let mut buf = st.spare.pop().unwrap_or_default();
            buf.clear();
            buf.resize(STAGED_ROOM, 0);
            st.encoder.restart();
            let mut count = 0;
            while count < EVENTS_PER_CHUNK {
                let Some(n) = st.encoder.read(words) else {
                    words = &[];
                    break;
                };
                words = &words[n..];
                each(&mut st.encoder);
                st.encoder.finish(&mut buf);
                count += 1;
                if words.is_empty() {
                    break;
                }
            }
            if count == 0 {
                st.spare.push(buf);
                break;
            }
            st.chunks.push((buf, count));
            total += count as u64;
        }
        total
    }

    /// Writes the chunks [`stage_events`](Self::stage_events) encoded (all dropped if one
    /// fails).
    pub fn write_staged(&mut self) -> io::Result<()> {
        let mut chunks = std::mem::take(&mut self.staged.chunks);
        let mut r = Ok(());
        for (mut buf, count) in chunks.drain(..) {
            if r.is_ok() {
                r = self.emit_staged(buf.as_mut_slice(), count);
            }
            self.staged.spare.push(buf);
        }
        // The list's allocation is kept too.
        self.staged.chunks = chunks;
        r
    }

    /// Frames a staged chunk in place (its count and header just before its events) and
    /// writes it.
    fn emit_staged(&mut self, buf: &mut [u8], count: usize) -> io::Result<()> {
        let mut n = Vec::with_capacity(3);
        put_u64(&mut n, count as u64);
        let payload_at = STAGED_ROOM - n.len();
        buf[payload_at..STAGED_ROOM].copy_from_slice(&n);
        let at = payload_at - CHUNK_HEADER_LEN;
        let header = ChunkHeader::header_bytes(ChunkKind::Events, self.seq, &buf[payload_at..]);
        buf[at..payload_at].copy_from_slice(&header);
        self.seq = self.seq.wrapping_add(1);
        self.out.write_all(&buf[at..])?;
        self.bytes_written += (buf.len() - at) as u64;
        Ok(())
    }

    /// Records that `count` events of `thread` were dropped since the last such record.
    pub fn write_drops(&mut self, drops: &[(i64, u64)]) -> io::Result<()> {
        if drops.is_empty() {
            return Ok(());
        }
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        for &(thread, count) in drops {
            put_u64(&mut payload, zigzag(thread));
            put_u64(&mut payload, count);
        }
        let r = self.emit(ChunkKind::Drops, &payload);
        self.payload = payload;
        r
    }

    /// Records that `count` events were not recorded for `reason` since the last such record
    /// (written as it happens, so that a trace cut short still says so).
    pub fn write_lost(&mut self, lost: &[(LostReason, u64)]) -> io::Result<()> {
        let lost: Vec<_> = lost.iter().filter(|(_, n)| *n > 0).collect();
        if lost.is_empty() {
            return Ok(());
        }
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        for &&(reason, count) in &lost {
            put_u64(&mut payload, reason as u64);
            put_u64(&mut payload, count);
        }
        let r = self.emit(ChunkKind::Lost, &payload);
        self.payload = payload;
        r
    }

    /// Says that the next `events` events written are the contents of live-file slot `slot`
    /// at `generation` (crate::live). Written just before them.
    pub fn write_slot_written(
        &mut self,
        slot: u32,
        generation: u64,
        events: u64,
    ) -> io::Result<()> {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        put_u64(&mut payload, u64::from(slot));
        put_u64(&mut payload, generation);
        put_u64(&mut payload, events);
        let r = self.emit(ChunkKind::SlotWritten, &payload);
        self.payload = payload;
        r
    }

    /// Marks a clean end. Events may still follow (late events after exit), each batch in its
    /// own chunk; the reader takes the last footer.
    pub fn write_footer(&mut self, footer: &Footer) -> io::Result<()> {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        footer.encode(&mut payload);
        let r = self.emit(ChunkKind::Footer, &payload);
        self.payload = payload;
        r
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Bytes written so far, file header included.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn emit(&mut self, kind: ChunkKind, payload: &[u8]) -> io::Result<()> {
        self.frame(kind, payload);
        self.out.write_all(&self.chunk)?;
        self.bytes_written += self.chunk.len() as u64;
        Ok(())
    }

    /// Builds the next chunk (header and payload) in `self.chunk` and takes its sequence number.
    fn frame(&mut self, kind: ChunkKind, payload: &[u8]) {
        ChunkHeader::frame(&mut self.chunk, kind, self.seq, payload);
        self.seq = self.seq.wrapping_add(1);
    }
}

impl TraceWriter<std::fs::File> {
    /// After a failed write: cuts the file back to the end of its last whole chunk, `start`
    /// being where this writer began (0 for [`TraceWriter::new`], the end of the trace's last
    /// complete chunk for [`TraceWriter::append`]). A chunk the disk took only part of would
    /// read as a run killed mid-write.
    pub fn cut_partial_chunk(&self, start: u64) {
        let _ = self.out.set_len(start + self.bytes_written);
    }
}

/// Why events were not recorded (payload of a lost chunk). Readers show unknown reasons as
/// "other".
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[repr(u8)]
pub enum LostReason {
    /// They finished on other threads while the exit flush ran and could not be appended.
    Late = 1,
    /// The trace could not be written (disk full, ...); counted by the late writer only: the
    /// writer thread's own failures end the trace with its footer.
    WriteFailed = 2,
    /// Skipped while a thread forked, to keep the runtime's lock free at the fork.
    Fork = 3,
}

impl LostReason {
    pub fn from_u64(v: u64) -> Option<Self> {
        Some(match v {
            1 => Self::Late,
            2 => Self::WriteFailed,
            3 => Self::Fork,
            _ => return None,
        })
    }
}
