//! The compact event store the timeline draws from.
//!
//! A trace's `Event` is ~250 bytes; ten million of them would not fit comfortably. While reading,
//! each event becomes a record of what the timeline, search and labels need (~35 bytes in all):
//! its placement (lane, row, start, end, category) in the lane's [`Track`]s and a few
//! per-record fields (kind, name, source file and line). The details pane re-reads the full
//! event from the file when one is selected (`Loader::fetch` in `state::load`).

use crate::state::kind::Category;
use crate::state::track::Track;
use accprof_abi::ACC_ASYNC_NOVAL;
use accprof_timeline::TrackKind;
use std::collections::HashMap;

/// "No string" in the per-record string columns.
pub const NO_STR: u32 = u32::MAX;
/// "No line" in the per-record line column: the shared compact form's "not recorded", which
/// the column is filled from.
pub const NO_LINE: i32 = accprof_timeline::compact::NONE_I32;
/// "No parent construct" in the per-record parent column.
pub const NO_PARENT: u8 = u8::MAX;

/// Where a lane's events ran: a track of the shared vocabulary (host thread, async queue,
/// device stream). A thread's synchronous device work (`TrackKind::DeviceSync`) is shown in that
/// thread's lane, nested under the constructs that issued it (see `state::load::lane_kind`).
pub type LaneKind = TrackKind;

/// One row group of the timeline.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The trace (rank) it belongs to, index into [`Store::sources`].
    pub source: usize,
    pub kind: LaneKind,
    /// Rows by nesting depth: `tracks[0]` holds the outermost constructs.
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
    pub cat: Category,
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
    /// (source, stream handle) -> async queue, from host events that name both: labels the
    /// device lane of that stream "queue N (device)".
    pub stream_queues: HashMap<(usize, u64), i64>,
    /// Which categories occur, one bit per [`Category`] (the legend lists only those).
    pub categories_seen: u32,
    /// Earliest start and latest end over all events (ns); `origin == end` when empty.
    pub origin: u64,
    pub end: u64,
    /// Keep raw events after building rows (following a growing trace).
    keep_raw: bool,
    has_events: bool,
    lane_index: HashMap<(usize, LaneKind), usize>,
}

