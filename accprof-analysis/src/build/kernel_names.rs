//! Kernel records that do not say which call issued them, tied to the runtime's launch of the
//! same kernel while the trace streams. Which launch a record gets is the timeline's by-name
//! rule ([`accprof_timeline::by_name`], the one the export's layout applies); this file keeps
//! the profile's side of it: the launches the builder accounted wait there until their record
//! comes, records wait until no earlier launch can arrive, and what a warning needs is counted.

use super::*;
use accprof_timeline::by_name::{call_of, ByName, KernelLaunches, Unissued};
pub(super) use accprof_timeline::by_name::{CLOCK_SLACK_NS, LAUNCH_WINDOW};

/// Kernel names and the launches waiting for a record (see the module's comment).
#[derive(Debug, Default)]
pub(super) struct KernelNames {
    /// The reader names kernels ([`ProfileBuilder::name_kernel`]): match while streaming.
    pub(super) enabled: bool,
    /// Per kernel name, launches not yet given to a record, by the issuing thread.
    pub(super) launches: KernelLaunches<i64>,
    /// A record waited for a launch by name: from then on, waiting launches keep their spans.
    pub(super) records_seen: bool,
    /// Records that waited too long for a launch of their kernel and were counted outside.
    pub(super) gave_up: u64,
}

impl KernelNames {
    /// The name number of kernel string `id`, if the reader named it.
    pub(super) fn of(&self, id: Option<StrId>) -> Option<u32> {
        self.launches.of(id)
    }

    /// The earliest launch start still waiting on `thread`: spans from there on may still be
    /// needed by a record matched later.
    pub(super) fn earliest_on(&self, thread: i64) -> Option<u64> {
        if !self.records_seen {
            return None;
        }
        self.launches.earliest_of(thread)
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
            self.kernel_names.enabled = true;
            self.kernel_names.launches.name(id, text);
        }
    }

    /// Gives the records waiting for a launch of their kernel the launch's thread and time,
    /// where the by-name rule can tell: no launch that starts before `horizon` can still
    /// arrive (`u64::MAX` at the end of the trace). `recs` is the whole waiting set; threads'
    /// spans are indexed.
    pub(super) fn match_named_kernels(&mut self, recs: &mut [DeviceRecord], horizon: u64) {
        if !recs.iter().any(|d| d.name_pending) {
            return;
        }
        // A launch a record names as its call is that record's, not one by name.
        for d in recs
            .iter()
            .filter(|d| d.kind == DeviceOp::Kernel && d.issued)
        {
            if let Some((thread, op)) = self.issuing_op(d, None) {
                if let Some(n) = self.kernel_names.of(op.kernel_name) {
                    let l = (op.start, op.end, thread);
                    self.kernel_names.launches.claim(n, l);
                }
            }
        }
        let pending: Vec<usize> = (0..recs.len()).filter(|&i| recs[i].name_pending).collect();
        let asked: Vec<Unissued> = pending
            .iter()
            .map(|&i| Unissued {
                kernel: recs[i].kernel,
                correlation: recs[i].correlation,
                device_start: recs[i].r.start_ns,
            })
            .collect();
        let said = self.kernel_names.launches.decide_all(&asked, horizon);
        for (i, said) in pending.into_iter().zip(said) {
            let d = &mut recs[i];
            match said {
                ByName::Wait => {}
                ByName::NoLaunch => d.name_pending = false,
                ByName::Launch(l) => {
                    d.name_pending = false;
                    d.issued = true;
                    d.thread = l.2;
                    d.host_ns = call_of(&l);
                }
            }
        }
    }

    /// The by-name rule at the end of the trace, for a builder the reader did not name
    /// kernels to: every kernel name and launch is known now (`strings` names them), and
    /// every launch span was kept.
    pub(super) fn match_kernels_at_end(
        &mut self,
        recs: &mut [DeviceRecord],
        strings: &StringTable,
    ) {
        if !recs.iter().any(|d| d.kind == DeviceOp::Kernel && !d.issued) {
            return;
        }
        let mut names = KernelLaunches::unbounded();
        let name = |id: Option<StrId>, names: &mut KernelLaunches<i64>| {
            let text = strings.resolve(id)?;
            names.name(id?, text);
            names.of(id)
        };
        for d in recs.iter_mut() {
            if d.kind == DeviceOp::Kernel && !d.issued {
                d.name_pending = name(d.kernel, &mut names).is_some();
            }
        }
        for (&thread, ts) in &self.threads {
            for o in ts.op_spans.iter().filter(|o| o.kind == ChildKind::Launch) {
                if let Some(n) = name(o.kernel_name, &mut names) {
                    names.add_launch(n, (o.start, o.end, thread));
                }
            }
        }
        let streaming = std::mem::replace(&mut self.kernel_names.launches, names);
        self.match_named_kernels(recs, u64::MAX);
        self.kernel_names.launches = streaming;
    }
}
