//! Page guards over the program's host arrays, and the fault handler's part that sees the
//! program's first access to a guarded one.
//!
//! A guard covers every page an array touches and has a [`Watch`] that says what an access
//! means. Arrays share pages (malloc puts small and mid-size arrays side by side, and a page
//! may also hold malloc's own headers or variables nobody mapped), so a fault is attributed by
//! its address: to the guarded array that holds it, whose watch decides; an access that means
//! nothing to that array, or that falls outside every guarded array, is let through for one
//! instruction without lifting anything (`super::step`). A page's protection is the most
//! restrictive that the guards over it want (`super::pages` serializes the changes).
//!
//! The handler runs on the faulting thread, inside any code (malloc, a lock holder, a kernel of
//! the emulated device), so it allocates nothing and calls only async-signal-safe functions: it
//! looks the address up in a fixed table of atomics, records the first access (the faulting
//! instruction, a few words of the stack for a caller in the program when the access is in a
//! library, read or write, when), lifts the guard and returns, so that the access completes as
//! it would have without it. A fault in no guard goes on to the handler installed before (the
//! program's, libaccprof's) or to the default action, exactly as without the checker.

use super::cpu::{self, Effect};
use super::origin::{self, STACK_WORDS};
use super::pages::{self, page_size, protect, NONE, OPEN, READ};
use super::step;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// What an access to a guarded array means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Watch {
    /// A kernel changed the device copy: any host access reads stale data (PROT_NONE). A word
    /// equal on both sides is not stale: the access goes through and the guard stays.
    Stale = 1,
    /// Host and device agree: the first host write makes them differ (PROT_READ).
    Synced = 2,
    /// Released from the device: the first host access is noted (PROT_NONE).
    Released = 3,
}

impl Watch {
    fn from_u8(v: u8) -> Option<Watch> {
        match v {
            1 => Some(Watch::Stale),
            2 => Some(Watch::Synced),
            3 => Some(Watch::Released),
            _ => None,
        }
    }
    fn protection(self) -> i32 {
        match self {
            Watch::Synced => READ,
            Watch::Stale | Watch::Released => NONE,
        }
    }
}

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ARMED: u8 = 2;
/// Lifted (by the handler or the runtime); its access is still to be read.
const SPENT: u8 = 3;

/// Guards at most this many arrays at once; further arrays are checked by content only.
pub const SLOTS: usize = 4096;
/// Reads of words equal on both sides that a stale guard lets through before it lifts.
const STALE_BUDGET: u64 = 64;
/// Accesses to other variables on an array's shared first or last page that are let through
/// before the guard gives those pages up (a busy neighbour would cost a trap per access).
const FOREIGN_BUDGET: u64 = 256;

/// One guarded array and its first access.
pub struct Slot {
    state: AtomicU8,
    watch: AtomicU8,
    /// The guarded pages.
    start: AtomicUsize,
    end: AtomicUsize,
    /// The array inside them.
    lo: AtomicUsize,
    hi: AtomicUsize,
    /// The device copy of `lo` (for [`Watch::Stale`]'s comparison), 0 if none.
    dev: AtomicU64,
    /// Accesses let through: equal words (stale), other variables (shared pages).
    tolerated: AtomicU64,
    foreign: AtomicU64,
    /// Shared edge pages given up (bit 0 the first page, bit 1 the last): the guard no longer
    /// asks for their protection.
    given_up: AtomicU8,
    /// Set once by the access that is recorded.
    fired: AtomicU8,
    pub access: Access,
}

