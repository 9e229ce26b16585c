//! Time per NVTX range: the program's own phases (accprof_trace::nvtx), and the OpenACC time,
//! transfers and device work inside each.
//!
//! Every event recorded inside a push/pop range carries the innermost range's instance number
//! (`nvtx_range`), and a range's own event, written when it is popped, carries its parent's. On
//! one thread a range is written after everything inside it, so what happened inside an
//! instance is added up while it is open and handed to its parent when it closes: one pass,
//! and memory for the open instances only. Start/end ranges (which may end on another thread)
//! get their time only.

use super::HashMap;
use crate::model::{NvtxMarkRow, NvtxRangeRow, NvtxWork, Timing};
use accprof_timeline::taxonomy::{ChildKind, EventClass};
use accprof_trace::{device, nvtx, Event, EventFlags, Field, StrId, StringTable};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Key {
    start_end: bool,
    domain: Option<StrId>,
    message: Option<StrId>,
}

#[derive(Default, Debug)]
pub struct NvtxRanges {
    /// What happened so far inside each push/pop instance still open (its closed inner
    /// ranges' included).
    open: HashMap<u64, NvtxWork>,
    rows: HashMap<Key, (Timing, NvtxWork)>,
    /// Row order: first seen first.
    order: Vec<Key>,
    marks: HashMap<(Option<StrId>, Option<StrId>), u64>,
}

impl NvtxRanges {
    /// Takes an event: a range or mark, or an event that happened inside a range.
    pub fn feed(&mut self, ev: &Event) {
        let domain = ev.get_str(Field::NvtxDomain);
        let message = ev.get_str(Field::NvtxMessage);
        match ev.kind {
            nvtx::RANGE | nvtx::START_END => {
                let inside = match (ev.kind, ev.get(Field::NvtxRange)) {
                    (nvtx::RANGE, Some(i)) => self.open.remove(&i).unwrap_or_default(),
                    _ => NvtxWork::default(),
                };
                if ev.kind == nvtx::RANGE {
                    if let Some(parent) = ev.get(Field::NvtxParent) {
                        self.open.entry(parent).or_default().add(&inside);
                    }
                }
                let key = Key {
                    start_end: ev.kind == nvtx::START_END,
                    domain,
                    message,
                };
                let row = self.rows.entry(key).or_insert_with(|| {
                    self.order.push(key);
                    (Timing::host(), NvtxWork::default())
                });
                row.0.add(ev.duration_ns());
                row.1.add(&inside);
            }
            nvtx::MARK => *self.marks.entry((domain, message)).or_default() += 1,
            _ => {
                if let Some(i) = ev.get(Field::NvtxRange) {
                    if let Some(w) = work_of(ev) {
                        self.open.entry(i).or_default().add(&w);
                    }
                }
            }
        }
    }

    /// The rows, longest total first, and the marks, most first, with their names.
    pub fn finish(self, strings: &StringTable) -> (Vec<NvtxRangeRow>, Vec<NvtxMarkRow>) {
        let name = |id: Option<StrId>| strings.resolve(id).map(str::to_string);
        let mut rows: Vec<NvtxRangeRow> = self
            .order
            .iter()
            .map(|k| {
                let (time, inside) = self.rows[k];
                NvtxRangeRow {
                    domain: name(k.domain),
                    name: name(k.message).unwrap_or_else(|| "(no message)".into()),
                    start_end: k.start_end,
                    time,
                    inside,
                }
            })
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.time.total_ns));
        let mut marks: Vec<NvtxMarkRow> = self
            .marks
            .into_iter()
            .map(|((d, m), count)| NvtxMarkRow {
                domain: name(d),
                name: name(m).unwrap_or_else(|| "(no message)".into()),
                count,
            })
            .collect();
        marks.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        (rows, marks)
    }
}

/// What an event inside a range adds to it: a construct's host time, a transfer the runtime
/// reported, a copy or kernel the device ran. CUDA-event records are not counted (with CUPTI
/// records of the same work beside them, they would count it twice).
fn work_of(ev: &Event) -> Option<NvtxWork> {
    let mut w = NvtxWork::default();
    let d = ev.duration_ns();
    let bytes = ev
        .bytes()
        .filter(|_| !ev.flags().contains(EventFlags::BYTES_UNKNOWN))
        .unwrap_or(0);
    match ev.kind {
        device::MEMCPY if !ev.flags().contains(EventFlags::FROM_CUDA_EVENTS) => {
            w.device_copies = 1;
            w.device_copy_bytes = bytes;
            w.device_copy_ns = d;
        }
        device::KERNEL if !ev.flags().contains(EventFlags::FROM_CUDA_EVENTS) => {
            w.kernel_ns = d;
        }
        _ => match EventClass::of(ev) {
            EventClass::Construct(_) => w.openacc_ns = d,
            EventClass::Operation(ChildKind::Upload | ChildKind::Download) => {
                w.transfers = 1;
                w.transfer_bytes = bytes;
                w.transfer_ns = d;
            }
            _ => return None,
        },
    }
    Some(w)
}
