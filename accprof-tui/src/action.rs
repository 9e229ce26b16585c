//! What a key press or mouse gesture asks for, once decoded (see [`crate::input`]).

/// Zoom step per key press or wheel notch.
pub const ZOOM_STEP: f64 = 0.5;
/// Pan step per key press, as a fraction of the window.
pub const PAN_STEP: f64 = 0.125;

/// Everything a key or the mouse can ask for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    Quit,
    /// Go to the event with this index in the first trace (the advice's `see: event #N`).
    GotoEvent(u64),
    ToggleHelp,
    /// Zoom by a factor (< 1: in) around the selection or the centre.
    Zoom(f64),
    /// Zoom by a factor around timeline column `col`.
    ZoomAt(f64, u16),
    /// Pan by a fraction of the window.
    Pan(f64),
    /// Select the nearest event in the row above (-1) or below (+1).
    Row(i32),
    /// Scroll rows by a page.
    Page(i32),
    /// Previous (-1) / next (+1) event in the selected row.
    Step(i32),
    /// Previous / next event of the selected event's category.
    StepKind(i32),
    /// Previous / next instance of the selected construct (same kind, name and location).
    StepConstruct(i32),
    ZoomToSelection,
    ZoomToRange {
        from_col: u16,
        to_col: u16,
    },
    ZoomAll,
    Home,
    End,
    /// Select the event at a timeline cell (row on screen, column of the timeline).
    ClickAt {
        row: u16,
        col: u16,
    },
    StartSearch,
    SearchChar(char),
    SearchBackspace,
    SearchSubmit,
    /// Leave the current mode, or clear the filter.
    Escape,
    OpenTable,
    OpenFindings,
    /// Move in the table or the findings list.
    ListMove(i32),
    CycleSort,
    ReverseSort,
    /// Jump to the table row's first instance or the finding's evidence.
    ListEnter,
    Resize,
}

impl Action {
    /// Whether the action sets the zoom itself (the window is then not clamped to the trace).
    pub fn zooms(self) -> bool {
        matches!(
            self,
            Action::ZoomAll | Action::ZoomToRange { .. } | Action::ZoomAt(..) | Action::Zoom(_)
        )
    }
}
