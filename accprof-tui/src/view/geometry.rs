//! What input decoding needs to know about the screen: which screen has the keys, and where the
//! last frame put the timeline (for mapping mouse positions).

/// What the keys currently act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Timeline,
    Help,
    /// Typing a search query.
    Search(String),
    /// The constructs/kernels table has the keys.
    Table,
    /// The advice findings have the keys.
    Findings,
}

/// The geometry of the last frame, for mapping mouse positions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Geometry {
    /// Timeline columns (without the lane labels).
    pub timeline_x: u16,
    pub timeline_width: u16,
    pub rows_y: u16,
    pub rows_height: u16,
}
