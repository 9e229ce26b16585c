//! What one slice or instant carries, in the writer's interned handles.

use crate::ids::{ArgNameId, CategoryId, FlowId, LocationId, NameId, StringId, TrackId};

/// The description of a slice or an instant. Build one per call; it borrows its arguments and
/// flows, so writing an event allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// The event's name.
    pub name: NameId,
    /// Its category, if any.
    pub category: Option<CategoryId>,
    /// The source line it comes from, if known.
    pub location: Option<LocationId>,
    /// Named values shown with the slice (bytes, variable names, launch geometry...).
    pub args: &'a [Arg<'a>],
    /// Flows that start at this slice (for example from a construct to the device work it
    /// issued).
    pub flows_out: &'a [FlowId],
    /// Flows that end at this slice.
    pub flows_in: &'a [FlowId],
    /// Counter values from the event's time on, carried by its packet (TrackEvent's
    /// `extra_counter_values`) instead of a packet of their own on each counter's track.
    pub counters: &'a [CounterValue],
}

impl<'a> Event<'a> {
    /// An event with a name and nothing else.
    pub fn named(name: NameId) -> Self {
        Event {
            name,
            category: None,
            location: None,
            args: &[],
            flows_out: &[],
            flows_in: &[],
            counters: &[],
        }
    }

    /// The same event in `category`.
    pub fn category(mut self, category: CategoryId) -> Self {
        self.category = Some(category);
        self
    }

    /// The same event at a source location.
    pub fn location(mut self, location: LocationId) -> Self {
        self.location = Some(location);
        self
    }

    /// The same event with these arguments.
    pub fn args(mut self, args: &'a [Arg<'a>]) -> Self {
        self.args = args;
        self
    }

    /// The same event as the start of these flows.
    pub fn flows_out(mut self, flows: &'a [FlowId]) -> Self {
        self.flows_out = flows;
        self
    }

    /// The same event as the end of these flows.
    pub fn flows_in(mut self, flows: &'a [FlowId]) -> Self {
        self.flows_in = flows;
        self
    }

    /// The same event carrying these counters' values at its time (its start, for a slice).
    pub fn counters(mut self, counters: &'a [CounterValue]) -> Self {
        self.counters = counters;
        self
    }
}

/// The value of a counter track (made by
/// [`counter_track`](crate::PerfettoWriter::counter_track)) from an event's time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterValue {
    /// The counter track.
    pub track: TrackId,
    /// Its value.
    pub value: i64,
}

/// One named value of an event (a Perfetto debug annotation).
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    /// The argument's interned name.
    pub name: ArgNameId,
    /// Its value.
    pub value: ArgValue<'a>,
}

/// The value of an [`Arg`].
#[derive(Clone, Copy, Debug)]
pub enum ArgValue<'a> {
    /// An unsigned number (bytes, counts).
    Uint(u64),
    /// A signed number (queue numbers, which may be negative).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A yes/no value.
    Bool(bool),
    /// An address, shown in hexadecimal.
    Pointer(u64),
    /// An interned string (variable names and other values that repeat).
    Interned(StringId),
    /// A string written out in full in each event; prefer [`ArgValue::Interned`] for values that
    /// repeat, since this one costs its length and an allocation every time.
    Str(&'a str),
}

/// What a counter track counts, for the unit Perfetto shows beside its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterUnit {
    /// Bytes (bytes moved, device memory in use).
    Bytes,
    /// A plain count.
    Count,
    /// Nanoseconds.
    TimeNs,
}
