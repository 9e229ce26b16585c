//! Colours of the categories: one hue each, readable on dark and light terminals. A device
//! record takes the light shade of the host event that enqueued its work (launch green, upload
//! magenta, download red), so the enqueue and the execution of one operation read as a pair.

use crate::state::kind::BarKind;
use ratatui::style::Color;

pub fn color(c: BarKind) -> Color {
    match c {
        BarKind::Compute => Color::Blue,
        BarKind::Launch => Color::Green,
        BarKind::Upload => Color::Magenta,
        BarKind::Download => Color::Red,
        BarKind::Memory => Color::Gray,
        BarKind::Wait => Color::Yellow,
        BarKind::Data => Color::Cyan,
        // Light red is the device downloads'; update is a data directive, in the data family.
        BarKind::Update => Color::LightCyan,
        BarKind::Other => Color::DarkGray,
        BarKind::DeviceKernel => Color::LightGreen,
        BarKind::DeviceUpload => Color::LightMagenta,
        BarKind::DeviceDownload => Color::LightRed,
        BarKind::DeviceCopy => Color::LightYellow,
        BarKind::DeviceMemset => Color::White,
    }
}
