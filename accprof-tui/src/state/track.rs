//! One row of a lane: events that do not overlap, sorted by start, with a summary that answers
//! "what is in this time range" in O(log n) plus a bounded scan, whatever the zoom.
//!
//! Drawing must cost O(width), not O(events): zoomed out on ten million events, one terminal cell
//! holds thousands of them. Every [`BLOCK`] events the track keeps the running total of busy time
//! per category, so the events fully inside a cell are summed by subtracting two prefix entries;
//! only the partial blocks at the ends of the range (at most `2 * BLOCK` events) are scanned.

use crate::state::kind::{BarKind, BAR_KIND_COUNT};

/// Events per prefix-sum block: bounds the scan per cell; memory is `72 / BLOCK` bytes per event.
pub const BLOCK: usize = 64;

/// Busy nanoseconds per category.
pub type Totals = [u64; BAR_KIND_COUNT];

#[derive(Clone, Debug, Default)]
pub struct Track {
    /// Start times, sorted ascending (ns on the store's clock).
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// [`BarKind`] as u8.
    pub cat: Vec<u8>,
    /// The record id of each event (index into the store's per-record arrays).
    pub rec: Vec<u32>,
    /// `prefix[b]` = totals of events `0 .. b * BLOCK`.
    prefix: Vec<Totals>,
}

/// What one cell of the timeline holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellSummary {
    /// Events that overlap the cell (saturating).
    pub count: u32,
    /// Busy time inside the cell, all categories together.
    pub covered_ns: u64,
    /// The category with the most busy time (of the first event when all are points).
    pub dominant: BarKind,
    /// The event when exactly one overlaps the cell: its index in the track.
    pub sole: Option<usize>,
    /// The first event overlapping the cell, if any (for clicks and labels).
    pub first: Option<usize>,
}

impl Track {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Appends an event; callers push in start order, then call [`Track::finish`].
    pub fn push(&mut self, start: u64, end: u64, cat: BarKind, rec: u32) {
        debug_assert!(self.start.last().is_none_or(|&s| s <= start));
        self.start.push(start);
        self.end.push(end.max(start));
        self.cat.push(cat as u8);
        self.rec.push(rec);
    }

    /// Builds the prefix sums. Must be called after the last push.
    pub fn finish(&mut self) {
        let n = self.len();
        self.prefix.clear();
        self.prefix.reserve(n / BLOCK + 1);
        let mut acc: Totals = [0; BAR_KIND_COUNT];
        self.prefix.push(acc);
        for b in 0..n / BLOCK {
            for i in b * BLOCK..(b + 1) * BLOCK {
                acc[self.cat[i] as usize] += self.end[i] - self.start[i];
            }
            self.prefix.push(acc);
        }
        self.start.shrink_to_fit();
        self.end.shrink_to_fit();
        self.cat.shrink_to_fit();
        self.rec.shrink_to_fit();
    }

    /// The full durations of events `i0 .. i1`, per category.
    fn totals(&self, i0: usize, i1: usize, out: &mut Totals) {
        let b0 = i0.div_ceil(BLOCK);
        let b1 = i1 / BLOCK;
        let scan = |out: &mut Totals, from: usize, to: usize| {
            for i in from..to {
                out[self.cat[i] as usize] += self.end[i] - self.start[i];
            }
        };
        if b0 >= b1 || b1 >= self.prefix.len() {
            scan(out, i0, i1);
            return;
        }
        scan(out, i0, b0 * BLOCK);
        for (c, o) in out.iter_mut().enumerate() {
            *o += self.prefix[b1][c] - self.prefix[b0][c];
        }
        scan(out, b1 * BLOCK, i1);
    }

    /// The index of the first event starting at or after `t`.
    pub fn first_starting_at(&self, t: u64) -> usize {
        self.start.partition_point(|&s| s < t)
    }

    /// The events overlapping `[a, b)` (a point event at `a` counts), as an index range.
    pub fn overlapping(&self, a: u64, b: u64) -> std::ops::Range<usize> {
        let mut i0 = self.first_starting_at(a);
        let i1 = self.first_starting_at(b.max(a + 1));
        if i0 > 0 && self.end[i0 - 1] > a {
            i0 -= 1;
        }
        i0..i1
    }

