//! Counter tracks: device memory in use (from alloc/free) and bytes in flight (from transfers).
//!
//! Both are kept as +/- steps while reading and summed in time order at the end, because a trace
//! holds events in the order each thread finished them, not in time order.

use accprof_abi::acc_event_t;
use accprof_trace::{Event, EventFlags, Field};
use std::collections::HashMap;

/// One step of a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub ts: u64,
    pub trace: u16,
    pub delta: i64,
}

/// The counters of one export, per trace.
#[derive(Default, Debug)]
pub struct Counters {
    pub memory: Vec<Step>,
    pub in_flight: Vec<Step>,
    /// Bytes each live device allocation holds, for frees whose size the runtime did not give.
    live: HashMap<(u16, u64), u64>,
}

/// A counter's value after each step, in time order: `(ts, trace, value)`.
pub type Series = Vec<(u64, u16, i64)>;

impl Counters {
    /// Takes `ev`'s contribution; `start`/`end` are its times on the export's clock.
    pub fn add(&mut self, ev: &Event, trace: u16, start: u64, end: u64) {
        let bytes = || if ev.flags().contains(EventFlags::BYTES_UNKNOWN) { None } else { ev.bytes() };
        let dev = ev.get(Field::DevicePtr);
        match ev.kind {
            acc_event_t::ALLOC => {
                let Some(b) = bytes() else { return };
                if let Some(d) = dev {
                    self.live.insert((trace, d), b);
                }
                self.memory.push(Step { ts: start, trace, delta: b as i64 });
            }
            acc_event_t::FREE => {
                let known = dev.and_then(|d| self.live.remove(&(trace, d)));
                let Some(b) = bytes().or(known) else { return };
                self.memory.push(Step { ts: start, trace, delta: -(b as i64) });
            }
            acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START => {
                let Some(b) = bytes() else { return };
                self.in_flight.push(Step { ts: start, trace, delta: b as i64 });
                self.in_flight.push(Step { ts: end, trace, delta: -(b as i64) });
            }
            _ => {}
        }
    }

    /// Running sums per trace, one point per distinct timestamp, in time order.
    pub fn series(steps: &mut [Step]) -> Series {
        // Within one timestamp, decrements first, so the value never spikes between two
        // back-to-back transfers.
        steps.sort_unstable_by_key(|s| (s.trace, s.ts, s.delta));
        let mut out: Series = Vec::new();
        let mut value = 0i64;
        let mut trace = u16::MAX;
        for s in steps.iter() {
            if s.trace != trace {
                trace = s.trace;
                value = 0;
            }
            // A free of memory allocated before recording began would go negative: floor at 0.
            value = (value + s.delta).max(0);
            match out.last_mut() {
                Some(last) if last.0 == s.ts && last.1 == s.trace => last.2 = value,
                _ => out.push((s.ts, s.trace, value)),
            }
        }
        out.sort_by_key(|&(ts, trace, _)| (ts, trace));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_sum_merges_equal_timestamps_and_floors_at_zero() {
        let mut steps = vec![
            Step { ts: 10, trace: 0, delta: 100 },
            Step { ts: 20, trace: 0, delta: -100 },
            Step { ts: 20, trace: 0, delta: 50 },
            Step { ts: 30, trace: 0, delta: -500 },
        ];
        assert_eq!(Counters::series(&mut steps), [(10, 0, 100), (20, 0, 50), (30, 0, 0)]);
    }

    #[test]
    fn a_free_without_size_uses_the_size_of_its_allocation() {
        let mut c = Counters::default();
        let mut alloc = Event::new(acc_event_t::ALLOC, 5);
        alloc.set(Field::Bytes, 4096);
        alloc.set(Field::DevicePtr, 0xd000);
        let mut free = Event::new(acc_event_t::FREE, 9);
        free.set(Field::DevicePtr, 0xd000);
        free.add_flags(EventFlags::BYTES_UNKNOWN);
        c.add(&alloc, 0, 5, 5);
        c.add(&free, 0, 9, 9);
        assert_eq!(Counters::series(&mut c.memory), [(5, 0, 4096), (9, 0, 0)]);
    }
}
