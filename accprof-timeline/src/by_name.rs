//! The by-name step of the issuer rule ([`crate::device`]): a kernel record that does not say
//! which call issued it is given the runtime's reported launch of the same kernel.
//!
//! libaccprof stops CUPTI's launch callback (a costly one) once the runtime reports launches
//! through acc_prof; GCC's libgomp, NVHPC and the shim name the kernel of each launch, and
//! CUPTI's kernel records carry the name too, but no thread or call time. A trace keys its
//! string ids by the pointer a name came from, so a record and its launch name one kernel with
//! two ids: each id is told its text once ([`KernelLaunches::name`]) and both map to one name
//! number.
//!
//! The rule, per kernel name:
//! - the candidates are the runtime's launches of that kernel that no record saying its call
//!   was issued by ([`KernelLaunches::claim`]), in host order (start, end, then issuer);
//! - records are taken in issue order (CUPTI's correlation id, then device start) and each is
//!   given the earliest candidate ([`KernelLaunches::decide`]), its call being the middle of
//!   that launch;
//! - a record that started on the device more than [`CLOCK_SLACK_NS`] before that launch was
//!   issued is not that launch's: it gets none (and the launch stays for the next record), as
//!   do kernels no runtime reported (a CUDA library's).
//!
//! While a trace streams, a decision waits until no launch that starts before the candidate
//! (or before the record) can still arrive: the caller's `horizon` is the earliest start of a
//! launch it may still be handed (`u64::MAX` once every launch was). At most
//! [`LAUNCH_WINDOW`] launches of one kernel wait; older ones leave (counted), so memory stays
//! bounded. The profile (`accprof-analysis`), the streaming layout ([`crate::layout`]) and the
//! TUI all decide with this type; they differ only in what they call an issuer (`W`, which
//! orders launches that start and end together): the profile a thread, the layout the track
//! the launch was laid out on, the TUI its bar.

use accprof_trace::StrId;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Launches of one kernel that wait for their records, at most; older ones leave the window
/// (counted: a record meant for one would find a later launch, so a view warns).
pub const LAUNCH_WINDOW: usize = 1 << 16;

/// How far a kernel may seem to start before its launch was issued: device times converted by
/// anchoring CUPTI's clock to the host's (no timestamp callback) can be off by this much.
pub const CLOCK_SLACK_NS: u64 = 1_000_000;

/// A launch the runtime reported: host start, end, and who issued it (in the caller's terms).
pub type Launch<W> = (u64, u64, W);

/// What the rule says of a kernel record without its call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ByName<W> {
    /// This launch issued it; the record's call is taken as the launch's middle.
    Launch(Launch<W>),
    /// No launch of its kernel issued it.
    NoLaunch,
    /// A launch that may be its own can still arrive: ask again later.
    Wait,
}

/// The middle of a launch: the call time a record matched to it is given.
pub fn call_of<W>(l: &Launch<W>) -> u64 {
    l.0 + (l.1 - l.0) / 2
}

/// A kernel record without its call, as [`KernelLaunches::decide_all`] takes it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Unissued {
    /// The kernel's name id in the trace.
    pub kernel: Option<StrId>,
    /// CUPTI's correlation id: issue order across the process.
    pub correlation: Option<u64>,
    /// When the device started it.
    pub device_start: u64,
}

/// Kernel names by text, and per name the launches waiting for a record.
#[derive(Debug)]
pub struct KernelLaunches<W> {
    /// Each string id told as a kernel name, to its name's number.
    by_id: FxHashMap<StrId, u32>,
    by_text: FxHashMap<Box<str>, u32>,
    /// Per name number, launches not yet given to a record, sorted.
    launches: FxHashMap<u32, VecDeque<Launch<W>>>,
    /// Launches of one kernel kept at most.
    window: usize,
    /// Launches pushed out of a full window.
    pub left_window: u64,
}

impl<W> Default for KernelLaunches<W> {
    fn default() -> Self {
        KernelLaunches {
            by_id: FxHashMap::default(),
            by_text: FxHashMap::default(),
            launches: FxHashMap::default(),
            window: LAUNCH_WINDOW,
            left_window: 0,
        }
    }
}

impl<W> KernelLaunches<W> {
    /// Launches without a window: for a caller that hands every launch of the trace at once.
    pub fn unbounded() -> Self {
        KernelLaunches {
            window: usize::MAX,
            ..Self::default()
        }
    }
}

impl<W: Copy + Ord> KernelLaunches<W> {
    /// Tells that string `id` is the kernel name `text`.
    pub fn name(&mut self, id: StrId, text: &str) {
        if self.by_id.contains_key(&id) {
            return;
        }
        let next = self.by_text.len() as u32;
        let n = *self.by_text.entry(text.into()).or_insert(next);
        self.by_id.insert(id, n);
    }

    /// Whether any name was told.
    pub fn is_named(&self) -> bool {
        !self.by_id.is_empty()
    }

    /// The name number of kernel string `id`, if it was told.
    pub fn of(&self, id: Option<StrId>) -> Option<u32> {
        id.and_then(|id| self.by_id.get(&id).copied())
    }

    /// A launch of kernel `name` the runtime reported.
    pub fn add_launch(&mut self, name: u32, l: Launch<W>) {
        let q = self.launches.entry(name).or_default();
        let at = q.partition_point(|x| *x <= l);
        q.insert(at, l);
        if q.len() > self.window {
            q.pop_front();
            self.left_window += 1;
        }
    }

    /// Whether the runtime reported a launch of kernel `name` so far.
    pub fn launched(&self, name: u32) -> bool {
        self.launches.contains_key(&name)
    }

