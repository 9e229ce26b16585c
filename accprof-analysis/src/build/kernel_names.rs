//! Kernel records that do not say which call issued them, tied to the runtime's launch of the
//! same kernel while the trace streams.
//!
//! libaccprof stops CUPTI's launch callback once the runtime reports launches through acc_prof
//! (GCC's libgomp, NVHPC and the shim name the kernel of each launch), so such records carry a
//! kernel name but no thread or call time. The trace's string ids are keyed by the pointer the
//! name came from, so a record and its launch name one kernel with two ids: the reader gives
//! the builder each kernel name's text once ([`ProfileBuilder::name_kernel`]), and both ids map
//! to one name number here. Per name, the launches not claimed by a record that does say its
//! call wait in a window in host time order; records are taken in issue (correlation id) order
//! and each gets the earliest waiting launch, as one pass at the end of the trace would do. A
//! record waits while that launch might not have arrived yet; one that started on the device
//! before its candidate was issued is not that launch's and stays outside any construct.

use super::*;

/// Launches of one kernel that wait for their records, at most; older ones leave the window
/// (counted: a record meant for one would find a later launch, so a warning says so).
pub(super) const LAUNCH_WINDOW: usize = 1 << 16;

/// How far a kernel may seem to start before its launch was issued: device times converted by
/// anchoring CUPTI's clock to the host's (no timestamp callback) can be off by this much.
pub(super) const CLOCK_SLACK_NS: u64 = 1_000_000;

/// A launch the runtime reported: host start, end and thread (the order of one pass at the end).
type Launch = (u64, u64, i64);

/// Kernel names by text, and the launches waiting for a record, per name.
#[derive(Debug, Default)]
pub(super) struct KernelNames {
    /// The reader names kernels ([`ProfileBuilder::name_kernel`]): match while streaming.
    pub(super) enabled: bool,
    /// Each string id seen as a kernel name, to its name's number.
    by_id: HashMap<StrId, u32>,
    by_text: HashMap<Box<str>, u32>,
    /// Per name number, launches not yet given to a record, sorted.
    launches: HashMap<u32, VecDeque<Launch>>,
    /// A record waited for a launch by name: from then on, waiting launches keep their spans.
    pub(super) records_seen: bool,
    /// Launches pushed out of a full window.
    pub(super) left_window: u64,
    /// Records that waited too long for a launch of their kernel and were counted outside.
    pub(super) gave_up: u64,
}

impl KernelNames {
    pub(super) fn name(&mut self, id: StrId, text: &str) {
        self.enabled = true;
        if self.by_id.contains_key(&id) {
            return;
        }
        let next = self.by_text.len() as u32;
        let n = *self.by_text.entry(text.into()).or_insert(next);
        self.by_id.insert(id, n);
    }

    /// The name number of kernel string `id`, if the reader named it.
    pub(super) fn of(&self, id: Option<StrId>) -> Option<u32> {
        id.and_then(|id| self.by_id.get(&id).copied())
    }

    /// A launch of kernel `name` was accounted on `thread`.
    pub(super) fn add_launch(&mut self, name: u32, l: Launch) {
        let q = self.launches.entry(name).or_default();
        let at = q.partition_point(|x| *x <= l);
        q.insert(at, l);
        if q.len() > LAUNCH_WINDOW {
            q.pop_front();
            self.left_window += 1;
        }
    }

    /// Whether the runtime reported a launch of kernel `name` so far.
    pub(super) fn launched(&self, name: u32) -> bool {
        self.launches.contains_key(&name)
    }

    /// A record that says its call claimed this launch: no record by name may take it.
    fn claim(&mut self, name: u32, l: Launch) {
        if let Some(q) = self.launches.get_mut(&name) {
            if let Ok(at) = q.binary_search(&l) {
                q.remove(at);
            }
        }
    }

    /// The earliest launch start still waiting on `thread`: spans from there on may still be
    /// needed by a record matched later.
    pub(super) fn earliest_on(&self, thread: i64) -> Option<u64> {
        if !self.records_seen {
            return None;
        }
        self.launches
            .values()
            .filter_map(|q| q.iter().find(|l| l.2 == thread).map(|l| l.0))
            .min()
    }
}

impl ProfileBuilder {
    /// Names the kernel string `id` (a launch's or a kernel record's `kernel_name`), so that
    /// kernel records without their issuing call are tied to their launches while the trace
    /// streams, keeping memory bounded. Call it before feeding the first event that uses
    /// `id`; a builder never told names ties them at the end instead (from the string table
    /// given to [`finish`](Self::finish)), keeping every launch until then.
    pub fn name_kernel(&mut self, id: StrId, text: &str) {
        if self.device_mode {
            self.kernel_names.name(id, text);
        }
    }

    /// Gives the records waiting for a launch of their kernel the launch's thread and time,
    /// where it is settled: no launch that starts before `horizon` can still arrive (`u64::MAX`
    /// at the end of the trace). `recs` is the whole waiting set; threads' spans are indexed.
    pub(super) fn match_named_kernels(&mut self, recs: &mut [DeviceRecord], horizon: u64) {
        if !recs.iter().any(|d| d.name_pending) {
            return;
        }
        let names = &mut self.kernel_names;
        for d in recs
            .iter()
            .filter(|d| d.kind == DeviceOp::Kernel && d.issued)
        {
            let Some(ts) = self.threads.get(&d.thread) else {
                continue;
            };
            if let Some(op) = find_op(ts, d.host_ns, ChildKind::Launch) {
                if let Some(n) = names.of(op.kernel_name) {
                    names.claim(n, (op.start, op.end, d.thread));
                }
            }
        }
        let mut order: Vec<usize> = (0..recs.len()).filter(|&i| recs[i].name_pending).collect();
        order.sort_by_key(|&i| (recs[i].correlation.unwrap_or(u64::MAX), recs[i].r.start_ns));
        // Once a record of a kernel waits, later ones of that kernel wait too: the launch it
        // waits for is theirs only after it.
        let mut blocked: Vec<u32> = Vec::new();
        for i in order {
            let d = &mut recs[i];
            let Some(n) = names.of(d.kernel) else {
                d.name_pending = false;
                continue;
            };
            if blocked.contains(&n) {
                continue;
            }
            let front = names.launches.get(&n).and_then(|q| q.front().copied());
            let Some((start, end, thread)) = front.filter(|l| l.0 < horizon) else {
                if horizon == u64::MAX {
                    d.name_pending = false;
                } else {
                    blocked.push(n);
                }
                continue;
            };
            let device_start = d.r.start_ns.saturating_add(CLOCK_SLACK_NS);
            if device_start < start {
                // Not this launch's: unless an earlier one may still arrive, it has none.
                if device_start < horizon {
                    d.name_pending = false;
                } else {
                    blocked.push(n);
                }
                continue;
            }
            if let Some(q) = names.launches.get_mut(&n) {
                q.pop_front();
            }
            d.name_pending = false;
            d.issued = true;
            d.thread = thread;
            d.host_ns = start + (end - start) / 2;
        }
    }
}
