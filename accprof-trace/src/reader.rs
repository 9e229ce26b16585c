//! Reading a trace back as a stream of events.
//!
//! [`TraceReader`] holds one chunk in memory at a time, so a trace of any size reads in constant
//! memory. It resolves string, module and drop chunks as it passes them and hands out events.
//! A partial chunk at the end is not an error: the program was killed (or is still writing);
//! [`TraceReader::truncated_bytes`] says how much was cut, and a later call picks up where the
//! file has grown, which is what `--follow` uses. A chunk that fails its checksum, or a file that
//! is not a trace, is an error.

use crate::chunk::{self, ChunkHeader, ChunkKind, FILE_HEADER_LEN};
use crate::encode::EventDecoder;
use crate::error::TraceError;
use crate::header::{Footer, Header, Module};
use crate::integrity::{Integrity, Sequence};
use crate::model::{Event, StrId};
use crate::recover::SlotsWritten;
use crate::varint::{unzigzag, Cursor, Malformed};
use crate::writer::LostReason;
use crate::{FILE_MAGIC, FORMAT_VERSION};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// Ids above this are taken as corruption rather than allocated.
const MAX_STRING_ID: u32 = 1 << 26;

/// The strings a trace defined, by id.
///
/// Memory grows with the strings defined, never with their ids: ids are stored densely only
/// while the dense part stays at most twice the number of strings (plus a little), the rest
/// in a map, so a corrupt or crafted id cannot make a reader allocate for every smaller id.
#[derive(Clone, Debug, Default)]
pub struct StringTable {
    strings: Vec<Option<Box<str>>>,
    /// Strings whose ids lie far beyond the dense part.
    sparse: std::collections::HashMap<u32, Box<str>>,
    /// Strings defined, dense and sparse.
    defined: usize,
    /// Strings readers added ([`StringTable::intern`]), with ids counted down from u32::MAX:
    /// the trace's own ids are dense from 0 and may still be defined further on in the file
    /// (device records' kernel names come at its end), so an added string must never take one.
    added: Vec<Box<str>>,
    /// Built on the first `intern`, so plain readers pay nothing for it.
    index: std::collections::HashMap<Box<str>, StrId>,
}

impl StringTable {
    /// The string, or `None` when the id was never defined (a truncated trace can refer to
    /// strings whose definition was lost only if the file is corrupt; treat it as unknown).
    pub fn get(&self, id: StrId) -> Option<&str> {
        if id.0 > MAX_STRING_ID {
            return self.added.get((u32::MAX - id.0) as usize).map(|s| &**s);
        }
        match self.strings.get(id.0 as usize) {
            Some(s) => s.as_deref(),
            None => self.sparse.get(&id.0).map(|s| &**s),
        }
    }

    /// Like [`get`](Self::get) for an optional id.
    pub fn resolve(&self, id: Option<StrId>) -> Option<&str> {
        id.and_then(|id| self.get(id))
    }

    /// The id of `s`, adding it if it is new. Used by readers that add strings of their own
    /// (resolved source locations); ids the trace defined are never reused.
    pub fn intern(&mut self, s: &str) -> StrId {
        if self.index.is_empty() {
            for (i, x) in self.strings.iter().enumerate() {
                if let Some(x) = x {
                    self.index.entry(x.clone()).or_insert(StrId(i as u32));
                }
            }
            for (i, x) in &self.sparse {
                self.index.entry(x.clone()).or_insert(StrId(*i));
            }
        }
        // Names read from binaries the trace names are no safer than its own strings.
        let shown = crate::printable::printable(s);
        let s: &str = &shown;
        if let Some(id) = self.index.get(s) {
            return *id;
        }
        self.added.push(s.into());
        let id = StrId(u32::MAX - (self.added.len() as u32 - 1));
        self.index.insert(s.into(), id);
        id
    }

