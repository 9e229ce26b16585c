//! What flows from the recording threads, CUPTI and CUDA events to the writer thread, and what
//! the writer reports back at exit.

use accprof_trace::{Event, PackedEvents, StrId};
use crossbeam_channel::Sender;
use std::path::PathBuf;

pub enum Message {
    /// A thread's buffer, full or at the thread's end: what the writer has not taken from it
    /// in place yet is to be written, then the buffer given back.
    Batch(PackedEvents),
    /// Device records from CUPTI: already on CLOCK_MONOTONIC, and not from the buffer pool.
    Device(DeviceBatch),
    /// Device records from CUDA events: device times on CLOCK_MONOTONIC, `host_call_ns` still
    /// in the hot path's clock unit (converted here, like the host event it equals).
    CudaEvents(Vec<accprof_trace::Event>),
    /// Write out everything buffered now (runtime shutdown).
    Flush,
    /// Final flush; reply with what was written.
    Shutdown(Sender<Summary>),
}

/// Device records converted on CUPTI's buffer thread, with the kernel names first used by them.
#[derive(Debug, Default)]
pub struct DeviceBatch {
    pub events: Vec<Event>,
    pub strings: Vec<(StrId, Box<[u8]>)>,
}

/// What the collector wrote, for the line printed at exit.
#[derive(Debug, Default)]
pub struct Summary {
    pub path: Option<PathBuf>,
    pub events: u64,
    pub dropped: u64,
    /// A failure the collector has not said yet (those it said as they happened are not
    /// repeated).
    pub error: Option<String>,
    /// Writing failed at some point: the trace is incomplete.
    pub failed: bool,
}
