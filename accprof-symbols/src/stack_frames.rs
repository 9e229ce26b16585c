//! Naming stack arrays by where their frames must have been.
//!
//! A trace gives a stack array's address, not the frame it lived in. But a function's local
//! arrays keep the same offsets from its canonical frame address on every call
//! ([`FrameLayout`]), so the addresses a run moved pin that address down: two arrays of one
//! function that were both moved lie as far apart as their offsets, and an address that is the
//! start of a local array says where the frame was if that array was it. Each such guess (a
//! function and its CFA) is scored by what it explains: first the transfers that moved a whole
//! local array, then those inside one. An address is named when the guesses that explain it
//! best all say the same array: `u` and `v`, both `double[4096]` in `main`, are told apart
//! when both were moved, which their sizes alone cannot do. A frame the tool saw (the main
//! program's, whose CFA the trace's header gives) is no guess: it explains before any guess.

use crate::dwarf_vars::FrameLayout;
use std::collections::{BTreeSet, HashMap};

/// Beyond this many distinct stack ranges, or guesses, nothing is placed (the caller falls
/// back to naming by size): the scoring is quadratic.
const MAX_RANGES: usize = 512;
const MAX_GUESSES: usize = 4096;

/// Where a stack address lies: in `frames[frame].locals[local]`, `offset` bytes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub frame: usize,
    pub local: usize,
    pub offset: u64,
}

/// A guess: the function `frames[frame]` ran with its CFA at `cfa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Guess {
    frame: usize,
    cfa: u64,
}