    fn define(&mut self, id: u32, bytes: &[u8]) {
        let i = id as usize;
        let s: Box<str> = crate::printable::printable(&String::from_utf8_lossy(bytes)).into();
        if !self.index.is_empty() {
            self.index.entry(s.clone()).or_insert(StrId(id));
        }
        let dense_limit = 1024 + 2 * self.defined;
        let slot = if i < self.strings.len() {
            &mut self.strings[i]
        } else if i < dense_limit {
            self.strings.resize(i + 1, None);
            &mut self.strings[i]
        } else {
            if self.sparse.insert(id, s).is_none() {
                self.defined += 1;
            }
            return;
        };
        if slot.replace(s).is_none() {
            self.defined += 1;
        }
    }

    /// Every defined string with its id.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &str)> {
        let own = self
            .strings
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((StrId(i as u32), s.as_deref()?)));
        let sparse = self.sparse.iter().map(|(i, s)| (StrId(*i), &**s));
        own.chain(sparse).chain(
            self.added
                .iter()
                .enumerate()
                .map(|(i, s)| (StrId(u32::MAX - i as u32), &**s)),
        )
    }
}

/// Streams the events of one trace.
#[derive(Debug)]
pub struct TraceReader<R: Read> {
    label: String,
    input: R,
    /// Bytes of the chunk being assembled (header + payload), possibly partial at EOF.
    pending: Vec<u8>,
    /// Offset in the file of `pending[0]`.
    offset: u64,
    header: Header,
    strings: StringTable,
    modules: Vec<Module>,
    footer: Option<Footer>,
    drops: Vec<(i64, u64)>,
    dropped_total: u64,
    /// The current events chunk's payload and read state.
    events: Vec<u8>,
    events_pos: usize,
    events_left: u64,
    decoder: EventDecoder,
    chunks_read: u64,
    /// The file's format version: it decides the chunk header's length.
    version: u16,
    sequence: Sequence,
    lost: [u64; 4],
    /// Events handed out, and how many of them came before the footer was read.
    events_read: u64,
    events_before_footer: u64,
    /// The live file beside the trace (crate::live), when the trace was opened by path.
    live: Option<std::path::PathBuf>,
    /// Which live-file slot contents the trace holds (its slot-written chunks).
    slots_written: SlotsWritten,
    /// Events recovered from the live file, still to be handed out.
    recovered: std::vec::IntoIter<Event>,
    /// The live file has been read (or found unusable): once per reader.
    live_read: bool,
    recovered_from_live: u64,
    live_file_ignored: Option<String>,
    /// Symbols chunks: found ahead by [`crate::symbols::scan`] when reading a file, else as
    /// they are passed.
    symbols: crate::symbols::SymbolTable,
}

/// The heap blocks named by the events of the trace at `path`, read without its live file; as
/// far as it reads when it is damaged.
fn heap_blocks_of(path: &Path) -> crate::recover::HeapBlocks {
    let mut blocks = crate::recover::HeapBlocks::default();
    if let Ok(r) = TraceReader::open(path) {
        let mut r = r.without_live_file();
        let mut ev = Event::default();
        while let Ok(true) = r.next_event_into(&mut ev) {
            blocks.see(&ev);
        }
    }
    blocks
}

