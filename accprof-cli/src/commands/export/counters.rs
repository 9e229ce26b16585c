//! Counter tracks: device memory in use (from alloc/free) and bytes in flight (from transfers).
//!
//! Bytes in flight come from the device's own copies when a trace has device records (their
//! times are when the copy engine moved the bytes), else from the runtime's upload and download
//! events. Never both: they are the same transfers seen twice.
//!
//! Both are kept as +/- steps while reading and summed in time order at the end, because a trace
//! holds events in the order each thread finished them, not in time order.

use accprof_abi::acc_event_t;
use accprof_trace::{device, Event, EventFlags, Field};
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
    /// From the runtime's upload/download events.
    in_flight_host: Vec<Step>,
    /// From device copies between host and device.
    in_flight_device: Vec<Step>,
    /// Traces that hold device records.
    device_traces: std::collections::BTreeSet<u16>,
    /// Bytes each live device allocation holds, for frees whose size the runtime did not give.
    live: HashMap<(u16, u64), u64>,
}

/// A counter's value after each step, in time order: `(ts, trace, value)`.
pub type Series = Vec<(u64, u16, i64)>;

impl Counters {
    /// Takes `ev`'s contribution; `start`/`end` are its times on the export's clock.
    pub fn add(&mut self, ev: &Event, trace: u16, start: u64, end: u64) {
        let bytes = || {
            if ev.flags().contains(EventFlags::BYTES_UNKNOWN) {
                None
            } else {
                ev.bytes()
            }
        };
        let dev = ev.get(Field::DevicePtr);
        if device::is_device_record(ev.kind) {
            self.device_traces.insert(trace);
            let direction = ev
                .get(Field::CopyKind)
                .map(|k| device::split_copy_kind(k).0);
            if ev.kind == device::MEMCPY
                && matches!(direction, Some(device::COPY_HTOD | device::COPY_DTOH))
            {
                let Some(b) = bytes() else { return };
                self.in_flight_device.push(Step {
                    ts: start,
                    trace,
                    delta: b as i64,
                });
                self.in_flight_device.push(Step {
                    ts: end,
                    trace,
                    delta: -(b as i64),
                });
            }
            return;
        }
        match ev.kind {
            acc_event_t::ALLOC => {
                let Some(b) = bytes() else { return };
                if let Some(d) = dev {
                    self.live.insert((trace, d), b);
                }
                self.memory.push(Step {
                    ts: start,
                    trace,
                    delta: b as i64,
                });
            }
            acc_event_t::FREE => {
                let known = dev.and_then(|d| self.live.remove(&(trace, d)));
                let Some(b) = bytes().or(known) else { return };
                self.memory.push(Step {
                    ts: start,
                    trace,
                    delta: -(b as i64),
                });
            }
            acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START => {
                let Some(b) = bytes() else { return };
                self.in_flight_host.push(Step {
                    ts: start,
                    trace,
                    delta: b as i64,
                });
                self.in_flight_host.push(Step {
                    ts: end,
                    trace,
                    delta: -(b as i64),
                });
            }
            _ => {}
        }
    }

    /// Counts `trace` as one with device records before any is seen (its header says it was
    /// recorded with device activity), so that its runtime transfers are left out from the start.
    pub fn expect_device_records(&mut self, trace: u16) {
        self.device_traces.insert(trace);
    }

