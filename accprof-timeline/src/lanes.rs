//! Lanes: how the slices of one track are stacked (Perfetto's slice tracker), the one rule
//! every view uses.
//!
//! Slices come in start order (the longer first at equal starts). Each goes to the first lane
//! of its track where it nests strictly: inside the innermost slice still open on that lane, or
//! after it; its depth is how many slices of that lane it sits in. A slice that would cross
//! another one (start inside it and end after it: two threads sharing an async queue, device
//! records overlapping on a stream) goes to a further lane instead of being clipped, so its
//! duration stays true. Perfetto drops a slice that crosses its parent; the TUI draws one row
//! per (lane, depth). The slices of one host thread nest (they are its call stack), so its
//! tracks have one lane.

/// The open slices of one track, per lane: where the next slice in start order goes.
#[derive(Clone, Debug, Default)]
pub struct Lanes {
    /// Per lane, the ends of the slices still open at the current start time, innermost last.
    open: Vec<Vec<u64>>,
}

/// Where a slice landed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Placement {
    pub lane: u16,
    /// Slices of its lane it is nested in (0: outermost).
    pub depth: u16,
}

/// Lanes a track may have; slices beyond them share the last (pathological input only).
pub const MAX_LANES: usize = u16::MAX as usize - 1;

impl Lanes {
    /// Places `[start, end]`, the next slice of the track in start order. An instant takes a
    /// place too (depth for a view that draws it) but never holds one open.
    pub fn place(&mut self, start: u64, end: u64, instant: bool) -> Placement {
        for (i, open) in self.open.iter_mut().enumerate() {
            // Slices come in start order, so one that ended by `start` is closed for good.
            while open.last().is_some_and(|&e| e <= start) {
                open.pop();
            }
            if open.last().is_none_or(|&e| end <= e) {
                let depth = open.len().min(u16::MAX as usize) as u16;
                if !instant {
                    open.push(end);
                }
                return Placement {
                    lane: i as u16,
                    depth,
                };
            }
        }
        if self.open.len() >= MAX_LANES {
            let lane = self.open.len() - 1;
            return Placement {
                lane: lane as u16,
                depth: self.open[lane].len().min(u16::MAX as usize) as u16,
            };
        }
        self.open.push(if instant { Vec::new() } else { vec![end] });
        Placement {
            lane: (self.open.len() - 1) as u16,
            depth: 0,
        }
    }

    /// Lanes opened so far.
    pub fn count(&self) -> usize {
        self.open.len().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(spans: &[(u64, u64)]) -> Vec<(u16, u16)> {
        let mut lanes = Lanes::default();
        let mut sorted: Vec<_> = spans.to_vec();
        sorted.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        sorted
            .iter()
            .map(|&(s, e)| {
                let p = lanes.place(s, e, false);
                (p.lane, p.depth)
            })
            .collect()
    }

    #[test]
    fn nested_and_sequential_slices_share_a_lane_at_their_depth() {
        assert_eq!(
            placed(&[
                (0, 100),
                (10, 20),
                (12, 15),
                (20, 30),
                (30, 100),
                (100, 150)
            ]),
            [(0, 0), (0, 1), (0, 2), (0, 1), (0, 1), (0, 0)]
        );
    }

    #[test]
    fn a_crossing_slice_moves_to_a_second_lane() {
        // (50, 150) starts inside (0, 100) and ends after it.
        assert_eq!(
            placed(&[(0, 100), (50, 150), (160, 170)]),
            [(0, 0), (1, 0), (0, 0)]
        );
    }

    #[test]
    fn zero_length_slices_nest_at_either_edge_and_instants_hold_nothing_open() {
        assert_eq!(
            placed(&[(0, 100), (0, 0), (100, 100)]),
            [(0, 0), (0, 1), (0, 0)]
        );
        let mut lanes = Lanes::default();
        lanes.place(0, 100, false);
        assert_eq!(lanes.place(50, 50, true), Placement { lane: 0, depth: 1 });
        assert_eq!(lanes.place(60, 120, false), Placement { lane: 1, depth: 0 });
        assert_eq!(lanes.place(70, 70, true), Placement { lane: 0, depth: 1 });
    }
}
