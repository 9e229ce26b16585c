//! The colour categories of the timeline: every OpenACC event number, and every device record
//! (CUPTI kernel, copy, memset), falls into one.
//!
//! What an event is comes from the shared vocabulary (accprof-timeline: its category, a
//! transfer's direction, a device record's operation); the legend only splits it finer, so that
//! uploads, downloads, data directives and updates, or compute constructs and allocations, get
//! colours of their own.

use accprof_abi::acc_event_t;
use accprof_timeline::{is_point, DeviceOp, Direction};
use accprof_trace::{device, Event};

/// What a bar on the timeline is, at the granularity the legend shows.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum BarKind {
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
pub const BAR_KIND_COUNT: usize = 14;

impl BarKind {
    pub const ALL: [BarKind; BAR_KIND_COUNT] = [
        BarKind::Compute,
        BarKind::Launch,
        BarKind::Upload,
        BarKind::Download,
        BarKind::Memory,
        BarKind::Wait,
        BarKind::Data,
        BarKind::Update,
        BarKind::Other,
        BarKind::DeviceKernel,
        BarKind::DeviceUpload,
        BarKind::DeviceDownload,
        BarKind::DeviceCopy,
        BarKind::DeviceMemset,
    ];

    /// The category of an event: a device record by what the device did, a host (acc_prof)
    /// event by its kind.
    pub fn of_event(ev: &Event) -> BarKind {
        match DeviceOp::of(ev) {
            Some(op) => BarKind::of_device(op),
            None => BarKind::of(ev.kind),
        }
    }

    /// The category of a device record's operation.
    pub fn of_device(op: DeviceOp) -> BarKind {
        match op {
            DeviceOp::Kernel => BarKind::DeviceKernel,
            DeviceOp::Copy(Direction::HostToDevice) => BarKind::DeviceUpload,
            DeviceOp::Copy(Direction::DeviceToHost) => BarKind::DeviceDownload,
            DeviceOp::OtherCopy => BarKind::DeviceCopy,
            DeviceOp::Memset => BarKind::DeviceMemset,
        }
    }

    /// The category of a host (acc_prof) event of `kind` (a device record's needs the record:
    /// [`BarKind::of_event`]).
    pub fn of(kind: acc_event_t) -> BarKind {
        use accprof_timeline::Category as Shared;
        match Shared::of(kind) {
            _ if device::is_device_record(kind) => BarKind::Other,
            Shared::Kernels => BarKind::Launch,
            Shared::Data => match Direction::of_transfer(kind) {
                Some(Direction::HostToDevice) => BarKind::Upload,
                Some(Direction::DeviceToHost) => BarKind::Download,
                None if kind == acc_event_t::UPDATE_START => BarKind::Update,
                None => BarKind::Data,
            },
            Shared::Wait => BarKind::Wait,
            Shared::Init => BarKind::Other,
            Shared::Host if kind == acc_event_t::COMPUTE_CONSTRUCT_START => BarKind::Compute,
            // Device memory bookkeeping: the instants, but for the runtime's shutdown.
            Shared::Host if is_point(kind) && kind != acc_event_t::RUNTIME_SHUTDOWN => {
                BarKind::Memory
            }
            Shared::Host => BarKind::Other,
        }
    }

    /// Whether bars of this category are device records (timed on the device).
    pub fn is_device(self) -> bool {
        self as u8 >= BarKind::DeviceKernel as u8
    }

    pub fn from_u8(v: u8) -> BarKind {
        BarKind::ALL
            .get(v as usize)
            .copied()
            .unwrap_or(BarKind::Other)
    }

    /// The legend's word for it.
    pub fn label(self) -> &'static str {
        match self {
            BarKind::Compute => "compute",
            BarKind::Launch => "kernel",
            BarKind::Upload => "upload",
            BarKind::Download => "download",
            BarKind::Memory => "alloc/free",
            BarKind::Wait => "wait",
            BarKind::Data => "enter/exit data",
            BarKind::Update => "update",
            BarKind::Other => "other",
            BarKind::DeviceKernel => "kernel",
            BarKind::DeviceUpload => "HtoD",
            BarKind::DeviceDownload => "DtoH",
            BarKind::DeviceCopy => "copy",
            BarKind::DeviceMemset => "memset",
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
pub fn kind_code(kind: acc_event_t, cat: BarKind) -> u8 {
    match cat {
        BarKind::DeviceKernel => CODE_KERNEL,
        BarKind::DeviceUpload => CODE_HTOD,
        BarKind::DeviceDownload => CODE_DTOH,
        BarKind::DeviceCopy => CODE_COPY,
        BarKind::DeviceMemset => CODE_MEMSET,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_start_and_point_event_has_a_category_and_round_trips() {
        for c in BarKind::ALL {
            assert_eq!(BarKind::from_u8(c as u8), c);
        }
        assert_eq!(
            BarKind::of(acc_event_t::ENQUEUE_UPLOAD_START),
            BarKind::Upload
        );
        assert_eq!(BarKind::of(acc_event_t::FREE), BarKind::Memory);
        assert_eq!(BarKind::of(acc_event_t(999)), BarKind::Other);
        assert_eq!(
            BarKind::of(acc_event_t::COMPUTE_CONSTRUCT_START),
            BarKind::Compute
        );
        assert_eq!(
            BarKind::of(acc_event_t::ENQUEUE_LAUNCH_START),
            BarKind::Launch
        );
        assert_eq!(
            BarKind::of(acc_event_t::ENQUEUE_DOWNLOAD_START),
            BarKind::Download
        );
        assert_eq!(BarKind::of(acc_event_t::ENTER_DATA_START), BarKind::Data);
        assert_eq!(BarKind::of(acc_event_t::UPDATE_START), BarKind::Update);
        assert_eq!(BarKind::of(acc_event_t::WAIT_START), BarKind::Wait);
        assert_eq!(BarKind::of(acc_event_t::CREATE), BarKind::Memory);
        assert_eq!(BarKind::of(acc_event_t::RUNTIME_SHUTDOWN), BarKind::Other);
        assert_eq!(BarKind::of(acc_event_t::DEVICE_INIT_START), BarKind::Other);
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
            BarKind::of_event(&ev)
        };
        assert_eq!(copy(htod), BarKind::DeviceUpload);
        assert_eq!(copy(dtoh), BarKind::DeviceDownload);
        assert_eq!(copy(device::COPY_DTOD), BarKind::DeviceCopy);
        assert_eq!(
            BarKind::of_event(&Event::new(device::KERNEL, 0)),
            BarKind::DeviceKernel
        );
        assert_eq!(
            BarKind::of_event(&Event::new(device::MEMSET, 0)),
            BarKind::DeviceMemset
        );
        assert_eq!(
            BarKind::of_event(&Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 0)),
            BarKind::Upload
        );
        assert!(BarKind::DeviceMemset.is_device() && !BarKind::Other.is_device());
        for (kind, cat) in [
            (device::KERNEL, BarKind::DeviceKernel),
            (device::MEMCPY, BarKind::DeviceDownload),
            (device::MEMSET, BarKind::DeviceMemset),
        ] {
            let code = kind_code(kind, cat);
            assert!(is_device_code(code));
            assert_eq!(kind_of_code(code), kind);
        }
        let code = kind_code(acc_event_t::ENQUEUE_LAUNCH_START, BarKind::Launch);
        assert!(!is_device_code(code));
        assert_eq!(kind_of_code(code), acc_event_t::ENQUEUE_LAUNCH_START);
        assert_eq!(kind_code(acc_event_t(999), BarKind::Other), CODE_UNKNOWN);
    }
}
