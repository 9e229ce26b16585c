//! Track keys: which timeline lane an event belongs on, the same in every view (export, plot,
//! TUI). A view may split a track further (the export's lanes for slices that overlap without
//! nesting); it never places events by rules of its own.

use crate::taxonomy::{is_async_value, is_enqueue};
use accprof_abi::{ACC_ASYNC_NOVAL, ACC_ASYNC_SYNC};
use accprof_trace::{device, Event, Field};
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

    /// The name shown for the track; `queues` are the async queues the OpenACC events say a
    /// device stream serves (empty when none said).
    pub fn label(&self, queues: &BTreeSet<i64>) -> String {
        let thread =
            |t: &Option<i64>| t.map_or("host thread ?".to_string(), |t| format!("host thread {t}"));
        match self {
            TrackKind::Host { thread: t } => thread(t),
            TrackKind::Nvtx { thread: t } => format!("{}: NVTX ranges", thread(t)),
            TrackKind::DeviceSync { thread: t } => format!("{}: device (synchronous)", thread(t)),
            TrackKind::DeviceQueue { queue } => format!("device: async queue {queue}"),
            TrackKind::DeviceStream { stream: None } => "device (no stream)".to_string(),
            TrackKind::DeviceStream { stream: Some(h) } => {
                format!("device stream {h:#x}{}", queue_note(queues))
            }
        }
    }
}

/// " (queue 1)", " (queues 1, 2)", " (synchronous)": what a stream serves, for its label.
pub fn queue_note(queues: &BTreeSet<i64>) -> String {
    let words: Vec<String> = queues
        .iter()
        .map(|&q| match q {
            ACC_ASYNC_SYNC => "synchronous".to_string(),
            ACC_ASYNC_NOVAL => "acc_async_noval".to_string(),
            q => q.to_string(),
        })
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;

    #[test]
    fn streams_are_named_after_the_queues_they_serve() {
        let stream = TrackKind::DeviceStream {
            stream: Some(0x7f00),
        };
        assert_eq!(stream.label(&BTreeSet::new()), "device stream 0x7f00");
        assert_eq!(
            stream.label(&BTreeSet::from([1])),
            "device stream 0x7f00 (queue 1)"
        );
        assert_eq!(
            stream.label(&BTreeSet::from([2, 1])),
            "device stream 0x7f00 (queues 1, 2)"
        );
        assert_eq!(
            stream.label(&BTreeSet::from([-2])),
            "device stream 0x7f00 (synchronous)"
        );
        assert_eq!(
            TrackKind::DeviceStream { stream: None }.label(&BTreeSet::new()),
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
