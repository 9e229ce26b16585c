//! The compact event store the timeline draws from.
//!
//! A trace's `Event` is ~250 bytes; ten million of them would not fit comfortably. While reading,
//! each event becomes a record of what the timeline, search and labels need (~35 bytes in all):
//! its placement (lane, row, start, end, category) in the lane's [`Track`]s and a few
//! per-record fields (kind, name, source file and line; the size of a transfer or an allocation,
//! which its label states, apart: [`Sizes`]). The details pane re-reads the full
//! event from the file when one is selected (`Loader::fetch` in `state::load`).
//!
//! A lane is one track of accprof-timeline's layout (a host thread, its synchronous device
//! work, an async queue, a device stream), named by the layout's rule; its rows are the
//! layout's lanes and depths ([`accprof_timeline::lanes`]): the TUI keeps every event, so it
//! places them whole, by the rules the streaming layout applies as they go.

use crate::state::kind::{device_code_name, is_device_code, kind_of_code, BarKind};
use crate::state::track::Track;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::format::bytes_compact;
use accprof_timeline::lanes::Lanes;
use accprof_timeline::Title;
use accprof_timeline::{NameStyle, TrackKey, TrackKind, TrackTable};
use std::collections::HashMap;

/// "No string" in the per-record string columns.
pub const NO_STR: u32 = u32::MAX;
/// "No line" in the per-record line column: the shared compact form's "not recorded", which
/// the column is filled from.
pub const NO_LINE: i32 = accprof_timeline::compact::NONE_I32;
/// "No parent construct" in the per-record parent column.
pub const NO_PARENT: u8 = u8::MAX;

/// Where a lane's events ran: a track of the shared vocabulary (host thread, a thread's
/// synchronous device work, async queue, device stream).
pub type LaneKind = TrackKind;

/// One row group of the timeline.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The trace (rank) it belongs to, index into [`Store::sources`].
    pub source: usize,
    pub kind: LaneKind,
    /// Rows: per layout lane (slices that cross go to a further one), by nesting depth;
    /// `tracks[0]` holds the outermost slices of the first lane.
    pub tracks: Vec<Track>,
    /// Events as read, kept only while following a growing trace, to rebuild the rows.
    raw: Vec<Raw>,
}

/// An event as placed in a lane before nesting is worked out.
#[derive(Clone, Copy, Debug)]
pub struct Raw {
    pub start: u64,
    pub end: u64,
    pub rec: u32,
    pub cat: BarKind,
}

/// One loaded trace.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: String,
    /// The MPI rank, or the position on the command line when the trace has none.
    pub rank: u32,
    /// The trace holds device records (its header names the activity source, CUPTI).
    pub device_activity: bool,
}

/// The per-record columns: one entry per event, indexed by record id.
#[derive(Clone, Debug, Default)]
pub struct Records {
    /// The event's kind code ([`crate::state::kind::kind_code`]): the acc_event_t number of a
    /// host event (start event of a pair), a device code for device records.
    pub kind: Vec<u8>,
    /// acc_construct_t of `parent_construct`, [`NO_PARENT`] when absent.
    pub parent: Vec<u8>,
    /// Kernel name for launches, variable name for data events (an id in [`Store::strings`]).
    pub name: Vec<u32>,
    pub file: Vec<u32>,
    pub line: Vec<i32>,
    /// Which source the record came from.
    pub source: Vec<u16>,
    /// The bytes a record's title states (transfers, device memory, device copies).
    pub sizes: Sizes,
}

impl Records {
    pub fn reserve(&mut self, n: usize) {
        self.kind.reserve(n);
        self.parent.reserve(n);
        self.name.reserve(n);
        self.file.reserve(n);
        self.line.reserve(n);
        self.source.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.kind.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }
}

/// The bytes of the records whose title states a size
/// ([`accprof_timeline::title::states_size`]), in record order: constructs, launches and waits
/// state none and cost nothing here, where a column for every record would cost 8 bytes each.
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    recs: Vec<u32>,
    bytes: Vec<u64>,
}

impl Sizes {
    /// Records `rec`'s size; records come in increasing order.
    pub fn push(&mut self, rec: u32, bytes: u64) {
        debug_assert!(self.recs.last().is_none_or(|&last| last < rec));
        self.recs.push(rec);
        self.bytes.push(bytes);
    }