impl TraceReader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let file = File::open(path).map_err(|source| TraceError::Io {
            path: label.clone(),
            source,
        })?;
        // A FIFO (a trace streamed to `accprof dump FIFO`) can be read once only: no looking
        // ahead for symbols, no live file beside it.
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let mut r = Self::new(label, BufReader::with_capacity(1 << 20, file))?;
        if regular {
            r.live = Some(crate::live::live_path(path));
            // They come after the events they describe; a damaged file is reported by the
            // stream.
            if let Ok(scan) = crate::symbols::scan(path) {
                r.symbols = scan.symbols;
            }
        }
        Ok(r)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the file header and header chunk from `input`. `label` names the input in errors.
    pub fn new(label: impl Into<String>, mut input: R) -> Result<Self, TraceError> {
        let label = label.into();
        let mut fh = [0u8; FILE_HEADER_LEN];
        let got = read_up_to(&mut input, &mut fh).map_err(|source| TraceError::Io {
            path: label.clone(),
            source,
        })?;
        if got == 0 {
            return Err(TraceError::Empty { path: label });
        }
        let magic_len = got.min(FILE_MAGIC.len());
        if fh[..magic_len] != FILE_MAGIC[..magic_len] {
            return Err(TraceError::Foreign { path: label });
        }
        if got < FILE_HEADER_LEN {
            return Err(TraceError::Corrupt {
                path: label,
                offset: got as u64,
                what: "the file ends inside its header (the program was killed as recording began)"
                    .into(),
            });
        }
        let version = u16::from_le_bytes([fh[8], fh[9]]);
        if version == 0 || version > FORMAT_VERSION {
            return Err(TraceError::UnsupportedVersion {
                path: label,
                version,
            });
        }
        let mut r = TraceReader {
            label,
            input,
            pending: Vec::new(),
            offset: FILE_HEADER_LEN as u64,
            header: Header::default(),
            strings: StringTable::default(),
            modules: Vec::new(),
            footer: None,
            drops: Vec::new(),
            dropped_total: 0,
            events: Vec::new(),
            events_pos: 0,
            events_left: 0,
            decoder: EventDecoder::new(),
            chunks_read: 0,
            version,
            sequence: Sequence::default(),
            lost: [0; 4],
            events_read: 0,
            events_before_footer: 0,
            live: None,
            slots_written: SlotsWritten::default(),
            recovered: Vec::new().into_iter(),
            live_read: false,
            recovered_from_live: 0,
            live_file_ignored: None,
            symbols: Default::default(),
        };
        match r.next_chunk()? {
            Some((ChunkKind::Header, payload)) => {
                r.header = Header::decode(&payload)
                    .map_err(|_| r.corrupt(0, "its header does not decode"))?;
            }
            Some(_) => return Err(r.corrupt(0, "the first chunk is not the header")),
            None => return Err(TraceError::Corrupt {
                path: r.label.clone(),
                offset: r.offset,
                what: "the file ends inside its header (the program was killed as recording began)"
                    .into(),
            }),
        }
        Ok(r)
    }

    /// This reader without its live file: it hands out what the trace's chunks hold only.
    pub fn without_live_file(mut self) -> Self {
        self.live = None;
        self
    }

    /// Which live-file slot contents the chunks read so far hold.
    pub fn slots_written(&self) -> &SlotsWritten {
        &self.slots_written
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// The string table, for adding strings of the reader's own (resolved locations).
    pub fn strings_mut(&mut self) -> &mut StringTable {
        &mut self.strings
    }

    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// What the trace's symbols chunks say about its addresses (all of them for a file opened
    /// with [`TraceReader::open`]; for another input, those read so far).
    pub fn symbols(&self) -> &crate::symbols::SymbolTable {
        &self.symbols
    }

    /// The footer, once read: present when the program ended cleanly.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// Events the tool dropped, per thread, as far as the trace has been read.
    pub fn drops(&self) -> &[(i64, u64)] {
        &self.drops
    }

    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    /// Bytes consumed so far (complete chunks), for progress bars.
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// Bytes of a partial chunk at the end of what has been read: non-zero when the trace was cut
    /// short (or is still being written).
    pub fn truncated_bytes(&self) -> usize {
        self.pending.len()
    }

    /// The file's format version.
    pub fn format_version(&self) -> u16 {
        self.version
    }

    /// What is missing, duplicated or not recorded, as far as the trace has been read (read
    /// it to the end for the whole answer). Print it when it is not complete:
    /// `if !i.is_complete() { eprintln!("accprof: warning: {path}: trace {i}") }`.
    pub fn integrity(&self) -> Integrity {
        let footer_mismatch = match &self.footer {
            Some(f) => {
                let counted = i64::try_from(f.events_recorded).unwrap_or(i64::MAX);
                let found = i64::try_from(self.events_before_footer).unwrap_or(i64::MAX);
                counted.saturating_sub(found)
            }
            None => 0,
        };
        Integrity {
            ended_cleanly: self.footer.is_some(),
            truncated_bytes: self.pending.len() as u64,
            missing_chunks: self.sequence.missing,
            duplicate_chunks: self.sequence.duplicates,
            footer_mismatch,
            dropped: self.dropped_total,
            lost_late: self.lost[0],
            lost_write_failed: self.lost[1],
            lost_other: self.lost[2],
            lost_at_fork: self.lost[3],
            recovered_from_live: self.recovered_from_live,
            live_file_ignored: self.live_file_ignored.clone(),
        }
    }

    /// Reads the trace's live file at `path` when the trace ends without a footer (see
    /// [`crate::live`]); [`TraceReader::open`] sets it to the file beside the trace.
    pub fn with_live_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.live = Some(path.into());
        self
    }

    /// A warning for the user when chunks are missing or duplicated, the footer disagrees, or
    /// the tool lost events (see [`Integrity::loss_warning`]), else `None`. Read the trace to
    /// its end first.
    pub fn loss_warning(&self) -> Option<String> {
        self.integrity()
            .loss_warning()
            .map(|w| format!("{}: {w}", self.label))
    }

    /// A warning for the user when the trace was cut short in the middle of a chunk, else
    /// `None`.
    pub fn truncation_warning(&self) -> Option<String> {
        (self.truncated_bytes() > 0).then(|| {
            format!(
                "{}: the trace ends in the middle of a chunk ({} bytes cut at byte {}); the program was probably killed, or its disk filled. Showing what was recorded before that.",
                self.label,
                self.truncated_bytes(),
                self.offset
            )
        })
    }

    /// A warning for the user when the trace did not end cleanly: cut in the middle of a chunk
    /// ([`TraceReader::truncation_warning`]), or between two, without its end marker. Read the
    /// trace to its end first; a view that follows a growing trace wants only the first.
    pub fn end_warning(&self) -> Option<String> {
        self.truncation_warning().or_else(|| {
            self.footer.is_none().then(|| {
                format!(
                    "{}: the trace has no end marker (the program crashed, was killed or is still running, or its disk filled); showing what was recorded before that",
                    self.label
                )
            })
        })
    }

    /// Whether the events returned from now on come from the live file (the trace's own chunks
    /// are all read): such events lie in no events chunk of the trace, so a view that reads a
    /// chunk again to find one must keep them itself.
    pub fn reading_live_file(&self) -> bool {
        self.live_read && self.recovered_from_live > 0
    }

    /// The next event, or `None` at the end of what is there now. Call again later to follow
    /// a file that is still growing.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        let mut ev = Event::default();
        Ok(self.next_event_into(&mut ev)?.then_some(ev))
    }

    /// Reads the next event into `out`; `false` at the end of the trace (`out` is then as it
    /// was). The loop of a view that reads millions: the event is copied once, into `out`.
    pub fn next_event_into(&mut self, out: &mut Event) -> Result<bool, TraceError> {
        loop {
            if self.events_left > 0 {
                let mut cur = Cursor::new(&self.events[self.events_pos..]);
                match self.decoder.decode_next(&mut cur) {
                    Ok(ev) => *out = *ev,
                    Err(_) => return Err(self.corrupt(0, "an event does not decode")),
                }
                self.events_pos += cur.position();
                self.events_left -= 1;
                self.events_read += 1;
                return Ok(true);
            }
            if let Some(e) = self.recovered.next() {
                *out = e;
                return Ok(true);
            }
            let Some((kind, payload)) = self.next_chunk()? else {
                if self.recover_from_live() {
                    continue;
                }
                return Ok(false);
            };
            self.absorb(kind, payload)?;
        }
    }

    /// At the end of a trace without a footer: takes what its live file holds that the trace
    /// does not, once the process that wrote both is gone. True when events were recovered.
    fn recover_from_live(&mut self) -> bool {
        if self.live_read || self.footer.is_some() {
            return false;
        }
        let Some(path) = self.live.clone() else {
            return false;
        };
        // Not there (a clean end removed it, or none was made), or still held by a running
        // writer: nothing to take now; a later call (following a growing file) looks again.
        if !path.exists() || crate::live::in_use(&path) {
            return false;
        }
        self.live_read = true;
        match crate::recover::recover(&path, self.header.pid, &self.slots_written) {
            Ok(mut r) => {
                // The trace beside its live file `T.live`, read again for its heap blocks:
                // only when a killed run's events are recovered.
                let trace = path.to_str().and_then(|p| p.strip_suffix(".live"));
                if let Some(trace) = trace.filter(|_| !r.is_empty()) {
                    r.name_heap_blocks(&heap_blocks_of(Path::new(trace)));
                }
                for (id, bytes) in &r.strings {
                    if *id <= MAX_STRING_ID {
                        self.strings.define(*id, bytes);
                    }
                }
                self.recovered_from_live = r.len() as u64;
                self.recovered = r.into_sorted_events().into_iter();
                self.recovered_from_live > 0
            }
            Err(why) => {
                self.live_file_ignored = Some(format!("{}: {why}", path.display()));
                false
            }
        }
    }

    fn absorb(&mut self, kind: ChunkKind, payload: Vec<u8>) -> Result<(), TraceError> {
        let bad = |r: &Self, what: &str| r.corrupt(0, what);
        match kind {
            ChunkKind::Header => return Err(bad(self, "a second header chunk")),
            ChunkKind::Strings => {
                let mut cur = Cursor::new(&payload);
                while !cur.is_empty() {
                    let parsed: Result<(u32, &[u8]), Malformed> =
                        (|| Ok((cur.u32()?, cur.blob()?)))();
                    let (id, bytes) =
                        parsed.map_err(|_| bad(self, "a string table does not decode"))?;
                    if id > MAX_STRING_ID {
                        return Err(bad(self, "a string id is out of range"));
                    }
                    self.strings.define(id, bytes);
                }
            }
            ChunkKind::Modules => {
                let mut cur = Cursor::new(&payload);
                while !cur.is_empty() {
                    let m = Module::decode(&mut cur)
                        .map_err(|_| bad(self, "a module map does not decode"))?;
                    self.modules.push(m);
                }
            }
            ChunkKind::Events => {
                let mut cur = Cursor::new(&payload);
                let count = cur
                    .u64()
                    .map_err(|_| bad(self, "an events chunk does not decode"))?;
                self.events_pos = cur.position();
                self.events_left = count;
                self.slots_written.events_read(count);
                self.events = payload;
                self.decoder = EventDecoder::new();
            }
            ChunkKind::Drops => {
                let mut cur = Cursor::new(&payload);
                while !cur.is_empty() {
                    let parsed: Result<(u64, u64), Malformed> = (|| Ok((cur.u64()?, cur.u64()?)))();
                    let (thread, count) =
                        parsed.map_err(|_| bad(self, "a drop record does not decode"))?;
                    self.drops.push((unzigzag(thread), count));
                    self.dropped_total = self.dropped_total.saturating_add(count);
                }
            }
            ChunkKind::Footer => {
                self.footer = Some(
                    Footer::decode(&payload)
                        .map_err(|_| bad(self, "the footer does not decode"))?,
                );
                // Every event before the footer has been handed out: chunks are read only
                // when the previous events chunk is used up.
                self.events_before_footer = self.events_read;
            }
            ChunkKind::SlotWritten => {
                let mut cur = Cursor::new(&payload);
                let parsed: Result<(u64, u64, u64), Malformed> =
                    (|| Ok((cur.u64()?, cur.u64()?, cur.u64()?)))();
                let (slot, generation, events) =
                    parsed.map_err(|_| bad(self, "a slot-written record does not decode"))?;
                let slot = u32::try_from(slot)
                    .map_err(|_| bad(self, "a slot-written record names an impossible slot"))?;
                self.slots_written.record(slot, generation, events);
            }
            ChunkKind::Symbols => self
                .symbols
                .absorb(&payload)
                .map_err(|_| bad(self, "a symbols chunk does not decode"))?,
            ChunkKind::Lost => {
                let mut cur = Cursor::new(&payload);
                while !cur.is_empty() {
                    let parsed: Result<(u64, u64), Malformed> = (|| Ok((cur.u64()?, cur.u64()?)))();
                    let (reason, count) =
                        parsed.map_err(|_| bad(self, "a lost-events record does not decode"))?;
                    let i = match LostReason::from_u64(reason) {
                        Some(LostReason::Late) => 0,
                        Some(LostReason::WriteFailed) => 1,
                        Some(LostReason::Fork) => 3,
                        None => 2,
                    };
                    self.lost[i] = self.lost[i].saturating_add(count);
                }
            }
        }
        Ok(())
    }

    /// Reads the next complete chunk. Unknown kinds are skipped, and so are chunks whose
    /// sequence number came before (duplicates). `None` at the end of input, leaving a partial
    /// chunk in `pending` for a later call.
    fn next_chunk(&mut self) -> Result<Option<(ChunkKind, Vec<u8>)>, TraceError> {
        let header_len = chunk::header_len(self.version);
        loop {
            if !self.fill(header_len)? {
                return Ok(None);
            }
            let header = ChunkHeader::parse(&self.pending[..header_len])
                .map_err(|bad| self.corrupt(0, bad.what()))?;
            let len = header.payload_len;
            if !self.fill(header_len + len)? {
                return Ok(None);
            }
            let payload = &self.pending[header_len..header_len + len];
            if !header.checks(payload) {
                return Err(self.corrupt(0, "a chunk fails its checksum"));
            }
            let payload = payload.to_vec();
            self.offset += (header_len + len) as u64;
            self.pending.clear();
            self.chunks_read += 1;
            if let Some(seq) = header.sequence {
                if !self.sequence.accept(seq) {
                    continue;
                }
            }
            if let Some(kind) = ChunkKind::from_u8(header.kind) {
                return Ok(Some((kind, payload)));
            }
        }
    }

    /// Makes `pending` hold at least `n` bytes. `false` when the input ends first. Grows by
    /// what the input gives, a megabyte at a time: a length read from a corrupt header costs
    /// no more memory than the file holds.
    fn fill(&mut self, n: usize) -> Result<bool, TraceError> {
        const STEP: usize = 1 << 20;
        while self.pending.len() < n {
            let have = self.pending.len();
            self.pending.resize(n.min(have + STEP), 0);
            let got = match self.input.read(&mut self.pending[have..]) {
                Ok(g) => g,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    self.pending.truncate(have);
                    continue;
                }
                Err(source) => {
                    self.pending.truncate(have);
                    return Err(TraceError::Io {
                        path: self.label.clone(),
                        source,
                    });
                }
            };
            self.pending.truncate(have + got);
            if got == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn corrupt(&self, extra: u64, what: &str) -> TraceError {
        TraceError::Corrupt {
            path: self.label.clone(),
            offset: self.offset + extra,
            what: what.into(),
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A whole trace in memory: for tests, small traces and tools that need random access.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub header: Header,
    pub events: Vec<Event>,
    pub strings: StringTable,
    pub modules: Vec<Module>,
    /// What the trace's symbols chunks say about its addresses.
    pub symbols: crate::symbols::SymbolTable,
    pub footer: Option<Footer>,
    pub drops: Vec<(i64, u64)>,
    pub dropped_total: u64,
    /// Set when the file ended inside a chunk.
    pub truncation_warning: Option<String>,
    /// What is missing, duplicated or not recorded ([`TraceReader::integrity`]).
    pub integrity: Integrity,
}

impl Trace {
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        Self::from_reader(TraceReader::open(path)?)
    }

    pub fn from_reader<R: Read>(mut r: TraceReader<R>) -> Result<Self, TraceError> {
        let mut events = Vec::new();
        while let Some(e) = r.next_event()? {
            events.push(e);
        }
        Ok(Trace {
            truncation_warning: r.truncation_warning(),
            integrity: r.integrity(),
            header: r.header.clone(),
            events,
            strings: r.strings.clone(),
            modules: r.modules.clone(),
            symbols: r.symbols.clone(),
            footer: r.footer.clone(),
            drops: r.drops.clone(),
            dropped_total: r.dropped_total,
        })
    }

    /// The string for an optional id.
    pub fn str(&self, id: Option<StrId>) -> Option<&str> {
        self.strings.resolve(id)
    }
}
