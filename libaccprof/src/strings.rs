//! Interning the C strings runtimes hand us (file, function, variable and kernel names).
//!
//! Runtimes pass the same pointers again and again (string literals, or names kept in their
//! own tables), so the cache is keyed by pointer. A pointer can be reused for a different string
//! (a freed and reallocated name), so a hit is confirmed by comparing the bytes, stopping at the
//! first difference so we never read past the string's terminator. A miss allocates (warm-up)
//! and takes a process-wide id; the definition travels with the thread's next batch.

use accprof_trace::StrId;
use std::collections::HashMap;
use std::ffi::c_char;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};

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
