//! The checker's side of each runtime operation. The data hooks run where the operation's
//! effect happens: copies and kernels in queue order on the thread that does them (so an async
//! queue's copy is checked when it copies), mappings on the program's thread.

use super::guard::{self, Watch};
use super::origin;
use super::pages;
use super::state::{self, access_of, Finding, HostAccess, Place, Released, State, Tracked};
use super::upload_watch::{self, Verdict};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static ON: AtomicBool = AtomicBool::new(false);

/// Whether the checker runs (set once, when the emulated device starts with ACCSHIM_CHECK).
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Where the program called a data routine of the runtime API (acc_copyin, acc_copyout, ...)
/// from, for as long as the value lives, when checking and not inside a directive's entry
/// point (which knows its own): the first word on the stack above this frame that points into
/// the program's code, the return address of its call (for Fortran, through the language
/// runtime's wrapper). Without it, what such a call maps is reported at no line.
pub fn api_call_site() -> Option<crate::loc::CallSite> {
    if !on() || crate::loc::call_site() != 0 {
        return None;
    }
    let marker = 0u8;
    let sp = std::hint::black_box(&marker) as *const u8 as usize;
    let words = [const { std::sync::atomic::AtomicUsize::new(0) }; origin::STACK_WORDS];
    origin::save_stack(sp, &words);
    let ret = words[0].load(Ordering::Relaxed);
    (ret != 0).then(|| crate::loc::CallSite::enter(ret))
}

pub(super) fn enable() {
    ON.store(true, Ordering::Release);
}

/// Transfers smaller than this are not reported as waste: scalars and small structs cost
/// nothing worth a change.
const WASTE_MIN_BYTES: usize = 4096;

fn same(host: usize, dev: u64, bytes: usize) -> bool {
    let _open = guard::window(host, host + bytes);
    // SAFETY: the host range is the program's mapped data (readable: the caller lifted any
    // guard that forbids reading) and the device range is the emulated device's copy of it.
    unsafe {
        std::slice::from_raw_parts(host as *const u8, bytes)
            == std::slice::from_raw_parts(dev as usize as *const u8, bytes)
    }
}

/// Whether some page of the array holds the same bytes in both copies.
fn some_page_unchanged(host: usize, dev: u64, bytes: usize) -> bool {
    let p = pages::page_size();
    let mut at = host;
    while at < host + bytes {
        let end = ((at / p) + 1) * p;
        let n = end.min(host + bytes) - at;
        if same(at, dev + (at - host) as u64, n) {
            return true;
        }
        at += n;
    }
    false
}

fn digest(dev: u64, bytes: usize) -> u64 {
    // SAFETY: the emulated device's memory for this array.
    let b = unsafe { std::slice::from_raw_parts(dev as usize as *const u8, bytes) };
    // Rotated before each word: a plain xor-multiply (FNV) keeps a change of a word's top bit
    // in the top bit only, so negating an even number of doubles gave the same digest.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in b.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h
}

fn lift(t: &mut Tracked) {
    if let Some((slot, _)) = t.guard.take() {
        release_slot(t.host, slot);
    }
}

/// Shared first or last pages (bit 0, bit 1) that guards of the array at a host address gave
/// up because a neighbour there was too busy: its next guards leave them out from the start.
static NOISY: Mutex<BTreeMap<usize, u8>> = Mutex::new(BTreeMap::new());

/// Frees a guard's slot, remembering the shared pages it gave up.
fn release_slot(host: usize, slot: usize) {
    let given = guard::given_up(slot);
    guard::release(slot);
    if given != 0 {
        *NOISY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(host)
            .or_default() |= given;
    }
}

/// Arrays smaller than this are checked by content only: a guard on a scalar's page would
/// trap every access to the variables beside it.
const GUARD_MIN_BYTES: usize = 256;

/// The pages to guard for the array at `host`, and the shared first or last page to leave
/// out (bit 0, bit 1) because earlier guards found them too busy; None when it is not guarded:
/// on a thread's stack (a frame that returns leaves the pages to the next frames, and a fault
/// on the page a signal frame would go to cannot be handled), or too small.
fn guard_pages(host: usize, bytes: usize, on_stack: bool) -> Option<((usize, usize), u8)> {
    // Constant data (in a read-only mapping) cannot change, and its pages must stay
    // read-only after a guard.
    if on_stack || bytes < GUARD_MIN_BYTES || crate::host_memory::is_read_only(host) {
        return None;
    }
    let pages = pages::covering(host, bytes)?;
    let noisy = NOISY.lock().unwrap_or_else(|e| e.into_inner());
    Some((pages, noisy.get(&host).copied().unwrap_or(0)))
}

