//! The device records' columns: what [`crate::state::pairing`] needs to tie a device record to
//! the host event that issued its work by the shared rule (accprof-timeline's `device`).
//!
//! A device record (CUPTI kernel, copy or memset) carries the host thread that made the driver
//! call and when (`thread_id`, `host_call_ns`). Only device records are indexed here (about 90
//! bytes each, on top of the ~35 every record costs), so traces without them pay nothing.

use accprof_timeline::DeviceRecord;
use rustc_hash::FxHashMap;

/// A bar by (lane, track, index): a launch a kernel record was tied to by name.
pub type LaunchAt = (usize, usize, usize);

/// The device records, in record order, with their times on the store's clock.
#[derive(Clone, Debug, Default)]
pub struct DeviceIndex {
    pub rec: Vec<u32>,
    pub record: Vec<DeviceRecord>,
    /// When the host thread made the driver call (store clock), 0 when unknown.
    pub host_call: Vec<u64>,
    /// Device start and end (store clock).
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// Indices of records with a host call time, sorted by it.
    by_call: Vec<u32>,
    /// Kernel records that name no call, by index: the launch the by-name rule gave each
    /// (`crate::state::pairing::tie_by_name`) and the call time that gives it (its middle).
    by_name: FxHashMap<u32, (LaunchAt, u64)>,
    /// The same, by launch.
    by_launch: FxHashMap<LaunchAt, Vec<u32>>,
}

/// One device record as the store holds it: what it says, and its times on the store's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceBar {
    pub rec: u32,
    pub record: DeviceRecord,
    pub host_call: Option<u64>,
    /// For a kernel record that names no call: the launch its kernel's name tied it to, and
    /// the middle of that launch (the call the issuer rule gives it).
    pub by_name: Option<(LaunchAt, u64)>,
    pub start: u64,
    pub end: u64,
}

impl DeviceBar {
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

impl DeviceIndex {
    pub fn push(
        &mut self,
        rec: u32,
        record: DeviceRecord,
        host_call: Option<u64>,
        start: u64,
        end: u64,
    ) {
        self.rec.push(rec);
        self.record.push(record);
        self.host_call.push(host_call.unwrap_or(0));
        self.start.push(start);
        self.end.push(end);
    }

    pub fn len(&self) -> usize {
        self.rec.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rec.is_empty()
    }

    /// Sorts the call-time index; called after every load or poll.
    pub fn finish(&mut self) {
        if self.by_call.len() == self.len() {
            return;
        }
        let calls = &self.host_call;
        self.by_call = (0..self.len() as u32)
            .filter(|&i| calls[i as usize] != 0)
            .collect();
        self.by_call.sort_by_key(|&i| calls[i as usize]);
    }

    fn get(&self, i: usize) -> DeviceBar {
        DeviceBar {
            rec: self.rec[i],
            record: self.record[i],
            host_call: (self.host_call[i] != 0).then_some(self.host_call[i]),
            by_name: self.by_name.get(&(i as u32)).copied(),
            start: self.start[i],
            end: self.end[i],
        }
    }

    /// The records whose host call time lies in `a..=b`, by call time.
    pub fn called_between(&self, a: u64, b: u64) -> impl Iterator<Item = DeviceBar> + '_ {
        let from = self
            .by_call
            .partition_point(|&i| self.host_call[i as usize] < a);
        self.by_call[from..]
            .iter()
            .map(|&i| i as usize)
            .take_while(move |&i| self.host_call[i] <= b)
            .map(|i| self.get(i))
    }

    /// Ties kernel records that name no call to launches (index, launch, call time), in place
    /// of the ties of the rows before.
    pub fn set_by_name(&mut self, ties: Vec<(u32, LaunchAt, u64)>) {
        self.by_name.clear();
        self.by_launch.clear();
        for (i, at, call) in ties {
            self.by_name.insert(i, (at, call));
            self.by_launch.entry(at).or_default().push(i);
        }
    }

    /// The records tied to the launch at `at` by name.
    pub fn tied_to(&self, at: LaunchAt) -> impl Iterator<Item = DeviceBar> + '_ {
        self.by_launch
            .get(&at)
            .into_iter()
            .flatten()
            .map(|&i| self.get(i as usize))
    }

    /// Every record, in record order.
    pub fn all(&self) -> impl Iterator<Item = (u32, DeviceBar)> + '_ {
        (0..self.len()).map(|i| (i as u32, self.get(i)))
    }

    /// The device record behind record id `rec`, if it is one.
    pub fn find(&self, rec: u32) -> Option<DeviceBar> {
        self.rec.binary_search(&rec).ok().map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_timeline::DeviceOp;

    fn record(op: DeviceOp) -> DeviceRecord {
        DeviceRecord {
            op,
            thread: Some(1),
            host_call_ns: None,
            correlation: None,
            stream: None,
            copy_kind: None,
            start_ns: 0,
            end_ns: 0,
            from_cuda_events: false,
        }
    }

    #[test]
    fn call_index_skips_records_without_a_call_time_and_sorts_the_rest() {
        let mut d = DeviceIndex::default();
        d.push(3, record(DeviceOp::Kernel), Some(50), 60, 70);
        d.push(5, record(DeviceOp::Memset), None, 10, 20);
        d.push(8, record(DeviceOp::OtherCopy), Some(20), 25, 30);
        d.finish();
        assert_eq!(d.by_call, [2, 0]);
        assert_eq!(d.find(5).map(|r| r.host_call), Some(None));
        assert_eq!(d.find(8).map(|r| r.duration()), Some(5));
        assert_eq!(d.find(4), None);
    }
}
