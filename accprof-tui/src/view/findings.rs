//! The advice findings screen: the list from the analysis and its cursor.

use crate::state::State;
use crate::view::list::{selected_style, window_start};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

/// The findings screen.
#[derive(Debug, Default)]
pub struct FindingsView {
    /// The finding with the cursor.
    pub pos: usize,
}

impl FindingsView {
    pub fn render(&self, state: &State, focused: bool, area: Rect, buf: &mut Buffer) {
        let findings = &state.analysis.findings;
        let block = Block::default().borders(Borders::ALL).title(format!(
            " Advice findings ({}) — Enter: jump to evidence, Esc: close ",
            findings.len()
        ));
        let inner = block.inner(area);
        block.render(area, buf);
        if findings.is_empty() {
            Paragraph::new(state.analysis.note.clone())
                .wrap(Wrap { trim: true })
                .render(inner, buf);
            return;
        }
        let mut lines = Vec::new();
        for (i, f) in findings.iter().enumerate() {
            let style = if i == self.pos && focused {
                selected_style()
            } else {
                Style::default().add_modifier(Modifier::BOLD)
            };
            let marker = if f.evidence.is_some() { "→" } else { " " };
            lines.push(Line::from(Span::styled(
                format!("{marker} {}", f.title),
                style,
            )));
            if i == self.pos && !f.detail.is_empty() {
                for d in f.detail.lines() {
                    lines.push(Line::from(Span::styled(
                        format!("    {d}"),
                        Style::default().fg(Color::Gray),
                    )));
                }
            }
        }
        let pos_line = findings.iter().take(self.pos).count();
        let scroll = window_start(pos_line, inner.height as usize) as u16;
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .render(inner, buf);
    }
}
