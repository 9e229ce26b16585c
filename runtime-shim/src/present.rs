//! The present table: which host address ranges have device copies, with the specification's
//! structured and dynamic reference counters (OpenACC 3.x section 2.6.7) and the attachment
//! counters of pointers inside them (section 2.6.8).
//!
//! Keyed by host start address in a BTreeMap, so "which entry contains this address" is one
//! range query. Entries never overlap: mapping a range that overlaps an entry without being
//! contained in it is the "partly present" error.

use crate::error::AccError;
use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;

#[derive(Clone, Debug)]
pub struct Entry {
    pub host: usize,
    pub bytes: usize,
    pub dev: u64,
    pub structured: u32,
    pub dynamic: u32,
    /// Created by acc_map_data: the device memory belongs to the user and is never freed here.
    pub mapped: bool,
    /// A global under `acc declare` (src/goacc/globals.rs): present until the device shuts
    /// down, whatever data exits say.
    pub declared: bool,
    /// The clause text that created the entry, for events and messages.
    pub name: *const c_char,
    /// Pointers inside this entry attached to a device target (host address of the pointer ->
    /// its attachment). Changed through the table, which counts them.
    attached: BTreeMap<usize, Attachment>,
    /// Set while the thread that created the entry is still allocating and uploading its device
    /// copy: another thread that finds the entry waits for it before using the data.
    pub filling: Option<Arc<Filling>>,
    /// A digest of the device copy as last uploaded, for data only ever copied in, on a device
    /// whose memory the host can read (src/dropped.rs): written by a job in queue order.
    pub digest: Option<Arc<std::sync::atomic::AtomicU64>>,
    /// The host address of the Fortran array descriptor that points at this data (0 if none),
    /// to name the array in messages.
    pub descriptor: usize,
    /// The device allocation this entry shares with the other members of a struct mapped
    /// together (src/members.rs); None when the entry's device copy is an allocation of its own.
    pub block: Option<Arc<DeviceBlock>>,
}

/// One device allocation holding the members of a struct mapped together, laid out as on the
/// host from `host` on; each member has an entry of its own, and the allocation goes with the
/// last of them.
#[derive(Debug)]
pub struct DeviceBlock {
    pub dev: u64,
    pub host: usize,
    pub bytes: usize,
    /// Member entries not yet removed.
    members: AtomicUsize,
}

impl DeviceBlock {
    pub fn new(dev: u64, host: usize, bytes: usize, members: usize) -> Arc<DeviceBlock> {
        Arc::new(DeviceBlock {
            dev,
            host,
            bytes,
            members: AtomicUsize::new(members),
        })
    }
}

/// Device memory to free: its address, and the host range it held (for the free event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub dev: u64,
    pub host: usize,
    pub bytes: usize,
}

// SAFETY: `name` points to a static NUL-terminated string (see crate::loc).
unsafe impl Send for Entry {}

/// One attached pointer: its attachment counter and the host address it pointed to when it
/// was attached (attaching it to another target starts the count again at one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub count: u32,
    pub target: usize,
    /// Where the data it was attached to was looked up: the target, or the start of the section
    /// it was attached with (target + bias).
    pub section: usize,
}

impl Entry {
    /// A new entry with no references yet.
    pub fn new(host: usize, bytes: usize, dev: u64, name: *const c_char) -> Entry {
        Entry {
            host,
            bytes,
            dev,
            structured: 0,
            dynamic: 0,
            mapped: false,
            declared: false,
            name,
            attached: BTreeMap::new(),
            filling: None,
            digest: None,
            descriptor: 0,
            block: None,
        }
    }
    pub fn end(&self) -> usize {
        self.host + self.bytes.max(1)
    }
    pub fn total_refs(&self) -> u32 {
        self.structured + self.dynamic
    }
    pub fn name_str(&self) -> String {
        cstr_lossy(self.name)
    }
    /// The device address of host address `host` inside this entry.
    pub fn dev_of(&self, host: usize) -> u64 {
        self.dev + (host - self.host) as u64
    }
    /// The device memory to free now that this entry has been removed from the table: none for
    /// memory the program owns (acc_map_data), the shared block with the last of a struct's
    /// members (none before), else the entry's own. Call once per removed entry.
    pub fn release_allocation(&self) -> Option<Allocation> {
        if self.mapped {
            return None;
        }
        match &self.block {
            None => Some(Allocation {
                dev: self.dev,
                host: self.host,
                bytes: self.bytes,
            }),
            Some(b) => (b.members.fetch_sub(1, Ordering::AcqRel) == 1).then_some(Allocation {
                dev: b.dev,
                host: b.host,
                bytes: b.bytes,
            }),
        }
    }
    /// The pointers attached inside this entry: (host address of the pointer, attachment).
    pub fn attachments(&self) -> impl Iterator<Item = (usize, Attachment)> + '_ {
        self.attached.iter().map(|(&p, &a)| (p, a))
    }
}

