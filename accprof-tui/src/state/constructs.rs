//! Per-construct totals counted while a trace is read: one hash lookup per event, no second
//! pass. The key is what makes two events "the same row" of the table: for constructs it is
//! accprof-analysis's own [`accprof_analysis::build::ConstructKey`] (with the store's string
//! ids), so the table and `accprof report` split constructs the same way.

use rustc_hash::FxHashMap;

/// What makes two events "the same row".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RowKey {
    /// A construct (compute, data, enter/exit data, update, wait, init...), as the report keys it.
    Construct(accprof_analysis::build::ConstructKey),
    /// Any other event (launch, transfer, allocation): by kind, name and location.
    Event(EventKey),
}

/// The key of an event that is not a construct.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EventKey {
    pub kind: u8,
    pub parent: u8,
    pub name: u32,
    pub file: u32,
    pub line: i32,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ConstructStats {
    pub count: u64,
    pub total_ns: u64,
    pub bytes: u64,
    /// The first occurrence, where Enter jumps to.
    pub first_rec: u32,
}

impl ConstructStats {
    pub fn avg_ns(&self) -> u64 {
        self.total_ns.checked_div(self.count).unwrap_or(0)
    }
}

/// Per-construct totals.
#[derive(Clone, Debug, Default)]
pub struct ConstructTable {
    pub map: FxHashMap<RowKey, ConstructStats>,
}

impl ConstructTable {
    pub fn add(&mut self, key: RowKey, rec: u32, dur_ns: u64, bytes: u64) {
        let s = self.map.entry(key).or_insert(ConstructStats {
            first_rec: rec,
            ..ConstructStats::default()
        });
        s.count += 1;
        s.total_ns += dur_ns;
        s.bytes += bytes;
    }
}
