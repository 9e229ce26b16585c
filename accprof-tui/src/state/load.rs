//! Reading traces into the [`Store`], once or, with `--follow`, again and again as they grow.
//!
//! Each trace is streamed with accprof-symbols' `ResolvingReader` and every event is reduced to a compact record at
//! once. The reader keeps where each events chunk began (chunks decode on their own), so the
//! details pane can later re-read one full event by record id without keeping 250-byte events in
//! memory: see [`Loader::fetch`].

use crate::state::constructs::{EventKey, RowKey};
use crate::state::kind::{kind_code, BarKind};
use crate::state::profile_feed::{ProfileFeed, ProfileJob, TraceEnd};
use crate::state::store::{LaneKind, Raw, Source, Store, NO_PARENT, NO_STR};
use accprof_analysis::build::ConstructKey;
use accprof_symbols::ResolvingReader;
use accprof_symbols::Symbolizer;
use accprof_timeline::layout::{shifted, wall_clock_shift};
use accprof_timeline::taxonomy::is_async_value;
use accprof_timeline::title::states_size;
use accprof_timeline::{is_enqueue, CompactEvent, DeviceRecord, EventClass, TrackKind};
use accprof_trace::{device, Event, Field, StrId, StringTable, TraceError, TraceReader};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The string id map's "not mapped yet".
const UNMAPPED: u32 = u32::MAX - 1;
/// String ids from here up are the reader's own (`StringTable::intern` gives them out from
/// u32::MAX down); a trace's ids stay far below.
const READER_IDS_FROM: u32 = u32::MAX / 2;

/// One trace being read.
struct Feed {
    source: usize,
    path: PathBuf,
    /// Resolves call sites and names unnamed host data as it streams, as every view's does.
    reader: ResolvingReader<BufReader<File>>,
    /// Added to a timestamp to put it on the wall clock, so that ranks line up.
    shift: i128,
    /// Trace string id -> store string id.
    str_map: Vec<u32>,
    /// The same for the ids of strings the reader added, by `u32::MAX - id`.
    added_str_map: Vec<u32>,
    /// The file's bytes up to the end of its header chunk: put in front of a seek into the file,
    /// they make a valid trace that starts at any chunk.
    prefix: Vec<u8>,
    /// Resolves re-read events (see [`Loader::fetch`]); made on the first.
    symbolizer: Option<Symbolizer>,
    /// Events read so far, and (first event index, first record id) of each poll's run: maps an
    /// event's index in its trace (what accprof-analysis reports) to its record.
    events_read: u64,
    runs: Vec<(u64, u32)>,
    /// The lane of the previous event: consecutive events mostly share one, which saves a hash
    /// lookup per event.
    last_lane: Option<(LaneKind, usize)>,
    /// The last (stream handle, async queue) pair a host event named, to skip repeating the
    /// map update for every event on the same queue.
    last_stream_queue: Option<(u64, i64)>,
    /// The analysis's profile of this trace, fed as events are read (see
    /// [`Loader::finish_profiles`]).
    profile: Option<ProfileFeed>,
    /// The events of a killed recording recovered from its live file, as read (resolved): they
    /// lie in no events chunk, so they are kept to be fetched. No more than the live file held.
    recovered: Vec<Event>,
}

/// Where the events chunk holding a run of record ids starts in its file.
#[derive(Clone, Copy, Debug)]
struct ChunkRef {
    first_rec: u32,
    feed: u16,
    /// [`RECOVERED`] for the run of events recovered from the live file (`Feed::recovered`).
    offset: u64,
}

/// The offset of a [`ChunkRef`] that stands for a feed's recovered events.
const RECOVERED: u64 = u64::MAX;

/// Why the details of a record cannot be shown.
#[derive(Debug)]
pub enum FetchError {
    /// The loader holds no event for this record: a fault of the TUI's own, not the trace's.
    NoRecord(u32),
    /// Reading the event again from its trace failed.
    Trace(TraceError),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::NoRecord(rec) => write!(
                f,
                "the timeline lost track of event {rec}; its details cannot be shown (a fault of \
                 accprof's, not of the trace)"
            ),
            FetchError::Trace(e) => e.fmt(f),
        }
    }
}

impl From<TraceError> for FetchError {
    fn from(e: TraceError) -> Self {
        FetchError::Trace(e)
    }
}

