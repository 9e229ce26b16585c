//! The callback registry behind `acc_prof_register` / `acc_prof_unregister`.
//!
//! Why it looks like this:
//! - Dispatch must not hold a lock while a tool's callback runs (a callback may register another
//!   callback or call the runtime API), and must see such changes for the callbacks of the same
//!   event instance it has not reached yet. Each event's callbacks are therefore a
//!   [`CallbackList`] that dispatch reads without locking, between callbacks; writers change it
//!   under `MASTER`'s lock. callback_list.rs says why its nodes can be read without a lock and
//!   why memory stays bounded however often callbacks are toggled or re-registered.
//! - With no tool registered, dispatch must cost one atomic load: `ACTIVE` is true only while at
//!   least one enabled callback of an enabled event exists and callbacks are globally enabled.
//! - The registry is a `static` with constant initialisers, so a tool may register from its own
//!   constructor before the runtime has initialised (libaccprof does).
//! - Registering the same callback twice for one event bumps a count (it is still called once),
//!   and it stays registered until unregistered as many times, like GCC's libgomp.

pub use super::callback_list::{Callback, Order};
use super::callback_list::{CallbackList, Node};
use accprof_abi::{acc_event_t, acc_register_t};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Number of event slots (event numbers 0..LAST).
pub const NUM_EVENTS: usize = acc_event_t::LAST.0 as usize;

/// Each event's callbacks, as dispatch reads them.
static LISTS: [CallbackList; NUM_EVENTS] = [const { CallbackList::new() }; NUM_EVENTS];

/// `acc_toggle` with a NULL callback: whether each event's callbacks are on. Written under the
/// lock, read by dispatch before each callback.
static EVENT_ENABLED: [AtomicBool; NUM_EVENTS] = [const { AtomicBool::new(true) }; NUM_EVENTS];

/// `acc_toggle` of `acc_ev_none` with a NULL callback: every callback of every event.
static GLOBAL_ENABLED: AtomicBool = AtomicBool::new(true);

/// True while some callback is enabled and callbacks are globally enabled: the dispatch fast path.
static ACTIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// `acc_toggle_per_thread`: callbacks disabled for this thread only.
    static THREAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// The registry's own record of a function registered (now or once) for an event.
struct Registered {
    /// Its node in the event's [`CallbackList`], which mirrors `seq` and whether it is callable.
    node: &'static Node,
    cb: Callback,
    /// Place in the registration order; a new registration after a full unregistration gets a
    /// new, larger one (the specification: it moves to the tail of the list).
    seq: u64,
    /// 0: not registered now (the node stays, for a later registration of the same function).
    refs: u32,
    enabled: bool,
}

impl Registered {
    fn callable(&self) -> bool {
        self.refs > 0 && self.enabled
    }

    /// Makes dispatch see this record's current state.
    fn publish(&self) {
        self.node.set(self.seq, self.callable());
    }
}

struct Master {
    /// Per event, in the order of its chain's nodes.
    events: Vec<Vec<Registered>>,
    /// The `seq` of the next registration.
    next_seq: u64,
}

static MASTER: Mutex<Option<Master>> = Mutex::new(None);

fn with_master<R>(f: impl FnOnce(&mut Master) -> R) -> R {
    // A poisoned lock only means a panic elsewhere while holding it; the data stays consistent
    // because each change publishes its node state after its bookkeeping.
    let mut guard = MASTER.lock().unwrap_or_else(|e| e.into_inner());
    let m = guard.get_or_insert_with(|| Master {
        events: (0..NUM_EVENTS).map(|_| Vec::new()).collect(),
        next_seq: 1,
    });
    let r = f(m);
    update_active(m);
    r
}

/// Recomputes [`ACTIVE`] after a change (under the lock, so stores do not race each other).
fn update_active(m: &Master) {
    let any = m.events.iter().enumerate().any(|(ev, regs)| {
        EVENT_ENABLED[ev].load(Ordering::Relaxed) && regs.iter().any(Registered::callable)
    });
    ACTIVE.store(
        any && GLOBAL_ENABLED.load(Ordering::Relaxed),
        Ordering::Release,
    );
}

/// The dispatch fast path: false means no callback can run, whatever the event.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
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
    ev: usize,
    order: Order,
    /// The `seq` of the callback returned last; None before the first.
    last: Option<u64>,
}

/// Starts walking the callbacks of one instance of `ev`.
pub fn walk(ev: acc_event_t, order: Order) -> Walk {
    // An invalid event number walks nothing (see `next`).
    Walk {
        ev: usize::try_from(ev.0).unwrap_or(usize::MAX),
        order,
        last: None,
    }
}

impl Iterator for Walk {
    type Item = Callback;

