//! Colours of the categories: one hue each, readable on dark and light terminals. A device
//! record takes the light shade of the host event that enqueued its work (launch green, upload
//! magenta, download red), so the enqueue and the execution of one operation read as a pair.

use crate::state::kind::Category;
use ratatui::style::Color;

pub fn color(c: Category) -> Color {
    match c {
        Category::Compute => Color::Blue,
        Category::Launch => Color::Green,
        Category::Upload => Color::Magenta,
        Category::Download => Color::Red,
        Category::Memory => Color::Gray,
        Category::Wait => Color::Yellow,
        Category::Data => Color::Cyan,
        // Light red is the device downloads'; update is a data directive, in the data family.
        Category::Update => Color::LightCyan,
        Category::Other => Color::DarkGray,
        Category::DeviceKernel => Color::LightGreen,
        Category::DeviceUpload => Color::LightMagenta,
        Category::DeviceDownload => Color::LightRed,
        Category::DeviceCopy => Color::LightYellow,
        Category::DeviceMemset => Color::White,
    }
}
