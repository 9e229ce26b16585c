//! Interning the C strings runtimes hand us (file, function, variable and kernel names).
//!
//! Runtimes pass the same pointers again and again (string literals, or names kept in their
//! own tables), so the cache is keyed by pointer. A pointer can be reused for a different string
//! (a freed and reallocated name), so a hit is confirmed by comparing the bytes, stopping at the
//! first difference so we never read past the string's terminator. A miss allocates (warm-up)
//! and takes a process-wide id.
//!
//! The recording threads put a small direct-mapped table in front ([`ThreadStrings`]): one
//! cache line per string, no hashing of the key beyond a multiply. A string in a read-only
//! segment of a loaded module (a literal: NVHPC's and GCC's names, file names) cannot change
//! while the module stays loaded, so its hits skip the comparison; the writer thread watches
//! the loader's count of unloaded modules and, when it moves, makes every thread compare
//! again ([`crate::hot::bump_strings_epoch`]). New definitions wait for the writer thread in
//! one list ([`take_new`]) and go into the live file at once.

use accprof_trace::StrId;
use std::collections::HashMap;
use std::ffi::c_char;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Mutex;

/// Ids are process-wide so that batches from different threads can be written in any order.
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Names longer than this are cut: a runtime handing us an unterminated buffer must not make us
/// walk memory.
const MAX_LEN: usize = 4096;

/// A multiplicative hash for pointer keys: SipHash costs more than the rest of the event.
#[derive(Default)]
pub struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ (n as u64 >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[derive(Debug, Default)]
pub struct StringCache {
    by_ptr: HashMap<usize, (StrId, Box<[u8]>), BuildHasherDefault<PtrHasher>>,
}

impl std::fmt::Debug for PtrHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PtrHasher")
    }
}

impl StringCache {
    /// The id of the NUL-terminated string at `p`; `None` for NULL. A new string is also pushed
    /// to `new_defs` so the caller can send its definition.
    ///
    /// # Safety
    /// `p` is NULL or points at a NUL-terminated string that stays valid during the call.
    #[inline]
    pub unsafe fn intern(
        &mut self,
        p: *const c_char,
        new_defs: &mut Vec<(StrId, Box<[u8]>)>,
    ) -> Option<StrId> {
        if p.is_null() {
            return None;
        }
        if let Some((id, stored)) = self.by_ptr.get(&(p as usize)) {
            // SAFETY: forwarded from the caller.
            if unsafe { same_c_string(p, stored) } {
                return Some(*id);
            }
        }
        // SAFETY: forwarded from the caller; the walk stops at MAX_LEN.
        let bytes = unsafe { bounded_c_bytes(p) };
        let id = StrId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        new_defs.push((id, bytes.clone().into()));
        let mut stored = bytes;
        stored.push(0);
        self.by_ptr.insert(p as usize, (id, stored.into()));
        Some(id)
    }
}

/// Definitions of strings first used by recording threads, until the writer takes them: it
/// takes them before it reads any event (so an event never comes before its names).
static NEW: Mutex<Vec<(StrId, Box<[u8]>)>> = Mutex::new(Vec::new());

