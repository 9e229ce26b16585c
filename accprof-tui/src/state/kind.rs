//! The colour categories of the timeline: every OpenACC event number, and every device record
//! (CUPTI kernel, copy, memset), falls into one.
//!
//! What an event is comes from the shared vocabulary (accprof-timeline: its category, a
//! transfer's direction, a device record's operation); the legend only splits it finer, so that
//! uploads, downloads, data directives and updates, or compute constructs and allocations, get
//! colours of their own.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_timeline::{is_point, DeviceOp, Direction};
use accprof_trace::{device, Event};

/// What a bar on the timeline is, at the granularity the legend shows.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Category {
    Compute = 0,
    Launch = 1,
    Upload = 2,
    Download = 3,
    /// alloc, free, create, delete: device memory bookkeeping (points in time).
    Memory = 4,
    Wait = 5,
    /// enter data, exit data and data constructs.
    Data = 6,
    Update = 7,
    /// device init/shutdown, runtime shutdown, numbers the specification does not define.
    Other = 8,
    /// Device records (kinds 1001-1003): what the device did, timed on the device.
    DeviceKernel = 9,
    /// A host-to-device copy on the device.
    DeviceUpload = 10,
    /// A device-to-host copy on the device.
    DeviceDownload = 11,
    /// Device-to-device, host-to-host and peer copies.
    DeviceCopy = 12,
    DeviceMemset = 13,
}

/// How many categories there are (the length of per-category arrays).
pub const CATEGORY_COUNT: usize = 14;

impl Category {
    pub const ALL: [Category; CATEGORY_COUNT] = [
        Category::Compute,
        Category::Launch,
        Category::Upload,
        Category::Download,
        Category::Memory,
        Category::Wait,
        Category::Data,
        Category::Update,
        Category::Other,
        Category::DeviceKernel,
        Category::DeviceUpload,
        Category::DeviceDownload,
        Category::DeviceCopy,
        Category::DeviceMemset,
    ];

    /// The category of an event: a device record by what the device did, a host (acc_prof)
    /// event by its kind.
    pub fn of_event(ev: &Event) -> Category {
        match DeviceOp::of(ev) {
            Some(op) => Category::of_device(op),
            None => Category::of(ev.kind),
        }
    }

    /// The category of a device record's operation.
    pub fn of_device(op: DeviceOp) -> Category {
        match op {
            DeviceOp::Kernel => Category::DeviceKernel,
            DeviceOp::Copy(Direction::HostToDevice) => Category::DeviceUpload,
            DeviceOp::Copy(Direction::DeviceToHost) => Category::DeviceDownload,
            DeviceOp::OtherCopy => Category::DeviceCopy,
            DeviceOp::Memset => Category::DeviceMemset,
        }
    }

    /// The category of a host (acc_prof) event of `kind` (a device record's needs the record:
    /// [`Category::of_event`]).
    pub fn of(kind: acc_event_t) -> Category {
        use accprof_timeline::Category as Shared;
        match Shared::of(kind) {
            _ if device::is_device_record(kind) => Category::Other,
            Shared::Kernels => Category::Launch,
            Shared::Data => match Direction::of_transfer(kind) {
                Some(Direction::HostToDevice) => Category::Upload,
                Some(Direction::DeviceToHost) => Category::Download,
                None if kind == acc_event_t::UPDATE_START => Category::Update,
                None => Category::Data,
            },
            Shared::Wait => Category::Wait,
            Shared::Init => Category::Other,
            Shared::Host if kind == acc_event_t::COMPUTE_CONSTRUCT_START => Category::Compute,
            // Device memory bookkeeping: the instants, but for the runtime's shutdown.
            Shared::Host if is_point(kind) && kind != acc_event_t::RUNTIME_SHUTDOWN => {
                Category::Memory
            }
            Shared::Host => Category::Other,
        }
    }

    /// Whether bars of this category are device records (timed on the device).
    pub fn is_device(self) -> bool {
        self as u8 >= Category::DeviceKernel as u8
    }

    pub fn from_u8(v: u8) -> Category {
        Category::ALL
            .get(v as usize)
            .copied()
            .unwrap_or(Category::Other)
    }

    /// The legend's word for it.
    pub fn label(self) -> &'static str {
        match self {
            Category::Compute => "compute",
            Category::Launch => "kernel",
            Category::Upload => "upload",
            Category::Download => "download",
            Category::Memory => "alloc/free",
            Category::Wait => "wait",
            Category::Data => "enter/exit data",
            Category::Update => "update",
            Category::Other => "other",
            Category::DeviceKernel => "kernel",
            Category::DeviceUpload => "HtoD",
            Category::DeviceDownload => "DtoH",
            Category::DeviceCopy => "copy",
            Category::DeviceMemset => "memset",
        }
    }
}