/// A device copy still being filled by the thread that created its entry. Other threads wait
/// on it; the creating thread never does (a tool's callback during the upload may map the same
/// data, and would wait for itself).
#[derive(Debug)]
pub struct Filling {
    owner: ThreadId,
    done: Mutex<bool>,
    cv: Condvar,
}

impl Filling {
    pub fn new() -> Arc<Filling> {
        Arc::new(Filling {
            owner: std::thread::current().id(),
            done: Mutex::new(false),
            cv: Condvar::new(),
        })
    }

    /// Returns once the creating thread has called [`Filling::finish`] (at once on that thread).
    pub fn wait(&self) {
        if std::thread::current().id() == self.owner {
            return;
        }
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = self.cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn finish(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
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
    Present {
        key: usize,
        dev: u64,
    },
}

/// What an attach action did.
#[derive(Debug, PartialEq, Eq)]
pub enum Attached {
    /// The pointer was attached before to the same target: its counter went up, nothing to write.
    Again,
    /// Newly attached (or to a new target): write `value` to the device pointer at `slot_dev`.
    Write { slot_dev: u64, value: u64 },
}

/// A pointer whose device copy must get its host value back: the pointer's host address and
/// the device address of its device copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restore {
    pub ptr_addr: usize,
    pub slot_dev: u64,
}

#[derive(Default, Debug)]
pub struct PresentTable {
    map: BTreeMap<usize, Entry>,
    /// Attached pointers in all entries, so that removing an entry looks for pointers into it
    /// only when there are any.
    attachments: usize,
}

impl PresentTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry containing `[host, host+bytes)` (a zero-length range is treated as one byte),
    /// absent, or the partly-present error.
    /// A range that runs past the end of the address space (a byte count such as SIZE_MAX) is
    /// an invalid argument: no entry may wrap, so every other range check can add safely.
    pub fn lookup(
        &self,
        host: usize,
        bytes: usize,
        name: *const c_char,
    ) -> Result<Lookup, AccError> {
        let Some(end) = host.checked_add(bytes.max(1)) else {
            return Err(AccError::past_address_space(
                "data",
                host as u64,
                bytes,
                &cstr_lossy(name),
            ));
        };
        // The last entry starting below `end` is the only one that can overlap from the left or
        // contain the range; any other overlapping entry starts inside the range.
        if let Some((&k, e)) = self.map.range(..end).next_back() {
            if e.end() > host {
                if k <= host && e.end() >= end {
                    return Ok(Lookup::Present {
                        key: k,
                        dev: e.dev_of(host),
                    });
                }
                if let Some(keys) = self.span(host, end) {
                    let first = &self.map[&keys[0]];
                    return Ok(Lookup::Present {
                        key: keys[0],
                        dev: first.dev_of(host),
                    });
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

    /// The keys of the entries that hold `[host, end)` together, in address order, when they
    /// are members of one struct mapped together and the range lies in their device block
    /// (laid out as on the host; the bytes between the members, padding or members not
    /// mapped, were copied in with the block: src/members.rs). The whole struct mapped after
    /// its members (`enter data copyin(v.a[0:n], v.b[0:n])`, then `copyin(v)`) is present
    /// then. None otherwise.
    fn span(&self, host: usize, end: usize) -> Option<Vec<usize>> {
        let (&k0, first) = self.map.range(..=host).next_back()?;
        let block = first.block.as_ref()?;
        if host < block.host || end > block.host + block.bytes {
            return None;
        }
        let mut keys = vec![k0];
        let after = first.end().max(host);
        if after < end {
            for (&k, e) in self.map.range(after..end) {
                if !e.block.as_ref().is_some_and(|b| Arc::ptr_eq(b, block)) {
                    return None;
                }
                keys.push(k);
            }
        }
        (keys.len() > 1).then_some(keys)
    }

    /// The keys of the entries that hold `[host, host+bytes)`: the one that contains it, or the
    /// struct members that hold it together (laid out in one device block, as `lookup` finds
    /// them); none if it is not present.
    pub fn holding(&self, host: usize, bytes: usize) -> Vec<usize> {
        let Some(end) = host.checked_add(bytes.max(1)) else {
            return Vec::new();
        };
        match self.containing(host) {
            Some(e) if e.end() >= end => vec![e.host],
            _ => self.span(host, end).unwrap_or_default(),
        }
    }

    /// The first entry (by address) that overlaps `[host, end)`, if any.
    pub fn first_overlapping(&self, host: usize, end: usize) -> Option<&Entry> {
        if let Some(e) = self.containing(host) {
            return Some(e);
        }
        self.map.range(host..end.max(host)).next().map(|(_, e)| e)
    }

    /// The entry that contains the single address `host`, if any.
    pub fn containing(&self, host: usize) -> Option<&Entry> {
        self.map
            .range(..=host)
            .next_back()
            .map(|(_, e)| e)
            .filter(|e| e.end() > host)
    }

    pub fn containing_mut(&mut self, host: usize) -> Option<&mut Entry> {
        self.map
            .range_mut(..=host)
            .next_back()
            .map(|(_, e)| e)
            .filter(|e| e.end() > host)
    }

    /// The entry whose device range contains `dev` (acc_hostptr). Linear: rarely used.
    pub fn by_device(&self, dev: u64) -> Option<&Entry> {
        self.map
            .values()
            .find(|e| dev >= e.dev && dev < e.dev + e.bytes.max(1) as u64)
    }

    /// An entry whose device range overlaps `[dev, dev+bytes)` (acc_map_data). Linear.
    pub fn overlapping_device(&self, dev: u64, bytes: usize) -> Option<&Entry> {
        let end = dev + bytes.max(1) as u64;
        self.map
            .values()
            .find(|e| e.dev < end && dev < e.dev + e.bytes.max(1) as u64)
    }

    pub fn insert(&mut self, e: Entry) {
        self.attachments += e.attached.len();
        if let Some(old) = self.map.insert(e.host, e) {
            self.attachments -= old.attached.len();
        }
    }

    pub fn get_mut(&mut self, key: usize) -> Option<&mut Entry> {
        self.map.get_mut(&key)
    }

    pub fn get(&self, key: usize) -> Option<&Entry> {
        self.map.get(&key)
    }

    pub fn remove(&mut self, key: usize) -> Option<Entry> {
        let e = self.map.remove(&key)?;
        self.attachments -= e.attached.len();
        Some(e)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every entry, in address order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.map.values()
    }

    /// Every entry, removed (shutdown).
    pub fn drain(&mut self) -> Vec<Entry> {
        self.attachments = 0;
        std::mem::take(&mut self.map).into_values().collect()
    }

    /// The attach action for the pointer stored at host address `ptr_addr`, whose value is
    /// `target`: None if no entry contains the pointer; else, if the pointer is not attached to
    /// `target` yet, its device copy must get the device address of `target` (or NULL for a NULL
    /// pointer); an error if `target` is not present. With a `bias` (GCC's, for a section that
    /// does not start where the pointer points: `p[2:n]` has 16), the data present is looked up
    /// at `target + bias`, and the device pointer points as far before it as the host's does.
    pub fn attach(
        &mut self,
        ptr_addr: usize,
        target: usize,
        bias: usize,
    ) -> Option<Result<Attached, AccError>> {
        let section = target.wrapping_add(bias);
        let target_dev = if target == 0 {
            Some(0)
        } else {
            self.containing(section)
                .map(|e| e.dev.wrapping_add(target.wrapping_sub(e.host) as u64))
        };
        let e = self.containing_mut(ptr_addr)?;
        let slot_dev = e.dev_of(ptr_addr);
        if let Some(a) = e.attached.get_mut(&ptr_addr) {
            if a.target == target {
                a.count += 1;
                return Some(Ok(Attached::Again));
            }
        }
        let Some(value) = target_dev else {
            return Some(Err(AccError::NotPresent {
                host: section,
                bytes: 1,
                name: "attach target".into(),
            }));
        };
        let a = Attachment {
            count: 1,
            target,
            section,
        };
        if e.attached.insert(ptr_addr, a).is_none() {
            self.attachments += 1;
        }
        Some(Ok(Attached::Write { slot_dev, value }))
    }

    /// The detach action: the pointer's counter goes down (to zero with `finalize`); when it
    /// reaches zero the pointer is no longer attached and its device copy must get its host
    /// value back.
    pub fn detach(&mut self, ptr_addr: usize, finalize: bool) -> Option<Restore> {
        let e = self.containing_mut(ptr_addr)?;
        let slot_dev = e.dev_of(ptr_addr);
        let a = e.attached.get_mut(&ptr_addr)?;
        a.count = if finalize {
            0
        } else {
            a.count.saturating_sub(1)
        };
        if a.count > 0 {
            return None;
        }
        e.attached.remove(&ptr_addr);
        self.attachments -= 1;
        Some(Restore { ptr_addr, slot_dev })
    }

    /// Detaches every pointer (in any entry) whose target lies in `[host, host+bytes)`, data
    /// that is being deleted: their device copies must get their host values back (section
    /// 2.6.8: "When the device pointer target is deallocated, the pointer in device memory
    /// should be restored to the host value").
    pub fn detach_pointers_into(&mut self, host: usize, bytes: usize) -> Vec<Restore> {
        if self.attachments == 0 {
            return Vec::new();
        }
        let end = host + bytes.max(1);
        let mut restores = Vec::new();
        for e in self.map.values_mut() {
            let (base, dev) = (e.host, e.dev);
            e.attached.retain(|&ptr_addr, a| {
                let into = a.section >= host && a.section < end;
                if into {
                    restores.push(Restore {
                        ptr_addr,
                        slot_dev: dev + (ptr_addr - base) as u64,
                    });
                }
                !into
            });
        }
        self.attachments -= restores.len();
        restores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: usize, bytes: usize, dev: u64) -> Entry {
        let mut e = Entry::new(host, bytes, dev, std::ptr::null());
        e.structured = 1;
        e
    }

    #[test]
    fn contained_ranges_are_present_with_offset() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        assert_eq!(
            t.lookup(1000, 100, std::ptr::null()).unwrap(),
            Lookup::Present {
                key: 1000,
                dev: 5000
            }
        );
        assert_eq!(
            t.lookup(1010, 10, std::ptr::null()).unwrap(),
            Lookup::Present {
                key: 1000,
                dev: 5010
            }
        );
        assert_eq!(
            t.lookup(1099, 1, std::ptr::null()).unwrap(),
            Lookup::Present {
                key: 1000,
                dev: 5099
            }
        );
    }

    #[test]
    fn disjoint_ranges_are_absent() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        assert_eq!(
            t.lookup(900, 100, std::ptr::null()).unwrap(),
            Lookup::Absent
        );
        assert_eq!(t.lookup(1100, 8, std::ptr::null()).unwrap(), Lookup::Absent);
    }

    #[test]
    fn overlaps_are_partly_present() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        for (h, b) in [(950, 100), (1050, 100), (900, 300)] {
            assert!(
                matches!(
                    t.lookup(h, b, std::ptr::null()),
                    Err(AccError::PartlyPresent { .. })
                ),
                "{h} {b}"
            );
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

    #[test]
    fn attach_counts_per_target_and_detach_restores_at_zero() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000)); // holds the pointer at 1008
        t.insert(entry(2000, 64, 9000)); // its first target
        t.insert(entry(3000, 64, 7000)); // its second target
        assert_eq!(
            t.attach(1008, 2010, 0),
            Some(Ok(Attached::Write {
                slot_dev: 5008,
                value: 9010
            }))
        );
        assert_eq!(t.attach(1008, 2010, 0), Some(Ok(Attached::Again)));
        // A new target starts the count again at one.
        assert_eq!(
            t.attach(1008, 3000, 0),
            Some(Ok(Attached::Write {
                slot_dev: 5008,
                value: 7000
            }))
        );
        assert_eq!(
            t.detach(1008, false),
            Some(Restore {
                ptr_addr: 1008,
                slot_dev: 5008
            })
        );
        assert_eq!(t.detach(1008, false), None, "no longer attached");
        // NULL stays NULL; a target that is not present is an error; a pointer outside every entry, None.
        assert_eq!(
            t.attach(1016, 0, 0),
            Some(Ok(Attached::Write {
                slot_dev: 5016,
                value: 0
            }))
        );
        assert!(matches!(
            t.attach(1024, 4000, 0),
            Some(Err(AccError::NotPresent { .. }))
        ));
        assert_eq!(t.attach(500, 2000, 0), None);
        assert_eq!(t.attachments, 1);
    }

