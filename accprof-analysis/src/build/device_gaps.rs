//! Device idle gaps (nsys analyze's gpu_gaps): stretches where the device did nothing between
//! the device work of one construct and the next, while the host ran code of its own. Only a
//! trace with device records (kernels, copies, memsets timed on the device) can show them.
//!
//! The device's busy time is the union of its records over all streams; a gap is a stretch
//! outside it, and counts when the work before and after it belongs to different construct
//! instances (inside one construct a gap is launch overhead, the short-kernels rule's matter).
//! Gaps are summed per (construct before, construct after), the place the advice points at.

use super::{ConstructSpan, DeviceRecord};
use crate::model::{DeviceGaps, EventRef, GapSite};
use std::collections::HashMap;

/// Gaps shorter than this are scheduling noise, not host work.
const MIN_GAP_NS: u64 = 2_000;

/// The gaps between device records, fed in rounds (the builder ties records to constructs a
/// round at a time, so that it need not keep them all): each round is taken in start order and
/// continues the busy stretch the previous one left. A record that started before the stretch
/// the previous round left (it arrived a round late) joins that stretch.
#[derive(Debug, Default)]
pub(super) struct GapFinder {
    out: DeviceGaps,
    sites: HashMap<(Option<u32>, Option<u32>), GapSite>,
    /// The busy stretch so far: its start and end, and who issued the record that reaches it.
    busy: Option<(u64, u64, Who)>,
    first_start: Option<u64>,
    last_end: u64,
}

/// The construct instance that issued a record.
type Who = Option<(u32, u64)>;

impl GapFinder {
    /// Adds a round of records, each with the construct instance that issued it, if known.
    pub(super) fn add(&mut self, recs: &[DeviceRecord], enclosing: &[Option<ConstructSpan>]) {
        let mut order: Vec<usize> = (0..recs.len()).collect();
        order.sort_by_key(|&i| (recs[i].r.start_ns, recs[i].r.end_ns));
        let who = |i: usize| {
            enclosing
                .get(i)
                .copied()
                .flatten()
                .map(|s| (s.construct, s.instance))
        };
        for &i in &order {
            self.add_one(recs[i].r, who(i));
        }
    }

    fn add_one(&mut self, r: EventRef, now: Who) {
        let end = r.end_ns.max(r.start_ns);
        self.first_start = Some(self.first_start.map_or(r.start_ns, |f| f.min(r.start_ns)));
        self.last_end = self.last_end.max(r.end_ns);
        match self.busy {
            None => self.busy = Some((r.start_ns, end, now)),
            Some((from, to, last)) if r.start_ns <= to => {
                self.busy = Some(if end > to {
                    (from, end, now)
                } else {
                    (from, to, last)
                });
            }
            Some((from, to, before)) => {
                self.out.busy_ns += to - from;
                let gap = r.start_ns - to;
                if gap >= MIN_GAP_NS && (before.is_none() || before != now) {
                    let key = (before.map(|b| b.0), now.map(|a| a.0));
                    let s = self.sites.entry(key).or_insert(GapSite {
                        before: key.0.map(|c| c as usize),
                        after: key.1.map(|c| c as usize),
                        count: 0,
                        total_ns: 0,
                        max_ns: 0,
                        longest: None,
                        first_ns: to,
                        last_ns: r.start_ns,
                    });
                    s.count += 1;
                    s.total_ns += gap;
                    if gap > s.max_ns {
                        s.max_ns = gap;
                        s.longest = Some(r);
                    }
                    s.first_ns = s.first_ns.min(to);
                    s.last_ns = s.last_ns.max(r.start_ns);
                }
                self.busy = Some((r.start_ns, end, now));
            }
        }
    }

    /// The gaps of every record added.
    pub(super) fn finish(mut self) -> DeviceGaps {
        if let Some((from, to, _)) = self.busy {
            self.out.busy_ns += to - from;
        }
        if let Some(first) = self.first_start {
            self.out.span_ns = self.last_end.saturating_sub(first);
        }
        let mut out = self.out;
        out.sites = self.sites.into_values().collect();
        out.sites.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(a.before.cmp(&b.before))
                .then(a.after.cmp(&b.after))
        });
        out
    }
}
