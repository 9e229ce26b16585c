//! Nesting: each thread's stack of operations waiting for the construct that encloses them,
//! implicit data regions of compute constructs (groups), and the bound on what waits (see
//! `MAX_PENDING`).

use super::*;

impl ProfileBuilder {
    pub(super) fn push_leaf(&mut self, thread: i64, leaf: Leaf) {
        let cap = self.pending_cap();
        let ts = self.threads.entry(thread).or_default();
        // Start-ordered traces: the leaf lies inside the construct on top of the stack.
        if let Some(Item::Closed {
            start,
            end,
            construct,
            resolved: true,
        }) = ts.stack.back()
        {
            if *start <= leaf.r.start_ns && leaf.r.end_ns <= *end {
                let (c, inst) = (*construct, ts.instance);
                self.resolve(thread, c, inst, vec![leaf]);
                return;
            }
        }
        if let Some(Item::Group { start, end, leaves }) = ts.stack.back_mut() {
            if *start <= leaf.r.start_ns && leaf.r.end_ns <= *end {
                leaves.push(leaf);
                return;
            }
        }
        ts.covered_ns += leaf.dur();
        ts.stack.push_back(Item::Leaf(leaf));
        if ts.stack.len() > cap {
            self.flush_pending(thread);
        }
    }

    /// Accounts the older half of `thread`'s stack as outside any construct (see
    /// [`MAX_PENDING`]).
    pub(super) fn flush_pending(&mut self, thread: i64) {
        let ts = self.threads.entry(thread).or_default();
        let mut stack = std::mem::take(&mut ts.stack);
        let mut last_start = None;
        let half = stack.len() / 2;
        for item in stack.drain(..half) {
            match &item {
                Item::Leaf(l) => {
                    last_start = Some(l.r.start_ns);
                    self.resolve_leaf(thread, None, u64::MAX, l);
                }
                Item::Group { leaves, .. } => {
                    for l in leaves {
                        last_start = Some(l.r.start_ns);
                        self.resolve_leaf(thread, None, u64::MAX, l);
                    }
                }
                Item::Closed { .. } => {}
            }
        }
        let ts = self.threads.entry(thread).or_default();
        ts.stack = stack;
        if last_start.is_some() {
            ts.flushed_last_start = last_start;
        }
    }

    /// How many entries a thread's stack may hold: its share of [`PENDING_BUDGET`].
    fn pending_cap(&self) -> usize {
        (PENDING_BUDGET / self.threads.len().max(1)).clamp(MIN_PENDING, MAX_PENDING)
    }

    /// Notes a construct or implicit data region that encloses operations already flushed.
    pub(super) fn check_late_enclosing(&mut self, thread: i64, r: EventRef) {
        let flushed = self
            .threads
            .get(&thread)
            .and_then(|ts| ts.flushed_last_start);
        if flushed.is_some_and(|f| r.start_ns <= f) {
            self.late_enclosing += 1;
        }
    }

    /// Pops the stack entries inside `[start, end]`, returning their leaves in time order and the
    /// time they covered.
    pub(super) fn pop_inside(ts: &mut ThreadState, start: u64, end: u64) -> (Vec<Leaf>, u64) {
        // Find the entries first, so that the leaves are taken in time order into a vector of
        // the right size: this runs for every construct, and growing and reversing a vector of
        // ~170-byte leaves each time was a tenth of a report's time.
        let mut first = ts.stack.len();
        let mut covered = 0;
        let mut count = 0;
        for item in ts.stack.iter().rev() {
            let (s, e) = item.span();
            if s < start || e > end {
                break;
            }
            covered += e - s;
            count += match item {
                Item::Leaf(_) => 1,
                Item::Group { leaves, .. } => leaves.len(),
                Item::Closed { .. } => 0,
            };
            first -= 1;
        }
        let mut leaves = Vec::with_capacity(count);
        for item in ts.stack.drain(first..) {
            match item {
                Item::Leaf(l) => leaves.push(l),
                Item::Group { leaves: g, .. } => leaves.extend(g),
                Item::Closed { .. } => {}
            }
        }
        (leaves, covered)
    }

    pub(super) fn push_group(&mut self, thread: i64, r: EventRef) {
        self.check_late_enclosing(thread, r);
        let cap = self.pending_cap();
        let ts = self.threads.entry(thread).or_default();
        let (mut leaves, covered) = Self::pop_inside(ts, r.start_ns, r.end_ns);
        share_overhead(&mut leaves, r.end_ns - r.start_ns);
        // Start-ordered: the group lies inside the construct on top; its leaves come later.
        if let Some(Item::Closed {
            start,
            end,
            resolved: true,
            ..
        }) = ts.stack.back()
        {
            if *start <= r.start_ns && r.end_ns <= *end {
                if !leaves.is_empty() {
                    let (c, inst) = match ts.stack.back() {
                        Some(Item::Closed { construct, .. }) => (*construct, ts.instance),
                        _ => (None, ts.instance),
                    };
                    self.resolve(thread, c, inst, leaves);
                }
                return;
            }
        }
        ts.covered_ns = ts.covered_ns - covered + (r.end_ns - r.start_ns);
        ts.stack.push_back(Item::Group {
            start: r.start_ns,
            end: r.end_ns,
            leaves,
        });
        if ts.stack.len() > cap {
            self.flush_pending(thread);
        }
    }
}

/// Spreads the host time of a data operation that its transfers do not explain over the
/// allocations inside it.
pub(super) fn share_overhead(leaves: &mut [Leaf], dur: u64) {
    let transfers: u64 = leaves
        .iter()
        .filter(|l| l.is_transfer() || l.kind == ChildKind::Launch)
        .map(|l| l.dur())
        .sum();
    let n = leaves
        .iter()
        .filter(|l| matches!(l.kind, ChildKind::Alloc | ChildKind::Free))
        .count() as u64;
    if n == 0 {
        return;
    }
    let share = dur.saturating_sub(transfers) / n;
    for l in leaves
        .iter_mut()
        .filter(|l| matches!(l.kind, ChildKind::Alloc | ChildKind::Free))
    {
        l.overhead_ns = share;
    }
}