    /// The steps of "bytes in flight": per trace, its device copies if it has device records,
    /// else its runtime transfers.
    pub fn in_flight(&mut self) -> Vec<Step> {
        // In place: a million-event export holds a few hundred thousand steps.
        let mut steps = std::mem::take(&mut self.in_flight_host);
        if !self.device_traces.is_empty() {
            steps.retain(|s| !self.device_traces.contains(&s.trace));
        }
        steps.append(&mut self.in_flight_device);
        steps
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

/// A counter's steps put in time order as they stream by, with bounded memory: the last
/// `capacity` steps are held sorted by (time, delta), and once more come in, the earliest
/// timestamp's steps are summed into one value, as [`Counters::series`] sums them (decrements
/// first, the value floored at 0). A step at or before a timestamp already summed is refused
/// ([`accprof_timeline::order::Late`]).
#[derive(Debug)]
pub struct StepWindow {
    /// Sorted by (ts, delta); steps mostly come in time order, so most go on the back.
    held: std::collections::VecDeque<(u64, i64)>,
    capacity: usize,
    value: i64,
    released: Option<u64>,
}

impl StepWindow {
    pub fn new(capacity: usize) -> Self {
        StepWindow {
            held: std::collections::VecDeque::new(),
            capacity: capacity.max(1),
            value: 0,
            released: None,
        }
    }

    pub fn push(&mut self, ts: u64, delta: i64) -> Result<(), accprof_timeline::order::Late> {
        if self.released.is_some_and(|r| ts <= r) {
            return Err(accprof_timeline::order::Late);
        }
        let step = (ts, delta);
        if self.held.back().is_none_or(|&b| b <= step) {
            self.held.push_back(step);
        } else {
            let at = self.held.partition_point(|&h| h <= step);
            self.held.insert(at, step);
        }
        Ok(())
    }

    /// The value after the earliest timestamp held, when more than the capacity are held.
    pub fn pop_over(&mut self) -> Option<(u64, i64)> {
        if self.held.len() > self.capacity {
            self.pop()
        } else {
            None
        }
    }

    /// The value after the earliest timestamp held.
    pub fn pop(&mut self) -> Option<(u64, i64)> {
        let (ts, delta) = self.held.pop_front()?;
        self.value = (self.value + delta).max(0);
        while let Some(&(t, d)) = self.held.front() {
            if t != ts {
                break;
            }
            self.held.pop_front();
            self.value = (self.value + d).max(0);
        }
        self.released = Some(ts);
        Some((ts, self.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_sum_merges_equal_timestamps_and_floors_at_zero() {
        let mut steps = vec![
            Step {
                ts: 10,
                trace: 0,
                delta: 100,
            },
            Step {
                ts: 20,
                trace: 0,
                delta: -100,
            },
            Step {
                ts: 20,
                trace: 0,
                delta: 50,
            },
            Step {
                ts: 30,
                trace: 0,
                delta: -500,
            },
        ];
        assert_eq!(
            Counters::series(&mut steps),
            [(10, 0, 100), (20, 0, 50), (30, 0, 0)]
        );
    }

    #[test]
    fn device_copies_replace_the_runtimes_transfers_of_their_trace() {
        let mut c = Counters::default();
        let mut up = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 10);
        up.end_ns = 50;
        up.set(Field::Bytes, 100);
        let mut copy = Event::new(device::MEMCPY, 20);
        copy.end_ns = 40;
        copy.set(Field::Bytes, 100);
        copy.set(Field::CopyKind, device::copy_kind(1, 2, 3));
        let mut d2d = copy;
        d2d.set(Field::CopyKind, device::copy_kind(8, 3, 3));
        // Trace 0 has device records; trace 1 only the runtime's events.
        for (ev, trace) in [(&up, 0), (&copy, 0), (&d2d, 0), (&up, 1)] {
            c.add(ev, trace, ev.start_ns, ev.end_ns);
        }
        let mut steps = c.in_flight();
        assert_eq!(
            Counters::series(&mut steps),
            [(10, 1, 100), (20, 0, 100), (40, 0, 0), (50, 1, 0)]
        );
    }

    #[test]
    fn the_window_gives_the_series_of_the_whole_sort() {
        let steps = [
            (30, -5),
            (10, 100),
            (20, -100),
            (20, 50),
            (40, 7),
            (35, -500),
            (50, 1),
        ];
        let mut all: Vec<Step> = steps
            .iter()
            .map(|&(ts, delta)| Step {
                ts,
                trace: 0,
                delta,
            })
            .collect();
        let whole: Vec<(u64, i64)> = Counters::series(&mut all)
            .into_iter()
            .map(|(ts, _, v)| (ts, v))
            .collect();
        let mut w = StepWindow::new(3);
        let mut got = Vec::new();
        for (ts, delta) in steps {
            w.push(ts, delta).unwrap();
            got.extend(w.pop_over());
        }
        got.extend(std::iter::from_fn(|| w.pop()));
        assert_eq!(got, whole);
        // 10 and 20 are summed already: a step there can no longer be placed.
        assert!(w.push(20, 1).is_err());
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