/// Guards the host copy of the tracked array at `key` with `watch`.
fn arm(st: &mut State, key: usize, watch: Watch) {
    let Some(t) = st.tracked.get(&key) else {
        return;
    };
    let p = guard_pages(t.host, t.bytes, t.on_stack);
    let t = st.tracked.get_mut(&key).expect("present");
    lift(t);
    if let Some((pages, skip)) = p {
        let dev = if watch == Watch::Stale { t.dev } else { 0 };
        t.guard = guard::arm(pages, (t.host, t.host + t.bytes), watch, dev, skip)
            .map(|slot| (slot, watch));
    }
}

/// Whether `addr` lies in the calling thread's stack.
fn on_this_stack(addr: usize) -> bool {
    thread_local! {
        static STACK: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
    }
    let (lo, hi) = STACK.with(|s| {
        if s.get() == (0, 0) {
            s.set(stack_bounds());
        }
        s.get()
    });
    addr >= lo && addr < hi
}

fn stack_bounds() -> (usize, usize) {
    // SAFETY: pthread_getattr_np fills the attribute object, which is destroyed after use.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let mut base: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut base, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            (base as usize, base as usize + size)
        } else {
            (0, 0)
        }
    }
}

/// Turns the guards that fired since the last look into what they mean.
fn harvest(st: &mut State) {
    let mut found = Vec::new();
    let mut seen = Vec::new();
    for t in st.tracked.values_mut() {
        let Some((slot, watch)) = t.guard else {
            continue;
        };
        if !guard::fired(slot) {
            continue;
        }
        t.guard = None;
        let (at, write, who, time_ns) = access_of(slot);
        release_slot(t.host, slot);
        match who {
            origin::KERNEL => found.push(Finding {
                kind: "host_memory_in_kernel",
                host: t.host,
                bytes: t.bytes,
                name: t.name.clone(),
                at: at.clone(),
                construct: Place::Unknown,
                other: Place::Unknown,
                write,
                detail: "",
            }),
            origin::HOST => {
                seen.push(HostAccess {
                    host: t.host,
                    bytes: t.bytes,
                    at: at.clone(),
                    write,
                    time_ns,
                });
                match watch {
                    Watch::Stale => found.push(Finding {
                        kind: "stale_host_read",
                        host: t.host,
                        bytes: t.bytes,
                        name: t.name.clone(),
                        at,
                        construct: t.changed_by.clone().unwrap_or_default(),
                        other: Place::Unknown,
                        write,
                        detail: "",
                    }),
                    Watch::Synced => t.host_wrote = Some((at, write)),
                    Watch::Released => {}
                }
            }
            _ => {}
        }
    }
    let fired: Vec<usize> = st
        .released
        .iter()
        .filter(|(_, r)| r.guard.is_some_and(guard::fired))
        .map(|(&k, _)| k)
        .collect();
    for k in fired {
        let r = st.released.remove(&k).expect("listed");
        let slot = r.guard.expect("fired");
        let (at, write, who, time_ns) = access_of(slot);
        release_slot(r.host, slot);
        if who != origin::HOST {
            continue;
        }
        seen.push(HostAccess {
            host: r.host,
            bytes: r.bytes,
            at: at.clone(),
            write,
            time_ns,
        });
        // Lost results matter when the host reads them (a scratch array copied in and
        // changed on the device is no bug while the host never looks at it again).
        if let (Some((release, kernel)), false) = (r.dropped, write) {
            found.push(Finding {
                kind: "results_dropped",
                host: r.host,
                bytes: r.bytes,
                name: r.name,
                at: release,
                construct: kernel,
                other: at,
                write,
                detail: "",
            });
        }
    }
    st.accesses.extend(seen);
    for f in found {
        st.add(f);
    }
}

