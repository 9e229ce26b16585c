//! What the table and the findings list share: the selected row's look and scrolling.

use ratatui::style::{Color, Modifier, Style};

pub fn selected_style() -> Style {
    Style::default()
        .bg(Color::DarkGray)
        .fg(Color::White)
        .add_modifier(Modifier::BOLD)
}

/// First row shown so that `pos` stays visible in `height` rows.
pub fn window_start(pos: usize, height: usize) -> usize {
    pos.saturating_sub(height.saturating_sub(1))
}