    pub fn get(&self, rec: u32) -> Option<u64> {
        self.recs.binary_search(&rec).ok().map(|i| self.bytes[i])
    }
}

/// Strings of every loaded trace, interned once (traces number their strings independently).
#[derive(Clone, Debug, Default)]
pub struct Strings {
    list: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Strings {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    pub fn get(&self, id: u32) -> Option<&str> {
        self.list.get(id as usize).map(|s| &**s)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Everything the timeline shows.
#[derive(Clone, Debug, Default)]
pub struct Store {
    pub sources: Vec<Source>,
    pub lanes: Vec<Lane>,
    pub records: Records,
    pub strings: Strings,
    /// Per-construct totals for the table.
    pub constructs: crate::state::constructs::ConstructTable,
    /// The device records' issuing thread and call time, to pair them with host events.
    pub device: crate::state::device::DeviceIndex,
    /// The lanes as the layout's tracks, for their names (a device stream's names the async
    /// queues the host events say it serves).
    pub names: TrackTable,
    /// Which categories occur, one bit per [`BarKind`] (the legend lists only those).
    pub categories_seen: u32,
    /// Earliest start and latest end over all events (ns); `origin == end` when empty.
    pub origin: u64,
    pub end: u64,
    /// Keep raw events after building rows (following a growing trace).
    keep_raw: bool,
    has_events: bool,
    lane_index: HashMap<(usize, LaneKind), usize>,
}

/// Identifies one bar on the timeline: an event's place in the store's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarRef {
    pub lane: usize,
    pub track: usize,
    pub idx: usize,
}

impl Store {
    pub fn new(keep_raw: bool) -> Self {
        Self {
            keep_raw,
            ..Self::default()
        }
    }

    pub fn event_count(&self) -> usize {
        self.records.len()
    }

    /// The lane for `(source, kind)`, created on first use.
    pub fn lane_for(&mut self, source: usize, kind: LaneKind) -> usize {
        if let Some(&i) = self.lane_index.get(&(source, kind)) {
            return i;
        }
        self.names.intern(TrackKey {
            trace: source as u16,
            kind,
        });
        self.lanes.push(Lane {
            source,
            kind,
            tracks: Vec::new(),
            raw: Vec::new(),
        });
        let i = self.lanes.len() - 1;
        self.lane_index.insert((source, kind), i);
        i
    }

    /// Adds an event to a lane; it shows after [`Store::rebuild`].
    pub fn push_raw(&mut self, lane: usize, raw: Raw) {
        if !self.has_events {
            self.has_events = true;
            self.origin = raw.start;
            self.end = raw.end;
        }
        self.origin = self.origin.min(raw.start);
        self.end = self.end.max(raw.end);
        self.categories_seen |= 1 << raw.cat as u32;
        self.lanes[lane].raw.push(raw);
    }

    /// Works out nesting for lanes that received events and rebuilds their rows; lanes are then
    /// put in display order (by rank, threads before queues).
    pub fn rebuild(&mut self) {
        let keep = self.keep_raw;
        for lane in &mut self.lanes {
            if lane.raw.is_empty() {
                continue;
            }
            let mut raw = std::mem::take(&mut lane.raw);
            // Following: the new events join the old ones, so the rows are rebuilt from all.
            if keep && !lane.tracks.is_empty() {
                let mut old = Vec::new();
                for t in &lane.tracks {
                    for i in 0..t.len() {
                        old.push(Raw {
                            start: t.start[i],
                            end: t.end[i],
                            rec: t.rec[i],
                            cat: BarKind::from_u8(t.cat[i]),
                        });
                    }
                }
                old.extend_from_slice(&raw);
                raw = old;
            }
            lane.tracks = nest(&mut raw);
        }
        self.sort_lanes();
        self.device.finish();
    }

    /// Whether `thread` of `source` recorded events (device records issued from a thread that
    /// did not came from a runtime's helper thread): any but device records, NVTX ranges
    /// included, as the layout and the profile count them.
    pub fn reports_events(&self, source: usize, thread: i64) -> bool {
        let thread = Some(thread);
        [
            TrackKind::Host { thread },
            TrackKind::DeviceSync { thread },
            TrackKind::Nvtx { thread },
        ]
        .iter()
        .any(|&kind| self.lane_index.contains_key(&(source, kind)))
    }

    /// The lane of `(source, kind)`, if it exists.
    pub fn lane_of(&self, source: usize, kind: LaneKind) -> Option<usize> {
        self.lane_index.get(&(source, kind)).copied()
    }

    fn sort_lanes(&mut self) {
        let ranks: Vec<u32> = self.sources.iter().map(|s| s.rank).collect();
        let key = |l: &Lane| {
            let track = TrackKey {
                trace: 0,
                kind: l.kind,
            };
            let rank = ranks.get(l.source).copied().unwrap_or(0);
            (rank, l.source, track.display_order())
        };
        if self.lanes.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
            return;
        }
        self.lanes.sort_by_key(key);
        self.lane_index = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| ((l.source, l.kind), i))
            .collect();
    }

