//! The colour categories of the timeline: every OpenACC event number falls into one.

use accprof_abi::{acc_construct_t, acc_event_t};

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
}

/// How many categories there are (the length of per-category arrays).
pub const CATEGORY_COUNT: usize = 9;

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
    ];

    pub fn of(kind: acc_event_t) -> Category {
        match kind {
            acc_event_t::COMPUTE_CONSTRUCT_START => Category::Compute,
            acc_event_t::ENQUEUE_LAUNCH_START => Category::Launch,
            acc_event_t::ENQUEUE_UPLOAD_START => Category::Upload,
            acc_event_t::ENQUEUE_DOWNLOAD_START => Category::Download,
            acc_event_t::ALLOC | acc_event_t::FREE | acc_event_t::CREATE | acc_event_t::DELETE => Category::Memory,
            acc_event_t::WAIT_START => Category::Wait,
            acc_event_t::ENTER_DATA_START | acc_event_t::EXIT_DATA_START => Category::Data,
            acc_event_t::UPDATE_START => Category::Update,
            _ => Category::Other,
        }
    }

    pub fn from_u8(v: u8) -> Category {
        Category::ALL.get(v as usize).copied().unwrap_or(Category::Other)
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
        }
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
            Some(acc_construct_t::PARALLEL) | Some(acc_construct_t::KERNELS) | Some(acc_construct_t::SERIAL) => {
                "implicit enter"
            }
            _ => "enter data",
        },
        acc_event_t::EXIT_DATA_START => match parent.map(|p| acc_construct_t(p as i32)) {
            Some(acc_construct_t::DATA) => "data (exit)",
            Some(acc_construct_t::EXIT_DATA) => "exit data",
            Some(acc_construct_t::PARALLEL) | Some(acc_construct_t::KERNELS) | Some(acc_construct_t::SERIAL) => {
                "implicit exit"
            }
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
        assert_eq!(Category::of(acc_event_t::ENQUEUE_UPLOAD_START), Category::Upload);
        assert_eq!(Category::of(acc_event_t::FREE), Category::Memory);
        assert_eq!(Category::of(acc_event_t(999)), Category::Other);
    }
}
