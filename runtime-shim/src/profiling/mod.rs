//! The profiling interface: the callback registry, event dispatch, and tool loading.

pub mod callback_list;
pub mod dispatch;
pub mod loader;
pub mod registry;