/// A new entry of the present table: `host` is mapped at `dev` by clause `kind` at `site`.
/// Closes the watch on a released array at the same place: sending it back untouched (or
/// with the results it lost) is a finding.
/// `uploads`: the clause copies the host's data in.
pub fn mapped(host: usize, bytes: usize, dev: u64, uploads: bool, name: String, site: usize) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    harvest(&mut st);
    let overlapping: Vec<usize> = st
        .released
        .range(..host + bytes.max(1))
        .filter(|(_, r)| r.host + r.bytes > host)
        .map(|(&k, _)| k)
        .collect();
    for k in overlapping {
        let r = st.released.remove(&k).expect("listed");
        if let Some(slot) = r.guard {
            release_slot(r.host, slot);
        }
        if !uploads {
            continue;
        }
        if let Some((release, kernel)) = r.dropped {
            // Sent back to the device with the host's old values: the results are lost.
            st.add(Finding {
                kind: "results_dropped",
                host: r.host,
                bytes: r.bytes,
                name: r.name.clone(),
                at: release,
                construct: kernel,
                other: Place::Call(site),
                write: false,
                detail: "",
            });
        } else if let Some(download) = r.download.filter(|_| r.bytes >= WASTE_MIN_BYTES) {
            st.add(Finding {
                kind: "unused_transfer",
                host: r.host,
                bytes: r.bytes,
                name: r.name.clone(),
                at: download,
                construct: Place::Call(site),
                other: Place::Unknown,
                write: false,
                detail: "",
            });
        }
    }
    st.tracked.insert(
        host,
        Tracked {
            host,
            bytes,
            dev,
            name,
            mapped_at: Place::Call(site),
            on_stack: on_this_stack(host),
            holds_pointers: false,
            synced_digest: None,
            defined: false,
            from_host: false,
            changed_by: None,
            host_wrote: None,
            guard: None,
            pending_upload: None,
            redundant_download: false,
            synced_from_snapshot: false,
        },
    );
}

/// Before a copy host -> device (queue order).
/// Returns the pages to keep open while the copy reads the host's bytes.
pub fn before_upload(host: usize, dev: u64, bytes: usize, site: usize) -> guard::Window {
    let _runtime = origin::runtime_scope();
    let copy = guard::window(host, host + bytes);
    let mut st = state::lock();
    harvest(&mut st);
    let Some(t) = st.tracked_at(host) else {
        return copy;
    };
    if t.guard.is_some_and(|(_, w)| w == Watch::Stale) {
        lift(t);
    }
    let redundant = t.defined && bytes >= WASTE_MIN_BYTES && same(host, dev, bytes);
    let (th, tb, name) = (t.host, t.bytes, t.name.clone());
    if redundant {
        st.add(Finding {
            kind: "redundant_transfer",
            host: th,
            bytes: tb,
            name,
            at: Place::Call(site),
            construct: Place::Unknown,
            other: Place::Unknown,
            write: false,
            detail: "",
        });
    }
    copy
}

/// After a copy host -> device: the copies agree on the range.
/// `snapshot`: the copy was of the host's bytes as they were when it was queued.
pub fn after_upload(host: usize, _dev: u64, bytes: usize, site: usize, snapshot: bool) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    let Some(t) = st.tracked_at(host) else { return };
    t.defined = true;
    t.from_host = true;
    if host == t.host && bytes >= t.bytes {
        t.changed_by = None;
        t.host_wrote = None;
        t.synced_from_snapshot = snapshot;
        t.pending_upload = Some(Place::Call(site));
        let key = t.host;
        arm(&mut st, key, Watch::Synced);
        note_sync(&mut st, key);
    }
}

