//! Per-construct totals counted while a trace is read: one hash lookup per event, no second
//! pass. The key is what makes two events "the same construct" for the table.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// What makes two events "the same construct".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ConstructKey {
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

/// A multiply-rotate hasher: the keys are a few small integers, and SipHash would cost more than
/// the rest of reading an event.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u32 as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Per-construct totals.
#[derive(Clone, Debug, Default)]
pub struct ConstructTable {
    pub map: HashMap<ConstructKey, ConstructStats, BuildHasherDefault<FastHasher>>,
}

impl ConstructTable {
    pub fn add(&mut self, key: ConstructKey, rec: u32, dur_ns: u64, bytes: u64) {
        let s = self.map.entry(key).or_insert(ConstructStats {
            first_rec: rec,
            ..ConstructStats::default()
        });
        s.count += 1;
        s.total_ns += dur_ns;
        s.bytes += bytes;
    }
}
