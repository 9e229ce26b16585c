//! What the reading thread hands the writing thread: laid-out slices in batches, with the
//! processes, tracks and strings they are the first to name, and counter values. Each format
//! writes batches through an [`Output`].

use super::counters::Counter;
use accprof_timeline::compact::NONE_U32;
use accprof_timeline::{CompactEvent, DeviceSlice, TrackId, TrackKey, TrackTable};
use std::io;

/// What the writer needs to know about one input trace.
#[derive(Clone, Debug)]
pub struct Process {
    pub pid: u32,
    pub name: String,
}

/// One batch.
#[derive(Default, Debug)]
pub struct Batch {
    /// Traces (processes) begun since the last batch: (trace, process).
    pub processes: Vec<(u16, Process)>,
    /// Tracks first used by this batch's slices, with their names.
    pub tracks: Vec<(TrackId, TrackKey, String)>,
    /// Strings first named since the last batch: (trace, id, text).
    pub strings: Vec<(u16, u32, Box<str>)>,
    pub slices: Vec<Placed>,
    /// What device records say, indexed by [`Placed::device`].
    pub devices: Vec<DeviceSlice>,
    /// The flows slices start, by [`Placed::flows`] ranges.
    pub flows_out: Vec<u64>,
    /// Counter values: (trace, counter, time, value).
    pub counters: Vec<(u16, Counter, u64, i64)>,
}

/// A slice in a batch.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    pub s: CompactEvent,
    /// Index in [`Batch::devices`] for a device record, else [`NONE_U32`].
    pub device: u32,
    /// Range of [`Batch::flows_out`]: the flows the slice starts.
    pub flows: (u32, u32),
}

impl Placed {
    pub fn device<'a>(&self, b: &'a Batch) -> Option<&'a DeviceSlice> {
        (self.device != NONE_U32).then(|| &b.devices[self.device as usize])
    }

    pub fn flows_out<'a>(&self, b: &'a Batch) -> &'a [u64] {
        &b.flows_out[self.flows.0 as usize..self.flows.1 as usize]
    }
}

impl Batch {
    /// Empties the batch, keeping its allocations.
    pub fn clear(&mut self) {
        self.processes.clear();
        self.tracks.clear();
        self.strings.clear();
        self.slices.clear();
        self.devices.clear();
        self.flows_out.clear();
        self.counters.clear();
    }
}

/// What was written, for the closing message.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    pub events: usize,
    pub tracks: usize,
}

/// A format's writer of batches, on the writing thread.
pub trait Output<W> {
    fn batch(&mut self, b: &Batch) -> io::Result<()>;
    /// Ends the file; `tracks` (every track with the lanes it needed) when every slice was
    /// sent, `None` when the export was given up.
    fn finish(self, tracks: Option<&TrackTable>) -> io::Result<(W, Summary)>;
}
