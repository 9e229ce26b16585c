//! The slices a streamed device record may have been issued by (Perfetto's flow tracker): per
//! track that can issue work (host threads, their synchronous device work, async queues), the
//! last slices laid out, in start order, so that a device record arriving late (CUPTI hands its
//! records over in batches, up to a second after the call) still finds the innermost slice open
//! at its host call ([`crate::device`]'s rule).
//!
//! A layout that must name a flow on the issuing slice itself (Perfetto) holds these slices
//! back and hands them out as they leave, with the flows found for them by then.
//!
//! The slices kept are bounded by a budget shared by the tracks; a record whose issuing slice
//! has been let go is told apart ([`Found::Gone`]) rather than linked to a wrong one. (A
//! container of the call time that is still kept is always the innermost one: slices leave in
//! start order, and the innermost container started last.)

use crate::compact::CompactEvent;
use crate::device::inner_key;
use crate::track::TrackId;
use std::collections::VecDeque;

/// Slices kept per track at the least, however many tracks share the budget.
const MIN_PER_TRACK: usize = 1024;

/// What a search for the slice open at a host call found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// The slice, and where it is kept (for [`Issuers::add_flow`]).
    Slice(CompactEvent, usize),
    /// No slice of the track was open then.
    None,
    /// The slice open then may have been let go already.
    Gone,
}

/// A slice kept, with the flows (numbered by the layout) it starts.
#[derive(Clone, Debug)]
pub struct Kept {
    pub slice: CompactEvent,
    pub flows: Vec<u64>,
}

/// One track's recent slices.
#[derive(Debug, Default)]
struct Recent {
    noted: bool,
    /// Slices in the order laid out (start order).
    slices: VecDeque<Kept>,
    /// The latest end among slices let go, if any was.
    gone_end: Option<u64>,
    /// The start of the last slice laid out (instants included).
    last_start: Option<u64>,
}

/// Per track (those that can issue only are noted), its recent slices.
#[derive(Debug)]
pub struct Issuers {
    tracks: Vec<Recent>,
    budget: usize,
    per_track: usize,
    noted_tracks: usize,
}

impl Issuers {
    /// An index keeping about `budget` slices in all.
    pub fn new(budget: usize) -> Self {
        Issuers {
            tracks: Vec::new(),
            budget,
            per_track: budget.max(MIN_PER_TRACK),
            noted_tracks: 0,
        }
    }

    /// Notes `s`, just laid out on its track (in start order); adds to `out` the slices let go
    /// to make room (more than one when a new track came and the shares shrank).
    pub fn note(&mut self, s: &CompactEvent, out: &mut Vec<Kept>) {
        let t = s.track as usize;
        if self.tracks.len() <= t {
            self.tracks.resize_with(t + 1, Recent::default);
        }
        if !self.tracks[t].noted {
            self.tracks[t].noted = true;
            self.noted_tracks += 1;
            self.per_track = (self.budget / self.noted_tracks).max(MIN_PER_TRACK);
        }
        let per_track = self.per_track;
        let r = &mut self.tracks[t];
        r.last_start = Some(s.start);
        // Room is made first, so that the deque never grows past its share.
        while r.slices.len() >= per_track {
            let Some(old) = r.slices.pop_front() else {
                break;
            };
            if !old.slice.is_point() {
                r.gone_end = Some(r.gone_end.map_or(old.slice.end, |e| e.max(old.slice.end)));
            }
            out.push(old);
        }
        r.slices.push_back(Kept {
            slice: *s,
            flows: Vec::new(),
        });
    }

    /// Notes that the slice found at `at` of `track` starts flow `flow`.
    pub fn add_flow(&mut self, track: TrackId, at: usize, flow: u64) {
        self.tracks[track as usize].slices[at].flows.push(flow);
    }

    /// Lets every kept slice of `tracks` go, each track's in order.
    pub fn drain(&mut self, tracks: impl Iterator<Item = TrackId>, out: &mut Vec<Kept>) {
        for t in tracks {
            if let Some(r) = self.tracks.get_mut(t as usize) {
                out.extend(r.slices.drain(..));
            }
        }
    }

    /// Whether `track` has laid out a slice starting after `t`: then every slice of it that
    /// may contain `t` has been laid out (slices are laid out in start order).
    pub fn passed(&self, track: TrackId, t: u64) -> bool {
        self.tracks
            .get(track as usize)
            .and_then(|r| r.last_start)
            .is_some_and(|s| s > t)
    }

    /// The innermost slice of `track` open at `t` among those `accept`s, among the slices kept.
    pub fn innermost(
        &self,
        track: TrackId,
        t: u64,
        accept: impl Fn(&CompactEvent) -> bool,
    ) -> Found {
        let Some(r) = self.tracks.get(track as usize) else {
            return Found::None;
        };
        let upto = r.slices.partition_point(|k| k.slice.start <= t);
        // Laid out in start order, the longer first at equal starts: the first container met
        // going back is the innermost.
        for (at, k) in r.slices.range(..upto).enumerate().rev() {
            if !k.slice.is_point() && k.slice.end >= t && accept(&k.slice) {
                return Found::Slice(k.slice, at);
            }
        }
        if r.gone_end.is_some_and(|e| e >= t) {
            Found::Gone
        } else {
            Found::None
        }
    }
}

/// Two tracks' answers for one record as one: the inner of two slices, a slice over none; but
/// a slice let go on either track may have been the innermost, so that answer stands.
pub fn better(a: Found, b: Found) -> Found {
    match (a, b) {
        (Found::Gone, _) | (_, Found::Gone) => Found::Gone,
        (Found::Slice(x, _), Found::Slice(y, _)) => {
            if inner_key(y.start, y.end) > inner_key(x.start, x.end) {
                b
            } else {
                a
            }
        }
        (Found::Slice(..), _) => a,
        (_, Found::Slice(..)) => b,
        _ => Found::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;

    fn slice(start: u64, end: u64) -> CompactEvent {
        let ev = accprof_trace::Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, start);
        let mut s = CompactEvent::from_event(&ev, 0, 0, |t| t);
        s.end = end;
        s
    }

    #[test]
    fn the_innermost_kept_slice_is_found_and_a_let_go_one_is_told() {
        let mut i = Issuers::new(0);
        let mut gone = Vec::new();
        i.per_track = 3;
        i.tracks.resize_with(1, Recent::default);
        i.tracks[0].noted = true;
        i.noted_tracks = 1;
        for (a, b) in [(0, 100), (10, 20), (30, 60), (40, 50)] {
            i.note(&slice(a, b), &mut gone);
        }
        assert_eq!(gone.len(), 1);
        assert_eq!(i.innermost(0, 45, |_| true), Found::Slice(slice(40, 50), 2));
        assert_eq!(i.innermost(0, 55, |_| true), Found::Slice(slice(30, 60), 1));
        assert_eq!(
            i.innermost(0, 45, |s| s.end == 60),
            Found::Slice(slice(30, 60), 1)
        );
        // (0, 100) was let go: a call at 80 may have been issued inside it.
        assert_eq!(i.innermost(0, 80, |_| true), Found::Gone);
        assert_eq!(i.innermost(0, 200, |_| true), Found::None);
        assert!(i.passed(0, 39) && !i.passed(0, 40) && !i.passed(1, 0));
        assert_eq!(
            better(Found::None, i.innermost(0, 45, |_| true)),
            Found::Slice(slice(40, 50), 2)
        );
        assert_eq!(
            better(Found::Gone, i.innermost(0, 45, |_| true)),
            Found::Gone
        );
    }
}
