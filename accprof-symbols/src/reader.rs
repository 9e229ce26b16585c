//! [`ResolvingReader`]: the one way every accprof view streams a trace, with call sites and
//! unnamed host data resolved as events go by.

use crate::{unnamed_host_data, Symbolizer};
use accprof_trace::{
    Event, Field, Footer, Header, Module, StringTable, SymbolTable, TraceError, TraceReader,
};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// What a [`ResolvingReader`] fills in that the runtime left out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Resolve {
    /// `src_file`, `line_no` and `func_name` from an event's return address (GCC reports no
    /// source location).
    pub locations: bool,
    /// `var_name` of a transfer's host side, from the heap block it lay in or the symbol table
    /// (GCC names no variable).
    pub data_names: bool,
}

impl Resolve {
    pub const ALL: Resolve = Resolve {
        locations: true,
        data_names: true,
    };
    pub const NOTHING: Resolve = Resolve {
        locations: false,
        data_names: false,
    };
    pub const LOCATIONS: Resolve = Resolve {
        locations: true,
        data_names: false,
    };
}

/// Streams a trace's events, resolving symbols as it goes. Memory does not grow with events:
/// only the resolved addresses are cached.
///
/// String ids in the events index [`strings`](Self::strings); the strings the resolution adds
/// are interned there too.
///
/// ```no_run
/// use accprof_symbols::ResolvingReader;
/// let mut r = ResolvingReader::open("accprof.laplace.1234.trace")?;
/// while let Some(ev) = r.next_event()? {
///     if let Some(file) = r.strings().resolve(ev.src_file()) {
///         println!("{:?} at {file}:{}", ev.kind, ev.line_no().unwrap_or(0));
///     }
/// }
/// for w in r.warnings() {
///     eprintln!("warning: {w}");
/// }
/// # Ok::<(), accprof_trace::TraceError>(())
/// ```
pub struct ResolvingReader<R: Read> {
    reader: TraceReader<R>,
    resolve: Resolve,
    /// Made on the first event that needs it.
    symbolizer: Option<Symbolizer>,
    events: u64,
    current: Event,
    /// Where each events chunk started, as found so far.
    chunks: ChunkIndex,
    /// For a reader opened at a chunk: the whole trace's modules (the chunks before this one
    /// defined some of them).
    known_modules: Option<Vec<Module>>,
    /// The trace's symbols chunks (for a reader opened at a chunk: the whole trace's).
    recorded: SymbolTable,
}

/// Where the chunks of a trace start, found while streaming it once
/// ([`ResolvingReader::chunk_index`]), so that a view can read any part of the trace again
/// ([`ResolvingReader::open_at`]) instead of keeping every event: each events chunk decodes on
/// its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkIndex {
    /// The end of the file header and header chunk.
    header_end: u64,
    /// Per events chunk: the file offset to read from (the string and module chunks written
    /// just before it included) and the index of its first event in the trace.
    starts: Vec<(u64, u64)>,
    /// The index of the first event recovered from the live file of a killed recording
    /// (`TraceReader::reading_live_file`): it and those after it are in no chunk.
    recovered_from: Option<u64>,
}

impl ChunkIndex {
    /// Events chunks found.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The index in the trace of the first event of chunk `chunk`.
    pub fn first_event(&self, chunk: usize) -> Option<u64> {
        self.starts.get(chunk).map(|s| s.1)
    }

    /// The chunk that holds event `index`; `None` for an event recovered from the live file
    /// ([`recovered_from`](Self::recovered_from)), which no chunk holds.
    pub fn chunk_of(&self, index: u64) -> Option<usize> {
        if self.recovered_from.is_some_and(|r| index >= r) {
            return None;
        }
        self.starts.partition_point(|s| s.1 <= index).checked_sub(1)
    }

    /// The index of the first event recovered from the live file, if the trace ended without
    /// its footer and its live file held events the trace lacks: those events are read only by
    /// a reader of the whole trace, never by [`ResolvingReader::open_at`].
    pub fn recovered_from(&self) -> Option<u64> {
        self.recovered_from
    }
}

impl<R: Read> std::fmt::Debug for ResolvingReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvingReader")
            .field("resolve", &self.resolve)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl ResolvingReader<BufReader<File>> {
    /// Opens the trace at `path`, resolving everything.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        Ok(Self::new(TraceReader::open(path)?))
    }
}

/// A reader of a trace from one of its chunks on ([`ResolvingReader::open_at`]).
pub type ChunkReader = ResolvingReader<std::io::Chain<std::io::Cursor<Vec<u8>>, BufReader<File>>>;

