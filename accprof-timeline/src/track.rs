//! Tracks: which timeline track an event belongs on ([`TrackKind::of_event`]), what each is
//! called ([`TrackKind::name`]), and the table of a layout's tracks ([`TrackTable`]), the same
//! in every view (export, plot, TUI). A track is split into lanes only where its slices cross
//! ([`crate::lanes`]); no view places events by rules of its own.

use crate::taxonomy::{is_async_value, is_enqueue};
use accprof_abi::{ACC_ASYNC_NOVAL, ACC_ASYNC_SYNC};
use accprof_trace::{device, Event, Field, Header};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

/// What a track shows.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum TrackKind {
    /// Constructs, waits and instants of one host thread (`None`: the runtime gave no thread id).
    Host { thread: Option<i64> },
    /// The program's own NVTX ranges and marks on one host thread (shown just above it).
    Nvtx { thread: Option<i64> },
    /// Synchronous uploads, downloads and launches issued by one host thread.
    DeviceSync { thread: Option<i64> },
    /// Work on one async queue, whichever thread enqueued it.
    DeviceQueue { queue: i64 },
    /// Device records on one CUDA stream (`None`: the record named no stream).
    ///
    /// These stay with the rank (trace) whose threads issued them rather than in a process of
    /// their own: a rank's host threads and its streams then show under one heading.
    DeviceStream { stream: Option<u64> },
}

impl TrackKind {
    /// The track `ev` belongs on.
    pub fn of_event(ev: &Event) -> Self {
        Self::of(
            ev.kind,
            ev.thread(),
            ev.get_i64(Field::Async),
            ev.async_queue(),
            ev.get(Field::AsyncHandle),
        )
    }

    /// The track of an event of `kind` on `thread`, with its `async` and `async_queue` fields
    /// and its `async_handle` (`stream`).
    pub fn of(
        kind: accprof_abi::acc_event_t,
        thread: Option<i64>,
        async_: Option<i64>,
        queue: Option<i64>,
        stream: Option<u64>,
    ) -> Self {
        if device::is_device_record(kind) {
            return TrackKind::DeviceStream { stream };
        }
        if accprof_trace::nvtx::is_nvtx(kind) {
            return TrackKind::Nvtx { thread };
        }
        if !is_enqueue(kind) {
            return TrackKind::Host { thread };
        }
        match async_ {
            Some(a) if is_async_value(a) => TrackKind::DeviceQueue {
                queue: queue.unwrap_or(a),
            },
            _ => TrackKind::DeviceSync { thread },
        }
    }

    /// The thread whose call stack the track's slices come from: a host thread's own
    /// track, its synchronous device work (one thread's callbacks, so they nest) and the NVTX
    /// ranges it opened.
    pub fn thread(&self) -> Option<Option<i64>> {
        match *self {
            TrackKind::Host { thread }
            | TrackKind::DeviceSync { thread }
            | TrackKind::Nvtx { thread } => Some(thread),
            TrackKind::DeviceQueue { .. } | TrackKind::DeviceStream { .. } => None,
        }
    }

    /// The name of the track, in every view; `queues` are the async queues the OpenACC events
    /// say a device stream serves (empty when none said). [`NameStyle::Short`] is the same
    /// name for a narrow column.
    pub fn name(&self, queues: &BTreeSet<i64>, style: NameStyle) -> String {
        let thread = |t: &Option<i64>| t.map_or("?".to_string(), |t| t.to_string());
        match (style, self) {
            (NameStyle::Full, TrackKind::Host { thread: t }) => {
                format!("host thread {}", thread(t))
            }
            (NameStyle::Full, TrackKind::Nvtx { thread: t }) => {
                format!("host thread {}: NVTX ranges", thread(t))
            }
            (NameStyle::Full, TrackKind::DeviceSync { thread: t }) => {
                format!("host thread {}: device (synchronous)", thread(t))
            }
            (NameStyle::Full, TrackKind::DeviceQueue { queue }) => {
                format!("device: async queue {}", queue_word(*queue))
            }
            (NameStyle::Short, TrackKind::Host { thread: t }) => format!("thread {}", thread(t)),
            (NameStyle::Short, TrackKind::Nvtx { thread: t }) => {
                format!("thread {} NVTX", thread(t))
            }
            (NameStyle::Short, TrackKind::DeviceSync { thread: t }) => {
                format!("thread {} (sync)", thread(t))
            }
            (NameStyle::Short, TrackKind::DeviceQueue { queue }) => {
                format!("queue {}", queue_word(*queue))
            }
            (_, TrackKind::DeviceStream { stream: None }) => "device (no stream)".to_string(),
            (_, TrackKind::DeviceStream { stream: Some(h) }) => {
                format!("device stream {h:#x}{}", queue_note(queues))
            }
        }
    }
}