/// Identifies one event on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRef {
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
                            cat: Category::from_u8(t.cat[i]),
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

    /// Whether `source` has a host thread lane for `thread` (device records issued from a
    /// thread without one came from a runtime's helper thread).
    pub fn has_thread_lane(&self, source: usize, thread: i64) -> bool {
        self.lane_index.contains_key(&(
            source,
            TrackKind::Host {
                thread: Some(thread),
            },
        ))
    }

    /// The lane of `(source, kind)`, if it exists.
    pub fn lane_of(&self, source: usize, kind: LaneKind) -> Option<usize> {
        self.lane_index.get(&(source, kind)).copied()
    }

    fn sort_lanes(&mut self) {
        let ranks: Vec<u32> = self.sources.iter().map(|s| s.rank).collect();
        // The shared display order: each thread's NVTX lane just above the thread's lane.
        let key = |l: &Lane| {
            let order = accprof_timeline::TrackKey {
                trace: 0,
                kind: l.kind,
            }
            .display_order();
            (ranks.get(l.source).copied().unwrap_or(0), l.source, order)
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

    /// The lane's name in the left column, e.g. `thread 0`, `queue 1`, `r1 thread 0`,
    /// `device stream 0x7`, `queue 1 (device)`.
    pub fn lane_label(&self, lane: usize) -> String {
        let l = &self.lanes[lane];
        let what = match l.kind {
            TrackKind::Host { thread: Some(t) } | TrackKind::DeviceSync { thread: Some(t) } => {
                format!("thread {t}")
            }
            TrackKind::Host { thread: None } | TrackKind::DeviceSync { thread: None } => {
                "thread ?".to_string()
            }
            TrackKind::Nvtx { thread: Some(t) } => format!("thread {t} NVTX"),
            TrackKind::Nvtx { thread: None } => "NVTX".to_string(),
            TrackKind::DeviceQueue {
                queue: ACC_ASYNC_NOVAL,
            } => "queue noval".to_string(),
            TrackKind::DeviceQueue { queue } => format!("queue {queue}"),
            TrackKind::DeviceStream { stream: None } => "device (no stream)".to_string(),
            TrackKind::DeviceStream {
                stream: Some(stream),
            } => match self.stream_queues.get(&(l.source, stream)) {
                Some(&ACC_ASYNC_NOVAL) => "queue noval (device)".to_string(),
                Some(q) => format!("queue {q} (device)"),
                None => format!("device stream {stream:#x}"),
            },
        };
        if self.sources.len() > 1 {
            format!("r{} {what}", self.sources[l.source].rank)
        } else {
            what
        }
    }

    pub fn rec_of(&self, r: EventRef) -> u32 {
        self.lanes[r.lane].tracks[r.track].rec[r.idx]
    }

    pub fn span_of(&self, r: EventRef) -> (u64, u64) {
        let t = &self.lanes[r.lane].tracks[r.track];
        (t.start[r.idx], t.end[r.idx])
    }

    pub fn str(&self, id: u32) -> Option<&str> {
        (id != NO_STR).then(|| self.strings.get(id)).flatten()
    }

    /// `file:line`, with the file's directory dropped, when the record has a location.
    pub fn location(&self, rec: u32) -> Option<String> {
        let r = rec as usize;
        let file = self.str(self.records.file[r])?;
        let base = file.rsplit('/').next().unwrap_or(file);
        let line = self.records.line[r];
        Some(if line == NO_LINE {
            base.to_string()
        } else {
            format!("{base}:{line}")
        })
    }

    /// What a record is, in a word or two: `parallel`, `implicit enter`, `upload`, `HtoD`.
    pub fn kind_word(&self, rec: u32) -> &'static str {
        use crate::state::kind::{device_code_name, is_device_code, kind_of_code, short_kind_name};
        let r = rec as usize;
        let code = self.records.kind[r];
        let parent =
            (self.records.parent[r] != NO_PARENT).then(|| i64::from(self.records.parent[r]));
        if is_device_code(code) {
            device_code_name(code)
        } else {
            short_kind_name(kind_of_code(code), parent)
        }
    }

    /// The text drawn on a bar: what it is and where it came from.
    pub fn label(&self, rec: u32) -> String {
        let mut s = self.kind_word(rec).to_string();
        if let Some(name) = self.str(self.records.name[rec as usize]) {
            s.push(' ');
            s.push_str(name);
        }
        if let Some(loc) = self.location(rec) {
            s.push(' ');
            s.push_str(&loc);
        }
        s
    }

    /// Every event, as references, in no particular order (search and jumps).
    pub fn refs(&self) -> impl Iterator<Item = EventRef> + '_ {
        self.lanes.iter().enumerate().flat_map(|(lane, l)| {
            l.tracks.iter().enumerate().flat_map(move |(track, t)| {
                (0..t.len()).map(move |idx| EventRef { lane, track, idx })
            })
        })
    }

    /// Total number of rows (tracks) over all lanes.
    pub fn row_count(&self) -> usize {
        self.lanes.iter().map(|l| l.tracks.len().max(1)).sum()
    }
}

/// Sorts a lane's events by start (outer before inner at equal starts) and deals them into rows
/// by nesting depth. An event that starts before the enclosing one ends goes one row deeper, so
/// every row holds disjoint events (what [`Track`] relies on).
fn nest(raw: &mut [Raw]) -> Vec<Track> {
    // The tool writes events when they end, so children come before their parent: nearly sorted
    // runs, which the stable sort handles in close to linear time.
    raw.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut tracks: Vec<Track> = Vec::new();
    // End times of the open enclosing events, outermost first.
    let mut open: Vec<u64> = Vec::new();
    for r in raw.iter() {
        while open.last().is_some_and(|&end| end <= r.start) {
            open.pop();
        }
        let depth = open.len();
        if tracks.len() <= depth {
            tracks.resize_with(depth + 1, Track::default);
        }
        tracks[depth].push(r.start, r.end, r.cat, r.rec);
        open.push(r.end.max(r.start));
    }
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
            cat: Category::Compute,
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
    fn overlapping_siblings_do_not_share_a_row() {
        let mut evs = vec![raw(0, 50, 0), raw(40, 90, 1)];
        let tracks = nest(&mut evs);
        assert_eq!(tracks.len(), 2);
        assert_eq!(tracks[1].rec, [1]);
    }
}