/// Record kind codes: the per-record kind column is one byte. acc_event_t numbers below
/// [`DEVICE_CODES`] are stored as they are; device records get the codes from there up, with a
/// copy's direction folded in so that labels and "same construct" jumps tell HtoD from DtoH.
pub const DEVICE_CODES: u8 = 240;
const CODE_KERNEL: u8 = DEVICE_CODES;
const CODE_HTOD: u8 = DEVICE_CODES + 1;
const CODE_DTOH: u8 = DEVICE_CODES + 2;
const CODE_COPY: u8 = DEVICE_CODES + 3;
const CODE_MEMSET: u8 = DEVICE_CODES + 4;
/// An event number that fits no code.
pub const CODE_UNKNOWN: u8 = 255;
/// The program's NVTX kinds (accprof_trace::nvtx, 1201 up) get the codes from here up.
const NVTX_CODES: u8 = 230;

/// The kind column's code for an event of `kind` in category `cat`.
pub fn kind_code(kind: acc_event_t, cat: Category) -> u8 {
    match cat {
        Category::DeviceKernel => CODE_KERNEL,
        Category::DeviceUpload => CODE_HTOD,
        Category::DeviceDownload => CODE_DTOH,
        Category::DeviceCopy => CODE_COPY,
        Category::DeviceMemset => CODE_MEMSET,
        _ if accprof_trace::nvtx::is_nvtx(kind) => {
            NVTX_CODES + (kind.0 - accprof_trace::nvtx::RANGE.0) as u8
        }
        _ => u8::try_from(kind.0)
            .ok()
            .filter(|&k| k < NVTX_CODES)
            .unwrap_or(CODE_UNKNOWN),
    }
}

/// The event number back from a kind code (device copies of every direction: `MEMCPY`).
pub fn kind_of_code(code: u8) -> acc_event_t {
    match code {
        CODE_KERNEL => device::KERNEL,
        CODE_HTOD | CODE_DTOH | CODE_COPY => device::MEMCPY,
        CODE_MEMSET => device::MEMSET,
        c if (NVTX_CODES..DEVICE_CODES).contains(&c) => {
            acc_event_t(accprof_trace::nvtx::RANGE.0 + i32::from(c - NVTX_CODES))
        }
        c => acc_event_t(i32::from(c)),
    }
}

/// Whether a kind code is a device record's.
pub fn is_device_code(code: u8) -> bool {
    (DEVICE_CODES..CODE_UNKNOWN).contains(&code)
}

/// The bar label's word for a device record's kind code.
pub fn device_code_name(code: u8) -> &'static str {
    match code {
        CODE_KERNEL => "kernel",
        CODE_HTOD => "HtoD",
        CODE_DTOH => "DtoH",
        CODE_MEMSET => "memset",
        _ => "copy",
    }
}

