//! What the timeline knows, independent of how it is drawn.

pub mod device;
pub mod kind;
pub mod load;
pub mod store;
pub mod track;
pub mod search;
pub mod table;
pub mod viewport;
pub mod findings;
