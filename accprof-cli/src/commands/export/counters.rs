//! Counter tracks of one trace: device memory in use (from alloc/free), bytes in flight and
//! bytes moved so far (from transfers).
//!
//! Bytes in flight come from the device's own copies when a trace has device records (their
//! times are when the copy engine moved the bytes), else from the runtime's upload and download
//! events. Never both: they are the same transfers seen twice. The header says whether a trace
//! was recorded with device activity; when the events say otherwise, [`Switch`] asks for the
//! trace to be exported again the other way.
//!
//! Each counter is a series of +/- steps, put in time order as they stream by through a
//! bounded window ([`StepWindow`]): a trace holds events in the order each thread finished them,
//! not in time order.

use accprof_abi::acc_event_t;
use accprof_timeline::order::Late;
use accprof_trace::{device, Event, EventFlags, Field};
use rustc_hash::FxHashMap;

/// The counters an export writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Counter {
    /// Device memory in use (both formats).
    Memory,
    /// Bytes in flight (JSON).
    InFlight,
    /// Bytes moved so far (Perfetto, where it stands in for bytes in flight).
    Moved,
}

impl Counter {
    pub fn name(self) -> &'static str {
        match self {
            Counter::Memory => "device memory in use",
            Counter::InFlight => "bytes in flight",
            Counter::Moved => "bytes moved",
        }
    }
}

/// The trace's bytes in flight must come from elsewhere than the export assumed: from its
/// device copies (`true`) or its runtime's transfers (`false`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Switch(pub bool);

/// The counters of one trace.
#[derive(Debug)]
pub struct TraceCounters {
    /// Bytes in flight come from device copies.
    from_device: bool,
    memory: StepWindow,
    in_flight: StepWindow,
    moved: StepWindow,
    /// Bytes each live device allocation holds, for frees whose size the runtime did not give.
    live: FxHashMap<u64, u64>,
    device_records: bool,
    host_transfers: bool,
    in_flight_released: bool,
}

impl TraceCounters {
    /// The counters of a trace whose bytes in flight come `from_device` copies, each through a
    /// window of `capacity` steps.
    pub fn new(from_device: bool, capacity: usize) -> Self {
        TraceCounters {
            from_device,
            memory: StepWindow::new(capacity),
            in_flight: StepWindow::new(capacity),
            moved: StepWindow::new(capacity),
            live: FxHashMap::default(),
            device_records: false,
            host_transfers: false,
            in_flight_released: false,
        }
    }