thread_local! {
    /// This thread is releasing data (its copy back is the release's, not an update's).
    static RELEASING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the copies enqueued by this thread until dropped as copies back at a release.
pub fn release_scope() -> impl Drop {
    struct Scope(bool);
    impl Drop for Scope {
        fn drop(&mut self) {
            RELEASING.with(|r| r.set(self.0));
        }
    }
    Scope(RELEASING.with(|r| r.replace(true)))
}

/// The site a copy enqueued now is reported at: the call's, or 0 for a copy back at a release
/// (reported at the directive that mapped the data, whose clause says copy).
pub fn copy_site() -> usize {
    if RELEASING.with(std::cell::Cell::get) {
        0
    } else {
        crate::loc::call_site()
    }
}

/// Before a copy device -> host: lifts the guard (the copy writes the host's pages) and finds
/// a copy of what the host already holds.
/// Returns the pages to keep open while the copy writes the host's bytes.
pub fn before_download(host: usize, dev: u64, bytes: usize, site: usize) -> guard::Window {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    harvest(&mut st);
    let Some(t) = st.tracked_at(host) else {
        return guard::window(host, host + bytes);
    };
    lift(t);
    let at = if site == 0 {
        t.mapped_at.clone()
    } else {
        Place::Call(site)
    };
    let redundant =
        t.defined && !t.holds_pointers && bytes >= WASTE_MIN_BYTES && same(host, dev, bytes);
    t.redundant_download = redundant;
    let (th, tb, name, kernel) = (t.host, t.bytes, t.name.clone(), t.changed_by.clone());
    if redundant {
        st.add(Finding {
            kind: "redundant_transfer",
            host: th,
            bytes: tb,
            name,
            at,
            construct: kernel.unwrap_or_default(),
            other: Place::Unknown,
            write: true,
            detail: "",
        });
    }
    guard::window(host, host + bytes)
}

/// After a copy device -> host.
pub fn after_download(host: usize, _dev: u64, bytes: usize) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    let Some(t) = st.tracked_at(host) else { return };
    if host == t.host && bytes >= t.bytes {
        t.changed_by = None;
        t.host_wrote = None;
        t.synced_from_snapshot = false;
        t.from_host = true;
        t.defined = true;
        let key = t.host;
        arm(&mut st, key, Watch::Synced);
        note_sync(&mut st, key);
    }
}

/// The arrays a kernel is given (by their device addresses).
fn used_by(st: &State, args: &[u64]) -> Vec<usize> {
    st.tracked
        .values()
        .filter(|t| {
            args.iter()
                .any(|&a| a >= t.dev && a < t.dev + t.bytes.max(1) as u64)
        })
        .map(|t| t.host)
        .collect()
}

/// What the checker notes before a kernel runs, for [`kernel_ends`].
#[derive(Default)]
pub struct Before {
    /// Digests of the device copies of never-filled arrays the kernel is given.
    digests: Vec<(usize, u64)>,
    /// Uploads watched for the kernel's first accesses: (array, watch, the upload).
    watched: Vec<(usize, usize, Place)>,
    /// Big uploads first compared with what the kernel left: (array, the upload's key).
    compared: Vec<(usize, UploadKey)>,
}

/// An upload as the checker judges it: (the upload's place, the kernel's, the bytes).
pub type UploadKey = (usize, usize, usize);

/// Uploads of at most this many bytes are watched the first time; a bigger one (a fault per
/// page) only when the first kernel changed every one of its pages, the next time it comes.
const WATCH_AT_ONCE_BYTES: usize = 256 * 1024;

impl Before {
    /// The kernel must run on one thread: an upload it uses is watched access by access.
    pub fn serial(&self) -> bool {
        !self.watched.is_empty()
    }
}

/// Before a kernel runs (queue order): a device copy it uses that the host changed since the
/// copies last agreed is stale; an upload it uses that no kernel read yet is watched.
pub fn kernel_starts(args: &[u64], site: usize) -> Before {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    harvest(&mut st);
    let mut before = Before::default();
    let mut found = Vec::new();
    for host in used_by(&st, args) {
        let t = st.tracked.get_mut(&host).expect("listed");
        let upload = t.pending_upload.take();
        if !t.defined {
            before.digests.push((host, digest(t.dev, t.bytes)));
            continue;
        }
        // Where a kernel changed the device copy, content cannot tell which side changed.
        let comparable = !t.holds_pointers
            && t.changed_by.is_none()
            && !t.guard.is_some_and(|(_, w)| w == Watch::Stale);
        // A host write a guard saw; or, for an unguarded copy (on the stack, too small to
        // guard), the host's bytes no longer those the copies agreed on while the device's
        // still are (a kernel on another queue may be changing them now: the device copy is
        // read after the comparison, so a change it made by then shows), unless they were
        // uploaded from a snapshot (an async queue's small copies are taken when queued),
        // which the host may change at once, as it may.
        // A guarded copy the host did not write is not compared: that would read every
        // array of every kernel.
        let unwatched = t.guard.is_none() && !t.synced_from_snapshot && t.synced_digest.is_some();
        if comparable
            && (t.host_wrote.is_some() || unwatched)
            && !same(t.host, t.dev, t.bytes)
            && (t.host_wrote.is_some() || t.synced_digest == Some(digest(t.dev, t.bytes)))
        {
            // Where the host wrote, when a guard saw it; else where the copies last agreed.
            let (at, detail) = match t.host_wrote.take() {
                Some((p, _)) => (p, ""),
                None => (
                    upload.clone().unwrap_or_else(|| t.mapped_at.clone()),
                    "unwatched",
                ),
            };
            found.push(Finding {
                kind: "stale_device_read",
                host: t.host,
                bytes: t.bytes,
                name: t.name.clone(),
                at,
                construct: Place::Call(site),
                other: Place::Unknown,
                write: true,
                detail,
            });
            // Reported once: the copies are taken to differ from here on.
            t.from_host = false;
            lift(t);
            continue;
        }
        // An upload is judged once per place (a loop repeats it): the first kernel to use it
        // says whether it read what was sent.
        let Some(upload) = upload.filter(|_| t.bytes >= WASTE_MIN_BYTES && !t.holds_pointers)
        else {
            continue;
        };
        let (dev, bytes) = (t.dev as usize, t.bytes);
        let key = (place_key(&upload), site, bytes);
        if st.judged.contains(&key) {
            continue;
        }
        if bytes > WATCH_AT_ONCE_BYTES && !st.every_page_changed.contains(&key) {
            before.compared.push((host, key));
            continue;
        }
        if let Some(w) = upload_watch::arm(dev, bytes) {
            st.judged.insert(key);
            before.watched.push((host, w, upload));
        }
    }
    for f in found {
        st.add(f);
    }
    before
}

