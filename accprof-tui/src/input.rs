//! Turns terminal key and mouse events into [`Action`]s, according to the mode.

use crate::action::{Action, PAN_STEP, ZOOM_STEP};
use crate::view::geometry::{Geometry, Mode};
use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

/// Mouse state between events (a drag spans several).
#[derive(Clone, Copy, Debug, Default)]
pub struct Input {
    /// Timeline column and screen row where the left button went down.
    drag_from: Option<(u16, u16)>,
}

impl Input {
    pub fn action(&mut self, ev: &Event, mode: &Mode, g: &Geometry) -> Option<Action> {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => key(k, mode),
            Event::Mouse(m) if *mode == Mode::Timeline => self.mouse(m, g),
            Event::Resize(..) => Some(Action::Resize),
            _ => None,
        }
    }

    fn mouse(&mut self, m: &MouseEvent, g: &Geometry) -> Option<Action> {
        let in_timeline = m.column >= g.timeline_x && m.column < g.timeline_x + g.timeline_width;
        let col = m.column.saturating_sub(g.timeline_x);
        let in_rows = m.row >= g.rows_y && m.row < g.rows_y + g.rows_height;
        match m.kind {
            MouseEventKind::ScrollUp if in_timeline => Some(Action::ZoomAt(ZOOM_STEP, col)),
            MouseEventKind::ScrollDown if in_timeline => Some(Action::ZoomAt(1.0 / ZOOM_STEP, col)),
            MouseEventKind::ScrollLeft => Some(Action::Pan(-PAN_STEP)),
            MouseEventKind::ScrollRight => Some(Action::Pan(PAN_STEP)),
            MouseEventKind::Down(MouseButton::Left) if in_timeline && in_rows => {
                self.drag_from = Some((col, m.row - g.rows_y));
                None
            }
            MouseEventKind::Up(MouseButton::Left) => {
                let (from, row) = self.drag_from.take()?;
                let to = col.min(g.timeline_width.saturating_sub(1));
                if from.abs_diff(to) >= 2 {
                    Some(Action::ZoomToRange {
                        from_col: from,
                        to_col: to,
                    })
                } else {
                    Some(Action::ClickAt { row, col: from })
                }
            }
            _ => None,
        }
    }
}

fn key(k: &KeyEvent, mode: &Mode) -> Option<Action> {
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Search(_) => match k.code {
            KeyCode::Enter => Some(Action::SearchSubmit),
            KeyCode::Esc => Some(Action::Escape),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) => Some(Action::SearchChar(c)),
            _ => None,
        },
        Mode::Help => match k.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Char('?') | KeyCode::Esc => Some(Action::ToggleHelp),
            _ => None,
        },
        Mode::Table | Mode::Findings => match k.code {
            KeyCode::Up | KeyCode::Char('k') => Some(Action::ListMove(-1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::ListMove(1)),
            KeyCode::PageUp => Some(Action::ListMove(-10)),
            KeyCode::PageDown => Some(Action::ListMove(10)),
            KeyCode::Enter => Some(Action::ListEnter),
            KeyCode::Char('s') if *mode == Mode::Table => Some(Action::CycleSort),
            KeyCode::Char('S') if *mode == Mode::Table => Some(Action::ReverseSort),
            KeyCode::Char('t') if *mode == Mode::Table => Some(Action::OpenTable),
            KeyCode::Char('a') if *mode == Mode::Findings => Some(Action::OpenFindings),
            KeyCode::Esc => Some(Action::Escape),
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Char('?') => Some(Action::ToggleHelp),
            _ => None,
        },
        Mode::Timeline => match k.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Char('?') => Some(Action::ToggleHelp),
            KeyCode::Char('+') | KeyCode::Char('=') => Some(Action::Zoom(ZOOM_STEP)),
            KeyCode::Char('-') | KeyCode::Char('_') => Some(Action::Zoom(1.0 / ZOOM_STEP)),
            KeyCode::Left | KeyCode::Char('h') => Some(Action::Pan(-PAN_STEP)),
            KeyCode::Right | KeyCode::Char('l') => Some(Action::Pan(PAN_STEP)),
            KeyCode::Char('H') => Some(Action::Pan(-0.9)),
            KeyCode::Char('L') => Some(Action::Pan(0.9)),
            KeyCode::Up | KeyCode::Char('k') => Some(Action::Row(-1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::Row(1)),
            KeyCode::PageUp => Some(Action::Page(-1)),
            KeyCode::PageDown => Some(Action::Page(1)),
            KeyCode::Char('[') => Some(Action::Step(-1)),
            KeyCode::Char(']') => Some(Action::Step(1)),
            KeyCode::Char('n') => Some(Action::StepKind(1)),
            KeyCode::Char('N') => Some(Action::StepKind(-1)),
            KeyCode::Char('c') => Some(Action::StepConstruct(1)),
            KeyCode::Char('C') => Some(Action::StepConstruct(-1)),
            KeyCode::Char('z') => Some(Action::ZoomToSelection),
            KeyCode::Char('0') => Some(Action::ZoomAll),
            KeyCode::Home | KeyCode::Char('g') => Some(Action::Home),
            KeyCode::End | KeyCode::Char('G') => Some(Action::End),
            KeyCode::Char('/') => Some(Action::StartSearch),
            KeyCode::Esc => Some(Action::Escape),
            KeyCode::Char('t') => Some(Action::OpenTable),
            KeyCode::Char('a') => Some(Action::OpenFindings),
            _ => None,
        },
    }
}
