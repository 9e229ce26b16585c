//! What a reader found missing, duplicated or not recorded in a trace: one summary that every
//! command prints the same way.

use std::fmt;

/// How complete a trace is, as far as it has been read. [`Integrity::is_complete`] is true
/// for a trace that ended cleanly with everything its writer counted; otherwise its
/// `Display` is one line naming each problem with its count (no path: callers prefix it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Integrity {
    /// The footer was read: the tool finished the trace (at exit, or at a fatal signal or exec).
    pub ended_cleanly: bool,
    /// Bytes of a partial chunk at the end (the program was killed while it was written, or is
    /// still running).
    pub truncated_bytes: u64,
    /// Chunks whose sequence numbers never appeared (version 2 traces).
    pub missing_chunks: u64,
    /// Chunks that appeared a second time; skipped, their events counted once.
    pub duplicate_chunks: u64,
    /// Events the footer counts as written that were not found before it (missing chunks), or
    /// found beyond its count (as negative: duplicated data in a version 1 trace).
    pub footer_mismatch: i64,
    /// Events the tool dropped because no buffer was free (drops chunks).
    pub dropped: u64,
    /// Events that finished during the exit flush and could not be appended.
    pub lost_late: u64,
    /// Events lost because the trace could not be written.
    pub lost_write_failed: u64,
    /// Events not recorded for reasons this reader does not know.
    pub lost_other: u64,
    /// Events skipped while a thread forked (libaccprof keeps GCC's runtime lock free then).
    pub lost_at_fork: u64,
    /// Events of a killed run that its trace did not hold, read from its live file
    /// (crate::live) and appended.
    pub recovered_from_live: u64,
    /// A live file was there but could not be used: why (one line, naming the file).
    pub live_file_ignored: Option<String>,
}

impl Integrity {
    /// Events the trace says were not recorded (dropped or lost), whatever the reason.
    pub fn events_not_recorded(&self) -> u64 {
        self.dropped
            .saturating_add(self.lost_late)
            .saturating_add(self.lost_write_failed)
            .saturating_add(self.lost_other)
            .saturating_add(self.lost_at_fork)
    }

    /// Nothing missing, nothing duplicated, nothing dropped, and a clean end.
    pub fn is_complete(&self) -> bool {
        self.problems().is_empty()
    }

    /// The problems that the end-of-trace, truncation and drop warnings do not already name
    /// (missing or duplicated chunks, a footer that disagrees, events lost at exit, write
    /// failure or fork), as one line for the user; `None` when there are none.
    pub fn loss_warning(&self) -> Option<String> {
        let quiet = Integrity {
            ended_cleanly: true,
            truncated_bytes: 0,
            dropped: 0,
            ..self.clone()
        };
        let p = quiet.problems();
        (!p.is_empty()).then(|| format!("the trace is incomplete: {}", p.join("; ")))
    }

    /// Each problem as a short phrase with its count, in a fixed order.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if !self.ended_cleanly {
            p.push(
                "no footer: the program was killed (SIGKILL) or is still running; events of its last moments may be missing"
                    .to_string(),
            );
        }
        if self.recovered_from_live > 0 {
            p.push(format!(
                "{} events recovered from the live file",
                self.recovered_from_live
            ));
        }
        if let Some(why) = &self.live_file_ignored {
            p.push(format!("the live file was not used: {why}"));
        }
        if self.truncated_bytes > 0 {
            p.push(format!(
                "the last chunk is cut short ({} bytes)",
                self.truncated_bytes
            ));
        }
        if self.missing_chunks > 0 {
            p.push(format!("{} chunks missing", self.missing_chunks));
        }
        if self.duplicate_chunks > 0 {
            p.push(format!(
                "{} duplicated chunks skipped",
                self.duplicate_chunks
            ));
        }
        match self.footer_mismatch {
            0 => {}
            n if n > 0 => p.push(format!("{n} events the footer counts are missing")),
            n => p.push(format!(
                "{} more events than the footer counts",
                n.unsigned_abs()
            )),
        }
        if self.dropped > 0 {
            p.push(format!(
                "{} events DROPPED (no buffer was free: the trace writer fell behind, or more threads recorded at once than there were buffers; raise ACCPROF_MAX_BUFFER_MB)",
                self.dropped
            ));
        }
        if self.lost_late > 0 {
            p.push(format!(
                "{} events LOST (finished on other threads during the exit flush)",
                self.lost_late
            ));
        }
        if self.lost_write_failed > 0 {
            p.push(format!(
                "{} events LOST (the trace could not be written)",
                self.lost_write_failed
            ));
        }
        if self.lost_at_fork > 0 {
            p.push(format!(
                "{} events skipped while the program forked",
                self.lost_at_fork
            ));
        }
        if self.lost_other > 0 {
            p.push(format!(
                "{} events not recorded (reason unknown to this reader)",
                self.lost_other
            ));
        }
        p
    }
}

