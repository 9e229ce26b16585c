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
//! - With a tool registered, the usual case is one callback per event (a tool registers its
//!   function once per event), and it is dispatched on every OpenACC operation. `SOLE` holds that
//!   callback while it is the only one that can run, so a dispatch reads two words instead of
//!   the flags, the chain and the thread's switch twice; `GENERATION` tells it afterwards whether
//!   anything changed while the callback ran, and only then does it walk the chain for the rest
//!   of the instance.
//! - The registry is a `static` with constant initialisers, so a tool may register from its own
//!   constructor before the runtime has initialised (libaccprof does).
//! - Registering the same callback twice for one event bumps a count (it is still called once),
//!   and it stays registered until unregistered as many times, like GCC's libgomp.

pub use super::callback_list::{Callback, Order};
use super::callback_list::{CallbackList, Node};
use accprof_abi::{acc_event_t, acc_register_t};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
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

/// Per event: the node of its only callable callback while callbacks are globally on, the event
/// is on and exactly one of its callbacks is registered and enabled; null otherwise (then
/// dispatch walks the chain). Written under the lock, before `GENERATION` moves.
static SOLE: [AtomicPtr<Node>; NUM_EVENTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NUM_EVENTS];

/// Moves on every change of the registry and of any thread's switch, after the change is
/// visible: a dispatch that read `SOLE` and finds the same generation after the callback
/// returned knows no callback can be left to call for that instance.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// How many threads have switched their callbacks off with `acc_toggle_per_thread`: while any
/// has, dispatch asks the thread's own switch and never takes `SOLE`.
static THREADS_OFF: AtomicUsize = AtomicUsize::new(0);

/// `acc_toggle_per_thread`: callbacks disabled for this thread only. A thread that ends switched
/// off gives its count in `THREADS_OFF` back, so the other threads' fast path returns.
struct ThreadSwitch(Cell<bool>);

impl Drop for ThreadSwitch {
    fn drop(&mut self) {
        if !self.0.get() {
            THREADS_OFF.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

thread_local! {
    static THREAD_ENABLED: ThreadSwitch = const { ThreadSwitch(Cell::new(true)) };
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

/// Recomputes [`ACTIVE`] and [`SOLE`] after a change (under the lock, so stores do not race
/// each other), then moves [`GENERATION`].
fn update_active(m: &Master) {
    let global = GLOBAL_ENABLED.load(Ordering::Relaxed);
    let mut any = false;
    for (ev, regs) in m.events.iter().enumerate() {
        let on = EVENT_ENABLED[ev].load(Ordering::Relaxed);
        let mut callable = regs.iter().filter(|r| r.callable());
        let (first, second) = (callable.next(), callable.next());
        any |= on && first.is_some();
        let sole = match (global && on, first, second) {
            (true, Some(r), None) => r.node as *const Node as *mut Node,
            _ => std::ptr::null_mut(),
        };
        SOLE[ev].store(sole, Ordering::Release);
    }
    ACTIVE.store(any && global, Ordering::Release);
    GENERATION.fetch_add(1, Ordering::Release);
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
    step: Step,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// No callback returned yet.
    First,
    /// The callback returned last came from [`SOLE`] (its `seq`), with the generation read
    /// before it was taken.
    AfterSole { seq: u64, generation: u64 },
    /// The `seq` of the callback the chain gave last.
    Chain(u64),
}

/// Starts walking the callbacks of one instance of `ev`.
pub fn walk(ev: acc_event_t, order: Order) -> Walk {
    // An invalid event number walks nothing (see `next`).
    Walk {
        ev: usize::try_from(ev.0).unwrap_or(usize::MAX),
        order,
        step: Step::First,
    }
}

impl Walk {
    /// The event's only callable callback, when nothing else can be called for this instance
    /// unless the registry changes while it runs.
    #[inline(always)]
    fn sole(&mut self) -> Option<Callback> {
        if THREADS_OFF.load(Ordering::Relaxed) != 0 {
            return None;
        }
        let generation = GENERATION.load(Ordering::Acquire);
        // SAFETY: `SOLE` holds null or a node from `CallbackList::append`, which is never freed.
        let node = unsafe { SOLE.get(self.ev)?.load(Ordering::Acquire).as_ref()? };
        let (seq, callable) = node.get();
        if !callable {
            return None;
        }
        self.step = Step::AfterSole { seq, generation };
        Some(node.callback())
    }

    /// The next callback after `last` (the `seq` of the one returned last) from the chain, as
    /// the registry stands now. Out of line: the common walk (one callback) never gets here,
    /// and inlined its register use would cost every walk a longer prologue.
    #[inline(never)]
    fn next_in_chain(&mut self, last: Option<u64>) -> Option<Callback> {
        // The event, every event or this thread switched off (perhaps by the callback that just
        // returned): no further callback for this instance.
        let (Some(list), Some(event_on)) = (LISTS.get(self.ev), EVENT_ENABLED.get(self.ev)) else {
            return None;
        };
        if !GLOBAL_ENABLED.load(Ordering::Acquire)
            || !event_on.load(Ordering::Acquire)
            || !THREAD_ENABLED.try_with(|c| c.0.get()).unwrap_or(false)
        {
            return None;
        }
        let (seq, cb) = list.next(self.order, last)?;
        self.step = Step::Chain(seq);
        Some(cb)
    }
}

impl Iterator for Walk {
    type Item = Callback;

    fn next(&mut self) -> Option<Callback> {
        match self.step {
            Step::First => self.sole().or_else(|| self.next_in_chain(None)),
            // The sole callback has returned and changed nothing: it was the only one.
            Step::AfterSole { generation, .. }
                if GENERATION.load(Ordering::Acquire) == generation =>
            {
                None
            }
            Step::AfterSole { seq, .. } | Step::Chain(seq) => self.next_in_chain(Some(seq)),
        }
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
    let _ = THREAD_ENABLED.try_with(|c| {
        if c.0.replace(on) != on {
            if on {
                THREADS_OFF.fetch_sub(1, Ordering::Relaxed);
            } else {
                THREADS_OFF.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    GENERATION.fetch_add(1, Ordering::Release);
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
