//! The present table: which host address ranges have device copies, with the specification's
//! structured and dynamic reference counters (OpenACC 3.x section 2.6.7).
//!
//! Keyed by host start address in a BTreeMap, so "which entry contains this address" is one
//! range query. Entries never overlap: mapping a range that overlaps an entry without being
//! contained in it is the "partly present" error.

use crate::error::AccError;
use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};

#[derive(Clone, Debug)]
pub struct Entry {
    pub host: usize,
    pub bytes: usize,
    pub dev: u64,
    pub structured: u32,
    pub dynamic: u32,
    /// Created by acc_map_data: the device memory belongs to the user and is never freed here.
    pub mapped: bool,
    /// The clause text that created the entry, for events and messages.
    pub name: *const c_char,
    /// Attachment counters of pointers inside this entry (host address of the pointer -> count).
    pub attached: BTreeMap<usize, u32>,
}

// SAFETY: `name` points to a static NUL-terminated string (see crate::loc).
unsafe impl Send for Entry {}

impl Entry {
    pub fn end(&self) -> usize {
        self.host + self.bytes.max(1)
    }
    pub fn total_refs(&self) -> u32 {
        self.structured + self.dynamic
    }
    pub fn name_str(&self) -> String {
        cstr_lossy(self.name)
    }
}

/// The name at `p`, or "" for NULL. Names come from the construct API, whose callers pass
/// NUL-terminated literals (the C macros) or `&CStr` (Rust): `p` is never a dangling pointer.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn cstr_lossy(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: names are NUL-terminated static strings.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Where a host range stands in the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Absent,
    /// Wholly inside the entry keyed `key`; `dev` is the device address of the range's start.
    Present { key: usize, dev: u64 },
}

#[derive(Default, Debug)]
pub struct PresentTable {
    map: BTreeMap<usize, Entry>,
}

impl PresentTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry containing `[host, host+bytes)` (a zero-length range is treated as one byte),
    /// absent, or the partly-present error.
    pub fn lookup(&self, host: usize, bytes: usize, name: *const c_char) -> Result<Lookup, AccError> {
        let end = host + bytes.max(1);
        // The last entry starting below `end` is the only one that can overlap from the left or
        // contain the range; any other overlapping entry starts inside the range.
        if let Some((&k, e)) = self.map.range(..end).next_back() {
            if e.end() > host {
                if k <= host && e.end() >= end {
                    return Ok(Lookup::Present { key: k, dev: e.dev + (host - k) as u64 });
                }
                return Err(AccError::PartlyPresent {
                    host,
                    bytes,
                    name: cstr_lossy(name),
                    present_host: e.host,
                    present_bytes: e.bytes,
                });
            }
        }
        Ok(Lookup::Absent)
    }

    /// The entry that contains the single address `host`, if any.
    pub fn containing(&self, host: usize) -> Option<&Entry> {
        self.map.range(..=host).next_back().map(|(_, e)| e).filter(|e| e.end() > host)
    }

    pub fn containing_mut(&mut self, host: usize) -> Option<&mut Entry> {
        self.map.range_mut(..=host).next_back().map(|(_, e)| e).filter(|e| e.end() > host)
    }

    /// The entry whose device range contains `dev` (acc_hostptr). Linear: rarely used.
    pub fn by_device(&self, dev: u64) -> Option<&Entry> {
        self.map.values().find(|e| dev >= e.dev && dev < e.dev + e.bytes.max(1) as u64)
    }

    pub fn insert(&mut self, e: Entry) {
        self.map.insert(e.host, e);
    }

    pub fn get_mut(&mut self, key: usize) -> Option<&mut Entry> {
        self.map.get_mut(&key)
    }

    pub fn get(&self, key: usize) -> Option<&Entry> {
        self.map.get(&key)
    }

    pub fn remove(&mut self, key: usize) -> Option<Entry> {
        self.map.remove(&key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every entry, removed (shutdown).
    pub fn drain(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.map).into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: usize, bytes: usize, dev: u64) -> Entry {
        Entry {
            host,
            bytes,
            dev,
            structured: 1,
            dynamic: 0,
            mapped: false,
            name: std::ptr::null(),
            attached: BTreeMap::new(),
        }
    }

    #[test]
    fn contained_ranges_are_present_with_offset() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        assert_eq!(t.lookup(1000, 100, std::ptr::null()).unwrap(), Lookup::Present { key: 1000, dev: 5000 });
        assert_eq!(t.lookup(1010, 10, std::ptr::null()).unwrap(), Lookup::Present { key: 1000, dev: 5010 });
        assert_eq!(t.lookup(1099, 1, std::ptr::null()).unwrap(), Lookup::Present { key: 1000, dev: 5099 });
    }

    #[test]
    fn disjoint_ranges_are_absent() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        assert_eq!(t.lookup(900, 100, std::ptr::null()).unwrap(), Lookup::Absent);
        assert_eq!(t.lookup(1100, 8, std::ptr::null()).unwrap(), Lookup::Absent);
    }

    #[test]
    fn overlaps_are_partly_present() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        for (h, b) in [(950, 100), (1050, 100), (900, 300)] {
            assert!(matches!(t.lookup(h, b, std::ptr::null()), Err(AccError::PartlyPresent { .. })), "{h} {b}");
        }
    }

    #[test]
    fn device_and_address_queries() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        t.insert(entry(2000, 10, 9000));
        assert_eq!(t.containing(1050).unwrap().host, 1000);
        assert!(t.containing(1100).is_none());
        assert_eq!(t.by_device(9005).unwrap().host, 2000);
        assert!(t.by_device(8000).is_none());
    }
}