impl fmt::Display for Integrity {
    /// One line: "complete", or "incomplete: " and every problem, separated by "; ".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.problems();
        if p.is_empty() {
            return write!(f, "complete");
        }
        write!(f, "incomplete: {}", p.join("; "))
    }
}

/// Follows chunk sequence numbers: which are missing, which came twice. Memory is bounded:
/// at most [`MAX_GAPS`] open gaps are remembered (older ones are taken as lost for good).
#[derive(Clone, Debug, Default)]
pub(crate) struct Sequence {
    next: u64,
    /// Ranges of sequence numbers skipped over that may still arrive (out of order).
    gaps: Vec<(u64, u64)>,
    pub missing: u64,
    pub duplicates: u64,
}

const MAX_GAPS: usize = 64;

impl Sequence {
    /// Takes chunk `seq`; false when it must be skipped (seen before).
    pub fn accept(&mut self, seq: u32) -> bool {
        let seq = u64::from(seq);
        if seq == self.next {
            self.next += 1;
            return true;
        }
        if seq > self.next {
            self.missing += seq - self.next;
            if self.gaps.len() == MAX_GAPS {
                self.gaps.remove(0);
            }
            self.gaps.push((self.next, seq));
            self.next = seq + 1;
            return true;
        }
        // Below the next expected: late arrival of a missing one, or a duplicate.
        if let Some(i) = self.gaps.iter().position(|&(a, b)| (a..b).contains(&seq)) {
            let (a, b) = self.gaps.remove(i);
            if a < seq {
                self.gaps.push((a, seq));
            }
            if seq + 1 < b {
                self.gaps.push((seq + 1, b));
            }
            self.missing -= 1;
            return true;
        }
        self.duplicates += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_counts_gaps_duplicates_and_late_arrivals() {
        let mut s = Sequence::default();
        assert!(s.accept(0) && s.accept(1));
        assert!(!s.accept(1), "a duplicate is skipped");
        assert!(s.accept(4), "2 and 3 are missing");
        assert_eq!(s.missing, 2);
        assert!(s.accept(2), "a late arrival fills its gap");
        assert_eq!(s.missing, 1);
        assert!(!s.accept(2));
        assert_eq!(s.duplicates, 2);
    }

    #[test]
    fn a_complete_trace_says_so_in_one_word() {
        let i = Integrity {
            ended_cleanly: true,
            ..Default::default()
        };
        assert!(i.is_complete());
        assert_eq!(i.to_string(), "complete");
        let j = Integrity {
            ended_cleanly: true,
            missing_chunks: 2,
            lost_late: 7,
            ..Default::default()
        };
        assert_eq!(j.to_string(), "incomplete: 2 chunks missing; 7 events LOST (finished on other threads during the exit flush)");
        assert!(!j.to_string().contains('\n'));
        let k = Integrity {
            recovered_from_live: 3000,
            ..Default::default()
        };
        assert!(k
            .to_string()
            .contains("; 3000 events recovered from the live file"));
        assert_eq!(
            k.loss_warning().as_deref(),
            Some("the trace is incomplete: 3000 events recovered from the live file")
        );
    }
}
