//! The screens, each owning its screen state (as tokio-console's views do): the timeline (the
//! home screen, always drawn), the constructs table and the findings list below it, the help
//! overlay and the search prompt. [`View`] routes each action to the screen that has the keys
//! and draws them all from the loaded [`State`], which it reads and never changes (the loader
//! aside, re-reading a selected event).

pub mod axis;
pub mod details;
pub mod findings;
pub mod geometry;
pub mod help;
pub mod list;
pub mod palette;
pub mod table;
pub mod timeline;
pub mod viewport;

use crate::action::Action;
use crate::state::kind::BarKind;
use crate::state::State;
use accprof_timeline::format::{duration, thousands};
use findings::FindingsView;
pub use geometry::{Geometry, Mode};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;
use table::TableView;
use timeline::TimelineView;

/// Width of the details pane; it is dropped on terminals narrower than [`DETAILS_MIN_TOTAL`].
const DETAILS_WIDTH: u16 = 42;
const DETAILS_MIN_TOTAL: u16 = 100;

/// Every screen's state, and which one has the keys.
#[derive(Debug)]
pub struct View {
    pub mode: Mode,
    pub timeline: TimelineView,
    pub table: TableView,
    pub findings: FindingsView,
    /// A one-line message for the status bar (e.g. "no later upload").
    pub flash: Option<String>,
    pub geometry: Geometry,
}

impl View {
    /// The timeline of the whole trace, no panel open.
    pub fn new(state: &State) -> Self {
        View {
            mode: Mode::Timeline,
            timeline: TimelineView::new(&state.store),
            table: TableView::default(),
            findings: FindingsView::default(),
            flash: None,
            geometry: Geometry {
                timeline_width: 80,
                ..Geometry::default()
            },
        }
    }

    /// Routes an action to the screen that has the keys (`Quit` is the app's).
    pub fn apply(&mut self, action: Action, state: &mut State) {
        self.flash = None;
        let g = self.geometry;
        match action {
            Action::Quit | Action::Resize => {}
            Action::ToggleHelp => {
                self.mode = if self.mode == Mode::Help {
                    Mode::Timeline
                } else {
                    Mode::Help
                };
            }
            Action::StartSearch => self.mode = Mode::Search(String::new()),
            Action::SearchChar(c) => {
                if let Mode::Search(q) = &mut self.mode {
                    q.push(c);
                }
            }
            Action::SearchBackspace => {
                if let Mode::Search(q) = &mut self.mode {
                    q.pop();
                }
            }
            Action::SearchSubmit => {
                if let Mode::Search(q) = std::mem::replace(&mut self.mode, Mode::Timeline) {
                    // `#58`: the event the advice points at, not a filter.
                    match q.trim().strip_prefix('#').map(|n| n.trim().parse::<u64>()) {
                        Some(Ok(n)) => self.goto_event(n, state),
                        _ => self.flash = self.timeline.set_filter(&state.store, &q),
                    }
                }
            }
            Action::GotoEvent(n) => self.goto_event(n, state),
            Action::Escape if self.mode != Mode::Timeline => self.mode = Mode::Timeline,
            Action::OpenTable => {
                self.table.refresh(state);
                self.table.pos = 0;
                self.mode = if self.mode == Mode::Table {
                    Mode::Timeline
                } else {
                    Mode::Table
                };
            }
            Action::OpenFindings => {
                self.findings.pos = 0;
                // A followed trace has grown since the last analysis: run it again.
                if state.following && !state.analysis.running() && self.mode != Mode::Findings {
                    state.start_analysis();
                }
                self.mode = if self.mode == Mode::Findings {
                    Mode::Timeline
                } else {
                    Mode::Findings
                };
            }
            Action::ListMove(d) => {
                let (pos, len) = if self.mode == Mode::Findings {
                    (&mut self.findings.pos, state.analysis.findings.len())
                } else {
                    (&mut self.table.pos, self.table.rows.len())
                };
                *pos = (*pos as i64 + i64::from(d)).clamp(0, len.saturating_sub(1) as i64) as usize;
            }
            Action::CycleSort => self.table.resort(true, state),
            Action::ReverseSort => self.table.resort(false, state),
            Action::ListEnter => self.list_enter(state),
            _ => self.flash = self.timeline.apply(action, state, &g),
        }
        self.timeline.settle(action, &state.store, &g);
    }