/// The recorded access.
pub struct Access {
    pub pc: AtomicUsize,
    pub addr: AtomicUsize,
    pub write: AtomicU8,
    /// Who made it: `origin::HOST`, `origin::KERNEL` or `origin::RUNTIME`.
    pub who: AtomicU8,
    pub time_ns: AtomicU64,
    pub stack: [AtomicUsize; STACK_WORDS],
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    state: AtomicU8::new(FREE),
    watch: AtomicU8::new(0),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    lo: AtomicUsize::new(0),
    hi: AtomicUsize::new(0),
    dev: AtomicU64::new(0),
    tolerated: AtomicU64::new(0),
    foreign: AtomicU64::new(0),
    given_up: AtomicU8::new(0),
    fired: AtomicU8::new(0),
    access: Access {
        pc: AtomicUsize::new(0),
        addr: AtomicUsize::new(0),
        write: AtomicU8::new(0),
        who: AtomicU8::new(0),
        time_ns: AtomicU64::new(0),
        stack: [const { AtomicUsize::new(0) }; STACK_WORDS],
    },
};

static TABLE: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];
/// Slots ever armed (the handler's scan stops there).
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// The lowest and highest address ever guarded: a fault outside is never ours.
static BOUNDS: [AtomicUsize; 2] = [AtomicUsize::new(usize::MAX), AtomicUsize::new(0)];
/// Counts protection changes: a fault retried once after one is retried again only after
/// another (see [`on_fault`]).
static CHANGES: AtomicUsize = AtomicUsize::new(0);

fn slots() -> &'static [Slot] {
    &TABLE[..HIGH.load(Ordering::Acquire).min(SLOTS)]
}

impl Slot {
    fn pages(&self) -> (usize, usize) {
        (
            self.start.load(Ordering::Relaxed),
            self.end.load(Ordering::Relaxed),
        )
    }
    fn array(&self) -> (usize, usize) {
        (
            self.lo.load(Ordering::Relaxed),
            self.hi.load(Ordering::Relaxed),
        )
    }
    fn armed(&self) -> bool {
        self.state.load(Ordering::Acquire) == ARMED
    }
    /// Whether this guard asks for a protection of `page`.
    fn wants(&self, page: usize) -> bool {
        let (s, e) = self.pages();
        if !self.armed() || page < s || page >= e {
            return false;
        }
        let given = self.given_up.load(Ordering::Relaxed);
        !((page == s && given & 1 != 0) || (page + page_size() == e && given & 2 != 0))
    }
    fn watch(&self) -> Option<Watch> {
        Watch::from_u8(self.watch.load(Ordering::Relaxed))
    }
}

/// The protection `page` should have now: open while the runtime copies through it, else
/// the most restrictive any armed guard wants.
fn wanted(page: usize) -> i32 {
    if in_window(page) {
        return OPEN;
    }
    guards_want(page)
}

fn guards_want(page: usize) -> i32 {
    slots()
        .iter()
        .filter(|s| s.wants(page))
        .filter_map(|s| s.watch().map(Watch::protection))
        .min()
        .unwrap_or(OPEN)
}

/// Pages the runtime reads or writes through now (a copy, a comparison): [start, end) each.
const WINDOWS: usize = 64;
static WINDOW: [[AtomicUsize; 2]; WINDOWS] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; WINDOWS];

fn in_window(page: usize) -> bool {
    WINDOW.iter().any(|w| {
        let s = w[0].load(Ordering::Acquire);
        s != 0 && page >= s && page < w[1].load(Ordering::Acquire)
    })
}

/// Opens, for as long as it lives, the pages of `[lo, hi)` that guards of other arrays keep
/// closed (the first and last, where arrays share pages): the runtime's copy or comparison of
/// an array then runs at full speed instead of one instruction at a time through a
/// neighbour's guard. The neighbours' accesses there meanwhile go unseen.
pub struct Window(Option<(usize, usize, usize)>);

