//! Device records (kinds 1001 kernel, 1002 memcpy, 1003 memset, from CUPTI): what the export
//! keeps of them beyond their [`Slice`](super::slice::Slice), and the words they are shown with.
//!
//! Only device records have these facts (stream, issuing thread and call time, correlation id,
//! copy kind), so they live in a side table indexed from the slice instead of widening every
//! slice of a million-event export.

use accprof_abi::acc_event_t;
use accprof_timeline::DeviceOp;
use accprof_trace::device::{self, split_copy_kind};
use accprof_trace::{Event, Field};

/// The facts of one device record that its slice does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The CUDA stream (`async_handle`).
    pub stream: Option<u64>,
    /// The host thread that issued the driver call.
    pub thread: Option<i64>,
    /// When that thread made the call, on the export's clock (for the flow arrow) and as
    /// recorded (CLOCK_MONOTONIC, for the args, comparable with `accprof dump`).
    pub host_call: Option<u64>,
    pub host_call_ns: Option<u64>,
    /// The device's start and end as recorded (CLOCK_MONOTONIC).
    pub start_ns: u64,
    pub end_ns: u64,
    pub correlation_id: Option<u64>,
    pub copy_kind: Option<u64>,
    /// What the device did (the shared vocabulary's reading of the record).
    pub op: Option<DeviceOp>,
    /// Index, in the sorted slices, of the host slice that issued it (set when flows are linked).
    pub issued_by: Option<u32>,
}

impl DeviceInfo {
    pub fn from_event(ev: &Event, clock: impl Fn(u64) -> u64) -> Self {
        let host_call_ns = ev.get(Field::HostCallNs);
        DeviceInfo {
            op: DeviceOp::of(ev),
            stream: ev.get(Field::AsyncHandle),
            thread: ev.thread(),
            host_call: host_call_ns.map(&clock),
            host_call_ns,
            start_ns: ev.start_ns,
            end_ns: ev.end_ns.max(ev.start_ns),
            correlation_id: ev.get(Field::CorrelationId),
            copy_kind: ev.get(Field::CopyKind),
            issued_by: None,
        }
    }

    /// The copy's direction (CUPTI's memcpy kind), if it is a copy.
    pub fn direction(&self) -> Option<u64> {
        self.copy_kind.map(|k| split_copy_kind(k).0)
    }
}

/// "HtoD", "DtoH", ... as CUDA's tools name copy directions.
pub fn direction_word(direction: u64) -> &'static str {
    match direction {
        device::COPY_HTOD => "HtoD",
        device::COPY_DTOH => "DtoH",
        device::COPY_DTOD => "DtoD",
        device::COPY_HTOH => "HtoH",
        device::COPY_PTOP => "PtoP",
        _ => "copy",
    }
}

/// "host->device", ..., for the args.
pub fn direction_label(direction: u64) -> &'static str {
    match direction {
        device::COPY_HTOD => "host->device",
        device::COPY_DTOH => "device->host",
        device::COPY_DTOD => "device->device",
        device::COPY_HTOH => "host->host",
        device::COPY_PTOP => "peer->peer",
        _ => "unknown",
    }
}

/// The memory kinds in bits 8-15 and 16-23 of the copy kind.
pub fn memory_word(kind: u64) -> &'static str {
    match kind {
        device::MEM_PAGEABLE => "pageable",
        device::MEM_PINNED => "pinned",
        device::MEM_DEVICE => "device",
        _ => "unknown",
    }
}

/// What the event of a device record is called in the args.
pub fn event_word(kind: acc_event_t) -> Option<&'static str> {
    match kind {
        device::KERNEL => Some("device kernel"),
        device::MEMCPY => Some("device memcpy"),
        device::MEMSET => Some("device memset"),
        _ => None,
    }
}

pub use accprof_timeline::format::{bytes_compact as human_bytes, gbps as gb_per_s};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(2 << 20), "2 MiB");
        assert_eq!(human_bytes(128 << 20), "128 MiB");
        assert_eq!(human_bytes(268_435_487), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    #[test]
    fn copy_kinds_split_into_direction_and_memory() {
        let mut ev = Event::new(device::MEMCPY, 10);
        ev.end_ns = 20;
        ev.set(Field::CopyKind, device::copy_kind(1, 2, 3));
        let d = DeviceInfo::from_event(&ev, |t| t);
        assert_eq!(d.direction(), Some(device::COPY_HTOD));
        assert_eq!(direction_word(2), "DtoH");
        assert_eq!(memory_word(2), "pinned");
        assert_eq!(gb_per_s(1000, 100), Some(10.0));
    }
}
