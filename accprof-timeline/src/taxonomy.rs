//! What an event is, once for every view: its [`Category`] on a timeline or in a breakdown, its
//! [`EventClass`] (construct, operation inside one, implicit data region) for views that nest,
//! the [`Direction`] of a transfer, whether it is asynchronous, and whether it puts work on the
//! device.

use accprof_abi::{acc_construct_t, acc_event_t, EventShape, ACC_ASYNC_SYNC};
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

/// The kinds of construct the views group by.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ConstructKind {
    /// parallel, kernels or serial construct.
    Compute,
    /// A structured `data` construct (its entry and exit).
    Data,
    /// An `enter data` directive.
    EnterData,
    /// An `exit data` directive.
    ExitData,
    /// An `update` directive.
    Update,
    /// A `wait` directive (or acc_wait call).
    Wait,
    /// Device initialization.
    Init,
    /// A data routine of the runtime API (acc_copyin, acc_create...).
    RuntimeApi,
}

impl ConstructKind {
    /// The NV_ACC_TIME wording ("compute region", "data region", ...).
    pub fn label(self) -> &'static str {
        match self {
            ConstructKind::Compute => "compute region",
            ConstructKind::Data => "data region",
            ConstructKind::EnterData => "enter data directive",
            ConstructKind::ExitData => "exit data directive",
            ConstructKind::Update => "update directive",
            ConstructKind::Wait => "wait directive",
            ConstructKind::Init => "device init",
            ConstructKind::RuntimeApi => "runtime API data call",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ConstructKind::Compute => "compute",
            ConstructKind::Data => "data",
            ConstructKind::EnterData => "enter_data",
            ConstructKind::ExitData => "exit_data",
            ConstructKind::Update => "update",
            ConstructKind::Wait => "wait",
            ConstructKind::Init => "init",
            ConstructKind::RuntimeApi => "runtime_api",
        }
    }
}

/// What happened inside a construct.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ChildKind {
    /// Host to device transfer (enqueue_upload).
    Upload,
    /// Device to host transfer (enqueue_download).
    Download,
    /// Kernel launch (enqueue_launch).
    Launch,
    /// Waiting for the device inside the construct.
    Wait,
    Alloc,
    Free,
    Create,
    Delete,
}

/// Whether `p` (an event's `parent_construct`) is a compute construct type.
pub fn is_compute_construct_type(p: Option<i64>) -> bool {
    matches!(
        p.map(|v| acc_construct_t(v as i32)),
        Some(
            acc_construct_t::PARALLEL
                | acc_construct_t::KERNELS
                | acc_construct_t::LOOP
                | acc_construct_t::SERIAL
        )
    )
}

/// What an event is to a view that nests operations in constructs (the report, the TUI's
/// tables): a construct, an operation inside one, an implicit data region of a compute
/// construct (transparent: what it holds belongs to the compute construct, as NV_ACC_TIME
/// counts it), or something else.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventClass {
    Operation(ChildKind),
    ImplicitData,
    Construct(ConstructKind),
    Other,
}

impl EventClass {
    pub fn of(ev: &Event) -> EventClass {
        use EventClass as Class;
        let parent = ev.get_i64(Field::ParentConstruct);
        match ev.kind {
            acc_event_t::ENQUEUE_UPLOAD_START => Class::Operation(ChildKind::Upload),
            acc_event_t::ENQUEUE_DOWNLOAD_START => Class::Operation(ChildKind::Download),
            acc_event_t::ENQUEUE_LAUNCH_START => Class::Operation(ChildKind::Launch),
            acc_event_t::ALLOC => Class::Operation(ChildKind::Alloc),
            acc_event_t::FREE => Class::Operation(ChildKind::Free),
            acc_event_t::CREATE => Class::Operation(ChildKind::Create),
            acc_event_t::DELETE => Class::Operation(ChildKind::Delete),
            acc_event_t::WAIT_START => match parent.map(|v| acc_construct_t(v as i32)) {
                Some(acc_construct_t::WAIT | acc_construct_t::RUNTIME_API) => {
                    Class::Construct(ConstructKind::Wait)
                }
                _ => Class::Operation(ChildKind::Wait),
            },
            acc_event_t::ENTER_DATA_START | acc_event_t::EXIT_DATA_START => {
                let enter = ev.kind == acc_event_t::ENTER_DATA_START;
                match parent.map(|v| acc_construct_t(v as i32)) {
                    Some(acc_construct_t::DATA) => Class::Construct(ConstructKind::Data),
                    Some(acc_construct_t::RUNTIME_API) => {
                        Class::Construct(ConstructKind::RuntimeApi)
                    }
                    _ if is_compute_construct_type(parent) => Class::ImplicitData,
                    None if ev.implicit() => Class::ImplicitData,
                    _ if enter => Class::Construct(ConstructKind::EnterData),
                    _ => Class::Construct(ConstructKind::ExitData),
                }
            }
            acc_event_t::UPDATE_START => Class::Construct(ConstructKind::Update),
            acc_event_t::COMPUTE_CONSTRUCT_START => Class::Construct(ConstructKind::Compute),
            acc_event_t::DEVICE_INIT_START => Class::Construct(ConstructKind::Init),
            _ => Class::Other,
        }
    }
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

    #[test]
    fn implicit_data_of_a_compute_construct_is_transparent() {
        let mut ev = Event::new(acc_event_t::ENTER_DATA_START, 0);
        ev.set_i64(
            Field::ParentConstruct,
            i64::from(acc_construct_t::PARALLEL.0),
        );
        assert_eq!(EventClass::of(&ev), EventClass::ImplicitData);
        ev.set_i64(Field::ParentConstruct, i64::from(acc_construct_t::DATA.0));
        assert_eq!(
            EventClass::of(&ev),
            EventClass::Construct(ConstructKind::Data)
        );
        ev.set_i64(
            Field::ParentConstruct,
            i64::from(acc_construct_t::ENTER_DATA.0),
        );
        assert_eq!(
            EventClass::of(&ev),
            EventClass::Construct(ConstructKind::EnterData)
        );
        let mut wait = Event::new(acc_event_t::WAIT_START, 0);
        assert_eq!(
            EventClass::of(&wait),
            EventClass::Operation(ChildKind::Wait)
        );
        wait.set_i64(Field::ParentConstruct, i64::from(acc_construct_t::WAIT.0));
        assert_eq!(
            EventClass::of(&wait),
            EventClass::Construct(ConstructKind::Wait)
        );
        assert_eq!(
            EventClass::of(&Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 0)),
            EventClass::Operation(ChildKind::Upload)
        );
        assert_eq!(
            EventClass::of(&Event::new(acc_event_t::RUNTIME_SHUTDOWN, 0)),
            EventClass::Other
        );
    }
}