pub fn window(lo: usize, hi: usize) -> Window {
    let Some((start, end)) = pages::covering(lo, hi.saturating_sub(lo)) else {
        return Window(None);
    };
    let p = page_size();
    let edges = [start, end - p];
    let _lock = pages::lock();
    if edges.iter().all(|&e| guards_want(e) == OPEN) {
        return Window(None);
    }
    let Some(i) = WINDOW.iter().position(|w| {
        w[0].compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) else {
        return Window(None);
    };
    WINDOW[i][1].store(end, Ordering::Release);
    for e in edges {
        protect(e, e + p, OPEN);
    }
    Window(Some((i, start, end)))
}

impl Drop for Window {
    fn drop(&mut self) {
        let Some((i, start, end)) = self.0 else {
            return;
        };
        let p = page_size();
        let _lock = pages::lock();
        WINDOW[i][1].store(0, Ordering::Release);
        WINDOW[i][0].store(0, Ordering::Release);
        for e in [start, end - p] {
            protect(e, e + p, wanted(e));
        }
    }
}

/// Whether a guard other than `me` wants a protection of `page`.
fn shared(page: usize, me: &Slot) -> bool {
    slots()
        .iter()
        .any(|s| !std::ptr::eq(s, me) && s.wants(page))
}

/// Sets the protection of the slot's pages from what every guard wants: its own pages have
/// only it, its first and last page may have neighbours.
fn apply(s: &Slot, own: i32) -> bool {
    let p = page_size();
    let (start, end) = s.pages();
    let ok = protect(start + p, (end - p).max(start + p), own);
    let first = protect(start, start + p, wanted(start));
    let last = end - p == start || protect(end - p, end, wanted(end - p));
    CHANGES.fetch_add(1, Ordering::Relaxed);
    ok && first && last
}

/// Guards the pages `[start, end)` over the array `[lo, hi)` with `watch`; `dev` is the
/// array's device copy, for a stale guard; `skip` the first (bit 0) or last (bit 1) page to
/// leave out, given up by an earlier guard of the array. Returns the slot, or None when the
/// table is full or the pages cannot be protected.
pub fn arm(
    (start, end): (usize, usize),
    (lo, hi): (usize, usize),
    watch: Watch,
    dev: u64,
    skip: u8,
) -> Option<usize> {
    let _lock = pages::lock();
    let i = claim()?;
    let s = &TABLE[i];
    s.watch.store(watch as u8, Ordering::Relaxed);
    s.start.store(start, Ordering::Relaxed);
    s.end.store(end, Ordering::Relaxed);
    s.lo.store(lo, Ordering::Relaxed);
    s.hi.store(hi, Ordering::Relaxed);
    s.dev.store(dev, Ordering::Relaxed);
    s.tolerated.store(0, Ordering::Relaxed);
    s.foreign.store(0, Ordering::Relaxed);
    s.given_up.store(skip, Ordering::Relaxed);
    s.fired.store(0, Ordering::Relaxed);
    s.access.pc.store(0, Ordering::Relaxed);
    s.access.who.store(0, Ordering::Relaxed);
    BOUNDS[0].fetch_min(start, Ordering::AcqRel);
    BOUNDS[1].fetch_max(end, Ordering::AcqRel);
    HIGH.fetch_max(i + 1, Ordering::AcqRel);
    s.state.store(ARMED, Ordering::Release);
    if apply(s, watch.protection()) {
        Some(i)
    } else {
        s.state.store(FREE, Ordering::Release);
        apply(s, OPEN);
        None
    }
}

fn claim() -> Option<usize> {
    TABLE.iter().position(|s| {
        s.state
            .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    })
}

/// Lifts guard `i` (its pages open, but for what neighbours want) and returns whether an
/// access fired it.
pub fn lift(i: usize) -> bool {
    let _lock = pages::lock();
    lift_locked(&TABLE[i]);
    fired(i)
}

fn lift_locked(s: &Slot) {
    if s.state
        .compare_exchange(ARMED, SPENT, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        apply(s, OPEN);
    }
}

/// Whether guard `i` has been fired by an access (and is lifted).
pub fn fired(i: usize) -> bool {
    TABLE[i].fired.load(Ordering::Acquire) == 1
}

/// The shared pages guard `i` gave up (bit 0 its first, bit 1 its last).
pub fn given_up(i: usize) -> u8 {
    TABLE[i].given_up.load(Ordering::Relaxed)
}

/// The slot's recorded access, to read once it has fired.
pub fn access(i: usize) -> &'static Access {
    &TABLE[i].access
}