    /// Takes `ev`'s steps; `start`/`end` are its times on the export's clock.
    pub fn add(&mut self, ev: &Event, start: u64, end: u64) -> Result<(), CounterStop> {
        let bytes = || {
            if ev.flags().contains(EventFlags::BYTES_UNKNOWN) {
                None
            } else {
                ev.bytes()
            }
        };
        if device::is_device_record(ev.kind) {
            if !self.device_records && !self.from_device {
                if self.in_flight_released {
                    return Err(CounterStop::Switch(Switch(true)));
                }
                // Bytes in flight come from the device's copies from now on.
                self.from_device = true;
                let capacity = self.in_flight.capacity;
                self.in_flight = StepWindow::new(capacity);
                self.moved = StepWindow::new(capacity);
            }
            self.device_records = true;
            let direction = ev
                .get(Field::CopyKind)
                .map(|k| device::split_copy_kind(k).0);
            if ev.kind == device::MEMCPY
                && matches!(direction, Some(device::COPY_HTOD | device::COPY_DTOH))
            {
                if let Some(b) = bytes() {
                    self.transfer(start, end, b)?;
                }
            }
            return Ok(());
        }
        match ev.kind {
            acc_event_t::ALLOC => {
                let Some(b) = bytes() else { return Ok(()) };
                if let Some(d) = ev.get(Field::DevicePtr) {
                    self.live.insert(d, b);
                }
                self.memory.push(start, b as i64)?;
            }
            acc_event_t::FREE => {
                let known = ev.get(Field::DevicePtr).and_then(|d| self.live.remove(&d));
                let Some(b) = bytes().or(known) else {
                    return Ok(());
                };
                self.memory.push(start, -(b as i64))?;
            }
            acc_event_t::ENQUEUE_UPLOAD_START | acc_event_t::ENQUEUE_DOWNLOAD_START => {
                self.host_transfers = true;
                if !self.from_device {
                    if let Some(b) = bytes() {
                        self.transfer(start, end, b)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn transfer(&mut self, start: u64, end: u64, bytes: u64) -> Result<(), Late> {
        let b = bytes as i64;
        self.in_flight.push(start, b)?;
        self.in_flight.push(end, -b)?;
        self.moved.push(start, b)
    }

    /// Adds the values that are final to `out` (all of them when `all`): `(counter, time,
    /// value)`.
    pub fn release(&mut self, all: bool, out: &mut Vec<(Counter, u64, i64)>) {
        for (counter, window) in [
            (Counter::Memory, &mut self.memory),
            (Counter::InFlight, &mut self.in_flight),
            (Counter::Moved, &mut self.moved),
        ] {
            loop {
                let next = if all { window.pop() } else { window.pop_over() };
                let Some((ts, value)) = next else { break };
                self.in_flight_released |= counter != Counter::Memory;
                out.push((counter, ts, value));
            }
        }
    }

    /// At the end of the trace: whether its bytes in flight came from the right place (a trace
    /// recorded with device activity whose device recorded nothing has its runtime's).
    pub fn check_end(&self) -> Result<(), Switch> {
        if self.from_device && !self.device_records && self.host_transfers {
            return Err(Switch(false));
        }
        Ok(())
    }
}

/// Why counting stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CounterStop {
    /// A step came after a later one was written (a transfer longer than the window).
    Late,
    Switch(Switch),
}

impl From<Late> for CounterStop {
    fn from(_: Late) -> Self {
        CounterStop::Late
    }
}

/// A counter's steps put in time order as they stream by, with bounded memory: the last
/// `capacity` steps are held sorted by (time, delta), and once more come in, the earliest
/// timestamp's steps are summed into one value (decrements first at one time, so the value
/// never spikes between two back-to-back transfers; floored at 0, as a free of memory
/// allocated before recording began would go below). A step at or before a timestamp already
/// summed is refused ([`Late`]).
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

    pub fn push(&mut self, ts: u64, delta: i64) -> Result<(), Late> {
        if self.released.is_some_and(|r| ts <= r) {
            return Err(Late);
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

    fn drain(w: &mut StepWindow) -> Vec<(u64, i64)> {
        std::iter::from_fn(|| w.pop()).collect()
    }

    #[test]
    fn the_window_sums_equal_timestamps_in_order_and_floors_at_zero() {
        let steps = [
            (30, -5),
            (10, 100),
            (20, -100),
            (20, 50),
            (40, 7),
            (35, -500),
            (50, 1),
        ];
        let mut w = StepWindow::new(3);
        let mut got = Vec::new();
        for (ts, delta) in steps {
            w.push(ts, delta).unwrap();
            got.extend(w.pop_over());
        }
        got.extend(drain(&mut w));
        assert_eq!(
            got,
            [(10, 100), (20, 50), (30, 45), (35, 0), (40, 7), (50, 8)]
        );
        // 10 and 20 are summed already: a step there can no longer be placed.
        let mut w = StepWindow::new(1);
        for (ts, delta) in [(10, 1), (20, 1), (30, 1)] {
            w.push(ts, delta).unwrap();
            w.pop_over();
        }
        assert!(w.push(20, 1).is_err());
    }

    #[test]
    fn device_copies_replace_the_runtimes_transfers() {
        let mut up = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 10);
        up.end_ns = 50;
        up.set(Field::Bytes, 100);
        let mut copy = Event::new(device::MEMCPY, 20);
        copy.end_ns = 40;
        copy.set(Field::Bytes, 100);
        copy.set(Field::CopyKind, device::copy_kind(1, 2, 3));
        let mut d2d = copy;
        d2d.set(Field::CopyKind, device::copy_kind(8, 3, 3));
        let in_flight = |c: &mut TraceCounters| {
            let mut out = Vec::new();
            c.release(true, &mut out);
            out.into_iter()
                .filter(|v| v.0 == Counter::InFlight)
                .map(|(_, ts, v)| (ts, v))
                .collect::<Vec<_>>()
        };
        // Announced by the header: the copies count, the runtime's upload does not.
        let mut c = TraceCounters::new(true, 16);
        for ev in [&up, &copy, &d2d] {
            c.add(ev, ev.start_ns, ev.end_ns).unwrap();
        }
        assert_eq!(in_flight(&mut c), [(20, 100), (40, 0)]);
        // Not announced: the first record switches over while nothing was written yet.
        let mut c = TraceCounters::new(false, 16);
        for ev in [&up, &copy] {
            c.add(ev, ev.start_ns, ev.end_ns).unwrap();
        }
        assert_eq!(in_flight(&mut c), [(20, 100), (40, 0)]);
        // ... and asks for the export again once values were written.
        let mut c = TraceCounters::new(false, 1);
        c.add(&up, 10, 50).unwrap();
        c.release(false, &mut Vec::new());
        assert_eq!(c.add(&copy, 20, 40), Err(CounterStop::Switch(Switch(true))));
        // Announced, but the device recorded nothing: the runtime's transfers after all.
        let mut c = TraceCounters::new(true, 16);
        c.add(&up, 10, 50).unwrap();
        assert_eq!(c.check_end(), Err(Switch(false)));
    }

    #[test]
    fn a_free_without_size_uses_the_size_of_its_allocation() {
        let mut c = TraceCounters::new(false, 16);
        let mut alloc = Event::new(acc_event_t::ALLOC, 5);
        alloc.set(Field::Bytes, 4096);
        alloc.set(Field::DevicePtr, 0xd000);
        let mut free = Event::new(acc_event_t::FREE, 9);
        free.set(Field::DevicePtr, 0xd000);
        free.add_flags(EventFlags::BYTES_UNKNOWN);
        c.add(&alloc, 5, 5).unwrap();
        c.add(&free, 9, 9).unwrap();
        let mut out = Vec::new();
        c.release(true, &mut out);
        assert_eq!(out, [(Counter::Memory, 5, 4096), (Counter::Memory, 9, 0)]);
    }
}
