//! The application: the loaded traces ([`State`]) and the screens ([`View`]), as tokio-console
//! pairs them. Actions go to the view, which routes them to the screen that has the keys; what
//! happens outside the keys (a followed trace growing, the analysis finishing) comes in here and
//! is passed on to both.

use crate::action::Action;
use crate::state::State;
use crate::view::View;

#[derive(Debug)]
pub struct App {
    pub state: State,
    pub view: View,
    pub quit: bool,
}

impl App {
    /// The app on loaded traces, showing the whole timeline.
    pub fn new(state: State) -> Self {
        let view = View::new(&state);
        App {
            state,
            view,
            quit: false,
        }
    }

    pub fn apply(&mut self, action: Action) {
        if action == Action::Quit {
            self.quit = true;
        }
        self.view.apply(action, &mut self.state);
    }

    /// Starts the advice analysis in the background.
    pub fn start_analysis(&mut self) {
        self.state.start_analysis();
    }

    /// Runs the advice analysis and waits for it (tests, and tools that want the findings at
    /// once).
    pub fn run_analysis(&mut self) {
        self.state.run_analysis();
        self.view.table.refresh(&self.state);
    }

    /// Takes the analysis's results in if it finished. Returns whether anything changed.
    pub fn poll_analysis(&mut self) -> bool {
        let changed = self.state.poll_analysis();
        if changed {
            self.view.table.refresh(&self.state);
        }
        changed
    }

    /// Reads what a followed trace appended; keeps the selection and, when the window showed
    /// the end of the trace, keeps showing it.
    pub fn poll_follow(&mut self) -> Result<usize, accprof_trace::TraceError> {
        let before = self.view.timeline.before_growth(&self.state.store);
        let added = self.state.poll_follow()?;
        if added > 0 {
            self.view.after_growth(&self.state, before);
        }
        Ok(added)
    }
}