/// Places the stack ranges (address, bytes) a run moved, all inside `stack` (lo, hi), in the
/// functions' frames, `known` ones (frame index, CFA) first; an address with no single answer
/// is left out.
pub fn place(
    frames: &[FrameLayout],
    stack: (u64, u64),
    known: &[(usize, u64)],
    ranges: &BTreeSet<(u64, u64)>,
) -> HashMap<(u64, u64), Placed> {
    let (lo, hi) = stack;
    let ranges: Vec<(u64, u64)> = ranges
        .iter()
        .copied()
        .filter(|&(p, b)| b > 0 && lo <= p && p.saturating_add(b) <= hi)
        .collect();
    if ranges.is_empty() || ranges.len() > MAX_RANGES {
        return HashMap::new();
    }
    // Every start of a local array that a range could be is a guess of its frame's CFA, kept
    // when the whole frame fits in the stack.
    let mut guesses = BTreeSet::new();
    for &(p, b) in &ranges {
        for (fi, f) in frames.iter().enumerate() {
            for l in f.locals.iter().filter(|l| l.size >= b) {
                let Some(cfa) = p.checked_add_signed(-l.cfa_offset) else {
                    continue;
                };
                let fits = cfa <= hi
                    && f.locals.iter().all(|o| {
                        cfa.checked_add_signed(o.cfa_offset)
                            .is_some_and(|a| a >= lo && a.saturating_add(o.size) <= cfa)
                    });
                if fits {
                    guesses.insert(Guess { frame: fi, cfa });
                }
            }
        }
        if guesses.len() > MAX_GUESSES {
            return HashMap::new();
        }
    }
    let known: BTreeSet<Guess> = known
        .iter()
        .filter(|&&(frame, _)| frame < frames.len())
        .map(|&(frame, cfa)| Guess { frame, cfa })
        .collect();
    guesses.extend(known.iter().copied());
    // Per range, the best score of a guess that explains it (known, whole arrays, ranges
    // inside one), and what each guess with that score says it is.
    type Score = (bool, usize, usize);
    let mut best: HashMap<(u64, u64), (Score, Vec<Placed>)> = HashMap::new();
    for g in guesses {
        let f = &frames[g.frame];
        let mut placed = Vec::new();
        let (mut whole, mut inside) = (0usize, 0usize);
        for &(p, b) in &ranges {
            let found = f.locals.iter().enumerate().find_map(|(li, l)| {
                let start = g.cfa.checked_add_signed(l.cfa_offset)?;
                (start <= p && p + b <= start + l.size).then(|| (li, p - start, l.size))
            });
            if let Some((local, offset, size)) = found {
                if offset == 0 && b == size {
                    whole += 1;
                } else {
                    inside += 1;
                }
                placed.push(((p, b), local, offset));
            }
        }
        let score = (known.contains(&g), whole, inside);
        for (range, local, offset) in placed {
            let here = Placed {
                frame: g.frame,
                local,
                offset,
            };
            let e = best.entry(range).or_insert(((false, 0, 0), Vec::new()));
            if score > e.0 {
                *e = (score, vec![here]);
            } else if score == e.0 {
                e.1.push(here);
            }
        }
    }
    best.into_iter()
        .filter_map(|(range, (_, answers))| {
            let first = *answers.first()?;
            let name = |a: &Placed| (&frames[a.frame].locals[a.local].name, a.offset);
            answers
                .iter()
                .all(|a| name(a) == name(&first))
                .then_some((range, first))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf_vars::FrameLocal;

    fn local(name: &str, cfa_offset: i64, size: u64) -> FrameLocal {
        FrameLocal {
            name: name.into(),
            cfa_offset,
            size,
            element_bytes: Some(8),
        }
    }

    fn names(frames: &[FrameLayout], ranges: &[(u64, u64)]) -> Vec<Option<(String, u64)>> {
        names_known(frames, &[], ranges)
    }

    fn names_known(
        frames: &[FrameLayout],
        known: &[(usize, u64)],
        ranges: &[(u64, u64)],
    ) -> Vec<Option<(String, u64)>> {
        let set: BTreeSet<(u64, u64)> = ranges.iter().copied().collect();
        let placed = place(frames, (0x1000, 0x100000), known, &set);
        ranges
            .iter()
            .map(|r| {
                placed
                    .get(r)
                    .map(|p| (frames[p.frame].locals[p.local].name.clone(), p.offset))
            })
            .collect()
    }

    fn main_with_two() -> Vec<FrameLayout> {
        vec![FrameLayout {
            function: "main".into(),
            ranges: vec![(0x1000, 0x1100)],
            main_program: true,
            locals: vec![local("a", -65600, 32768), local("b", -32832, 32768)],
        }]
    }

    #[test]
    fn two_arrays_of_one_size_are_told_apart_when_both_moved() {
        let cfa = 0x80000;
        let (a, b) = (cfa - 65600, cfa - 32832);
        assert_eq!(
            names(&main_with_two(), &[(a, 32768), (b, 32768)]),
            [Some(("a".into(), 0)), Some(("b".into(), 0))]
        );
        // A section of b, once the frame is placed by the whole arrays.
        assert_eq!(
            names(&main_with_two(), &[(a, 32768), (b, 32768), (b + 8, 800)])[2],
            Some(("b".into(), 8))
        );
    }

    #[test]
    fn one_of_two_arrays_of_one_size_is_named_only_where_its_frame_is_known() {
        let cfa = 0x80000;
        let a = cfa - 65600;
        assert_eq!(names(&main_with_two(), &[(a, 32768)]), [None]);
        assert_eq!(
            names_known(&main_with_two(), &[(0, cfa)], &[(a, 32768), (a + 80, 160)]),
            [Some(("a".into(), 0)), Some(("a".into(), 80))]
        );
        // The known frame explains first: the guess that `a`'s address is `b` loses.
        assert_eq!(
            names_known(&main_with_two(), &[(0, cfa - 32768)], &[(a, 32768)]),
            [Some(("b".into(), 0))]
        );
    }

    #[test]
    fn a_whole_array_wins_over_a_part_of_a_larger_one() {
        let mut frames = main_with_two();
        frames.push(FrameLayout {
            function: "other".into(),
            ranges: vec![(0x2000, 0x2100)],
            main_program: false,
            locals: vec![local("z", -70000, 65536)],
        });
        frames[0].locals.truncate(1);
        let a = 0x80000 - 65600;
        assert_eq!(names(&frames, &[(a, 32768)]), [Some(("a".into(), 0))]);
    }

    #[test]
    fn a_frame_that_would_leave_the_stack_is_no_guess() {
        // Only `b`'s start fits: as `a`, the frame's CFA would lie above the stack's top.
        let top = 0x100000;
        let b = top - 32832;
        let set: BTreeSet<(u64, u64)> = [(b, 32768)].into_iter().collect();
        let placed = place(&main_with_two(), (0x1000, top), &[], &set);
        let p = placed.get(&(b, 32768)).unwrap();
        assert_eq!(main_with_two()[0].locals[p.local].name, "b");
    }
}
