//! The profiling interface: the callback registry, event dispatch, and tool loading.

pub mod dispatch;
pub mod loader;
pub mod registry;