fn place_key(p: &Place) -> usize {
    match p {
        Place::Call(ra) => *ra,
        Place::Access { pc, .. } => *pc,
        Place::Unknown => 0,
    }
}

/// The copies agree now: an array no guard keeps as it is gets a digest of its device copy,
/// to see a kernel's change by (a guarded one is compared with the host's bytes instead).
fn note_sync(st: &mut State, key: usize) {
    if let Some(t) = st.tracked.get_mut(&key) {
        t.synced_digest = t.guard.is_none().then(|| digest(t.dev, t.bytes));
    }
}

/// Whether the device copy changed since the copies last agreed: known for a stale guard,
/// against the host's bytes where a guard keeps them as they were, else against the digest
/// taken then.
fn changed_on_device(t: &Tracked) -> bool {
    match t.guard {
        Some((_, Watch::Stale)) => true,
        Some(_) => !same(t.host, t.dev, t.bytes),
        None => t.synced_digest.is_some_and(|d| d != digest(t.dev, t.bytes)),
    }
}

/// After a kernel ran: a device copy it changed is newer than the host's, which the host must
/// not read (or write) until a copy back.
pub fn kernel_ends(args: &[u64], site: usize, before: Before) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    for (host, watch, upload) in before.watched {
        // First: the device copy is open again for the comparisons below.
        if upload_watch::finish(watch) == Verdict::Overwritten {
            let Some(t) = st.tracked.get(&host) else {
                continue;
            };
            let f = Finding {
                kind: "unused_transfer",
                host,
                bytes: t.bytes,
                name: t.name.clone(),
                at: upload,
                construct: Place::Call(site),
                other: Place::Unknown,
                write: false,
                detail: "upload_overwritten",
            };
            st.add(f);
        }
    }
    for (host, key) in before.compared {
        // The host's copy still holds what was uploaded while its guard is unfired: a page
        // the kernel left as it was was not overwritten, and the upload was needed.
        let Some(t) = st.tracked.get(&host) else {
            continue;
        };
        let intact = t
            .guard
            .is_some_and(|(g, w)| w == Watch::Synced && !guard::fired(g));
        if !intact {
            continue;
        }
        if some_page_unchanged(t.host, t.dev, t.bytes) {
            st.judged.insert(key);
        } else {
            st.every_page_changed.insert(key);
        }
    }
    for host in used_by(&st, args) {
        let t = st.tracked.get_mut(&host).expect("listed");
        if t.holds_pointers {
            continue;
        }
        if !t.defined {
            let changed = before
                .digests
                .iter()
                .find(|(h, _)| *h == host)
                .is_some_and(|&(_, d)| d != digest(t.dev, t.bytes));
            if changed {
                t.defined = true;
                t.changed_by = Some(Place::Call(site));
                arm(&mut st, host, Watch::Stale);
            }
            continue;
        }
        if t.guard.is_some_and(|(_, w)| w == Watch::Stale) {
            continue;
        }
        if changed_on_device(t) {
            t.changed_by = Some(Place::Call(site));
            if t.host_wrote.is_some() {
                lift(t);
            } else {
                arm(&mut st, host, Watch::Stale);
            }
        }
    }
}

