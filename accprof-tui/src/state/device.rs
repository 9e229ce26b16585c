//! The device records' columns: what [`crate::state::pairing`] needs to tie a device record to
//! the host events that issued its work by the shared rule (accprof-timeline's `device`).
//!
//! A device record (CUPTI kernel, copy or memset) carries the host thread that made the driver
//! call and when (`thread_id`, `host_call_ns`). Only device records are indexed here (about 40
//! bytes each, on top of the ~35 every record costs), so traces without them pay nothing.

use accprof_timeline::{DeviceOp, DeviceRecord};

/// The device records' pairing columns, in record order.
#[derive(Clone, Debug, Default)]
pub struct DeviceIndex {
    pub rec: Vec<u32>,
    /// The issuing host thread, when the tool saw the driver call.
    pub thread: Vec<Option<i64>>,
    /// When the host thread made the driver call (store clock), 0 when unknown.
    pub host_call: Vec<u64>,
    /// Device start and end (store clock).
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// What the device did (the shared vocabulary's reading of the record).
    pub op: Vec<DeviceOp>,
    /// Indices of records with a host call time, sorted by it.
    by_call: Vec<u32>,
}

/// One device record as the pairing sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRec {
    pub rec: u32,
    pub thread: Option<i64>,
    pub host_call: Option<u64>,
    pub start: u64,
    pub end: u64,
    pub op: DeviceOp,
}

impl DeviceRec {
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// What the shared matching rule reads of it (times on the store's clock).
    pub fn record(&self) -> DeviceRecord {
        DeviceRecord {
            op: self.op,
            thread: self.thread,
            host_call_ns: self.host_call,
            correlation: None,
            stream: None,
            from_cuda_events: false,
        }
    }
}

impl DeviceIndex {
    pub fn push(
        &mut self,
        rec: u32,
        thread: Option<i64>,
        host_call: Option<u64>,
        start: u64,
        end: u64,
        op: DeviceOp,
    ) {
        self.rec.push(rec);
        self.thread.push(thread);
        self.host_call.push(host_call.unwrap_or(0));
        self.start.push(start);
        self.end.push(end);
        self.op.push(op);
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

    fn get(&self, i: usize) -> DeviceRec {
        DeviceRec {
            rec: self.rec[i],
            thread: self.thread[i],
            host_call: (self.host_call[i] != 0).then_some(self.host_call[i]),
            start: self.start[i],
            end: self.end[i],
            op: self.op[i],
        }
    }

    /// The records whose host call time lies in `a..=b`, by call time.
    pub fn called_between(&self, a: u64, b: u64) -> impl Iterator<Item = DeviceRec> + '_ {
        let from = self
            .by_call
            .partition_point(|&i| self.host_call[i as usize] < a);
        self.by_call[from..]
            .iter()
            .map(|&i| i as usize)
            .take_while(move |&i| self.host_call[i] <= b)
            .map(|i| self.get(i))
    }

    /// The device record behind record id `rec`, if it is one.
    pub fn find(&self, rec: u32) -> Option<DeviceRec> {
        self.rec.binary_search(&rec).ok().map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_index_skips_records_without_a_call_time_and_sorts_the_rest() {
        let mut d = DeviceIndex::default();
        d.push(3, Some(1), Some(50), 60, 70, DeviceOp::Kernel);
        d.push(5, None, None, 10, 20, DeviceOp::Memset);
        d.push(
            8,
            Some(1),
            Some(20),
            25,
            30,
            DeviceOp::Copy(accprof_timeline::Direction::HostToDevice),
        );
        d.finish();
        assert_eq!(d.by_call, [2, 0]);
        assert_eq!(d.find(5).map(|r| r.host_call), Some(None));
        assert_eq!(d.find(8).map(|r| r.duration()), Some(5));
        assert_eq!(d.find(4), None);
    }
}
