//! The bottom panels: the constructs/kernels table and the advice findings.

use crate::app::{App, Mode};
use crate::state::viewport::fmt_duration;
use crate::view::details::fmt_bytes;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Widget, Wrap};

fn selected_style() -> Style {
    Style::default().bg(Color::DarkGray).fg(Color::White).add_modifier(Modifier::BOLD)
}

/// First row shown so that `pos` stays visible in `height` rows.
fn window_start(pos: usize, height: usize) -> usize {
    pos.saturating_sub(height.saturating_sub(1))
}

pub fn render_table(app: &App, area: Rect, buf: &mut Buffer) {
    let note = app.table_note().map(|n| format!("{n} — ")).unwrap_or_default();
    let title = format!(
        " Constructs and kernels ({}) — {note}sorted by {}{}; s: sort, S: reverse, Enter: jump, Esc: close ",
        app.table_rows.len(),
        app.sort.label(),
        if app.sort_reverse { " (reversed)" } else { "" }
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    let visible = inner.height.saturating_sub(1) as usize;
    let first = window_start(app.list_pos, visible);
    let rows = app.table_rows.iter().enumerate().skip(first).take(visible).map(|(i, r)| {
        let style = if i == app.list_pos { selected_style() } else { Style::default() };
        Row::new(vec![
            Cell::from(r.what.clone()),
            Cell::from(r.count.to_string()),
            Cell::from(fmt_duration(r.total_ns)),
            Cell::from(fmt_duration(r.avg_ns())),
            Cell::from(r.source_label()),
            Cell::from(if r.bytes > 0 { fmt_bytes(r.bytes) } else { "-".into() }),
            Cell::from(r.host_ns.map(fmt_duration).unwrap_or_else(|| "-".into())),
        ])
        .style(style)
    });
    // "time" says where total and average were measured; "host enqueue" is the runtime's
    // launch/transfer calls behind a device-timed row.
    let header = Row::new(vec!["construct / kernel / transfer", "count", "total", "average", "time", "data", "host enqueue"])
        .style(Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    let widths = [
        Constraint::Min(30),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(12),
    ];
    Table::new(rows, widths).header(header).render(inner, buf);
}

pub fn render_findings(app: &App, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" Advice findings ({}) — Enter: jump to evidence, Esc: close ", app.findings.len()));
    let inner = block.inner(area);
    block.render(area, buf);
    if app.findings.is_empty() {
        Paragraph::new(app.findings_note.clone()).wrap(Wrap { trim: true }).render(inner, buf);
        return;
    }
    let mut lines = Vec::new();
    for (i, f) in app.findings.iter().enumerate() {
        let style = if i == app.list_pos && app.mode == Mode::Findings { selected_style() } else { Style::default().add_modifier(Modifier::BOLD) };
        let marker = if f.evidence.is_some() { "→" } else { " " };
        lines.push(Line::from(Span::styled(format!("{marker} {}", f.title), style)));
        if i == app.list_pos && !f.detail.is_empty() {
            for d in f.detail.lines() {
                lines.push(Line::from(Span::styled(format!("    {d}"), Style::default().fg(Color::Gray))));
            }
        }
    }
    let pos_line = app.findings.iter().take(app.list_pos).count();
    let scroll = window_start(pos_line, inner.height as usize) as u16;
    Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((scroll, 0)).render(inner, buf);
}
