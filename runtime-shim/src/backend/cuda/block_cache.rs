//! Freed device blocks, kept for a later allocation of the same size, as device runtimes pool
//! their allocations: a program that maps and unmaps its arrays on every construct (GCC's naive
//! Laplace: two 128 MiB arrays, twice per iteration) would otherwise pay a cuMemAlloc and a
//! cuMemFree, which waits for the whole device, each time. A block is kept only once the work queued
//! on every stream before its release has run (Cuda::free), so handing it out again for any
//! queue is safe. Up to
//! [`CACHE_MAX`] bytes are kept; all are given back before an allocation that fails and at
//! shutdown.

use cudarc::driver::sys;
use std::collections::HashMap;
use std::sync::Mutex;

/// Bytes of freed blocks kept.
const CACHE_MAX: usize = 2 << 30;

#[derive(Default)]
pub struct BlockCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_size: HashMap<usize, Vec<u64>>,
    bytes: usize,
}

impl BlockCache {
    /// A kept block of exactly `bytes`, if any.
    pub fn take(&self, bytes: usize) -> Option<u64> {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let d = c.by_size.get_mut(&bytes)?.pop()?;
        c.bytes -= bytes;
        Some(d)
    }

    /// Keeps the freed block `dev` of `bytes` (false: the cache is full, free it).
    pub fn keep(&self, dev: u64, bytes: usize) -> bool {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if c.bytes + bytes > CACHE_MAX {
            return false;
        }
        c.bytes += bytes;
        c.by_size.entry(bytes).or_default().push(dev);
        true
    }

    /// Frees every kept block (the context must be current); true if there was any.
    pub fn release_all(&self) -> bool {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let any = c.bytes > 0;
        for (_, blocks) in c.by_size.drain() {
            for d in blocks {
                // SAFETY: a block from cuMemAlloc that nothing uses any more.
                unsafe { sys::cuMemFree_v2(d) };
            }
        }
        c.bytes = 0;
        any
    }
}