/// Owns the open traces and feeds the store.
pub struct Loader {
    feeds: Vec<Feed>,
    chunks: Vec<ChunkRef>,
    /// Records read into the store so far.
    records: u32,
    /// Lines for the status bar: truncated traces, dropped events, symbol problems.
    pub warnings: Vec<String>,
    /// Whether a trace without its end marker is warned about (not while following a trace
    /// whose program is still running).
    pub warn_no_end_marker: bool,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("feeds", &self.feeds.len())
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl Loader {
    /// Opens every trace and checks its header. Fails on the first unreadable one, with the
    /// reader's one-line message. With `profiles`, each trace's analysis profile is built from
    /// the events as they are read (a trace read once, see [`Loader::finish_profiles`]).
    pub fn open(paths: &[PathBuf], store: &mut Store, profiles: bool) -> Result<Self, TraceError> {
        let mut feeds = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            let reader = ResolvingReader::open(path)?;
            let prefix = read_prefix(path, reader.bytes_read())?;
            let h = reader.header();
            let shift = wall_clock_shift(h);
            let rank = h.mpi_rank.unwrap_or(i as u32);
            let device_activity = h
                .extra
                .iter()
                .any(|(k, _)| k == accprof_analysis::load::DEVICE_ACTIVITY_KEY);
            store.sources.push(Source {
                path: path.display().to_string(),
                rank,
                device_activity,
            });
            let profile = profiles.then(|| ProfileFeed::start(path.display().to_string(), h));
            feeds.push(Feed {
                source: i,
                path: path.clone(),
                reader,
                shift,
                str_map: Vec::new(),
                added_str_map: Vec::new(),
                prefix,
                symbolizer: None,
                events_read: 0,
                runs: Vec::new(),
                last_lane: None,
                last_stream_queue: None,
                profile,
                recovered: Vec::new(),
            });
        }
        Ok(Self {
            feeds,
            chunks: Vec::new(),
            records: 0,
            warnings: Vec::new(),
            warn_no_end_marker: true,
        })
    }