    /// The lane's name in the left column: its track's short name (`thread 0`,
    /// `thread 0 (sync)`, `queue 1`, `device stream 0x7 (queue 1)`), after its rank's when
    /// several traces are loaded (`r1 thread 0`).
    pub fn lane_label(&self, lane: usize) -> String {
        let l = &self.lanes[lane];
        let key = TrackKey {
            trace: l.source as u16,
            kind: l.kind,
        };
        let what = match self.names.get(&key) {
            Some(t) => self.names.name(t, NameStyle::Short),
            None => l.kind.name(&Default::default(), NameStyle::Short),
        };
        if self.sources.len() > 1 {
            format!("r{} {what}", self.sources[l.source].rank)
        } else {
            what
        }
    }

    pub fn rec_of(&self, r: BarRef) -> u32 {
        self.lanes[r.lane].tracks[r.track].rec[r.idx]
    }

    pub fn span_of(&self, r: BarRef) -> (u64, u64) {
        let t = &self.lanes[r.lane].tracks[r.track];
        (t.start[r.idx], t.end[r.idx])
    }

    pub fn str(&self, id: u32) -> Option<&str> {
        (id != NO_STR).then(|| self.strings.get(id)).flatten()
    }

    /// `file:line`, with the file's directory dropped, when the record has a location.
    pub fn location(&self, rec: u32) -> Option<String> {
        self.location_at(rec, self.records.line[rec as usize])
    }

    fn location_at(&self, rec: u32, line: i32) -> Option<String> {
        let file = self.str(self.records.file[rec as usize])?;
        let base = file.rsplit('/').next().unwrap_or(file);
        Some(if line == NO_LINE {
            base.to_string()
        } else {
            format!("{base}:{line}")
        })
    }

    /// What a record is and what it concerns, without a size or a place: `parallel`,
    /// `enter data (parallel)`, `upload A`, `HtoD A`.
    pub fn what(&self, rec: u32) -> String {
        self.title(rec, None)
    }

    fn parent(&self, rec: u32) -> Option<acc_construct_t> {
        let p = self.records.parent[rec as usize];
        (p != NO_PARENT).then(|| acc_construct_t(i32::from(p)))
    }

    /// The text drawn on a bar: what it is and where it came from, "upload 8 MiB A t.c:10".
    pub fn label(&self, rec: u32) -> String {
        let bytes = self.records.sizes.get(rec);
        self.located(self.title(rec, bytes), rec, self.records.line[rec as usize])
    }

    /// The label of a table row that sums every event like `rec`, at source line `line`: a
    /// bar's label without the size of one of them (the row has its own column of bytes).
    pub fn row_label_at(&self, rec: u32, line: i32) -> String {
        self.located(self.title(rec, None), rec, line)
    }

    /// What the record is and what it concerns: accprof-timeline's [`Title`], the words the
    /// exports name slices with, where the TUI's differ for a reason:
    /// - a launch reads `launch NAME`, not the kernel's name alone: the TUI puts the device's
    ///   `kernel NAME` on the rows beside it and in the same table, and the word is what tells
    ///   the host's enqueue from the kernel's run;
    /// - a device record starts with the legend's word for it (`kernel NAME`, `HtoD 8 MiB A`),
    ///   where the exports write `NAME` and `memcpy HtoD 8 MiB A` (their tracks and categories
    ///   say it ran on the device): on a bar the word is what says so, and what fits.
    fn title(&self, rec: u32, bytes: Option<u64>) -> String {
        let r = rec as usize;
        let code = self.records.kind[r];
        let name = self.str(self.records.name[r]);
        if is_device_code(code) {
            let mut s = device_code_name(code).to_string();
            for part in [bytes.map(bytes_compact), name.map(str::to_string)]
                .into_iter()
                .flatten()
            {
                s.push(' ');
                s.push_str(&part);
            }
            return s;
        }
        let kind = kind_of_code(code);
        let title = Title {
            kind,
            construct: self.parent(rec),
            bytes,
            name,
        };
        if kind == acc_event_t::ENQUEUE_LAUNCH_START {
            format!("launch {title}")
        } else {
            title.to_string()
        }
    }

