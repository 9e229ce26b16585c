//! "Results dropped: a missing copyout?" On a device whose memory the host can read (the
//! emulated device), data that is only ever copied in (copyin, not copy or copyout) gets a
//! digest of its device copy when it is uploaded, computed in queue order after the upload; when
//! the data is released without a copy back, a job digests the device copy again once the work
//! queued before the release on every queue has run.
//! A difference means the device changed data whose changes are now thrown away, which on a GPU
//! is the classic missing `copyout`: one warning line per array, naming it and where the release
//! was called from. Nothing is done on other devices.
//!
//! Only with `ACCSHIM_DROP_CHECK=1`: a program may drop a copied-in array's changes on purpose
//! (a scratch array such as miniWeather's state_tmp, or the validation suite's tests that check
//! copyin copies nothing back), and a plain run of a correct program stays quiet. `accprof
//! check` (src/check) reports dropped results that the host then reads, which is the bug.

use crate::backend::HostJob;
use crate::error::Result;
use crate::present::Entry;
use crate::runtime::{Op, Runtime};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Not digested yet (the upload's job has not run, or the data could not be read).
const PENDING: u64 = u64::MAX;

/// A digest cell for a new copied-in entry, where the device's memory is readable and the
/// check is asked for (`ACCSHIM_DROP_CHECK=1`).
pub fn track(rt: &Runtime) -> Option<Arc<AtomicU64>> {
    // The checker (src/check) reports dropped results itself, with the host's read of them.
    (rt.backend.device_memory_is_host_readable() && asked() && !crate::check::on())
        .then(|| Arc::new(AtomicU64::new(PENDING)))
}

/// Whether the check was asked for (`ACCSHIM_DROP_CHECK=1`). Read once: this runs for every
/// copied-in entry, and getenv scans the whole environment.
pub fn asked() -> bool {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKED.get_or_init(|| crate::env::flag("ACCSHIM_DROP_CHECK"))
}

/// FNV-1a over 8-byte words (and the tail bytes): quick enough to run beside a memcpy.
fn digest(p: *const u8, bytes: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    // SAFETY: `p` is the device copy (host-readable memory) of `bytes` bytes, alive until the
    // queue's later jobs (its free) run.
    unsafe {
        let words = bytes / 8;
        for i in 0..words {
            // Rotated first: a plain xor-multiply keeps a change of a word's top bit in the
            // top bit only (negating an even number of doubles left the digest unchanged).
            h = (h.rotate_left(23) ^ (p as *const u64).add(i).read_unaligned())
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        for i in words * 8..bytes {
            h = (h ^ u64::from(*p.add(i))).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

struct Addr(usize);

/// Digests the device copy `[dev, dev+bytes)` into `cell` after the work queued so far.
pub fn record(op: &Op, dev: u64, bytes: usize, cell: Arc<AtomicU64>) -> Result<()> {
    let p = Addr(dev as usize);
    let job: HostJob = Box::new(move || {
        let p = p;
        cell.store(digest(p.0 as *const u8, bytes), Ordering::Release)
    });
    op.rt.backend.host_fn(op.q, job)
}

/// Arrays already warned about (by host address), so that a loop warns once.
static WARNED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// Queues the comparison for an entry released without a copy back: after the work queued so
/// far on every queue, which is what the release's free waits for (kernels on other queues may
/// still be writing the device copy), and before the free.
pub fn check(op: &Op, e: &Entry, cell: Arc<AtomicU64>) -> Result<()> {
    let (dev, host, bytes) = (Addr(e.dev as usize), e.host, e.bytes);
    let (name, descriptor) = (e.name_str(), e.descriptor);
    let site = crate::loc::call_site();
    let job: HostJob = Box::new(move || {
        let dev = dev;
        let before = cell.load(Ordering::Acquire);
        if before == PENDING || digest(dev.0 as *const u8, bytes) == before {
            return;
        }
        let first = WARNED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashSet::new)
            .insert(host);
        if first {
            let what = if name.is_empty() {
                static_name(host, descriptor).unwrap_or_default()
            } else {
                name
            };
            // Named when the program's name for it is known, its range otherwise.
            let what = if what.is_empty() {
                format!("[{host:#x},+{bytes}]")
            } else {
                format!("{what} ([{host:#x},+{bytes}])")
            };
            eprintln!(
                "accshim: warning: results dropped: the device copy of {what} was changed on the device and is released without a copy back{}: a missing copyout?",
                crate::loc::describe_site(site)
            );
        }
    });
    op.rt.backend.host_fn_after_all(op.q, job)
}

/// The program's name for data the clause did not name: the global array at `host`, or the
/// Fortran module array whose descriptor is at `descriptor`.
fn static_name(host: usize, descriptor: usize) -> Option<String> {
    use crate::elf_symbols::{data_symbol, source_name};
    let symbol = crate::loc::symbol_of(host).or_else(|| data_symbol(host));
    symbol
        .or_else(|| (descriptor != 0).then(|| data_symbol(descriptor)).flatten())
        .map(|s| source_name(&s))
}
