//! Colours of the categories: one hue each, readable on dark and light terminals.

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
        Category::Update => Color::LightRed,
        Category::Other => Color::DarkGray,
    }
}