    /// The entries of struct members mapped together at `host` (each `(offset, bytes)`), in
    /// one device block at `dev`.
    fn members(t: &mut PresentTable, host: usize, dev: u64, parts: &[(usize, usize)]) {
        let end = parts.iter().map(|&(o, b)| o + b).max().unwrap();
        let block = DeviceBlock::new(dev, host, end, parts.len());
        for &(o, b) in parts {
            let mut e = entry(host + o, b, dev + o as u64);
            e.block = Some(Arc::clone(&block));
            t.insert(e);
        }
    }

    #[test]
    fn a_struct_block_is_freed_with_its_last_member() {
        let mut t = PresentTable::new();
        members(&mut t, 1000, 5000, &[(0, 8), (16, 8)]);
        // The gap between the members is not present.
        assert_eq!(t.lookup(1008, 8, std::ptr::null()).unwrap(), Lookup::Absent);
        let first = t.remove(1000).unwrap();
        assert_eq!(
            first.release_allocation(),
            None,
            "the other member still uses it"
        );
        let last = t.remove(1016).unwrap();
        assert_eq!(
            last.release_allocation(),
            Some(Allocation {
                dev: 5000,
                host: 1000,
                bytes: 24
            })
        );
        let mut own = entry(3000, 8, 7000);
        own.mapped = true;
        assert_eq!(own.release_allocation(), None, "acc_map_data's memory");
    }

