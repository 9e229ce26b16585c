//! The host slices a streamed device record may have been issued by: per host track, the
//! last slices written, in start order, so that a device record arriving late (CUPTI hands its
//! records over in batches, up to a second after the call) still finds the innermost slice open
//! at its host call, as [`super::flows::link`] does over the whole trace.
//!
//! A Perfetto export also holds these slices back from the output (the flows a slice starts
//! are named on its own packet): they are written as they leave, with the flows found for them.
//!
//! Each track keeps at most a fixed number of slices; a record whose issuing slice has been let
//! go is counted ([`Found::Gone`]) rather than linked to a wrong one. (A container of the call
//! time that is still kept is always the innermost one: slices leave in start order, and the
//! innermost container started last.)

use super::slice::Slice;
use std::collections::VecDeque;

/// What a search for the slice open at a host call found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// The slice, and where it is kept (for [`Issuers::add_flow`]).
    Slice(Slice, usize),
    /// No slice of the track was open then.
    None,
    /// The slice open then may have been let go already.
    Gone,
}

/// A slice kept, with the flows (numbers given by the caller) it starts.
#[derive(Debug)]
pub(super) struct Kept {
    pub s: Slice,
    pub flows: Vec<u64>,
}

/// One host track's recent slices.
#[derive(Debug, Default)]
struct Recent {
    /// Slices in the order written (start order).
    slices: VecDeque<Kept>,
    /// The latest end among slices let go, if any was.
    gone_end: Option<u64>,
    /// The start of the last slice written (points included).
    last_start: Option<u64>,
}

/// Per export track (host tracks only are noted), its recent slices.
#[derive(Debug)]
pub(super) struct Issuers {
    tracks: Vec<Recent>,
    capacity: usize,
}

impl Issuers {
    pub fn new(capacity: usize) -> Self {
        Issuers {
            tracks: Vec::new(),
            capacity: capacity.max(1),
        }
    }

    /// Notes `s`, just laid out on its track (in start order); returns the slice let go to
    /// make room, if one was.
    pub fn note(&mut self, s: &Slice) -> Option<Kept> {
        let t = s.track as usize;
        if self.tracks.len() <= t {
            self.tracks.resize_with(t + 1, Recent::default);
        }
        let r = &mut self.tracks[t];
        r.last_start = Some(s.start);
        let old = if r.slices.len() == self.capacity {
            r.slices.pop_front()
        } else {
            None
        };
        if let Some(old) = old.as_ref().filter(|o| !o.s.is_point()) {
            r.gone_end = Some(r.gone_end.map_or(old.s.end, |e| e.max(old.s.end)));
        }
        r.slices.push_back(Kept {
            s: *s,
            flows: Vec::new(),
        });
        old
    }

    /// Notes that the slice found at `at` of `track` starts flow `flow`.
    pub fn add_flow(&mut self, track: u32, at: usize, flow: u64) {
        self.tracks[track as usize].slices[at].flows.push(flow);
    }

    /// Lets every kept slice go, each track's in order.
    pub fn drain(&mut self) -> impl Iterator<Item = Kept> + '_ {
        self.tracks.iter_mut().flat_map(|r| r.slices.drain(..))
    }

    /// Whether `track` has written a slice starting after `t`: then every slice of it that may
    /// contain `t` has been written (slices are written in start order).
    pub fn passed(&self, track: u32, t: u64) -> bool {
        self.tracks
            .get(track as usize)
            .and_then(|r| r.last_start)
            .is_some_and(|s| s > t)
    }

    /// The innermost slice of `track` open at `t` (the one that started last, the shorter at
    /// equal starts), among the slices kept.
    pub fn innermost(&self, track: u32, t: u64) -> Found {
        let Some(r) = self.tracks.get(track as usize) else {
            return Found::None;
        };
        let upto = r.slices.partition_point(|k| k.s.start <= t);
        // Written in start order, the longer first at equal starts: the first container met
        // going back is the innermost.
        for (at, k) in r.slices.range(..upto).enumerate().rev() {
            if !k.s.is_point() && k.s.end >= t {
                return Found::Slice(k.s, at);
            }
        }
        if r.gone_end.is_some_and(|e| e >= t) {
            Found::Gone
        } else {
            Found::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;

    fn slice(start: u64, end: u64) -> Slice {
        let ev = accprof_trace::Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, start);
        let mut s = Slice::from_event(&ev, 0, 0, |t| t);
        s.end = end;
        s
    }

    #[test]
    fn the_innermost_kept_slice_is_found_and_a_let_go_one_is_told() {
        let mut i = Issuers::new(3);
        for (a, b) in [(0, 100), (10, 20), (30, 60), (40, 50)] {
            i.note(&slice(a, b));
        }
        assert_eq!(i.innermost(0, 45), Found::Slice(slice(40, 50), 2));
        assert_eq!(i.innermost(0, 55), Found::Slice(slice(30, 60), 1));
        // (0, 100) was let go: a call at 80 may have been issued inside it.
        assert_eq!(i.innermost(0, 80), Found::Gone);
        assert_eq!(i.innermost(0, 200), Found::None);
        assert!(i.passed(0, 39) && !i.passed(0, 40) && !i.passed(1, 0));
    }
}