/// Lifts guard `i` and frees its slot.
pub fn release(i: usize) {
    lift(i);
    TABLE[i].state.store(FREE, Ordering::Release);
}

/// Whether an armed guard covers `addr` (its protection is the checker's, not the program's).
pub fn guarded(addr: usize) -> bool {
    let page = pages::page_of(addr);
    slots().iter().any(|s| s.wants(page))
}

/// Closes a page that was let through for one instruction, as the guards over it want now.
pub fn restore(page: usize) {
    let _lock = pages::lock();
    protect(page, page + page_size(), wanted(page));
}

thread_local! {
    /// The last fault this thread retried without a guard, and the protection changes then.
    static RETRIED: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Runs the handler's part for one fault. True when the fault was in a guard and is resolved
/// (the instruction may be retried); false when it is not ours.
///
/// # Safety
/// Called from the SIGSEGV/SIGBUS handler with the kernel's `info` and `ctx`.
pub unsafe fn on_fault(info: *const libc::siginfo_t, ctx: *mut libc::c_void) -> bool {
    // SAFETY: the kernel's siginfo for a fault carries the address.
    let addr = unsafe { (*info).si_addr() } as usize;
    if addr < BOUNDS[0].load(Ordering::Acquire) || addr >= BOUNDS[1].load(Ordering::Acquire) {
        return false;
    }
    let page = pages::page_of(addr);
    let _lock = pages::lock();
    // This thread's TLS vector on a closed page (malloc put it beside an array): every
    // thread-local read faults there, the handler's own included. Open that page for good.
    if let Some(v) = pages::tls_vector().map(pages::page_of) {
        if slots().iter().any(|s| s.wants(v)) {
            give_up(v);
            if v == page {
                return true;
            }
        }
    }
    let mut owner = None;
    let mut covered = false;
    for s in slots() {
        if !s.armed() {
            continue;
        }
        let (start, end) = s.pages();
        let (lo, hi) = s.array();
        if page >= start && page < end {
            covered |= s.wants(page);
            if addr >= lo && addr < hi {
                owner = Some(s);
            }
        }
    }
    match owner {
        // SAFETY: the caller's contract.
        Some(s) => unsafe { owned(s, addr, page, ctx) },
        // SAFETY: as above.
        None if covered => unsafe { foreign(addr, page, ctx) },
        None => {
            // In no guard: one lifted after this fault was raised leaves the access possible
            // now. Retry once per protection change; the same fault again is not ours.
            let now = (addr, CHANGES.load(Ordering::Relaxed));
            RETRIED.with(|r| r.replace(now)) != now
        }
    }
}

/// A fault on an array's own bytes.
unsafe fn owned(s: &Slot, addr: usize, page: usize, ctx: *mut libc::c_void) -> bool {
    // SAFETY: the handler's context.
    let r = unsafe { cpu::regs(ctx) };
    let who = origin::of(r.pc);
    // A read never faults on a page only readable: there the access is a write (the way to
    // tell on machines whose fault does not say).
    let write = r.write || wanted(page) == READ;
    match s.watch() {
        Some(Watch::Synced) if !write => {
            // A read of data in sync, on a page closed for a neighbour's sake.
            // SAFETY: as above.
            return unsafe { through(s, page, ctx) };
        }
        Some(Watch::Stale) if who != origin::RUNTIME => {
            // SAFETY: the instruction just faulted on `addr`.
            let (from, width): (usize, usize) = match unsafe { cpu::effect(addr, &r) } {
                Effect::Load(a, n) | Effect::Store(a, n) => {
                    (addr, (a + n).saturating_sub(addr).max(1))
                }
                Effect::Other => (addr, 8),
            };
            if !differs(s, from, width) {
                // Not stale where it looked: let it through, within a budget.
                if s.tolerated.fetch_add(1, Ordering::Relaxed) < STALE_BUDGET {
                    if shared(page, s) {
                        // SAFETY: as above.
                        return unsafe { through(s, page, ctx) };
                    }
                    protect(page, page + page_size(), OPEN);
                    return true;
                }
                s.fired.store(2, Ordering::Release);
                lift_locked(s);
                return true;
            }
        }
        _ => {}
    }
    if s.fired
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        let a = &s.access;
        a.addr.store(addr, Ordering::Relaxed);
        a.write.store(u8::from(write), Ordering::Relaxed);
        a.who.store(who, Ordering::Relaxed);
        a.time_ns.store(pages::now_ns(), Ordering::Relaxed);
        if who == origin::HOST && !origin::is_program_code(r.pc) {
            origin::save_stack(r.sp, &a.stack);
        } else {
            a.stack[0].store(0, Ordering::Relaxed);
        }
        a.pc.store(r.pc, Ordering::Release);
    }
    lift_locked(s);
    true
}