    /// Jumps to event `n` of the first trace (as the advice and `accprof dump` number them).
    fn goto_event(&mut self, n: u64, state: &mut State) {
        match state.loader.rec_for(0, n) {
            Some(rec) if self.timeline.jump_to(rec, state, &self.geometry) => {
                self.mode = Mode::Timeline;
                self.flash = Some(format!("event #{n}"));
            }
            _ => self.flash = Some(format!("no event #{n} in the first trace")),
        }
    }

    /// Jumps from the table row or finding with the cursor to its event on the timeline.
    fn list_enter(&mut self, state: &mut State) {
        let rec = match self.mode {
            Mode::Table => self.table.rows.get(self.table.pos).and_then(|r| r.jump),
            Mode::Findings => state
                .analysis
                .findings
                .get(self.findings.pos)
                .and_then(|f| f.evidence),
            _ => None,
        };
        let Some(rec) = rec else {
            self.flash = Some("nothing to jump to".into());
            return;
        };
        if self.timeline.jump_to(rec, state, &self.geometry) {
            self.mode = Mode::Timeline;
        }
    }

    /// Brings the screens up to date after a followed trace grew.
    pub fn after_growth(&mut self, state: &State, before: timeline::Growth) {
        self.timeline.after_growth(&state.store, before);
        if self.mode == Mode::Table {
            self.table.refresh(state);
        }
    }
}

/// Works out where everything goes for a terminal of `area` (also used before the first frame).
pub fn geometry(view: &View, area: Rect) -> (Geometry, Rect, Option<Rect>, Option<Rect>) {
    let [_, main, _, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let (top, panel) = if matches!(view.mode, Mode::Table | Mode::Findings) {
        let [t, p] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(main);
        (t, Some(p))
    } else {
        (main, None)
    };
    let (timeline, details) = if area.width >= DETAILS_MIN_TOTAL {
        let [t, d] =
            Layout::horizontal([Constraint::Min(20), Constraint::Length(DETAILS_WIDTH)]).areas(top);
        (t, Some(d))
    } else {
        (top, None)
    };
    let rows_height = timeline.height.saturating_sub(2);
    let g = Geometry {
        timeline_x: timeline.x + view.timeline.label_width,
        timeline_width: timeline.width.saturating_sub(view.timeline.label_width),
        rows_y: timeline.y,
        rows_height,
    };
    (g, timeline, details, panel)
}

/// Draws every screen for the current mode; records the geometry mouse input is mapped with.
pub fn draw(view: &mut View, state: &State, frame: &mut Frame) {
    let area = frame.area();
    let (g, timeline_area, details_area, panel_area) = geometry(view, area);
    view.geometry = g;
    let tl = &view.timeline;
    let store = &state.store;
    let buf = frame.buffer_mut();
    let header_area = Rect { height: 1, ..area };
    let legend_area = Rect {
        y: area.bottom().saturating_sub(2),
        height: 1,
        ..area
    };
    let status_area = Rect {
        y: area.bottom().saturating_sub(1),
        height: 1,
        ..area
    };

    ratatui::widgets::Widget::render(Paragraph::new(header(view, state)), header_area, buf);

    let rows_area = Rect {
        height: g.rows_height,
        ..timeline_area
    };
    if store.event_count() == 0 {
        let msg = if state.following {
            "No events yet: waiting for the program to record some…"
        } else {
            "This trace holds no events."
        };
        ratatui::widgets::Widget::render(Paragraph::new(msg), rows_area, buf);
    } else {
        timeline::render::render(tl, store, rows_area, buf);
    }
    let axis_area = Rect {
        x: timeline_area.x + tl.label_width,
        y: timeline_area.y + g.rows_height,
        width: g.timeline_width,
        height: 2.min(timeline_area.height),
    };
    axis::render(&tl.viewport, store.origin, axis_area, buf);

    if let Some(d) = details_area {
        let block = Block::default().borders(Borders::LEFT).title(" Details ");
        ratatui::widgets::Widget::render(
            Paragraph::new(details::lines(tl.selected, tl.details.as_ref(), store))
                .block(block)
                .wrap(Wrap { trim: false }),
            d,
            buf,
        );
    }
    if let Some(p) = panel_area {
        match view.mode {
            Mode::Table => view.table.render(state, p, buf),
            _ => view
                .findings
                .render(state, view.mode == Mode::Findings, p, buf),
        }
    }
    ratatui::widgets::Widget::render(
        Paragraph::new(legend(store.categories_seen)),
        legend_area,
        buf,
    );
    ratatui::widgets::Widget::render(Paragraph::new(status(view, state)), status_area, buf);
    if view.mode == Mode::Help {
        help::render(area, buf);
    }
}

fn header(view: &View, state: &State) -> Line<'static> {
    let store = &state.store;
    let vp = &view.timeline.viewport;
    let name = match store.sources.len() {
        1 => store.sources[0]
            .path
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string(),
        n => format!("{n} traces"),
    };
    let mut spans = vec![
        Span::styled(
            " accprof ",
            Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            " {name}  {} events  ",
            thousands(store.event_count() as u64)
        )),
        Span::raw(format!(
            "view +{} … +{} ({})",
            duration(vp.t0.saturating_sub(store.origin)),
            duration(vp.end().saturating_sub(store.origin)),
            duration(vp.span)
        )),
    ];
    if let Some(f) = &view.timeline.filter {
        spans.push(Span::styled(
            format!("  filter \"{}\": {} events", f.query, f.matches),
            Style::default().fg(Color::Yellow),
        ));
    }
    if state.following {
        spans.push(Span::styled(
            "  ● following",
            Style::default().fg(Color::Green),
        ));
    }
    Line::from(spans)
}

