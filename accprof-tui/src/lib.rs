//! accprof-tui: an interactive terminal timeline of accprof traces.
//!
//! Laid out as tokio-console is: `state` holds the loaded traces (the compact event store, the
//! loader, the background analysis) and knows nothing of screens; `view` holds one screen state
//! per screen (timeline, table, findings) and draws them from the state; `input` turns terminal
//! events into [`action::Action`]s; [`app::App`] pairs a state with a view and routes actions,
//! so the same app draws to a real terminal or to ratatui's `TestBackend` in the snapshot tests.
//! Dependencies point one way: `app` -> `input` -> `view` -> `state` (`action` at the bottom).

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod action;
pub mod app;
pub mod input;
pub mod state;
pub mod terminal;
pub mod view;
