//! The help overlay (`?`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

pub const KEYS: &[(&str, &str)] = &[
    ("← → / h l", "pan left / right"),
    (
        "+ - / wheel",
        "zoom in / out around the selection (wheel: the pointer)",
    ),
    ("z", "zoom to the selected event"),
    ("drag", "zoom to the dragged time range"),
    ("0", "zoom out to the whole trace"),
    ("Home End / g G", "go to the start / end of the trace"),
    ("↑ ↓ / k j", "select in the row above / below"),
    ("PgUp PgDn", "scroll rows by a page"),
    ("[ ]", "previous / next event in the row"),
    ("n N", "next / previous event of the selected kind"),
    ("c C", "next / previous instance of the selected construct"),
    ("click", "select the event under the pointer"),
    (
        "/",
        "search & filter: file, file:line, line, variable, kernel; #58 goes to event 58",
    ),
    ("Esc", "clear the filter / selection, close a panel"),
    (
        "t",
        "constructs and kernels table (s sort, S reverse, Enter jump)",
    ),
    ("a", "advice findings (Enter jumps to the evidence)"),
    ("?", "this help"),
    ("q", "quit"),
];

pub fn render(area: Rect, buf: &mut Buffer) {
    let w = area.width.min(84);
    let h = area.height.min(KEYS.len() as u16 + 4);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| Line::from(format!(" {k:<16} {what}")))
        .collect();
    lines.push(Line::from(""));
    lines.push(
        Line::from(" Colours: see the legend under the timeline.")
            .style(Style::default().add_modifier(Modifier::ITALIC)),
    );
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" accprof-tui keys — ? or Esc to close "),
        )
        .render(r, buf);
}
