//! Progress bars for commands that can run for seconds on big traces (export, dump, plot; report,
//! advise and diff show theirs while loading).
//!
//! A bar appears only on a terminal (stderr), never with `-q`, and only once the work has taken
//! half a second: a quick command prints nothing extra, and neither does one whose stderr goes
//! to a file or a pipe.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long work runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_millis(500);

/// One bar, shown lazily; several phases (reading, writing) reuse it with a new length.
pub struct ProgressBar {
    enabled: bool,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
    message: String,
    total: u64,
    bytes: bool,
}

impl ProgressBar {
    /// A bar for a command run with `quiet` as given; disabled when stderr is not a terminal.
    pub fn new(quiet: bool) -> Self {
        Self::with_terminal(quiet, std::io::stderr().is_terminal())
    }

    fn with_terminal(quiet: bool, terminal: bool) -> Self {
        ProgressBar {
            enabled: !quiet && terminal,
            started: Instant::now(),
            bar: None,
            message: String::new(),
            total: 0,
            bytes: false,
        }
    }

    /// Starts a phase of `total` units (bytes when `bytes` is set, else items) named `message`.
    pub fn phase(&mut self, message: impl Into<String>, total: u64, bytes: bool) {
        self.message = message.into();
        self.total = total;
        self.bytes = bytes;
        if let Some(b) = &self.bar {
            b.set_style(style(bytes));
            b.set_length(total);
            b.set_position(0);
            b.set_message(self.message.clone());
        }
    }

    /// The current phase has done `done` units.
    pub fn set(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            if self.started.elapsed() < SHOW_AFTER {
                return;
            }
            let b = indicatif::ProgressBar::with_draw_target(
                Some(self.total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            b.set_style(style(self.bytes));
            b.set_message(self.message.clone());
            self.bar = Some(b);
        }
        if let Some(b) = &self.bar {
            b.set_position(done.min(self.total));
        }
    }

    /// Removes the bar, if one is shown.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.finish();
    }
}

fn style(bytes: bool) -> indicatif::ProgressStyle {
    let template = if bytes {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})"
    } else {
        "{msg} [{bar:30}] {pos}/{len} ({eta})"
    };
    indicatif::ProgressStyle::with_template(template).map_or_else(
        |_| indicatif::ProgressStyle::default_bar(),
        |s| s.progress_chars("=> "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_or_not_a_terminal_never_shows_a_bar() {
        for (quiet, terminal) in [(true, true), (false, false), (true, false)] {
            let mut p = ProgressBar::with_terminal(quiet, terminal);
            p.started -= SHOW_AFTER * 2;
            p.phase("x", 10, false);
            p.set(5);
            assert!(!p.enabled && p.bar.is_none());
        }
        let mut p = ProgressBar::with_terminal(false, true);
        p.phase("x", 10, false);
        p.set(5);
        assert!(
            p.enabled && p.bar.is_none(),
            "no bar in the first half second"
        );
    }
}