/// A fault on a guarded page outside every guarded array: another variable, malloc's headers.
unsafe fn foreign(_addr: usize, page: usize, ctx: *mut libc::c_void) -> bool {
    let mut spent = false;
    for s in slots().iter().filter(|s| s.wants(page)) {
        spent |= s.foreign.fetch_add(1, Ordering::Relaxed) >= FOREIGN_BUDGET;
    }
    // SAFETY: the handler's context.
    if !spent && unsafe { step::through(ctx, page) } {
        return true;
    }
    give_up(page);
    true
}

/// Lets one access by `s`'s guard through `page`, or gives the page up where that cannot be.
unsafe fn through(_s: &Slot, page: usize, ctx: *mut libc::c_void) -> bool {
    // SAFETY: the handler's context.
    if unsafe { step::through(ctx, page) } {
        return true;
    }
    give_up(page);
    true
}

/// Opens `page` for good: every guard over it stops asking (the checker then misses accesses
/// there, never reports one wrong).
fn give_up(page: usize) {
    for s in slots().iter().filter(|s| s.wants(page)) {
        let (start, end) = s.pages();
        if page == start {
            s.given_up.fetch_or(1, Ordering::Relaxed);
        }
        if page + page_size() == end {
            s.given_up.fetch_or(2, Ordering::Relaxed);
        }
        if page != start && page + page_size() != end {
            // An inner page another guard's range reaches (overlapping arrays): the whole
            // guard goes.
            lift_locked(s);
        }
    }
    protect(page, page + page_size(), wanted(page));
    CHANGES.fetch_add(1, Ordering::Relaxed);
}

/// Whether the `width` bytes at `addr` (as far as they lie in the array) differ between the
/// host copy (its page opened for reading a moment) and the device copy.
fn differs(s: &Slot, addr: usize, width: usize) -> bool {
    let dev = s.dev.load(Ordering::Relaxed) as usize;
    let (lo, hi) = s.array();
    if dev == 0 {
        return true;
    }
    let end = (addr + width).min(hi);
    let page = pages::page_of(addr);
    let last = pages::page_of(end - 1);
    if !protect(page, last + page_size(), READ) {
        return true;
    }
    // SAFETY: bytes of the guarded host array, readable now; the device copy is the emulated
    // device's memory (never guarded by this table) at the same offsets.
    let differ = (addr..end).any(|a| unsafe {
        (a as *const u8).read_volatile() != ((dev + (a - lo)) as *const u8).read_volatile()
    });
    protect(page, page + page_size(), wanted(page));
    if last != page {
        protect(last, last + page_size(), wanted(last));
    }
    differ
}