/// The definitions added since the last call (writer thread, late path).
pub fn take_new() -> Vec<(StrId, Box<[u8]>)> {
    NEW.lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

/// Makes new definitions known: to the writer, and to the live file at once (a reader
/// recovering a killed run needs them before the events that use them).
#[cold]
fn define(defs: &mut Vec<(StrId, Box<[u8]>)>) {
    if let Some(live) = crate::recorder::live::get() {
        for (id, bytes) in defs.iter() {
            live.add_string(id.0, bytes);
        }
    }
    if let Ok(mut v) = NEW.lock() {
        v.append(defs);
    }
}

/// Texts defined by [`define_text`], so that the same text keeps one id.
static TEXTS: Mutex<Option<HashMap<Box<[u8]>, StrId>>> = Mutex::new(None);

/// The id of `text`, defined once for the whole process: for strings that have no lasting
/// address to key on (NVTX's wide strings, domain names, registered strings). Takes a lock:
/// for calls a program makes a few times, not per event.
pub fn define_text(text: &[u8]) -> StrId {
    let text = &text[..text.len().min(MAX_LEN)];
    let Ok(mut map) = TEXTS.lock() else {
        return StrId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
    };
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(&id) = map.get(text) {
        return id;
    }
    let id = StrId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
    map.insert(text.into(), id);
    define(&mut vec![(id, text.into())]);
    id
}

/// Sorted, non-overlapping address ranges of the loaded modules' read-only segments, as last
/// published (leaked: replaced only when the loader's module list changes, rarely).
static READ_ONLY: AtomicPtr<Vec<(u64, u64)>> = AtomicPtr::new(std::ptr::null_mut());

/// Publishes the read-only ranges (registration, and the writer when modules changed).
pub fn publish_read_only(mut ranges: Vec<(u64, u64)>) {
    ranges.sort_unstable();
    let p = Box::into_raw(Box::new(ranges));
    // The previous list is leaked: a recording thread may be reading it.
    READ_ONLY.store(p, Ordering::Release);
}

/// Whether the NUL-terminated string at `p` of `len` bytes lies in a read-only segment.
fn read_only(p: usize, len: usize) -> bool {
    let ranges = READ_ONLY.load(Ordering::Acquire);
    if ranges.is_null() {
        return false;
    }
    // SAFETY: published lists are never freed.
    let ranges = unsafe { &*ranges };
    let (a, b) = (p as u64, (p + len + 1) as u64);
    let i = ranges.partition_point(|&(s, _)| s <= a);
    i > 0 && ranges[i - 1].1 >= b
}

/// Entries of a thread's table (32 bytes each): far more strings than a runtime passes.
const ENTRIES: usize = 256;

/// One string a thread has seen, found by its pointer.
#[derive(Clone, Copy)]
struct Entry {
    ptr: usize,
    id: u32,
    /// The strings epoch at which the string was found read-only (its hits need no
    /// comparison while the epoch stays); 0: compare on every hit.
    trusted: u32,
    /// Its bytes, NUL included, in the thread's [`StringCache`] (stable: boxed).
    stored: *const u8,
    stored_len: usize,
}

const EMPTY: Entry = Entry {
    ptr: 0,
    id: 0,
    trusted: 0,
    stored: std::ptr::null(),
    stored_len: 0,
};

/// Strings a thread met lately that need no comparison while the strings epoch stays, inside
/// the thread's state (its page: docs/performance/libaccprof.md): a named event finds its
/// variable or kernel name here without touching the table's two pages.
const FRONT: usize = 8;

#[derive(Clone, Copy)]
struct Front {
    ptr: usize,
    id: u32,
    /// The strings epoch the string was trusted at (0: unused; epochs are never 0).
    trusted: u32,
}

const NO_FRONT: Front = Front {
    ptr: 0,
    id: 0,
    trusted: 0,
};

/// A recording thread's strings: a few trusted ones inline, then a direct-mapped table in
/// front of a [`StringCache`].
// repr(C): what every callback reads first, in one cache line.
#[repr(C)]
pub struct ThreadStrings {
    front: [Front; FRONT],
    entries: Box<[Entry; ENTRIES]>,
    /// The last source file and function pointers, and the record word their ids made: a
    /// runtime passes the same pair for every event of a construct. Valid while `epoch` is the
    /// strings epoch (0: never; set only when both were trusted or NULL).
    file_func: FileFunc,
    all: StringCache,
    defs: Vec<(StrId, Box<[u8]>)>,
}

#[derive(Clone, Copy)]
struct FileFunc {
    file: usize,
    func: usize,
    epoch: u32,
    word: u64,
}

// SAFETY: the raw pointers in `entries` point into `all`'s boxed strings, which move with it.
unsafe impl Send for ThreadStrings {}

impl Default for ThreadStrings {
    fn default() -> Self {
        Self {
            front: [NO_FRONT; FRONT],
            entries: Box::new([EMPTY; ENTRIES]),
            file_func: FileFunc {
                file: 0,
                func: 0,
                epoch: 0,
                word: 0,
            },
            all: StringCache::default(),
            defs: Vec::new(),
        }
    }
}

impl ThreadStrings {
    /// The id of the NUL-terminated string at `p`; `None` for NULL.
    ///
    /// # Safety
    /// `p` is NULL or points at a NUL-terminated string that stays valid during the call.
    #[inline]
    pub unsafe fn intern(&mut self, p: *const c_char) -> Option<StrId> {
        // SAFETY: forwarded.
        unsafe { self.intern_trusted(p) }.0
    }

    /// As [`intern`](Self::intern), and whether the string may be trusted without comparing
    /// its bytes while the strings epoch stays (NULL: yes).
    ///
    /// # Safety
    /// As for [`intern`](Self::intern).
    #[inline]
    unsafe fn intern_trusted(&mut self, p: *const c_char) -> (Option<StrId>, bool) {
        if p.is_null() {
            return (None, true);
        }
        let key = p as usize;
        let epoch = crate::hot::strings_epoch();
        let f = &mut self.front[slot_of(key) % FRONT];
        if f.ptr == key && f.trusted == epoch {
            return (Some(StrId(f.id)), true);
        }
        let e = &self.entries[slot_of(key)];
        if e.ptr == key {
            if e.trusted == epoch {
                *f = Front {
                    ptr: key,
                    id: e.id,
                    trusted: epoch,
                };
                return (Some(StrId(e.id)), true);
            }
            // SAFETY: `stored` points at `stored_len` bytes owned by `all` (see Entry), and
            // `p` is the caller's string.
            if unsafe { same_c_string(p, std::slice::from_raw_parts(e.stored, e.stored_len)) } {
                return (Some(StrId(e.id)), false);
            }
        }
        // SAFETY: forwarded from the caller.
        let id = unsafe { self.miss(p) };
        let e = &self.entries[slot_of(key)];
        (id, e.ptr == key && e.trusted == crate::hot::strings_epoch())
    }

    /// A raw record's file-and-function word (`file id + 1 | function id + 1 << 32`, 0 for
    /// none) for the source file and function name pointers of an `acc_prof_info`.
    ///
    /// # Safety
    /// Each pointer is NULL or points at a NUL-terminated string valid during the call.
    #[inline(always)]
    pub unsafe fn file_func(&mut self, file: *const c_char, func: *const c_char) -> u64 {
        let c = &self.file_func;
        if c.file == file as usize
            && c.func == func as usize
            && c.epoch == crate::hot::strings_epoch()
        {
            return c.word;
        }
        // SAFETY: forwarded.
        unsafe { self.file_func_miss(file, func) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn file_func_miss(&mut self, file: *const c_char, func: *const c_char) -> u64 {
        // SAFETY: forwarded.
        let ((f, f_trusted), (g, g_trusted)) =
            unsafe { (self.intern_trusted(file), self.intern_trusted(func)) };
        let id = |s: Option<StrId>| s.map_or(0, |s| u64::from(s.0) + 1);
        let word = id(f) | id(g) << 32;
        self.file_func = FileFunc {
            file: file as usize,
            func: func as usize,
            epoch: if f_trusted && g_trusted {
                crate::hot::strings_epoch()
            } else {
                0
            },
            word,
        };
        word
    }

    #[cold]
    #[inline(never)]
    unsafe fn miss(&mut self, p: *const c_char) -> Option<StrId> {
        // SAFETY: forwarded from the caller.
        let id = unsafe { self.all.intern(p, &mut self.defs) }?;
        if !self.defs.is_empty() {
            define(&mut self.defs);
        }
        let key = p as usize;
        let (stored, stored_len) = self
            .all
            .by_ptr
            .get(&key)
            .map(|(_, b)| (b.as_ptr(), b.len()))
            .unwrap_or((std::ptr::null(), 0));
        let trusted = if read_only(key, stored_len.saturating_sub(1)) {
            crate::hot::strings_epoch()
        } else {
            0
        };
        self.entries[slot_of(key)] = Entry {
            ptr: key,
            id: id.0,
            trusted,
            stored,
            stored_len,
        };
        Some(id)
    }
}

/// The table entry of a pointer: the high bits of a multiplicative hash.
#[inline(always)]
fn slot_of(key: usize) -> usize {
    ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % ENTRIES
}

/// Whether the C string at `p` equals `stored` (which keeps its NUL terminator), reading no
/// byte past `p`'s terminator: strncmp stops at the first NUL of either string.
#[inline]
unsafe fn same_c_string(p: *const c_char, stored: &[u8]) -> bool {
    // SAFETY: both are NUL-terminated within `stored.len()` bytes or compare unequal first.
    unsafe { libc::strncmp(p, stored.as_ptr() as *const c_char, stored.len()) == 0 }
}

unsafe fn bounded_c_bytes(p: *const c_char) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..MAX_LEN {
        // SAFETY: we stop at the terminator.
        let b = unsafe { *p.add(i) } as u8;
        if b == 0 {
            return out;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_finds_the_same_id_for_each_pointer_however_its_names_collide() {
        // More read-only names than the inline entries and the table hold without collisions:
        // every lookup after the first returns the id the first gave that pointer.
        const NAMES: [&std::ffi::CStr; 12] = [
            c"A",
            c"Anew",
            c"b",
            c"c",
            c"main$_omp_fn$0",
            c"main$_omp_fn$1",
            c"error",
            c"n",
            c"grid",
            c"u",
            c"v",
            c"w",
        ];
        // The names are in this binary's read-only data: trusted, so the inline entries take them.
        let at = |n: &&std::ffi::CStr| n.as_ptr() as u64;
        let lo = NAMES.iter().map(at).min().unwrap();
        let hi = NAMES.iter().map(at).max().unwrap() + 64;
        publish_read_only(vec![(lo, hi)]);
        let mut s = ThreadStrings::default();
        // SAFETY: the names are NUL-terminated statics.
        let first: Vec<_> = NAMES
            .iter()
            .map(|n| unsafe { s.intern(n.as_ptr()) })
            .collect();
        for round in 0..4 {
            for (i, n) in NAMES.iter().enumerate().rev().skip(round) {
                // SAFETY: as above.
                assert_eq!(unsafe { s.intern(n.as_ptr()) }, first[i], "{n:?}");
            }
        }
        let ids: std::collections::HashSet<_> = first.iter().collect();
        assert_eq!(ids.len(), NAMES.len(), "distinct names, distinct ids");
        assert!(
            s.front.iter().filter(|f| f.trusted != 0).count() > 1,
            "the inline entries were used"
        );
    }

    #[test]
    fn same_pointer_same_id_changed_content_new_id() {
        let mut cache = StringCache::default();
        let mut defs = Vec::new();
        let mut buf = *b"Anew\0\0";
        let p = buf.as_ptr() as *const c_char;
        // SAFETY: `buf` is a live local array that always holds a NUL within its bounds, and it
        // is not written while `intern` reads it (the same holds for the calls below).
        let a = unsafe { cache.intern(p, &mut defs) }.unwrap();
        // SAFETY: as above.
        let b = unsafe { cache.intern(p, &mut defs) }.unwrap();
        assert_eq!(a, b);
        assert_eq!(defs.len(), 1);
        buf[0] = b'B';
        // SAFETY: as above; `buf` is now "Bnew\0\0".
        let c = unsafe { cache.intern(buf.as_ptr() as *const c_char, &mut defs) }.unwrap();
        assert_ne!(a, c);
        assert_eq!(&*defs[1].1, b"Bnew");
        buf[2] = 0; // shorter string at the same address
                    // SAFETY: as above; `buf` is now "Bn\0w\0\0".
        let d = unsafe { cache.intern(buf.as_ptr() as *const c_char, &mut defs) }.unwrap();
        assert_eq!(&*defs[2].1, b"Bn");
        assert_ne!(c, d);
        // SAFETY: NULL is allowed by `intern`'s contract.
        assert_eq!(unsafe { cache.intern(std::ptr::null(), &mut defs) }, None);
    }
}