    #[test]
    fn members_that_hold_a_range_together_are_present() {
        let mut t = PresentTable::new();
        members(&mut t, 1000, 5000, &[(0, 4), (8, 8)]);
        assert_eq!(
            t.lookup(1000, 16, std::ptr::null()).unwrap(),
            Lookup::Present {
                key: 1000,
                dev: 5000
            }
        );
        // Padding between members is in the block: the whole range is held by both.
        assert_eq!(t.holding(1000, 16), vec![1000, 1008]);
        assert_eq!(t.holding(1008, 8), vec![1008]);
        // Past the block, or across members of different blocks, it is partly present.
        assert!(t.lookup(1000, 24, std::ptr::null()).is_err());
        members(&mut t, 1016, 6000, &[(0, 8)]);
        assert!(t.lookup(1008, 16, std::ptr::null()).is_err());
        assert!(t.holding(1008, 16).is_empty());
    }

    #[test]
    fn a_biased_attach_finds_the_section_and_points_before_it() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000)); // holds the pointer at 1008
        t.insert(entry(2016, 480, 9016)); // p[2:60] of doubles, p = 2000
                                          // The pointer's value (2000) is not present, its section's start (2016) is.
        assert!(matches!(
            t.attach(1008, 2000, 0),
            Some(Err(AccError::NotPresent { .. }))
        ));
        assert_eq!(
            t.attach(1008, 2000, 16),
            Some(Ok(Attached::Write {
                slot_dev: 5008,
                value: 9000
            }))
        );
        // Deleting the section detaches it.
        assert_eq!(t.detach_pointers_into(2016, 480).len(), 1);
    }

    #[test]
    fn deleting_a_target_detaches_the_pointers_into_it() {
        let mut t = PresentTable::new();
        t.insert(entry(1000, 100, 5000));
        t.insert(entry(2000, 64, 9000));
        t.attach(1008, 2000, 0).unwrap().unwrap();
        t.attach(1016, 2060, 0).unwrap().unwrap();
        t.attach(1024, 0, 0).unwrap().unwrap();
        let mut r = t.detach_pointers_into(2000, 64);
        r.sort_by_key(|r| r.ptr_addr);
        assert_eq!(
            r,
            vec![
                Restore {
                    ptr_addr: 1008,
                    slot_dev: 5008
                },
                Restore {
                    ptr_addr: 1016,
                    slot_dev: 5016
                }
            ]
        );
        assert_eq!(t.attachments, 1, "the NULL pointer stays attached");
        // Removing the entry that holds the pointers drops their count too.
        t.remove(1000);
        assert_eq!(t.attachments, 0);
        assert!(t.detach_pointers_into(0, usize::MAX / 2).is_empty());
    }
}