/// An entry leaves the device (queue order, before its memory is freed): its copy back, if
/// any, has run. The array stays watched until the host touches it or maps it again.
pub fn released(host: usize, copied_back: bool) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    harvest(&mut st);
    let Some(mut t) = st.tracked.remove(&host) else {
        return;
    };
    // Reported at the directive that mapped it: its clause is what to change.
    let dropped = (!copied_back && t.from_host && !t.holds_pointers)
        .then(|| t.changed_by.clone())
        .flatten()
        .filter(|_| changed_on_device(&t))
        .map(|kernel| (t.mapped_at.clone(), kernel));
    lift(&mut t);
    let watched = guard_pages(t.host, t.bytes, t.on_stack);
    let mut dropped = dropped;
    // Where busy neighbours took the shared edge pages off the guard, the pages wholly inside
    // the array still see the host's reads: the lost results are reported when the host reads
    // them there, and not at all when it never does (a program that ends, or leaves the array
    // to the device, after its last kernel). A host reading only the edges is not seen.
    let interior = watched.is_some_and(|((start, end), skip)| {
        let pages = (end - start) / pages::page_size();
        pages > usize::from(skip & 1) + usize::from(skip >> 1 & 1)
    });
    if !interior {
        // No guard sees the host's reads of the lost results: reported now, as unwatched.
        if let Some((release, kernel)) = dropped.take() {
            st.add(Finding {
                kind: "results_dropped",
                host: t.host,
                bytes: t.bytes,
                name: t.name.clone(),
                at: release,
                construct: kernel,
                other: Place::Unknown,
                write: false,
                detail: "unwatched",
            });
        }
    }
    let Some((pages, skip)) = watched else {
        return;
    };
    let slot = guard::arm(pages, (t.host, t.host + t.bytes), Watch::Released, 0, skip);
    st.released.insert(
        host,
        Released {
            host: t.host,
            bytes: t.bytes,
            name: t.name,
            guard: slot,
            download: (copied_back && !t.redundant_download).then(|| t.mapped_at.clone()),
            dropped,
        },
    );
}

/// A kernel given a host pointer by value (GCC's firstprivate) that points into `target`'s
/// host copy: on a GPU it would dereference host memory.
pub fn pointer_by_value(target: usize, site: usize) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    let Some(t) = st.tracked_at(target) else {
        return;
    };
    let f = Finding {
        kind: "host_memory_in_kernel",
        host: t.host,
        bytes: t.bytes,
        name: t.name.clone(),
        at: Place::Call(site),
        construct: Place::Call(site),
        other: Place::Unknown,
        write: false,
        detail: "",
    };
    st.add(f);
}

/// The runtime wrote a device address into the device copy of the pointer at `ptr_addr`
/// (attach, a Fortran descriptor's data pointer): the array holding it is left out of content
/// comparisons.
pub fn pointer_written(ptr_addr: usize) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    if let Some(t) = st.tracked_at(ptr_addr) {
        t.holds_pointers = true;
        lift(t);
    }
}

/// One entry still present when the program exits.
pub struct Leftover {
    pub host: usize,
    pub bytes: usize,
    pub dynamic: u32,
    /// A Fortran descriptor, a pointer's slot or data the program mapped itself (acc_map_data):
    /// not an array the program left behind.
    pub incidental: bool,
}

/// At exit: data still mapped by enter data is left behind. Lifts every guard (the exit's own
/// code may touch any array) and writes the report.
pub fn at_exit(leftovers: &[Leftover]) {
    let _runtime = origin::runtime_scope();
    let mut st = state::lock();
    harvest(&mut st);
    let mut found = Vec::new();
    for l in leftovers.iter().filter(|l| l.dynamic > 0 && !l.incidental) {
        let Some(t) = st.tracked.get(&l.host) else {
            continue;
        };
        found.push(Finding {
            kind: "leak_at_exit",
            host: l.host,
            bytes: l.bytes,
            name: t.name.clone(),
            at: t.mapped_at.clone(),
            construct: Place::Unknown,
            other: Place::Unknown,
            write: false,
            detail: "",
        });
    }
    for f in found {
        st.add(f);
    }
    for t in st.tracked.values_mut() {
        lift(t);
    }
    for r in std::mem::take(&mut st.released).into_values() {
        if let Some(slot) = r.guard {
            release_slot(r.host, slot);
        }
    }
    super::report::write(&st);
}