    /// Reads every event that is there now into the store and rebuilds the rows that changed.
    /// Returns how many events were added. `progress` is called now and then with
    /// (bytes read, total bytes) of the trace being read.
    pub fn poll(
        &mut self,
        store: &mut Store,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<usize, TraceError> {
        let mut added = 0;
        for fi in 0..self.feeds.len() {
            added += self.poll_feed(fi, store, progress)?;
        }
        if added > 0 {
            let t = std::time::Instant::now();
            store.rebuild();
            crate::state::pairing::tie_by_name(store);
            if std::env::var_os("ACCPROF_TUI_TIMING").is_some() {
                eprintln!("rebuild: {:.2?}", t.elapsed());
            }
        }
        self.refresh_warnings();
        Ok(added)
    }

    fn poll_feed(
        &mut self,
        fi: usize,
        store: &mut Store,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<usize, TraceError> {
        let total = std::fs::metadata(&self.feeds[fi].path)
            .map(|m| m.len())
            .unwrap_or(0);
        let feed = &mut self.feeds[fi];
        let mut added = 0usize;
        // Events take ~17 bytes on disk: reserve once instead of growing ten million pushes.
        store
            .records
            .reserve((total.saturating_sub(feed.reader.bytes_read()) / 17) as usize);
        feed.runs
            .push((feed.events_read, store.records.len() as u32));
        loop {
            let before = feed.reader.bytes_read();
            if !feed.reader.advance()? {
                break;
            }
            let ev = *feed.reader.event();
            if feed.reader.reading_live_file() {
                if feed.recovered.is_empty() {
                    self.chunks.push(ChunkRef {
                        first_rec: store.records.len() as u32,
                        feed: fi as u16,
                        offset: RECOVERED,
                    });
                }
                feed.recovered.push(ev);
            } else if feed.reader.bytes_read() != before {
                // This event opened a new events chunk, which starts at or after `before`.
                self.chunks.push(ChunkRef {
                    first_rec: store.records.len() as u32,
                    feed: fi as u16,
                    offset: before,
                });
                progress(feed.reader.bytes_read(), total);
            }
            add_event(feed, &ev, store);
            if let Some(p) = &mut feed.profile {
                p.push(ev, feed.reader.strings());
            }
            added += 1;
        }
        feed.events_read += added as u64;
        if added == 0 {
            feed.runs.pop();
        }
        self.records = store.records.len() as u32;
        Ok(added)
    }

    fn refresh_warnings(&mut self) {
        self.warnings.clear();
        for f in &self.feeds {
            self.warnings.extend(if self.warn_no_end_marker {
                f.reader.end_warning()
            } else {
                f.reader.truncation_warning()
            });
            self.warnings.extend(f.reader.loss_warning());
            if f.reader.dropped_total() > 0 {
                self.warnings.push(format!(
                    "{}: the tool dropped {} events (no buffer was free)",
                    f.path.display(),
                    f.reader.dropped_total()
                ));
            }
            self.warnings.extend(f.reader.warnings().iter().cloned());
        }
    }

    /// Ends the profiles fed while reading (per trace, in source order) and hands them over to
    /// be finished; empty when the loader was opened without them or they were taken before.
    pub fn finish_profiles(&mut self) -> Vec<ProfileJob> {
        let mut jobs = Vec::new();
        for f in &mut self.feeds {
            if let Some(p) = f.profile.take() {
                let end = TraceEnd {
                    strings: f.reader.strings().clone(),
                    footer: f.reader.footer().cloned(),
                    dropped: f.reader.dropped_total(),
                };
                jobs.push(p.finish(end));
            }
        }
        jobs
    }

    /// Whether every trace ended cleanly (has its footer).
    pub fn all_finished(&self) -> bool {
        self.feeds.iter().all(|f| f.reader.footer().is_some())
    }

    /// Re-reads the full event behind record `rec`, with the string table to resolve its ids.
    pub fn fetch(&mut self, rec: u32) -> Result<(Event, StringTable), FetchError> {
        let at = self.chunks.partition_point(|c| c.first_rec <= rec);
        let chunk = at
            .checked_sub(1)
            .map(|i| self.chunks[i])
            .filter(|_| rec < self.records)
            .ok_or(FetchError::NoRecord(rec))?;
        let feed = &mut self.feeds[chunk.feed as usize];
        let label = feed.path.display().to_string();
        if chunk.offset == RECOVERED {
            let ev = feed.recovered.get((rec - chunk.first_rec) as usize);
            let ev = ev.copied().ok_or(FetchError::NoRecord(rec))?;
            return Ok((ev, feed.reader.strings().clone()));
        }
        let io = |source| TraceError::Io {
            path: label.clone(),
            source,
        };
        let mut file = File::open(&feed.path).map_err(io)?;
        file.seek(SeekFrom::Start(chunk.offset)).map_err(io)?;
        let input = std::io::Cursor::new(feed.prefix.clone()).chain(BufReader::new(file));
        let mut reader = TraceReader::new(label.clone(), input)?;
        let mut ev = None;
        for _ in 0..=(rec - chunk.first_rec) {
            ev = reader.next_event()?;
        }
        let mut ev = ev.ok_or_else(|| TraceError::Corrupt {
            path: label.clone(),
            offset: chunk.offset,
            what: "the event is no longer in the file".into(),
        })?;
        let mut strings = feed.reader.strings().clone();
        resolve_again(feed, &mut ev, &mut strings);
        Ok((ev, strings))
    }

    /// The record of the `index`-th event of trace `source` (as numbered by accprof-analysis).
    pub fn rec_for(&self, source: usize, index: u64) -> Option<u32> {
        let feed = self.feeds.iter().find(|f| f.source == source)?;
        if index >= feed.events_read {
            return None;
        }
        let at = feed
            .runs
            .partition_point(|&(first, _)| first <= index)
            .checked_sub(1)?;
        let (first, rec) = feed.runs[at];
        Some(rec + (index - first) as u32)
    }

    /// The trace files, in source order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.feeds.iter().map(|f| f.path.clone()).collect()
    }

    /// The time shift of record `rec`'s trace (to show an event's own timestamps).
    pub fn source_of(&self, rec: u32) -> Option<usize> {
        let at = self.chunks.partition_point(|c| c.first_rec <= rec);
        at.checked_sub(1)
            .map(|i| self.feeds[self.chunks[i].feed as usize].source)
    }
}

/// The file's first `len` bytes.
fn read_prefix(path: &Path, len: u64) -> Result<Vec<u8>, TraceError> {
    let label = path.display().to_string();
    let mut buf = Vec::with_capacity(len as usize);
    File::open(path)
        .and_then(|f| f.take(len).read_to_end(&mut buf))
        .map_err(|source| TraceError::Io {
            path: label,
            source,
        })?;
    Ok(buf)
}

/// Resolves a re-read event as the streaming pass's `ResolvingReader` did (call site of an
/// event with only a return address, name of unnamed host data), so the details agree with the
/// timeline. The reader resolves only the events it streams, hence this repeat of its rule.
fn resolve_again(feed: &mut Feed, ev: &mut Event, strings: &mut StringTable) {
    let modules = feed.reader.modules();
    let needs_location = ev.get(Field::ReturnAddress).is_some() && ev.get(Field::SrcFile).is_none();
    let needs_name = accprof_symbols::unnamed_host_data(ev) && !modules.is_empty();
    if !needs_location && !needs_name {
        return;
    }
    let sym = feed
        .symbolizer
        .get_or_insert_with(|| Symbolizer::new(modules).with_symbols(feed.reader.symbols()));
    sym.update_modules(modules);
    if needs_location {
        sym.annotate(ev, strings);
    }
    if needs_name {
        sym.annotate_data(ev, strings);
    }
}

/// Reduces `ev` to the store's columns. The fields come from the shared [`CompactEvent`] (the
/// form export and plot keep too), so that a name, a line, a parent construct or a clamped time
/// means the same thing here as there; only the lane, the colour category and the table row are
/// the TUI's own.
fn add_event(feed: &mut Feed, ev: &Event, store: &mut Store) {
    let shift = |t: u64| shifted(t, feed.shift);
    let compact = CompactEvent::from_event(ev, feed.source as u16, 0, shift);
    let mut map = |id: Option<StrId>| -> u32 {
        let Some(id) = id else { return NO_STR };
        // The trace's ids count up from 0; strings the reader added (resolved source files,
        // variable names from the symbol table) count down from u32::MAX: two dense maps.
        let (table, i) = if id.0 >= READER_IDS_FROM {
            (&mut feed.added_str_map, (u32::MAX - id.0) as usize)
        } else {
            (&mut feed.str_map, id.0 as usize)
        };
        if table.len() <= i {
            table.resize(i + 1, UNMAPPED);
        }
        if table[i] == UNMAPPED {
            table[i] = match feed.reader.strings().get(id) {
                Some(s) => store.strings.intern(s),
                None => return NO_STR,
            };
        }
        table[i]
    };
    let name = map(compact.name_id());
    let src_file = compact.src_file_id();
    let file = map(src_file);
    let construct = match EventClass::of(ev) {
        EventClass::Construct(kind) => Some(ConstructKey::of(ev, kind).map_strings(|id| {
            if Some(id) == src_file {
                StrId(file)
            } else {
                StrId(map(Some(id)))
            }
        })),
        _ => None,
    };
    let rec = store.records.len() as u32;
    let is_device = device::is_device_record(ev.kind);
    let cat = BarKind::of_event(ev);
    let r = &mut store.records;
    r.kind.push(kind_code(ev.kind, cat));
    r.parent.push(
        compact
            .construct()
            .and_then(|p| u8::try_from(p.0).ok())
            .unwrap_or(NO_PARENT),
    );
    r.name.push(name);
    r.file.push(file);
    r.line.push(compact.line);
    r.source.push(feed.source as u16);
    if let Some(b) = compact.bytes().filter(|_| states_size(ev.kind)) {
        r.sizes.push(rec, b);
    }
    // With device records, kernels and transfers come into the table from accprof-analysis's
    // profile, which ties device times to them (see state::table); the host counts the rest.
    let from_profile =
        store.sources[feed.source].device_activity && (is_device || is_enqueue(ev.kind));
    if !from_profile {
        let key = match construct {
            Some(key) => RowKey::Construct(key),
            None => RowKey::Event(EventKey {
                kind: r.kind[rec as usize],
                parent: r.parent[rec as usize],
                name,
                file,
                line: r.line[rec as usize],
            }),
        };
        store
            .constructs
            .add(key, rec, compact.duration(), compact.bytes().unwrap_or(0));
    }
    if let Some(d) = DeviceRecord::of(ev) {
        store.device.push(
            rec,
            d,
            d.host_call_ns.map(shift),
            compact.start,
            compact.end,
        );
    } else if let (Some(handle), Some(q)) =
        (ev.get(Field::AsyncHandle), ev.get_i64(Field::AsyncQueue))
    {
        // acc_async_sync names no queue.
        if is_async_value(q) && feed.last_stream_queue != Some((handle, q)) {
            feed.last_stream_queue = Some((handle, q));
            store.names.note_stream_queue(feed.source as u16, handle, q);
        }
    }
    let kind = TrackKind::of_event(ev);
    let lane = match feed.last_lane {
        Some((k, l))
            if k == kind
                && store
                    .lanes
                    .get(l)
                    .is_some_and(|x| x.kind == kind && x.source == feed.source) =>
        {
            l
        }
        _ => {
            let l = store.lane_for(feed.source, kind);
            feed.last_lane = Some((kind, l));
            l
        }
    };
    store.push_raw(
        lane,
        Raw {
            start: compact.start,
            end: compact.end,
            rec,
            cat,
        },
    );
}