/// A short name for an event kind, for bar labels and the details pane ("compute", "upload"...),
/// refined by the construct that caused it where that tells more (a `data` region vs `enter data`).
pub fn short_kind_name(kind: acc_event_t, parent: Option<i64>) -> &'static str {
    match kind {
        acc_event_t::COMPUTE_CONSTRUCT_START => match parent.map(|p| acc_construct_t(p as i32)) {
            Some(acc_construct_t::KERNELS) => "kernels",
            Some(acc_construct_t::SERIAL) => "serial",
            _ => "parallel",
        },
        acc_event_t::ENTER_DATA_START => match parent.map(|p| acc_construct_t(p as i32)) {
            Some(acc_construct_t::DATA) => "data (enter)",
            Some(acc_construct_t::ENTER_DATA) => "enter data",
            Some(acc_construct_t::PARALLEL)
            | Some(acc_construct_t::KERNELS)
            | Some(acc_construct_t::SERIAL) => "implicit enter",
            _ => "enter data",
        },
        acc_event_t::EXIT_DATA_START => match parent.map(|p| acc_construct_t(p as i32)) {
            Some(acc_construct_t::DATA) => "data (exit)",
            Some(acc_construct_t::EXIT_DATA) => "exit data",
            Some(acc_construct_t::PARALLEL)
            | Some(acc_construct_t::KERNELS)
            | Some(acc_construct_t::SERIAL) => "implicit exit",
            _ => "exit data",
        },
        acc_event_t::ENQUEUE_LAUNCH_START => "launch",
        acc_event_t::ENQUEUE_UPLOAD_START => "upload",
        acc_event_t::ENQUEUE_DOWNLOAD_START => "download",
        acc_event_t::UPDATE_START => "update",
        acc_event_t::WAIT_START => "wait",
        acc_event_t::DEVICE_INIT_START => "device init",
        acc_event_t::DEVICE_SHUTDOWN_START => "device shutdown",
        acc_event_t::RUNTIME_SHUTDOWN => "runtime shutdown",
        acc_event_t::ALLOC => "alloc",
        acc_event_t::FREE => "free",
        acc_event_t::CREATE => "create",
        acc_event_t::DELETE => "delete",
        accprof_trace::nvtx::RANGE | accprof_trace::nvtx::START_END => "NVTX",
        accprof_trace::nvtx::MARK => "NVTX mark",
        accprof_trace::nvtx::CATEGORY_NAME => "NVTX category",
        accprof_trace::nvtx::THREAD_NAME => "NVTX thread name",
        _ => "event",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_start_and_point_event_has_a_category_and_round_trips() {
        for c in Category::ALL {
            assert_eq!(Category::from_u8(c as u8), c);
        }
        assert_eq!(
            Category::of(acc_event_t::ENQUEUE_UPLOAD_START),
            Category::Upload
        );
        assert_eq!(Category::of(acc_event_t::FREE), Category::Memory);
        assert_eq!(Category::of(acc_event_t(999)), Category::Other);
        assert_eq!(
            Category::of(acc_event_t::COMPUTE_CONSTRUCT_START),
            Category::Compute
        );
        assert_eq!(
            Category::of(acc_event_t::ENQUEUE_LAUNCH_START),
            Category::Launch
        );
        assert_eq!(
            Category::of(acc_event_t::ENQUEUE_DOWNLOAD_START),
            Category::Download
        );
        assert_eq!(Category::of(acc_event_t::ENTER_DATA_START), Category::Data);
        assert_eq!(Category::of(acc_event_t::UPDATE_START), Category::Update);
        assert_eq!(Category::of(acc_event_t::WAIT_START), Category::Wait);
        assert_eq!(Category::of(acc_event_t::CREATE), Category::Memory);
        assert_eq!(Category::of(acc_event_t::RUNTIME_SHUTDOWN), Category::Other);
        assert_eq!(
            Category::of(acc_event_t::DEVICE_INIT_START),
            Category::Other
        );
    }

    #[test]
    fn device_records_get_device_categories_and_codes_that_round_trip() {
        let htod = device::copy_kind(
            device::COPY_HTOD as u8,
            device::MEM_PAGEABLE as u8,
            device::MEM_DEVICE as u8,
        );
        let dtoh = device::copy_kind(
            device::COPY_DTOH as u8,
            device::MEM_DEVICE as u8,
            device::MEM_PAGEABLE as u8,
        );
        let copy = |copy_kind: u64| {
            let mut ev = Event::new(device::MEMCPY, 0);
            ev.set(accprof_trace::Field::CopyKind, copy_kind);
            Category::of_event(&ev)
        };
        assert_eq!(copy(htod), Category::DeviceUpload);
        assert_eq!(copy(dtoh), Category::DeviceDownload);
        assert_eq!(copy(device::COPY_DTOD), Category::DeviceCopy);
        assert_eq!(
            Category::of_event(&Event::new(device::KERNEL, 0)),
            Category::DeviceKernel
        );
        assert_eq!(
            Category::of_event(&Event::new(device::MEMSET, 0)),
            Category::DeviceMemset
        );
        assert_eq!(
            Category::of_event(&Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 0)),
            Category::Upload
        );
        assert!(Category::DeviceMemset.is_device() && !Category::Other.is_device());
        for (kind, cat) in [
            (device::KERNEL, Category::DeviceKernel),
            (device::MEMCPY, Category::DeviceDownload),
            (device::MEMSET, Category::DeviceMemset),
        ] {
            let code = kind_code(kind, cat);
            assert!(is_device_code(code));
            assert_eq!(kind_of_code(code), kind);
        }
        let code = kind_code(acc_event_t::ENQUEUE_LAUNCH_START, Category::Launch);
        assert!(!is_device_code(code));
        assert_eq!(kind_of_code(code), acc_event_t::ENQUEUE_LAUNCH_START);
        assert_eq!(kind_code(acc_event_t(999), Category::Other), CODE_UNKNOWN);
    }
}
