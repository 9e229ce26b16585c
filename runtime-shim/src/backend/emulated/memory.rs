//! The emulated device's memory: blocks of host memory kept apart from the program's heap.
//!
//! Large blocks are mappings of their own. Taken from the allocator instead, they came from
//! glibc's heap once its mmap threshold had risen after the first large free, and there
//! freed blocks stayed resident and fragmented it: 200 rounds of copyin/create/delete of 32 MB
//! and 10 MB arrays grew the resident memory from 34 MB to 263 MB, and each
//! acc_init/acc_shutdown cycle with two 32 MB arrays left about 18 MB more
//! (runtime-shim/tests/lifecycle.rs).
//!
//! Freed mappings are kept for a later block of the same length, up to [`CACHE_MAX`] bytes,
//! as device runtimes pool their allocations: a program that allocates and frees its arrays
//! on every iteration (the per-iteration copies the Laplace example shows) would otherwise
//! fault in fresh pages every time, which made that example 2.5x slower. The cache is given
//! back on shutdown and before a mapping that fails.
//!
//! Small blocks stay with the allocator: a page each would waste memory and mappings on
//! programs with many small present entries. Under the data-clause checker every block of a
//! page or more is a mapping (src/check/upload_watch.rs guards a device copy's pages).

use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::Mutex;

/// Blocks of at least this many bytes are mapped on their own.
const MAP_MIN: usize = 64 * 1024;
/// Alignment of every block (a cache line; device allocations are at least that aligned).
const ALIGN: usize = 64;
/// Freed mappings kept for reuse, in bytes.
const CACHE_MAX: usize = 512 << 20;

/// One block's size and how it was obtained, needed to give it back.
#[derive(Clone, Copy, Debug)]
pub struct Block {
    size: usize,
    /// The mapping's length (whole pages), or 0 for a block from the allocator.
    mapped: usize,
}

impl Block {
    pub fn size(&self) -> usize {
        self.size
    }
}

/// The device's allocator and its cache of freed mappings.
#[derive(Default)]
pub struct Memory {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// Freed mappings by length.
    free: HashMap<usize, Vec<usize>>,
    bytes: usize,
}

impl Memory {
    /// A block of `size` (> 0) bytes, or None when the system has no memory for it.
    pub fn alloc(&self, size: usize) -> Option<(*mut u8, Block)> {
        // The checker watches a kernel's accesses to a device copy by its pages, which must
        // then be the copy's alone.
        let map_min = if crate::check::on() {
            page_size()
        } else {
            MAP_MIN
        };
        if size < map_min {
            let layout = Layout::from_size_align(size, ALIGN).ok()?;
            // SAFETY: size > 0 (the caller's contract).
            let p = unsafe { std::alloc::alloc(layout) };
            return (!p.is_null()).then_some((p, Block { size, mapped: 0 }));
        }
        let len = size.checked_next_multiple_of(page_size())?;
        let block = Block { size, mapped: len };
        if let Some(p) = self.take_cached(len) {
            return Some((p as *mut u8, block));
        }
        map(len)
            .or_else(|| {
                self.release_cached();
                map(len)
            })
            .map(|p| (p, block))
    }

    /// Gives a block back: to the cache if it has room, else to the system.
    ///
    /// # Safety
    /// `p` and `block` come from one [`Memory::alloc`] call of this `Memory`, given back once.
    pub unsafe fn free(&self, p: *mut u8, block: Block) {
        if block.mapped == 0 {
            // SAFETY: allocated by alloc with this layout (the caller's contract).
            unsafe { std::alloc::dealloc(p, Layout::from_size_align_unchecked(block.size, ALIGN)) };
            return;
        }
        let mut cache = self.lock();
        if cache.bytes + block.mapped <= CACHE_MAX {
            cache.bytes += block.mapped;
            cache.free.entry(block.mapped).or_default().push(p as usize);
            return;
        }
        drop(cache);
        // SAFETY: mapped by alloc with this length (the caller's contract).
        unsafe { libc::munmap(p.cast(), block.mapped) };
    }

    /// Unmaps every cached mapping.
    pub fn release_cached(&self) {
        let free = {
            let mut cache = self.lock();
            cache.bytes = 0;
            std::mem::take(&mut cache.free)
        };
        for (len, ps) in free {
            for p in ps {
                // SAFETY: a mapping of this length that no block uses any more.
                unsafe { libc::munmap(p as *mut libc::c_void, len) };
            }
        }
    }

    fn take_cached(&self, len: usize) -> Option<usize> {
        let mut cache = self.lock();
        let p = cache.free.get_mut(&len)?.pop()?;
        cache.bytes -= len;
        Some(p)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn cached_bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        self.release_cached();
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// A fresh anonymous mapping of `len` bytes.
fn map(len: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_both_kinds_are_aligned_and_writable() {
        let mem = Memory::default();
        for size in [1, 100, MAP_MIN - 1, MAP_MIN, 3 * MAP_MIN + 5] {
            let (p, b) = mem.alloc(size).expect("memory");
            assert_eq!(b.size(), size);
            assert_eq!(b.mapped > 0, size >= MAP_MIN, "{size}");
            assert_eq!(p as usize % ALIGN, 0, "{size}");
            // SAFETY: the block has `size` writable bytes, given back once.
            unsafe {
                std::ptr::write_bytes(p, 0xa5, size);
                assert_eq!(*p.add(size - 1), 0xa5);
                mem.free(p, b);
            }
        }
    }

    #[test]
    fn a_freed_mapping_serves_the_next_block_of_its_length_and_the_cache_is_bounded() {
        let mem = Memory::default();
        let (p, b) = mem.alloc(MAP_MIN * 4).unwrap();
        // SAFETY: from alloc, given back once.
        unsafe { mem.free(p, b) };
        assert_eq!(mem.cached_bytes(), MAP_MIN * 4);
        // Another length maps afresh; the same length (rounded to pages) reuses.
        let (q, c) = mem.alloc(MAP_MIN * 8).unwrap();
        assert_ne!(q, p);
        let (r, d) = mem.alloc(MAP_MIN * 4 - 10).unwrap();
        assert_eq!(r, p);
        assert_eq!(mem.cached_bytes(), 0);
        // SAFETY: from alloc, given back once.
        unsafe {
            mem.free(q, c);
            mem.free(r, d);
        }
        mem.release_cached();
        assert_eq!(mem.cached_bytes(), 0);
        // Past the limit, freed mappings go back to the system.
        let big: Vec<_> = (0..3).map(|_| mem.alloc(CACHE_MAX / 2).unwrap()).collect();
        for (p, b) in big {
            // SAFETY: from alloc, given back once.
            unsafe { mem.free(p, b) };
        }
        assert_eq!(mem.cached_bytes(), CACHE_MAX);
    }
}
