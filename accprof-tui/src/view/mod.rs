//! Drawing the app: header, timeline with its axis, details pane, bottom panels, legend and
//! status line. Everything reads [`App`]; nothing here changes state except the recorded
//! geometry that mouse input is mapped with.

pub mod axis;
pub mod details;
pub mod help;
pub mod palette;
pub mod panels;
pub mod timeline;

use crate::app::{App, Geometry, Mode};
use crate::state::kind::Category;
use crate::state::viewport::fmt_duration;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// Width of the details pane; it is dropped on terminals narrower than [`DETAILS_MIN_TOTAL`].
const DETAILS_WIDTH: u16 = 42;
const DETAILS_MIN_TOTAL: u16 = 100;

/// Works out where everything goes for a terminal of `area` (also used before the first frame).
pub fn geometry(app: &App, area: Rect) -> (Geometry, Rect, Option<Rect>, Option<Rect>) {
    let [_, main, _, _] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)]).areas(area);
    let (top, panel) = if matches!(app.mode, Mode::Table | Mode::Findings) {
        let [t, p] = Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(main);
        (t, Some(p))
    } else {
        (main, None)
    };
    let (timeline, details) = if area.width >= DETAILS_MIN_TOTAL {
        let [t, d] = Layout::horizontal([Constraint::Min(20), Constraint::Length(DETAILS_WIDTH)]).areas(top);
        (t, Some(d))
    } else {
        (top, None)
    };
    let rows_height = timeline.height.saturating_sub(2);
    let g = Geometry {
        timeline_x: timeline.x + app.label_width,
        timeline_width: timeline.width.saturating_sub(app.label_width),
        rows_y: timeline.y,
        rows_height,
    };
    (g, timeline, details, panel)
}

pub fn draw(app: &mut App, frame: &mut Frame) {
    let area = frame.area();
    let (g, timeline_area, details_area, panel_area) = geometry(app, area);
    app.geometry = g;
    let buf = frame.buffer_mut();
    let header_area = Rect { height: 1, ..area };
    let legend_area = Rect { y: area.bottom().saturating_sub(2), height: 1, ..area };
    let status_area = Rect { y: area.bottom().saturating_sub(1), height: 1, ..area };

    ratatui::widgets::Widget::render(Paragraph::new(header(app)), header_area, buf);

    let rows_area = Rect { height: g.rows_height, ..timeline_area };
    if app.store.event_count() == 0 {
        let msg = if app.following { "No events yet: waiting for the program to record some…" } else { "This trace holds no events." };
        ratatui::widgets::Widget::render(Paragraph::new(msg), rows_area, buf);
    } else {
        timeline::render(app, rows_area, buf);
    }
    let axis_area = Rect {
        x: timeline_area.x + app.label_width,
        y: timeline_area.y + g.rows_height,
        width: g.timeline_width,
        height: 2.min(timeline_area.height),
    };
    axis::render(&app.view, app.store.origin, axis_area, buf);

    if let Some(d) = details_area {
        let block = Block::default().borders(Borders::LEFT).title(" Details ");
        ratatui::widgets::Widget::render(Paragraph::new(details::lines(app)).block(block).wrap(Wrap { trim: false }), d, buf);
    }
    if let Some(p) = panel_area {
        match app.mode {
            Mode::Table => panels::render_table(app, p, buf),
            _ => panels::render_findings(app, p, buf),
        }
    }
    ratatui::widgets::Widget::render(Paragraph::new(legend(app.store.categories_seen)), legend_area, buf);
    ratatui::widgets::Widget::render(Paragraph::new(status(app)), status_area, buf);
    if app.mode == Mode::Help {
        help::render(area, buf);
    }
}

fn header(app: &App) -> Line<'static> {
    let name = match app.store.sources.len() {
        1 => app.store.sources[0].path.rsplit('/').next().unwrap_or("").to_string(),
        n => format!("{n} traces"),
    };
    let mut spans = vec![
        Span::styled(" accprof ", Style::default().fg(Color::Black).bg(Color::Cyan).add_modifier(Modifier::BOLD)),
        Span::raw(format!(" {name}  {} events  ", group_digits(app.store.event_count() as u64))),
        Span::raw(format!(
            "view +{} … +{} ({})",
            fmt_duration(app.view.t0.saturating_sub(app.store.origin)),
            fmt_duration(app.view.end().saturating_sub(app.store.origin)),
            fmt_duration(app.view.span)
        )),
    ];
    if let Some(f) = &app.filter {
        spans.push(Span::styled(format!("  filter \"{}\": {} events", f.query, f.matches), Style::default().fg(Color::Yellow)));
    }
    if app.following {
        spans.push(Span::styled("  ● following", Style::default().fg(Color::Green)));
    }
    Line::from(spans)
}

/// The colour key. Host categories all, as long as the trace has no device records; with them,
/// the categories that occur, host and device apart (both would not fit one line).
fn legend(seen: u32) -> Line<'static> {
    let has_device = Category::ALL.iter().any(|c| c.is_device() && seen & (1 << *c as u32) != 0);
    let mut spans = vec![Span::raw(" ")];
    if has_device {
        spans.push(Span::styled("host: ", Style::default().fg(Color::DarkGray)));
    }
    let mut device_started = false;
    for c in Category::ALL {
        if has_device && seen & (1 << c as u32) == 0 || !has_device && c.is_device() {
            continue;
        }
        if c.is_device() && !device_started {
            device_started = true;
            spans.push(Span::styled("│ device: ", Style::default().fg(Color::DarkGray)));
        }
        spans.push(Span::styled("█", Style::default().fg(palette::color(c))));
        // One space less between entries when both groups must fit.
        spans.push(Span::raw(format!(" {}{}", c.label(), if has_device { " " } else { "  " })));
    }
    Line::from(spans)
}

fn status(app: &App) -> Line<'static> {
    if let Mode::Search(q) = &app.mode {
        return Line::from(vec![
            Span::styled("/", Style::default().fg(Color::Yellow)),
            Span::raw(q.clone()),
            Span::styled("▏", Style::default().fg(Color::Yellow)),
            Span::styled("   Enter: filter  Esc: cancel  (file, file:line, line, variable or kernel)", Style::default().fg(Color::DarkGray)),
        ]);
    }
    if let Some(f) = &app.flash {
        return Line::from(Span::styled(format!(" {f}"), Style::default().fg(Color::Yellow)));
    }
    if let Some(w) = app.loader.as_ref().and_then(|l| l.warnings.first()) {
        return Line::from(Span::styled(format!(" ⚠ {w}"), Style::default().fg(Color::Yellow)));
    }
    Line::from(Span::styled(
        " ? help  q quit  ←→ pan  +- zoom  ↑↓ rows  [ ] step  n/N kind  c/C construct  z zoom sel  / search  t table  a advice",
        Style::default().fg(Color::DarkGray),
    ))
}

/// 9625008 -> "9,625,008".
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
