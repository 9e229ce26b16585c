//! Driving the app in tests the way the terminal does: open a trace, draw it on ratatui's
//! TestBackend, send keys through the real input decoding.

use accprof_tui::app::App;
use accprof_tui::input::Input;
use accprof_tui::state::State;
use accprof_tui::view;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use std::path::Path;

/// The app on the trace at `path`, loaded completely.
pub fn open(path: &Path, follow: bool) -> App {
    App::new(State::open(&[path.to_path_buf()], follow, &mut |_, _| {}).unwrap())
}

/// Draws the app at `w` x `h` and returns the screen as text.
pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| view::draw(&mut app.view, &app.state, f))
        .unwrap();
    term.backend().to_string()
}

/// Sends keys through the same decoding as the real terminal, drawing at `w` x `h` before each
/// so that the geometry the input uses is the one on screen. Arrows are written as ↑ ↓ ← →.
pub fn keys_at(app: &mut App, keys: &str, w: u16, h: u16) {
    let mut input = Input::default();
    for c in keys.chars() {
        screen(app, w, h);
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            '↑' => KeyCode::Up,
            '↓' => KeyCode::Down,
            '←' => KeyCode::Left,
            '→' => KeyCode::Right,
            c => KeyCode::Char(c),
        };
        if let Some(a) = input.action(
            &Event::Key(KeyEvent::new(code, KeyModifiers::NONE)),
            &app.view.mode,
            &app.view.geometry,
        ) {
            app.apply(a);
        }
    }
}
