//! Interning tables: each distinct string (or source location) gets one iid for the whole
//! trace, and each packet sequence remembers which iids it has already defined, so a string is
//! written once per sequence that uses it. Memory grows with distinct strings, never with
//! events.

use std::collections::HashMap;

/// One table of interned strings. Perfetto numbers iids from 1 (0 means "not set").
#[derive(Default)]
pub(crate) struct StringTable {
    iids: HashMap<Box<str>, u64>,
    strings: Vec<Box<str>>,
}

impl StringTable {
    /// The iid of `s`, assigning the next one the first time `s` is seen.
    pub(crate) fn intern(&mut self, s: &str) -> u64 {
        if let Some(&iid) = self.iids.get(s) {
            return iid;
        }
        self.strings.push(s.into());
        let iid = self.strings.len() as u64;
        self.iids.insert(s.into(), iid);
        iid
    }

    /// The string of an iid this table gave out.
    pub(crate) fn get(&self, iid: u64) -> Option<&str> {
        let index = usize::try_from(iid).ok()?.checked_sub(1)?;
        self.strings.get(index).map(|s| &**s)
    }
}

/// A source location as Perfetto interns it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    pub(crate) file: Box<str>,
    pub(crate) function: Box<str>,
    pub(crate) line: u32,
}

/// The interned source locations.
#[derive(Default)]
pub(crate) struct LocationTable {
    iids: HashMap<Location, u64>,
    locations: Vec<Location>,
}

impl LocationTable {
    pub(crate) fn intern(&mut self, file: &str, function: &str, line: u32) -> u64 {
        let key = Location {
            file: file.into(),
            function: function.into(),
            line,
        };
        if let Some(&iid) = self.iids.get(&key) {
            return iid;
        }
        self.locations.push(key.clone());
        let iid = self.locations.len() as u64;
        self.iids.insert(key, iid);
        iid
    }

    pub(crate) fn get(&self, iid: u64) -> Option<&Location> {
        let index = usize::try_from(iid).ok()?.checked_sub(1)?;
        self.locations.get(index)
    }
}

/// The iids one sequence has defined, as a bit set indexed by iid.
#[derive(Default)]
pub(crate) struct Seen {
    bits: Vec<u64>,
}

impl Seen {
    /// Marks `iid` as defined; true when it was not before (so it must be written now).
    pub(crate) fn insert(&mut self, iid: u64) -> bool {
        let word = (iid / 64) as usize;
        let bit = 1u64 << (iid % 64);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let new = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_get_one_iid_each_from_one() {
        let mut table = StringTable::default();
        assert_eq!(table.intern("a"), 1);
        assert_eq!(table.intern("b"), 2);
        assert_eq!(table.intern("a"), 1);
        assert_eq!(table.get(2), Some("b"));
        assert_eq!(table.get(0), None);
        assert_eq!(table.get(3), None);
    }

    #[test]
    fn locations_differ_by_line() {
        let mut table = LocationTable::default();
        let a = table.intern("a.c", "main", 3);
        let b = table.intern("a.c", "main", 4);
        assert_ne!(a, b);
        assert_eq!(table.intern("a.c", "main", 3), a);
        assert_eq!(table.get(b).map(|l| l.line), Some(4));
    }

    #[test]
    fn seen_reports_the_first_insert_only() {
        let mut seen = Seen::default();
        assert!(seen.insert(1));
        assert!(!seen.insert(1));
        assert!(seen.insert(200));
        assert!(!seen.insert(200));
        assert!(seen.insert(63));
    }
}