    /// Summarises `[a, b)`; `None` when nothing overlaps it.
    pub fn cell(&self, a: u64, b: u64) -> Option<CellSummary> {
        let b = b.max(a + 1);
        let starts_in = self.first_starting_at(a);
        let i1 = self.first_starting_at(b);
        let mut tot: Totals = [0; BAR_KIND_COUNT];
        let mut first = None;
        let mut count = 0usize;
        // Tracks hold disjoint events, so only the one just before `a` can reach into the cell.
        if starts_in > 0 && self.end[starts_in - 1] > a {
            let i = starts_in - 1;
            tot[self.cat[i] as usize] += self.end[i].min(b) - a;
            first = Some(i);
            count += 1;
        }
        if i1 > starts_in {
            self.totals(starts_in, i1, &mut tot);
            let last = i1 - 1;
            if self.end[last] > b {
                tot[self.cat[last] as usize] -= self.end[last] - b;
            }
            first.get_or_insert(starts_in);
            count += i1 - starts_in;
        }
        let first_i = first?;
        let covered_ns = tot.iter().sum();
        let dominant = if covered_ns == 0 {
            BarKind::from_u8(self.cat[first_i])
        } else {
            let (c, _) = tot
                .iter()
                .enumerate()
                .max_by_key(|&(c, v)| (*v, std::cmp::Reverse(c)))
                .unwrap_or((0, &0));
            BarKind::from_u8(c as u8)
        };
        Some(CellSummary {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            covered_ns,
            dominant,
            sole: (count == 1).then_some(first_i),
            first,
        })
    }

    /// The event at time `t` or, failing that, the nearest one within `slack` ns.
    pub fn event_near(&self, t: u64, slack: u64) -> Option<usize> {
        let i = self.first_starting_at(t.saturating_add(1));
        let mut best: Option<(u64, usize)> = None;
        for j in [i.checked_sub(1), (i < self.len()).then_some(i)]
            .into_iter()
            .flatten()
        {
            let d = if t < self.start[j] {
                self.start[j] - t
            } else {
                t.saturating_sub(self.end[j])
            };
            if d <= slack && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, j));
            }
        }
        best.map(|(_, j)| j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(events: &[(u64, u64, BarKind)]) -> Track {
        let mut t = Track::default();
        for (i, &(s, e, c)) in events.iter().enumerate() {
            t.push(s, e, c, i as u32);
        }
        t.finish();
        t
    }

    /// Brute force: overlap of every event with the cell.
    fn brute(t: &Track, a: u64, b: u64) -> (usize, Totals) {
        let mut tot = [0; BAR_KIND_COUNT];
        let mut n = 0;
        for i in 0..t.len() {
            let (s, e) = (t.start[i], t.end[i]);
            let overlaps = (s < b && e > a) || (s == e && s >= a && s < b);
            if overlaps {
                n += 1;
                tot[t.cat[i] as usize] += e.min(b) - s.max(a);
            }
        }
        (n, tot)
    }

    #[test]
    fn cells_match_brute_force_across_block_boundaries() {
        // 1000 events of 7 ns every 10 ns, alternating categories, with points in between.
        let mut evs = Vec::new();
        for i in 0..1000u64 {
            let c = if i % 3 == 0 {
                BarKind::Upload
            } else {
                BarKind::Launch
            };
            evs.push((i * 10, i * 10 + 7, c));
            if i % 5 == 0 {
                evs.push((i * 10 + 8, i * 10 + 8, BarKind::Memory));
            }
        }
        let t = track(&evs);
        for &(a, b) in &[
            (0, 10),
            (3, 9),
            (5, 2000),
            (0, 10_000),
            (1234, 5678),
            (7, 8),
            (9990, 20_000),
        ] {
            let got = t.cell(a, b);
            let (n, tot) = brute(&t, a, b);
            match got {
                None => assert_eq!(n, 0, "cell {a}..{b}"),
                Some(c) => {
                    assert_eq!(c.count as usize, n, "count of {a}..{b}");
                    assert_eq!(c.covered_ns, tot.iter().sum::<u64>(), "covered of {a}..{b}");
                    let max = *tot.iter().max().unwrap();
                    if max > 0 {
                        assert_eq!(tot[c.dominant as usize], max, "dominant of {a}..{b}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_event_fills_cells_it_spans_and_only_those() {
        let t = track(&[(100, 1000, BarKind::Compute)]);
        assert_eq!(t.cell(0, 50), None);
        let c = t.cell(500, 600).unwrap();
        assert_eq!(
            (c.covered_ns, c.sole, c.dominant),
            (100, Some(0), BarKind::Compute)
        );
        assert_eq!(t.cell(950, 1050).unwrap().covered_ns, 50);
        assert_eq!(t.cell(1000, 1100), None);
    }

    #[test]
    fn event_near_prefers_the_event_under_the_point() {
        let t = track(&[(0, 10, BarKind::Launch), (20, 30, BarKind::Upload)]);
        assert_eq!(t.event_near(5, 0), Some(0));
        assert_eq!(t.event_near(18, 5), Some(1));
        assert_eq!(t.event_near(15, 2), None);
    }
}