    /// `text` followed by the record's `file:line`, at `line`, when it has one. Every bar says
    /// where it came from, data movement too, whose place the exports keep in the slice's
    /// arguments: a bar has no arguments to hover over, and the place is what tells apart the
    /// uploads of one variable by two constructs.
    fn located(&self, mut text: String, rec: u32, line: i32) -> String {
        if let Some(loc) = self.location_at(rec, line) {
            text.push(' ');
            text.push_str(&loc);
        }
        text
    }

    /// Every event, as references, in no particular order (search and jumps).
    pub fn refs(&self) -> impl Iterator<Item = BarRef> + '_ {
        self.lanes.iter().enumerate().flat_map(|(lane, l)| {
            l.tracks.iter().enumerate().flat_map(move |(track, t)| {
                (0..t.len()).map(move |idx| BarRef { lane, track, idx })
            })
        })
    }

    /// Total number of rows (tracks) over all lanes.
    pub fn row_count(&self) -> usize {
        self.lanes.iter().map(|l| l.tracks.len().max(1)).sum()
    }
}

/// Sorts a lane's events by start (outer before inner at equal starts) and deals them into
/// rows: the layout's lanes ([`Lanes`]), each by nesting depth, so that every row holds
/// disjoint events (what [`Track`] relies on).
fn nest(raw: &mut [Raw]) -> Vec<Track> {
    // The tool writes events when they end, so children come before their parent: nearly sorted
    // runs, which the stable sort handles in close to linear time.
    raw.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut lanes = Lanes::default();
    // Per (lane, depth), its row.
    let mut rows: Vec<Vec<Track>> = Vec::new();
    for r in raw.iter() {
        // A zero-length event holds nothing open, whatever its kind.
        let p = lanes.place(r.start, r.end, r.start >= r.end);
        let (lane, depth) = (usize::from(p.lane), usize::from(p.depth));
        if rows.len() <= lane {
            rows.resize_with(lane + 1, Vec::new);
        }
        if rows[lane].len() <= depth {
            rows[lane].resize_with(depth + 1, Track::default);
        }
        rows[lane][depth].push(r.start, r.end, r.cat, r.rec);
    }
    let mut tracks: Vec<Track> = rows.into_iter().flatten().collect();
    for t in &mut tracks {
        t.finish();
    }
    tracks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(start: u64, end: u64, rec: u32) -> Raw {
        Raw {
            start,
            end,
            rec,
            cat: BarKind::Compute,
        }
    }

    #[test]
    fn children_go_under_their_parent_and_siblings_share_a_row() {
        // Written in end order like the tool does: children first.
        let mut evs = vec![
            raw(10, 20, 1),
            raw(30, 40, 2),
            raw(0, 100, 0),
            raw(120, 130, 3),
            raw(12, 15, 4),
        ];
        let tracks = nest(&mut evs);
        assert_eq!(tracks.len(), 3);
        assert_eq!(tracks[0].rec, [0, 3]);
        assert_eq!(tracks[1].rec, [1, 2]);
        assert_eq!(tracks[2].rec, [4]);
    }

    #[test]
    fn crossing_siblings_go_to_a_row_of_a_further_lane() {
        let mut evs = vec![
            raw(0, 50, 0),
            raw(40, 90, 1),
            raw(45, 48, 2),
            raw(60, 70, 3),
        ];
        let tracks = nest(&mut evs);
        // The first lane: (0, 50) holding (45, 48), then (60, 70) once it ended; the second:
        // (40, 90), which crosses (0, 50).
        assert_eq!(tracks.len(), 3);
        assert_eq!(tracks[0].rec, [0, 3]);
        assert_eq!(tracks[1].rec, [2]);
        assert_eq!(tracks[2].rec, [1]);
    }
}
