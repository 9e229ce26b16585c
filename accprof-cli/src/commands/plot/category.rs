//! The five kinds of time the plots tell apart, with their colors.

use accprof_abi::acc_event_t;
use accprof_trace::device;
use plotters::style::RGBColor;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Category {
    /// Kernel launches (and, on a synchronous device, the kernels themselves).
    Kernels,
    /// Data movement: uploads, downloads, enter/exit data, update.
    Data,
    /// Waiting for the device.
    Wait,
    /// Device initialization and shutdown.
    Init,
    /// The rest of the host's time inside OpenACC constructs (runtime bookkeeping, compute
    /// constructs as a whole on the timeline).
    Host,
}

impl Category {
    pub const ALL: [Category; 5] = [Category::Kernels, Category::Data, Category::Wait, Category::Init, Category::Host];

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

    /// Colors that stay apart for the common forms of color blindness (Okabe-Ito palette).
    pub fn color(self) -> RGBColor {
        match self {
            Category::Kernels => RGBColor(0, 114, 178),
            Category::Data => RGBColor(230, 159, 0),
            Category::Wait => RGBColor(213, 94, 0),
            Category::Init => RGBColor(153, 153, 153),
            Category::Host => RGBColor(0, 158, 115),
        }
    }

    /// Where an event's time goes on the timeline.
    pub fn of_event(kind: acc_event_t) -> Category {
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
