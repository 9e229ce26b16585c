//! The callback registry behind `acc_prof_register` / `acc_prof_unregister`.
//!
//! Why it looks like this:
//! - Dispatch must not hold a lock while a tool's callback runs (a callback may register another
//!   callback or call the runtime API). Writers therefore build a fresh, immutable list of the
//!   enabled callbacks for an event and publish it with one atomic pointer store (copy-on-write).
//!   Readers load the pointer and iterate without locking. Old lists are never freed: a reader may
//!   still be walking one, and registration happens a handful of times per process, so the leak is
//!   bounded and tiny.
//! - With no tool registered, dispatch must cost one atomic load: [`ACTIVE`] is true only while at
//!   least one enabled callback exists and callbacks are globally enabled.
//! - The registry is a `static` with constant initialisers, so a tool may register from its own
//!   constructor before the runtime has initialised (libaccprof does).
//! - Registering the same callback twice for one event bumps a count (it is still called once),
//!   and it stays registered until unregistered as many times, like GCC's libgomp.

use accprof_abi::{acc_event_t, acc_event_info, acc_api_info, acc_prof_info, acc_register_t};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;

/// A tool's callback, non-null.
pub type Callback = unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info);

/// Number of event slots (event numbers 0..LAST).
pub const NUM_EVENTS: usize = acc_event_t::LAST.0 as usize;

/// One enabled callback of a published list, with its place in the registration order.
#[derive(Clone, Copy)]
struct Entry {
    /// Registration order: larger is later. A callback unregistered and registered again gets a
    /// new, larger number (the specification: it moves to the tail of the list).
    seq: u64,
    cb: Callback,
}

impl PartialEq for Entry {
    /// The same registration of the same function (compared by address, as the tool passed it).
    fn eq(&self, other: &Entry) -> bool {
        self.seq == other.seq && self.cb as usize == other.cb as usize
    }
}

/// The published, immutable list of callbacks to call for one event, in registration order.
struct Snapshot {
    entries: Vec<Entry>,
}

static EMPTY: Snapshot = Snapshot { entries: Vec::new() };

#[allow(clippy::declare_interior_mutable_const)]
const NULL_SNAPSHOT: AtomicPtr<Snapshot> = AtomicPtr::new(std::ptr::null_mut());
static LISTS: [AtomicPtr<Snapshot>; NUM_EVENTS] = [NULL_SNAPSHOT; NUM_EVENTS];

/// True while some callback is enabled and callbacks are globally enabled: the dispatch fast path.
static ACTIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// `acc_toggle_per_thread`: callbacks disabled for this thread only.
    static THREAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

struct Registered {
    seq: u64,
    cb: Callback,
    refs: u32,
    enabled: bool,
}

struct Master {
    events: Vec<Vec<Registered>>,
    /// The `seq` of the next new registration.
    next_seq: u64,
    event_enabled: Vec<bool>,
    global_enabled: bool,
}

static MASTER: Mutex<Option<Master>> = Mutex::new(None);

fn with_master<R>(f: impl FnOnce(&mut Master) -> R) -> R {
    // A poisoned lock only means a panic elsewhere while holding it; the data stays consistent
    // because every mutation below is completed before the publish step.
    let mut guard = MASTER.lock().unwrap_or_else(|e| e.into_inner());
    let m = guard.get_or_insert_with(|| Master {
        events: (0..NUM_EVENTS).map(|_| Vec::new()).collect(),
        next_seq: 1,
        event_enabled: vec![true; NUM_EVENTS],
        global_enabled: true,
    });
    let r = f(m);
    publish(m);
    r
}

/// Rebuilds every event's snapshot from the master list and recomputes [`ACTIVE`].
fn publish(m: &Master) {
    let mut any = false;
    for (ev, regs) in m.events.iter().enumerate() {
        let entries: Vec<Entry> = if m.event_enabled[ev] {
            regs.iter().filter(|r| r.enabled && r.refs > 0).map(|r| Entry { seq: r.seq, cb: r.cb }).collect()
        } else {
            Vec::new()
        };
        let old = LISTS[ev].load(Ordering::Acquire);
        // Skip republishing unchanged lists, so steady-state toggling does not leak.
        // SAFETY: published pointers come from Box::leak and are never freed.
        if !old.is_null() && unsafe { &(*old).entries } == &entries {
            any |= !entries.is_empty();
            continue;
        }
        any |= !entries.is_empty();
        let new = Box::leak(Box::new(Snapshot { entries }));
        LISTS[ev].store(new, Ordering::Release);
    }
    ACTIVE.store(any && m.global_enabled, Ordering::Release);
}

/// The dispatch fast path: false means no callback can run, whatever the event.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Which way a dispatch walks an event's callbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Head to tail: start events and single-point events.
    Registration,
    /// Tail to head: end events.
    Reverse,
}

/// The callbacks of one event instance, read one at a time from the registry's state at that
/// moment, not from a copy taken when the event began: the specification has a callback
/// registered, unregistered, enabled or disabled while its event is being processed take effect
/// for the callbacks of that instance not yet reached (a new registration goes to the tail, so a
/// head-to-tail walk reaches it and a tail-to-head walk has already passed it). The walk keeps
/// its place as the registration number of the last callback it visited, which stays valid
/// whatever the list becomes.
#[derive(Debug)]
pub struct Walk {
    ev: acc_event_t,
    order: Order,
    /// The `seq` of the callback returned last; None before the first.
    last: Option<u64>,
}