    /// A record that says its call was issued by this launch: no record by name may take it.
    pub fn claim(&mut self, name: u32, l: Launch<W>) {
        if let Some(q) = self.launches.get_mut(&name) {
            if let Ok(at) = q.binary_search(&l) {
                q.remove(at);
            }
        }
    }

    /// The earliest launch still waiting that `who` issued.
    pub fn earliest_of(&self, who: W) -> Option<u64> {
        self.launches
            .values()
            .filter_map(|q| q.iter().find(|l| l.2 == who).map(|l| l.0))
            .min()
    }

    /// The rule for one record of kernel `name` that started on the device at
    /// `device_start`, no launch starting before `horizon` being still to come. A launch it
    /// is given is taken from the candidates.
    pub fn decide(&mut self, name: u32, device_start: u64, horizon: u64) -> ByName<W> {
        let front = self.launches.get(&name).and_then(|q| q.front().copied());
        let Some(l) = front.filter(|l| l.0 < horizon) else {
            return if horizon == u64::MAX {
                ByName::NoLaunch
            } else {
                ByName::Wait
            };
        };
        let device_start = device_start.saturating_add(CLOCK_SLACK_NS);
        if device_start < l.0 {
            // Not this launch's: unless an earlier one may still arrive, it has none.
            return if device_start < horizon {
                ByName::NoLaunch
            } else {
                ByName::Wait
            };
        }
        if let Some(q) = self.launches.get_mut(&name) {
            q.pop_front();
        }
        ByName::Launch(l)
    }

    /// The rule for a batch of records, taken in issue order: per record, what it says. Once a
    /// record of a kernel waits, later ones of that kernel wait too (the launch it waits for is
    /// theirs only after it); a record whose kernel has no told name gets no launch.
    pub fn decide_all(&mut self, recs: &[Unissued], horizon: u64) -> Vec<ByName<W>> {
        let mut out = vec![ByName::NoLaunch; recs.len()];
        let mut order: Vec<usize> = (0..recs.len()).collect();
        order.sort_by_key(|&i| {
            (
                recs[i].correlation.unwrap_or(u64::MAX),
                recs[i].device_start,
            )
        });
        let mut blocked: Vec<u32> = Vec::new();
        for i in order {
            let Some(n) = self.of(recs[i].kernel) else {
                continue;
            };
            out[i] = if blocked.contains(&n) {
                ByName::Wait
            } else {
                self.decide(n, recs[i].device_start, horizon)
            };
            if out[i] == ByName::Wait && !blocked.contains(&n) {
                blocked.push(n);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kernel: u32, correlation: u64, device_start: u64) -> Unissued {
        Unissued {
            kernel: Some(StrId(kernel)),
            correlation: Some(correlation),
            device_start,
        }
    }

    #[test]
    fn records_take_the_unclaimed_launches_of_their_kernel_in_issue_order() {
        let mut k: KernelLaunches<i64> = KernelLaunches::default();
        // The launch and the record name one kernel with two ids.
        k.name(StrId(1), "main_40_gpu");
        k.name(StrId(9), "main_40_gpu");
        k.name(StrId(2), "main_50_gpu");
        assert_eq!(k.of(Some(StrId(1))), k.of(Some(StrId(9))));
        let a = k.of(Some(StrId(1))).unwrap();
        let b = k.of(Some(StrId(2))).unwrap();
        for l in [(100, 200, 1), (300, 400, 1), (500, 600, 2)] {
            k.add_launch(a, l);
        }
        k.add_launch(b, (150, 160, 1));
        // A record that said its call claimed the second launch.
        k.claim(a, (300, 400, 1));
        let ms = 1_000_000;
        let recs = [
            rec(9, 2, 10 * ms),
            rec(9, 1, 10 * ms),
            rec(2, 3, 0),
            rec(7, 4, 0),
            rec(9, 5, 0),
        ];
        let got = k.decide_all(&recs, u64::MAX);
        assert_eq!(
            got,
            [
                ByName::Launch((500, 600, 2)),
                ByName::Launch((100, 200, 1)),
                // Started on the device before its launch by less than the slack: its own.
                ByName::Launch((150, 160, 1)),
                // A kernel no launch named.
                ByName::NoLaunch,
                // None left.
                ByName::NoLaunch,
            ]
        );
        assert_eq!(call_of(&(100u64, 200u64, 1i64)), 150);
    }

    #[test]
    fn a_record_waits_while_its_launch_may_still_come() {
        let mut k: KernelLaunches<i64> = KernelLaunches::default();
        k.name(StrId(1), "k");
        let n = k.of(Some(StrId(1))).unwrap();
        let ms = 1_000_000;
        k.add_launch(n, (10 * ms, 11 * ms, 1));
        // Started 5 ms before the only launch: an earlier launch may still arrive.
        let early = rec(1, 1, 5 * ms);
        assert_eq!(
            k.decide_all(&[early, rec(1, 2, 12 * ms)], 8 * ms),
            [ByName::Wait; 2]
        );
        // Nothing earlier can come: it is not that launch's, and the launch waits on.
        assert_eq!(k.decide_all(&[early], 20 * ms), [ByName::NoLaunch]);
        assert_eq!(
            k.decide_all(&[rec(1, 2, 12 * ms)], 20 * ms),
            [ByName::Launch((10 * ms, 11 * ms, 1))]
        );
        assert_eq!(k.decide_all(&[rec(1, 3, 12 * ms)], 20 * ms), [ByName::Wait]);
        assert_eq!(k.earliest_of(1), None);
    }
}