/// How long a track's name may be.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NameStyle {
    /// For files and figures: "host thread 3: device (synchronous)".
    Full,
    /// For a terminal's narrow column: "thread 3 (sync)".
    Short,
}

/// An async queue as people write it: `acc_async_noval` by name, a queue by its number.
fn queue_word(q: i64) -> String {
    match q {
        ACC_ASYNC_SYNC => "synchronous".to_string(),
        ACC_ASYNC_NOVAL => "acc_async_noval".to_string(),
        q => q.to_string(),
    }
}

/// " (queue 1)", " (queues 1, 2)", " (synchronous)": what a stream serves, for its name.
pub fn queue_note(queues: &BTreeSet<i64>) -> String {
    let words: Vec<String> = queues.iter().map(|&q| queue_word(q)).collect();
    match (words.len(), queues.iter().any(|&q| q >= 0)) {
        (0, _) => String::new(),
        (1, true) => format!(" (queue {})", words[0]),
        (_, true) => format!(" (queues {})", words.join(", ")),
        (_, false) => format!(" ({})", words.join(", ")),
    }
}

/// A track of one trace (one rank or process).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct TrackKey {
    pub trace: u16,
    pub kind: TrackKind,
}

impl TrackKey {
    /// The order tracks are shown in: per trace, each host thread's NVTX ranges, the thread,
    /// its synchronous device track, then the async queues, then the device streams (what the
    /// device did).
    pub fn display_order(&self) -> (u16, u8, Option<i64>, u8) {
        match self.kind {
            TrackKind::Nvtx { thread } => (self.trace, 0, thread, 0),
            TrackKind::Host { thread } => (self.trace, 0, thread, 1),
            TrackKind::DeviceSync { thread } => (self.trace, 0, thread, 2),
            TrackKind::DeviceQueue { queue } => (self.trace, 1, Some(queue), 0),
            // Stream handles are ids or addresses: their order as unsigned numbers is kept.
            TrackKind::DeviceStream { stream } => {
                (self.trace, 2, stream.map(|h| (h ^ (1 << 63)) as i64), 0)
            }
        }
    }
}

/// The name of a trace's process, "rank 3: laplace (pid 1234)", from what its header knows;
/// `label` (the trace's path) when the header names no program.
pub fn process_name(header: &Header, label: &str) -> String {
    let exe = std::path::Path::new(&header.exe)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| label.to_string());
    let who = if header.pid != 0 {
        format!("{exe} (pid {})", header.pid)
    } else {
        exe
    };
    match header.mpi_rank {
        Some(r) => format!("rank {r}: {who}"),
        None => who,
    }
}

/// The name of lane `lane` (from 0) of a track named `name`: the track's own name for its first
/// lane, the overflow lanes of slices that cross another one after it.
pub fn lane_name(name: &str, lane: u16) -> String {
    if lane == 0 {
        name.to_string()
    } else {
        format!("{name} (overlapping, lane {})", lane + 1)
    }
}

/// Every track met so far, numbered in order of first appearance: what a layout places slices
/// on (Perfetto's track tracker).
#[derive(Default, Debug, Clone)]
pub struct TrackTable {
    /// Looked up for most events (consecutive events alternate between a thread's host and
    /// device tracks): Fx-hashed, as SipHash's DoS resistance buys nothing on trace keys.
    index: FxHashMap<TrackKey, TrackId>,
    keys: Vec<TrackKey>,
    /// Lanes each track needed (at least 1).
    lanes: Vec<u16>,
    /// Per (trace, stream handle), the async queues the OpenACC events on that stream named.
    stream_queues: FxHashMap<(u16, u64), BTreeSet<i64>>,
    /// The track [`intern`](Self::intern) returned last, with its key.
    last: Option<(TrackKey, TrackId)>,
}

/// A track's number in its [`TrackTable`].
pub type TrackId = u32;

