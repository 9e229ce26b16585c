//! One event's callback list as dispatch reads it: a chain of nodes, one per function ever
//! registered for the event, that is only ever appended to and never freed.
//!
//! Why this shape:
//! - Dispatch runs on every OpenACC event, on many threads at once, so it must not take a lock;
//!   and a callback it calls may change the list (register, unregister, enable, disable), which
//!   the specification wants to take effect for the rest of that very dispatch. So dispatch reads
//!   the live list between callbacks, not a copy taken when the event began.
//! - A structure that readers walk without a lock may only be freed once no reader can still be
//!   inside it. Publishing a fresh copy per change and never freeing the old ones leaked a list
//!   per change (110 MB for a million toggles). Here nothing is ever unlinked or freed, so a
//!   reader can never meet freed memory, whatever it was doing when a writer ran; and nothing is
//!   allocated per change either: a node is created only the first time a function is
//!   registered for an event. Unregistering marks the node, registering the same function again
//!   reuses it, enabling or disabling flips a bit. A chain is therefore as long as the number of
//!   distinct functions ever registered for its event, which the tools' code bounds; churn of
//!   the same callbacks, however long, allocates nothing.
//! - The list's order is not the chain's order but each node's registration number (`seq`,
//!   larger is later), so a function unregistered and registered again moves to the tail (the
//!   specification) without its node moving. A walk remembers the number of the last callback it
//!   visited and asks for the nearest one beyond it: that stays meaningful whatever the list
//!   became in between.
//!
//! Only the registry changes nodes and appends them, under its lock; dispatch only reads.

use accprof_abi::{acc_api_info, acc_event_info, acc_prof_info};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// A tool's callback, non-null.
pub type Callback =
    unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info);

/// Which way a dispatch walks an event's callbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Head to tail, in registration order: start events and single-point events.
    Registration,
    /// Tail to head: end events.
    Reverse,
}

/// A function registered (now or once) for one event.
pub struct Node {
    /// Fixed at creation: a node stands for one function, for good.
    cb: Callback,
    /// `seq << 1 | CALLABLE`, one word so that a reader sees a registration number and the
    /// callable bit that belong together. `seq` is the node's place in the registration order
    /// (given by the registry, unique per event and growing); CALLABLE is set while the function
    /// is registered and enabled.
    state: AtomicU64,
    /// The next node of the chain (creation order), null at the tail.
    next: AtomicPtr<Node>,
}

const CALLABLE: u64 = 1;

impl Node {
    /// The function this node stands for.
    pub fn callback(&self) -> Callback {
        self.cb
    }

    /// Sets the node's place and whether dispatch calls it. Registry only (under its lock).
    /// `seq` must stay below 2^63 (one registration a nanosecond would take 292 years).
    pub fn set(&self, seq: u64, callable: bool) {
        self.state
            .store(seq << 1 | callable as u64, Ordering::Release);
    }

    /// The node's (seq, callable), read together.
    pub fn get(&self) -> (u64, bool) {
        let s = self.state.load(Ordering::Acquire);
        (s >> 1, s & CALLABLE != 0)
    }
}

/// The head of one event's chain.
pub struct CallbackList {
    head: AtomicPtr<Node>,
}

impl Default for CallbackList {
    fn default() -> Self {
        Self::new()
    }
}

impl CallbackList {
    pub const fn new() -> CallbackList {
        CallbackList {
            head: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Appends a node for `cb`, in state (seq, callable), after `tail` (the chain's last node,
    /// None if the chain is empty). Registry only: the caller holds the lock that orders all
    /// appends and knows the tail.
    pub fn append(
        &self,
        tail: Option<&'static Node>,
        cb: Callback,
        seq: u64,
        callable: bool,
    ) -> &'static Node {
        let node: &'static Node = Box::leak(Box::new(Node {
            cb,
            state: AtomicU64::new(seq << 1 | callable as u64),
            next: AtomicPtr::new(std::ptr::null_mut()),
        }));
        // Release: a reader that finds the pointer (Acquire) sees the node's fields initialised.
        let link = tail.map_or(&self.head, |t| &t.next);
        link.store(node as *const Node as *mut Node, Ordering::Release);
        node
    }

    /// The callable callback nearest beyond `last` (the seq of the callback a walk visited last;
    /// None before the first) in the walk's direction, with its seq.
    ///
    /// A callback that stays registered and enabled keeps its seq, so a walk never steps over
    /// it: the nearest callable seq beyond `last` can be no farther than its own.
    ///
    /// Each call reads the whole chain, so a walk reads (callbacks + 1) x (chain length) nodes;
    /// chains hold the few functions a tool registers for one event, and rereading is what lets
    /// a change made by a callback show for the rest of the walk.
    pub fn next(&self, order: Order, last: Option<u64>) -> Option<(u64, Callback)> {
        let mut best: Option<(u64, Callback)> = None;
        let mut p = self.head.load(Ordering::Acquire);
        // SAFETY: every pointer in the chain is null or a node from `append`, which is leaked:
        // never freed, never moved, so a `&'static` to it is valid on any thread at any time.
        while let Some(node) = unsafe { p.as_ref() } {
            let (seq, callable) = node.get();
            if callable {
                let (beyond, nearer) = match order {
                    Order::Registration => (
                        last.is_none_or(|l| seq > l),
                        best.is_none_or(|(b, _)| seq < b),
                    ),
                    Order::Reverse => (
                        last.is_none_or(|l| seq < l),
                        best.is_none_or(|(b, _)| seq > b),
                    ),
                };
                if beyond && nearer {
                    best = Some((seq, node.cb));
                }
            }
            p = node.next.load(Ordering::Acquire);
        }
        best
    }
}