/// Starts walking the callbacks of one instance of `ev`.
pub fn walk(ev: acc_event_t, order: Order) -> Walk {
    Walk { ev, order, last: None }
}

impl Iterator for Walk {
    type Item = Callback;

    fn next(&mut self) -> Option<Callback> {
        // Callbacks switched off globally (or none left) or for this thread end the instance.
        if !active() {
            return None;
        }
        let entries = &snapshot(self.ev).entries;
        let after = |e: &&Entry| self.last.is_none_or(|l| e.seq > l);
        let before = |e: &&Entry| self.last.is_none_or(|l| e.seq < l);
        let found = match self.order {
            Order::Registration => entries.iter().find(after),
            Order::Reverse => entries.iter().rev().find(before),
        }?;
        self.last = Some(found.seq);
        Some(found.cb)
    }
}

/// The callbacks to call for `ev` on this thread now (empty when disabled).
#[inline]
fn snapshot(ev: acc_event_t) -> &'static Snapshot {
    if !THREAD_ENABLED.try_with(|c| c.get()).unwrap_or(false) {
        return &EMPTY;
    }
    let Some(slot) = usize::try_from(ev.0).ok().and_then(|i| LISTS.get(i)) else { return &EMPTY };
    let p = slot.load(Ordering::Acquire);
    if p.is_null() {
        &EMPTY
    } else {
        // SAFETY: never freed (see module docs).
        unsafe { &*p }
    }
}

fn valid_event(ev: acc_event_t) -> bool {
    ev.0 > 0 && ev.0 < acc_event_t::LAST.0
}

/// `acc_prof_register(ev, cb, reg)`.
pub fn register(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    match reg {
        acc_register_t::REG => {
            let Some(cb) = cb else { return warn("acc_prof_register: NULL callback ignored") };
            if !valid_event(ev) {
                return warn(&format!("acc_prof_register: invalid event {} ignored", ev.0));
            }
            with_master(|m| {
                let list = &mut m.events[ev.0 as usize];
                if let Some(r) = list.iter_mut().find(|r| r.cb as usize == cb as usize) {
                    r.refs += 1;
                } else {
                    list.push(Registered { seq: m.next_seq, cb, refs: 1, enabled: true });
                    m.next_seq += 1;
                }
            })
        }
        acc_register_t::TOGGLE => toggle(ev, cb, true),
        acc_register_t::TOGGLE_PER_THREAD => toggle_thread(ev, cb, true),
        other => warn(&format!("acc_prof_register: invalid acc_register_t {}", other.0)),
    }
}

/// `acc_prof_unregister(ev, cb, reg)`.
pub fn unregister(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    match reg {
        acc_register_t::REG => {
            let Some(cb) = cb else { return warn("acc_prof_unregister: NULL callback ignored") };
            if !valid_event(ev) {
                return warn(&format!("acc_prof_unregister: invalid event {} ignored", ev.0));
            }
            with_master(|m| {
                let list = &mut m.events[ev.0 as usize];
                if let Some(i) = list.iter().position(|r| r.cb as usize == cb as usize) {
                    list[i].refs -= 1;
                    if list[i].refs == 0 {
                        list.remove(i);
                    }
                }
            })
        }
        acc_register_t::TOGGLE => toggle(ev, cb, false),
        acc_register_t::TOGGLE_PER_THREAD => toggle_thread(ev, cb, false),
        other => warn(&format!("acc_prof_unregister: invalid acc_register_t {}", other.0)),
    }
}

/// `acc_toggle`: with a callback, that callback for that event; with NULL, the whole event; with
/// `acc_ev_none` and NULL, every callback of every event.
fn toggle(ev: acc_event_t, cb: Option<Callback>, on: bool) {
    with_master(|m| match (ev, cb) {
        (acc_event_t::NONE, None) => m.global_enabled = on,
        (ev, None) if valid_event(ev) => m.event_enabled[ev.0 as usize] = on,
        (ev, Some(cb)) if valid_event(ev) => {
            for r in m.events[ev.0 as usize].iter_mut().filter(|r| r.cb as usize == cb as usize) {
                r.enabled = on;
            }
        }
        _ => warn(&format!("acc_toggle: invalid event {}", ev.0)),
    })
}

/// `acc_toggle_per_thread`: only `acc_ev_none` with NULL is defined (all events, this thread).
fn toggle_thread(ev: acc_event_t, cb: Option<Callback>, on: bool) {
    if ev != acc_event_t::NONE || cb.is_some() {
        return warn("acc_toggle_per_thread: only (acc_ev_none, NULL) is supported");
    }
    let _ = THREAD_ENABLED.try_with(|c| c.set(on));
}

fn warn(msg: &str) {
    eprintln!("accshim: {msg}");
}

/// How many times `cb` is registered for `ev` (tests and diagnostics).
pub fn ref_count(ev: acc_event_t, cb: Callback) -> u32 {
    let guard = MASTER.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()
        .and_then(|m| m.events.get(ev.0 as usize))
        .and_then(|l| l.iter().find(|r| r.cb as usize == cb as usize))
        .map_or(0, |r| r.refs)
}