impl TrackTable {
    /// The track of `key`, made on first use.
    pub fn intern(&mut self, key: TrackKey) -> TrackId {
        // Consecutive events mostly share a track: skip the map for them.
        if let Some((last, i)) = self.last {
            if last == key {
                return i;
            }
        }
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.keys.len() as TrackId;
                self.keys.push(key);
                self.lanes.push(1);
                self.index.insert(key, i);
                i
            }
        };
        self.last = Some((key, i));
        i
    }

    /// The track of `key`, if any slice went on it.
    pub fn get(&self, key: &TrackKey) -> Option<TrackId> {
        self.index.get(key).copied()
    }

    /// Notes what an event says about the stream it ran on: an OpenACC event naming both its
    /// stream (`async_handle`) and its async queue tells what the stream's track serves.
    pub fn note_event(&mut self, trace: u16, ev: &Event) {
        if device::is_device_record(ev.kind) {
            return;
        }
        if let (Some(handle), Some(queue)) = (ev.get(Field::AsyncHandle), ev.async_queue()) {
            self.note_stream_queue(trace, handle, queue);
        }
    }

    /// Notes that an OpenACC event of `trace` ran on stream `handle` for async queue `queue`.
    pub fn note_stream_queue(&mut self, trace: u16, handle: u64, queue: i64) {
        let known = self.stream_queues.entry((trace, handle)).or_default();
        if !known.contains(&queue) {
            known.insert(queue);
        }
    }

    /// The async queues known to use `stream` in `trace`.
    pub fn stream_queues(&self, trace: u16, stream: Option<u64>) -> BTreeSet<i64> {
        stream
            .and_then(|h| self.stream_queues.get(&(trace, h)))
            .cloned()
            .unwrap_or_default()
    }

    /// The name of `track` ([`TrackKind::name`]).
    pub fn name(&self, track: TrackId, style: NameStyle) -> String {
        let key = self.key(track);
        let queues = match key.kind {
            TrackKind::DeviceStream { stream } => self.stream_queues(key.trace, stream),
            _ => BTreeSet::new(),
        };
        key.kind.name(&queues, style)
    }

    /// Every track of `trace`, with its key.
    pub fn of_trace(&self, trace: u16) -> impl Iterator<Item = (TrackId, TrackKey)> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(move |(_, k)| k.trace == trace)
            .map(|(i, k)| (i as TrackId, *k))
    }

    pub fn key(&self, track: TrackId) -> TrackKey {
        self.keys[track as usize]
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Notes that a slice of `track` landed on `lane`.
    pub fn note_lane(&mut self, track: TrackId, lane: u16) {
        let n = &mut self.lanes[track as usize];
        *n = (*n).max(lane.saturating_add(1));
    }

    /// Lanes `track` needed (at least 1).
    pub fn lanes(&self, track: TrackId) -> u16 {
        self.lanes[track as usize]
    }

    /// Every track, in the order they are shown ([`TrackKey::display_order`]).
    pub fn display_order(&self) -> Vec<TrackId> {
        let mut order: Vec<TrackId> = (0..self.keys.len() as TrackId).collect();
        order.sort_by_key(|&t| self.keys[t as usize].display_order());
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;

    #[test]
    fn streams_are_named_after_the_queues_they_serve() {
        let stream = TrackKind::DeviceStream {
            stream: Some(0x7f00),
        };
        assert_eq!(
            stream.name(&BTreeSet::new(), NameStyle::Full),
            "device stream 0x7f00"
        );
        assert_eq!(
            stream.name(&BTreeSet::from([1]), NameStyle::Full),
            "device stream 0x7f00 (queue 1)"
        );
        assert_eq!(
            stream.name(&BTreeSet::from([2, 1]), NameStyle::Short),
            "device stream 0x7f00 (queues 1, 2)"
        );
        assert_eq!(
            stream.name(&BTreeSet::from([-2]), NameStyle::Full),
            "device stream 0x7f00 (synchronous)"
        );
        assert_eq!(
            TrackKind::DeviceStream { stream: None }.name(&BTreeSet::new(), NameStyle::Short),
            "device (no stream)"
        );
    }

    #[test]
    fn events_go_on_their_thread_queue_or_stream() {
        let mut ev = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 0);
        ev.set_i64(Field::Thread, 3);
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::DeviceSync { thread: Some(3) }
        );
        ev.set_i64(Field::Async, ACC_ASYNC_SYNC);
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::DeviceSync { thread: Some(3) }
        );
        ev.set_i64(Field::Async, 1);
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::DeviceQueue { queue: 1 }
        );
        ev.set_i64(Field::AsyncQueue, 5);
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::DeviceQueue { queue: 5 }
        );
        ev.kind = acc_event_t::COMPUTE_CONSTRUCT_START;
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::Host { thread: Some(3) }
        );
        ev.kind = device::KERNEL;
        ev.set(Field::AsyncHandle, 9);
        assert_eq!(
            TrackKind::of_event(&ev),
            TrackKind::DeviceStream { stream: Some(9) }
        );
    }
}
