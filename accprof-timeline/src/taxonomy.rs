//! What an event is, once for every view: its [`Category`] on a timeline or in a breakdown, the
//! [`Direction`] of a transfer, whether it is asynchronous, and whether it puts work on the device.

use accprof_abi::{acc_event_t, EventShape, ACC_ASYNC_SYNC};
use accprof_trace::{device, Event, Field};
use serde::Serialize;

/// The five kinds of time the views tell apart.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Category {
    /// Kernel launches (and, from device records, the kernels themselves).
    Kernels,
    /// Data movement: uploads, downloads, enter/exit data, update, device copies and memsets.
    Data,
    /// Waiting for the device.
    Wait,
    /// Device initialization and shutdown.
    Init,
    /// The rest of the host's time inside OpenACC constructs (runtime bookkeeping, compute
    /// constructs as a whole).
    Host,
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Kernels,
        Category::Data,
        Category::Wait,
        Category::Init,
        Category::Host,
    ];

    /// The position in [`Category::ALL`], for per-category arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn label(self) -> &'static str {
        match self {
            Category::Kernels => "kernels",
            Category::Data => "data",
            Category::Wait => "wait",
            Category::Init => "init",
            Category::Host => "host",
        }
    }

    /// Where an event of `kind` goes.
    pub fn of(kind: acc_event_t) -> Category {
        match kind {
            acc_event_t::ENQUEUE_LAUNCH_START | device::KERNEL => Category::Kernels,
            device::MEMCPY | device::MEMSET => Category::Data,
            acc_event_t::ENQUEUE_UPLOAD_START
            | acc_event_t::ENQUEUE_DOWNLOAD_START
            | acc_event_t::ENTER_DATA_START
            | acc_event_t::EXIT_DATA_START
            | acc_event_t::UPDATE_START => Category::Data,
            acc_event_t::WAIT_START => Category::Wait,
            acc_event_t::DEVICE_INIT_START | acc_event_t::DEVICE_SHUTDOWN_START => Category::Init,
            _ => Category::Host,
        }
    }
}

/// Direction of a data transfer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Host to device (copyin, update device).
    HostToDevice,
    /// Device to host (copyout, update self).
    DeviceToHost,
}

impl Direction {
    pub fn label(self) -> &'static str {
        match self {
            Direction::HostToDevice => "host->device",
            Direction::DeviceToHost => "device->host",
        }
    }

    pub fn copy_word(self) -> &'static str {
        match self {
            Direction::HostToDevice => "copyin",
            Direction::DeviceToHost => "copyout",
        }
    }

    /// The direction of a runtime transfer event (enqueue upload or download).
    pub fn of_transfer(kind: acc_event_t) -> Option<Direction> {
        match kind {
            acc_event_t::ENQUEUE_UPLOAD_START => Some(Direction::HostToDevice),
            acc_event_t::ENQUEUE_DOWNLOAD_START => Some(Direction::DeviceToHost),
            _ => None,
        }
    }

    /// The direction of a device copy's [`Field::CopyKind`] value; `None` for device to device,
    /// host to host and peer copies.
    pub fn of_copy_kind(copy_kind: u64) -> Option<Direction> {
        match device::split_copy_kind(copy_kind).0 {
            device::COPY_HTOD => Some(Direction::HostToDevice),
            device::COPY_DTOH => Some(Direction::DeviceToHost),
            _ => None,
        }
    }

    /// The runtime event that enqueues a transfer in this direction.
    pub fn enqueue_event(self) -> acc_event_t {
        match self {
            Direction::HostToDevice => acc_event_t::ENQUEUE_UPLOAD_START,
            Direction::DeviceToHost => acc_event_t::ENQUEUE_DOWNLOAD_START,
        }
    }
}

/// Whether an `async` value means asynchronous: `acc_async_sync` is synchronous;
/// `acc_async_noval` and queues >= 0 are not.
pub fn is_async_value(a: i64) -> bool {
    a != ACC_ASYNC_SYNC
}

/// Whether `ev` ran asynchronously (it has an `async` field other than `acc_async_sync`).
pub fn is_async(ev: &Event) -> bool {
    ev.get_i64(Field::Async).is_some_and(is_async_value)
}

/// The runtime's enqueue events: host-side calls that put work on a device queue.
pub fn is_enqueue(kind: acc_event_t) -> bool {
    matches!(
        kind,
        acc_event_t::ENQUEUE_UPLOAD_START
            | acc_event_t::ENQUEUE_DOWNLOAD_START
            | acc_event_t::ENQUEUE_LAUNCH_START
    )
}

/// Events that happen at one instant (create, delete, alloc, free, runtime shutdown).
pub fn is_point(kind: acc_event_t) -> bool {
    matches!(kind.shape(), EventShape::Point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_and_directions() {
        assert_eq!(
            Category::of(acc_event_t::ENQUEUE_LAUNCH_START),
            Category::Kernels
        );
        assert_eq!(Category::of(device::KERNEL), Category::Kernels);
        assert_eq!(Category::of(acc_event_t::UPDATE_START), Category::Data);
        assert_eq!(Category::of(acc_event_t::WAIT_START), Category::Wait);
        assert_eq!(
            Category::of(acc_event_t::COMPUTE_CONSTRUCT_START),
            Category::Host
        );
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        let htod = device::copy_kind(
            device::COPY_HTOD as u8,
            device::MEM_PAGEABLE as u8,
            device::MEM_DEVICE as u8,
        );
        assert_eq!(Direction::of_copy_kind(htod), Some(Direction::HostToDevice));
        assert_eq!(Direction::of_copy_kind(device::COPY_DTOD), None);
        assert_eq!(
            Direction::of_transfer(acc_event_t::ENQUEUE_DOWNLOAD_START),
            Some(Direction::DeviceToHost)
        );
        assert!(!is_async_value(ACC_ASYNC_SYNC));
        assert!(is_async_value(accprof_abi::ACC_ASYNC_NOVAL));
        assert!(is_async_value(3));
    }
}