/// The colour key. Host categories all, as long as the trace has no device records; with them,
/// the categories that occur, host and device apart (both would not fit one line).
fn legend(seen: u32) -> Line<'static> {
    let has_device = BarKind::ALL
        .iter()
        .any(|c| c.is_device() && seen & (1 << *c as u32) != 0);
    let mut spans = vec![Span::raw(" ")];
    if has_device {
        spans.push(Span::styled("host: ", Style::default().fg(Color::DarkGray)));
    }
    let mut device_started = false;
    for c in BarKind::ALL {
        if has_device && seen & (1 << c as u32) == 0 || !has_device && c.is_device() {
            continue;
        }
        if c.is_device() && !device_started {
            device_started = true;
            spans.push(Span::styled(
                "│ device: ",
                Style::default().fg(Color::DarkGray),
            ));
        }
        spans.push(Span::styled("█", Style::default().fg(palette::color(c))));
        // One space less between entries when both groups must fit.
        spans.push(Span::raw(format!(
            " {}{}",
            c.label(),
            if has_device { " " } else { "  " }
        )));
    }
    Line::from(spans)
}

fn status(view: &View, state: &State) -> Line<'static> {
    if let Mode::Search(q) = &view.mode {
        return Line::from(vec![
            Span::styled("/", Style::default().fg(Color::Yellow)),
            Span::raw(q.clone()),
            Span::styled("▏", Style::default().fg(Color::Yellow)),
            Span::styled(
                "   Enter: filter  Esc: cancel  (file, file:line, line, variable or kernel)",
                Style::default().fg(Color::DarkGray),
            ),
        ]);
    }
    if let Some(f) = &view.flash {
        return Line::from(Span::styled(
            format!(" {f}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    if let Some(w) = state.loader.warnings.first() {
        return Line::from(Span::styled(
            format!(" ⚠ {w}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    Line::from(Span::styled(
        " ? help  q quit  ←→ pan  +- zoom  ↑↓ rows  [ ] step  n/N kind  c/C construct  z zoom sel  / search  t table  a advice",
        Style::default().fg(Color::DarkGray),
    ))
}
