//! accprof-tui: an interactive terminal timeline of accprof traces.
//!
//! State (`state`: the compact event store, the viewport, selection, search) is kept apart from
//! drawing (`view`) and from key handling (`input`); [`app::App`] ties them together so that the
//! same app draws to a real terminal or to ratatui's `TestBackend` in the snapshot tests.

pub mod app;
pub mod findings;
pub mod input;
pub mod state;
pub mod synth;
pub mod terminal;
pub mod view;