impl ChunkReader {
    /// Reads the trace at `path` from events chunk `chunk` of `index` (made by a reader that
    /// read the trace before) to its end. `first` is a reader that read the whole trace (its
    /// strings, with those resolution added, and its modules stand in for the chunks skipped), so
    /// that string ids mean the same in both. Event indices start at the chunk's first event.
    pub fn open_at<R: Read>(
        path: impl AsRef<Path>,
        index: &ChunkIndex,
        chunk: usize,
        first: &ResolvingReader<R>,
    ) -> Result<Self, TraceError> {
        use std::io::{Seek, SeekFrom};
        let path = path.as_ref();
        let label = path.display().to_string();
        let io = |source| TraceError::Io {
            path: label.clone(),
            source,
        };
        let &(offset, first_event) =
            index.starts.get(chunk).ok_or_else(|| TraceError::Corrupt {
                path: label.clone(),
                offset: 0,
                what: format!("the trace has no events chunk {chunk}"),
            })?;
        let mut file = File::open(path).map_err(io)?;
        let mut header = vec![0u8; index.header_end as usize];
        std::io::Read::read_exact(&mut file, &mut header).map_err(io)?;
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let input = std::io::Cursor::new(header).chain(BufReader::new(file));
        let mut reader = TraceReader::new(label.clone(), input)?;
        *reader.strings_mut() = first.strings().clone();
        let mut r = Self::new(reader);
        r.resolve = first.resolve;
        r.events = first_event;
        r.known_modules = Some(first.modules().to_vec());
        r.recorded = first.recorded.clone();
        r.chunks.starts.clear();
        Ok(r)
    }
}

impl<R: Read> ResolvingReader<R> {
    /// Wraps `reader`, resolving everything.
    pub fn new(reader: TraceReader<R>) -> Self {
        let chunks = ChunkIndex {
            header_end: reader.bytes_read(),
            starts: Vec::new(),
            recovered_from: None,
        };
        Self {
            resolve: Resolve::ALL,
            symbolizer: None,
            events: 0,
            current: Event::default(),
            chunks,
            known_modules: None,
            recorded: reader.symbols().clone(),
            reader,
        }
    }

    /// Resolves only what `resolve` says.
    pub fn resolving(mut self, resolve: Resolve) -> Self {
        self.resolve = resolve;
        self
    }

    /// Moves to the next event, resolved; `false` at the end of the trace. The event is then
    /// [`event`](Self::event). Cheaper than [`next_event`](Self::next_event) in a hot loop: the
    /// event is not copied out.
    #[inline]
    pub fn advance(&mut self) -> Result<bool, TraceError> {
        self.read_next(None)
    }

    /// Reads and resolves the next event into `out`, or into the current event when `out` is
    /// `None`: decoded in place, the ~330-byte event is copied once, into where it is kept.
    #[inline]
    fn read_next(&mut self, out: Option<&mut Event>) -> Result<bool, TraceError> {
        let Self {
            reader,
            resolve,
            symbolizer,
            events,
            current,
            chunks,
            known_modules,
            recorded,
        } = self;
        let ev = out.unwrap_or(current);
        let before = reader.bytes_read();
        if !reader.next_event_into(ev)? {
            return Ok(false);
        }
        if reader.reading_live_file() {
            chunks.recovered_from.get_or_insert(*events);
        } else if reader.bytes_read() != before {
            chunks.starts.push((before, *events));
        }
        *events += 1;
        let modules = match known_modules {
            Some(m) => m.as_slice(),
            None => reader.modules(),
        };
        let location = resolve.locations
            && ev.get(Field::ReturnAddress).is_some()
            && ev.get(Field::SrcFile).is_none();
        let data = resolve.data_names && unnamed_host_data(ev) && !modules.is_empty();
        let device_block =
            resolve.data_names && crate::unnamed_device_block(ev) && !modules.is_empty();
        // Data regions' entries and exits, paired to place exits a tail call put in the caller.
        let region = resolve.locations
            && matches!(
                ev.kind,
                accprof_abi::acc_event_t::ENTER_DATA_START
                    | accprof_abi::acc_event_t::EXIT_DATA_START
            );
        if !(location || data || region || device_block) {
            return Ok(true);
        }
        let header = reader.header();
        let sym = symbolizer.get_or_insert_with(|| {
            Symbolizer::new(modules)
                .with_symbols(recorded)
                .with_header(header)
        });
        sym.update_modules(modules);
        if location {
            sym.annotate(ev, reader.strings_mut());
        }
        if region {
            sym.place_data_exit(ev, reader.strings_mut());
        }
        if data {
            sym.annotate_data(ev, reader.strings_mut());
        }
        if device_block {
            sym.annotate_device_block(ev, reader.strings_mut());
        }
        Ok(true)
    }

    /// Where the events chunks read so far start (the whole trace's once it has been read).
    pub fn chunk_index(&self) -> &ChunkIndex {
        &self.chunks
    }

    /// Whether the events returned from now on were recovered from the live file of a killed
    /// recording: they lie in no events chunk (see [`ChunkIndex::recovered_from`]).
    pub fn reading_live_file(&self) -> bool {
        self.reader.reading_live_file()
    }

    /// The event [`advance`](Self::advance) moved to (a default event before the first).
    #[inline]
    pub fn event(&self) -> &Event {
        &self.current
    }