    fn next(&mut self) -> Option<Callback> {
        // The event, every event or this thread switched off (perhaps by the callback that just
        // returned): no further callback for this instance.
        let (Some(list), Some(event_on)) = (LISTS.get(self.ev), EVENT_ENABLED.get(self.ev)) else {
            return None;
        };
        if !GLOBAL_ENABLED.load(Ordering::Acquire)
            || !event_on.load(Ordering::Acquire)
            || !THREAD_ENABLED.try_with(|c| c.get()).unwrap_or(false)
        {
            return None;
        }
        let (seq, cb) = list.next(self.order, self.last)?;
        self.last = Some(seq);
        Some(cb)
    }
}

fn valid_event(ev: acc_event_t) -> bool {
    ev.0 > 0 && ev.0 < acc_event_t::LAST.0
}

/// `acc_prof_register(ev, cb, reg)`.
/// `acc_prof_register` as a tool's acc_register_library is given it.
pub extern "C" fn c_register(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    crate::error::guard("acc_prof_register", || register(ev, cb, reg))
}

/// `acc_prof_unregister` as a tool's acc_register_library is given it.
pub extern "C" fn c_unregister(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    crate::error::guard("acc_prof_unregister", || unregister(ev, cb, reg))
}

pub fn register(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    match reg {
        acc_register_t::REG => {
            let Some(cb) = cb else {
                return warn("acc_prof_register: NULL callback ignored");
            };
            if !valid_event(ev) {
                return warn(&format!(
                    "acc_prof_register: invalid event {} ignored",
                    ev.0
                ));
            }
            with_master(|m| {
                let ev = ev.0 as usize;
                let seq = m.next_seq;
                let regs = &mut m.events[ev];
                match regs.iter_mut().find(|r| r.cb as usize == cb as usize) {
                    Some(r) if r.refs > 0 => r.refs += 1,
                    // Registered again after being unregistered: a new registration, at the tail,
                    // enabled; its node is reused.
                    Some(r) => {
                        *r = Registered {
                            seq,
                            refs: 1,
                            enabled: true,
                            ..*r
                        };
                        r.publish();
                        m.next_seq += 1;
                    }
                    None => {
                        let tail = regs.last().map(|r| r.node);
                        let node = LISTS[ev].append(tail, cb, seq, true);
                        regs.push(Registered {
                            node,
                            cb,
                            seq,
                            refs: 1,
                            enabled: true,
                        });
                        m.next_seq += 1;
                    }
                }
            })
        }
        acc_register_t::TOGGLE => toggle(ev, cb, true),
        acc_register_t::TOGGLE_PER_THREAD => toggle_thread(ev, cb, true),
        other => warn(&format!(
            "acc_prof_register: invalid acc_register_t {}",
            other.0
        )),
    }
}

/// `acc_prof_unregister(ev, cb, reg)`.
pub fn unregister(ev: acc_event_t, cb: Option<Callback>, reg: acc_register_t) {
    match reg {
        acc_register_t::REG => {
            let Some(cb) = cb else {
                return warn("acc_prof_unregister: NULL callback ignored");
            };
            if !valid_event(ev) {
                return warn(&format!(
                    "acc_prof_unregister: invalid event {} ignored",
                    ev.0
                ));
            }
            with_master(|m| {
                let regs = &mut m.events[ev.0 as usize];
                if let Some(r) = regs
                    .iter_mut()
                    .find(|r| r.cb as usize == cb as usize && r.refs > 0)
                {
                    r.refs -= 1;
                    r.publish();
                }
            })
        }
        acc_register_t::TOGGLE => toggle(ev, cb, false),
        acc_register_t::TOGGLE_PER_THREAD => toggle_thread(ev, cb, false),
        other => warn(&format!(
            "acc_prof_unregister: invalid acc_register_t {}",
            other.0
        )),
    }
}

/// `acc_toggle`: with a callback, that callback for that event; with NULL, the whole event; with
/// `acc_ev_none` and NULL, every callback of every event.
fn toggle(ev: acc_event_t, cb: Option<Callback>, on: bool) {
    with_master(|m| match (ev, cb) {
        (acc_event_t::NONE, None) => GLOBAL_ENABLED.store(on, Ordering::Release),
        (ev, None) if valid_event(ev) => EVENT_ENABLED[ev.0 as usize].store(on, Ordering::Release),
        // Only a registered callback can be toggled; its place in the order is kept.
        (ev, Some(cb)) if valid_event(ev) => {
            for r in m.events[ev.0 as usize]
                .iter_mut()
                .filter(|r| r.cb as usize == cb as usize && r.refs > 0)
            {
                r.enabled = on;
                r.publish();
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
