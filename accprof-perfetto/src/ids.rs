//! Handles the writer gives out: tracks, interned strings and source locations, and flows.
//!
//! They are plain numbers, cheap to copy and store in a caller's own tables; each is only
//! meaningful to the writer that made it (the writer rejects one it never gave out).

/// A track: a process, a host thread, an async queue, a device stream, a counter, or any named
/// group of those. It is the track's Perfetto uuid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackId(pub(crate) u64);

/// An interned event name (for example `acc_enter_data` or a kernel's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NameId(pub(crate) u64);

/// An interned event category (for example `construct`, `transfer`, `launch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CategoryId(pub(crate) u64);

/// An interned source location: file, function and line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocationId(pub(crate) u64);

/// An interned argument name (for example `bytes` or `var`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgNameId(pub(crate) u64);

/// An interned string argument value (for example a variable's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StringId(pub(crate) u64);

/// A flow: an arrow from the slice that lists it in [`Event::flows_out`](crate::Event) to the
/// slice that lists it in [`Event::flows_in`](crate::Event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowId(pub(crate) u64);

impl FlowId {
    /// The number written to the trace.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl TrackId {
    /// The track's uuid in the trace.
    pub fn uuid(self) -> u64 {
        self.0
    }
}