    /// The next event, resolved, or `None` at the end of the trace.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        Ok(self.advance()?.then_some(self.current))
    }

    /// Streams the rest of the trace on a second thread, calling `each` on this one with the
    /// events in order, a batch at a time, and how many bytes of the file were read by then.
    /// Decoding and resolving then overlap with what `each` does (on two cores, nearly halving
    /// the wall time of a report). Returns the reader, at the end of the trace, for its strings,
    /// footer and warnings.
    pub fn for_each_batch(self, mut each: impl FnMut(&[Event], u64)) -> Result<Self, TraceError>
    where
        R: Send,
    {
        self.for_each_batch_noting(|_, _| None::<()>, |events, _, bytes| each(events, bytes))
    }

    /// [`for_each_batch`](Self::for_each_batch), with what `note` says about each event while
    /// the reading thread has the strings at hand (a kernel name's text the first time it is
    /// used, say), handed to `each` beside its batch.
    pub fn for_each_batch_noting<T: Send>(
        self,
        note: impl FnMut(&Event, &StringTable) -> Option<T> + Send,
        mut each: impl FnMut(&[Event], &[T], u64),
    ) -> Result<Self, TraceError>
    where
        R: Send,
    {
        self.try_for_each_batch_noting(note, |events, notes, bytes| {
            each(events, notes, bytes);
            std::ops::ControlFlow::Continue(())
        })
    }

    /// [`for_each_batch_noting`](Self::for_each_batch_noting) that stops reading when `each`
    /// says so (the reader is then somewhere before the end).
    pub fn try_for_each_batch_noting<T: Send>(
        self,
        mut note: impl FnMut(&Event, &StringTable) -> Option<T> + Send,
        mut each: impl FnMut(&[Event], &[T], u64) -> std::ops::ControlFlow<()>,
    ) -> Result<Self, TraceError>
    where
        R: Send,
    {
        use std::sync::mpsc::{channel, sync_channel};
        const BATCH: usize = 4096;
        // Batches go round full-length (the first `n` events are the batch's), so that each
        // event is decoded straight into its slot.
        type Batch<T> = (Vec<Event>, usize, Vec<T>, u64);
        let (full_tx, full_rx) = sync_channel::<Batch<T>>(4);
        let (free_tx, free_rx) = channel::<Vec<Event>>();
        std::thread::scope(|scope| {
            let worker = scope.spawn(move || -> Result<Self, TraceError> {
                let mut r = self;
                loop {
                    let mut batch = free_rx
                        .try_recv()
                        .unwrap_or_else(|_| vec![Event::default(); BATCH]);
                    let mut notes = Vec::new();
                    let mut n = 0;
                    while n < BATCH {
                        if !r.read_next(Some(&mut batch[n]))? {
                            break;
                        }
                        notes.extend(note(&batch[n], r.strings()));
                        n += 1;
                    }
                    let done = n < BATCH;
                    if n > 0 && full_tx.send((batch, n, notes, r.bytes_read())).is_err() {
                        return Ok(r);
                    }
                    if done {
                        return Ok(r);
                    }
                }
            });
            for (batch, n, notes, bytes) in full_rx.iter() {
                if each(&batch[..n], &notes, bytes).is_break() {
                    // Dropping the receiver stops the worker at its next batch.
                    break;
                }
                // The worker may have finished; then the batch is simply dropped.
                let _ = free_tx.send(batch);
            }
            drop(full_rx);
            match worker.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Events returned so far.
    pub fn events_read(&self) -> u64 {
        self.events
    }

    pub fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The trace's strings, with those the resolution added.
    pub fn strings(&self) -> &StringTable {
        self.reader.strings()
    }

    pub fn modules(&self) -> &[Module] {
        self.reader.modules()
    }

    /// What the trace's symbols chunks say about its addresses (for a [`Symbolizer`] of a
    /// view's own: `Symbolizer::new(r.modules()).with_symbols(r.symbols())`).
    pub fn symbols(&self) -> &SymbolTable {
        &self.recorded
    }

    /// The clean end marker, once read (after the last event).
    pub fn footer(&self) -> Option<&Footer> {
        self.reader.footer()
    }

    /// Per thread, events the tool dropped while recording: (thread, count).
    pub fn drops(&self) -> &[(i64, u64)] {
        self.reader.drops()
    }

    /// Events the tool dropped while recording, over all threads.
    pub fn dropped_total(&self) -> u64 {
        self.reader.dropped_total()
    }

    pub fn bytes_read(&self) -> u64 {
        self.reader.bytes_read()
    }

    /// One line about a cut-off trace, if it was.
    pub fn truncation_warning(&self) -> Option<String> {
        self.reader.truncation_warning()
    }

    /// One line when the trace did not end cleanly: cut short, or without its end marker.
    pub fn end_warning(&self) -> Option<String> {
        self.reader.end_warning()
    }

    /// What is missing, duplicated or not recorded in the trace read so far.
    pub fn integrity(&self) -> accprof_trace::Integrity {
        self.reader.integrity()
    }

    /// One line about chunks or events the trace lacks, if any (read to the end first).
    pub fn loss_warning(&self) -> Option<String> {
        self.reader.loss_warning()
    }

    /// What the resolution could not do (unreadable modules, changed binaries), each once.
    pub fn warnings(&self) -> &[String] {
        self.symbolizer.as_ref().map_or(&[], |s| s.warnings())
    }
}
