//! Start order from the order a trace holds events in, with memory bounded by a window.
//!
//! A trace holds each host thread's events in the order they *ended* (an enclosing construct
//! after what it contains); a timeline writes each track's slices in the order they *start*,
//! an enclosing slice before the slices it contains. Within one thread the two orders differ
//! only by nesting: a parent is read after its children but must come out before them. A
//! [`StartWindow`] per track holds the last `capacity` slices read, sorted by start, and lets
//! the earliest go once more are held: a parent read while its children are still in the window
//! slides in before them. Device records and async queues, which arrive late or out of order
//! by a bounded amount, are put in order the same way.
//!
//! A slice that arrives after a later-starting one has already left its track's window is
//! refused ([`Late`]): the caller must then order the whole input some other way (sort it all),
//! never write it out of order or drop it.

use crate::device::Span;
use std::cmp::Reverse;
use std::collections::VecDeque;

/// A slice came too late for its window: a slice starting after it was already released.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Late;

impl std::fmt::Display for Late {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a slice arrived after a later-starting one of its track was released")
    }
}

/// The order slices of one track come out in: by start, the longer first when two start
/// together (so a parent precedes the children that start with it).
pub fn start_key<S: Span>(s: &S) -> (u64, Reverse<u64>) {
    (s.start(), Reverse(s.end()))
}

/// One track's reorder window: slices in, the same slices out in [`start_key`] order, holding
/// at most `capacity` of them (plus what arrives before the first release).
#[derive(Debug)]
pub struct StartWindow<S> {
    held: VecDeque<S>,
    capacity: usize,
    /// The key of the last slice released: nothing before it may come in any more.
    released: Option<(u64, Reverse<u64>)>,
}

impl<S: Span> StartWindow<S> {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        StartWindow {
            // Sized once: a window fills to capacity + 1 before it releases, and letting the
            // deque double from there would hold twice the memory. (Pages of a large
            // allocation count only once used.)
            held: VecDeque::with_capacity(capacity.min(1 << 16) + 1),
            capacity,
            released: None,
        }
    }

    /// Takes `s` in, or refuses it when a slice that starts after it has left already.
    pub fn push(&mut self, s: S) -> Result<(), Late> {
        let key = start_key(&s);
        if self.released.is_some_and(|r| key < r) {
            return Err(Late);
        }
        // Most slices start after everything held (end order and start order agree for
        // slices that do not nest); a parent goes in just before its children.
        if self.held.back().is_none_or(|b| start_key(b) <= key) {
            self.held.push_back(s);
        } else {
            // A parent's children are the last few held: look for its place from the back
            // before searching the whole window.
            let n = self.held.len();
            let near = (1..=n.min(16)).find(|&k| start_key(&self.held[n - k]) <= key);
            let at = match near {
                Some(k) => n - k + 1,
                None if n <= 16 => 0,
                None => self.held.partition_point(|h| start_key(h) <= key),
            };
            self.held.insert(at, s);
        }
        Ok(())
    }

    /// The earliest slice, if the window holds more than its capacity.
    pub fn pop_over(&mut self) -> Option<S> {
        if self.held.len() > self.capacity {
            self.pop()
        } else {
            None
        }
    }

    /// The earliest slice held (at the end of the input: every slice in turn).
    pub fn pop(&mut self) -> Option<S> {
        let s = self.held.pop_front()?;
        self.released = Some(start_key(&s));
        Some(s)
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether a slice still held may be open at `t` (start at or before it, end at or after
    /// it). Exact for the last 64 slices held that start by `t`; beyond them it says maybe,
    /// which a busy track soon settles by letting its earliest slices go.
    pub fn may_hold_open_at(&self, t: u64) -> bool {
        const SCANNED: usize = 64;
        let upto = self.held.partition_point(|s| s.start() <= t);
        let open = self
            .held
            .range(..upto)
            .rev()
            .take(SCANNED)
            .any(|s| !s.is_point() && s.end() >= t);
        open || upto > SCANNED
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// No slice that starts before this can come out of the window any more (the earliest
    /// held, else the last released); `None` before anything came in.
    pub fn next_start_bound(&self) -> Option<u64> {
        self.held
            .front()
            .map(|s| s.start())
            .or(self.released.map(|r| r.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct S(u64, u64);
    impl Span for S {
        fn start(&self) -> u64 {
            self.0
        }
        fn end(&self) -> u64 {
            self.1
        }
    }

    fn drain(w: &mut StartWindow<S>) -> Vec<S> {
        std::iter::from_fn(|| w.pop()).collect()
    }

    #[test]
    fn parents_read_after_their_children_come_out_first() {
        // End order, as a thread records: two children, their parent, then a sibling.
        let mut w = StartWindow::new(4);
        let mut out = Vec::new();
        for s in [
            S(10, 20),
            S(20, 30),
            S(0, 40),
            S(50, 60),
            S(60, 70),
            S(70, 80),
        ] {
            w.push(s).unwrap();
            out.extend(w.pop_over());
        }
        out.extend(drain(&mut w));
        assert_eq!(
            out,
            [
                S(0, 40),
                S(10, 20),
                S(20, 30),
                S(50, 60),
                S(60, 70),
                S(70, 80)
            ]
        );
    }

    #[test]
    fn a_held_slice_open_at_a_time_is_told_from_ones_that_ended() {
        let mut w = StartWindow::new(8);
        w.push(S(0, 5)).unwrap();
        w.push(S(10, 40)).unwrap();
        w.push(S(20, 25)).unwrap();
        assert!(!w.may_hold_open_at(8), "(0, 5) ended before");
        assert!(w.may_hold_open_at(30), "(10, 40) is open");
        assert!(!w.may_hold_open_at(50));
        let mut long = StartWindow::new(1000);
        long.push(S(0, 1000)).unwrap();
        for i in 1..100 {
            long.push(S(i * 2, i * 2 + 1)).unwrap();
        }
        assert!(long.may_hold_open_at(500), "beyond the scan: maybe");
    }

    #[test]
    fn equal_starts_put_the_longer_first() {
        let mut w = StartWindow::new(8);
        w.push(S(0, 5)).unwrap();
        w.push(S(0, 9)).unwrap();
        w.push(S(0, 5)).unwrap();
        assert_eq!(drain(&mut w), [S(0, 9), S(0, 5), S(0, 5)]);
    }

    #[test]
    fn a_parent_wider_than_the_window_is_refused_not_misplaced() {
        let mut w = StartWindow::new(2);
        let mut out = Vec::new();
        for s in [S(10, 11), S(12, 13), S(14, 15)] {
            w.push(s).unwrap();
            out.extend(w.pop_over());
        }
        assert_eq!(out, [S(10, 11)]);
        // Its first child has left: the parent cannot go before it any more.
        assert_eq!(w.push(S(0, 20)), Err(Late));
        // One starting with the released slice, shorter, still fits after it.
        assert_eq!(w.push(S(10, 10)), Ok(()));
        assert_eq!(drain(&mut w), [S(10, 10), S(12, 13), S(14, 15)]);
    }
}
