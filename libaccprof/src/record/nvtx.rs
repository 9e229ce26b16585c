//! A thread's NVTX ranges (the entry points are crate::nvtx): its push/pop stack, and the
//! events a range, a start/end range or a mark becomes.
//!
//! Each push gets an instance number, process-wide; the innermost open push/pop range's number
//! goes into every OpenACC event the thread records meanwhile (accprof_trace::raw, word 5), and
//! the range's own event carries it with its parent's, so that a reader adds up what happened
//! inside each range, nested ranges included, reading the trace once.

use crate::strings::ThreadStrings;
use accprof_trace::{nvtx, Event, EventFlags, Field};
use std::ffi::c_char;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How the program gave a message.
#[derive(Clone, Copy, Debug)]
pub enum Message {
    None,
    /// A C string of the program's, interned like the runtime's strings.
    Ascii(*const c_char),
    /// A string id already defined (a registered string, a wide string converted).
    Id(u32),
}

/// What a range or mark says besides its times.
#[derive(Clone, Copy, Debug)]
pub struct NvtxAttrs {
    pub message: Message,
    /// The domain's name (its string id); `None` for the default domain.
    pub domain: Option<u32>,
    pub category: u32,
    /// ARGB, when the program gave a colour.
    pub color: Option<u32>,
    /// The payload's 64 bits and its NVTX type.
    pub payload: Option<(u64, u32)>,
}

impl NvtxAttrs {
    pub fn message(message: Message) -> Self {
        Self {
            message,
            domain: None,
            category: 0,
            color: None,
            payload: None,
        }
    }
}

/// Deeper than this, pushes are not balanced by pops: the oldest is written out unfinished.
const MAX_OPEN: usize = 128;

/// Instance numbers of push/pop ranges (0: none).
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

struct Open {
    event: Event,
    domain: Option<u32>,
    instance: u32,
}

/// One thread's open push/pop ranges. Entries are reused, and events are built in them and
/// handed out by reference: an event is 416 bytes, and copying it in and out of the stack was
/// most of a push and pop's cost.
#[derive(Default)]
pub struct NvtxThread {
    stack: Vec<Open>,
    /// Entries of `stack` open.
    depth: usize,
    /// Where a mark is built.
    mark: Event,
}

impl NvtxThread {
    /// The innermost open push/pop range's instance number, 0 if none.
    #[inline(always)]
    pub fn top(&self) -> u32 {
        match self.depth {
            0 => 0,
            d => self.stack[d - 1].instance,
        }
    }

    /// Opens a range; returns its level in its domain (0-based, as nvtxRangePush returns
    /// it). A range given up to keep the stack bounded goes to `emit`, unfinished.
    pub fn push(
        &mut self,
        strings: &mut ThreadStrings,
        now: u64,
        thread: i64,
        attrs: &NvtxAttrs,
        emit: impl FnOnce(&Event),
    ) -> i32 {
        if self.depth >= MAX_OPEN {
            let o = &mut self.stack[0];
            o.event.end_ns = now.max(o.event.start_ns);
            o.event.add_flags(EventFlags::NO_END);
            emit(&o.event);
            self.stack[..self.depth].rotate_left(1);
            self.depth -= 1;
        }
        let parent = self.top();
        let level = self.level(attrs.domain);
        if self.depth == self.stack.len() {
            self.stack.push(Open {
                event: Event::default(),
                domain: None,
                instance: 0,
            });
        }
        let o = &mut self.stack[self.depth];
        build_into(&mut o.event, strings, nvtx::RANGE, now, thread, attrs);
        o.instance = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
        o.domain = attrs.domain;
        o.event.set(Field::NvtxRange, u64::from(o.instance));
        if parent != 0 {
            o.event.set(Field::NvtxParent, u64::from(parent));
        }
        self.depth += 1;
        level
    }

    /// Closes the innermost range of `domain`, handing its event to `emit`; returns its level,
    /// or `None` when the domain has no open range on this thread.
    pub fn pop(&mut self, now: u64, domain: Option<u32>, emit: impl FnOnce(&Event)) -> Option<i32> {
        let i = self.stack[..self.depth]
            .iter()
            .rposition(|o| o.domain == domain)?;
        let e = &mut self.stack[i].event;
        e.end_ns = now.max(e.start_ns);
        emit(e);
        // Pops come innermost first; only an interleaving of domains moves entries.
        self.stack[i..self.depth].rotate_left(1);
        self.depth -= 1;
        Some(self.level(domain))
    }

    fn level(&self, domain: Option<u32>) -> i32 {
        self.stack[..self.depth]
            .iter()
            .filter(|o| o.domain == domain)
            .count() as i32
    }

    /// A mark `now`, handed to `emit`.
    pub fn mark(
        &mut self,
        strings: &mut ThreadStrings,
        now: u64,
        thread: i64,
        attrs: &NvtxAttrs,
        emit: impl FnOnce(&Event),
    ) {
        build_into(&mut self.mark, strings, nvtx::MARK, now, thread, attrs);
        emit(&self.mark);
    }

    /// What is still open when the thread or the program ends: written out unfinished.
    pub fn close_all(&mut self, now: u64, mut emit: impl FnMut(&Event)) {
        for o in &mut self.stack[..self.depth] {
            o.event.end_ns = now.max(o.event.start_ns);
            o.event.add_flags(EventFlags::NO_END);
            emit(&o.event);
        }
        self.depth = 0;
    }
}

/// The event of `kind` for a range or mark starting `now` on `thread`.
pub fn build(
    strings: &mut ThreadStrings,
    kind: accprof_abi::acc_event_t,
    now: u64,
    thread: i64,
    attrs: &NvtxAttrs,
) -> Event {
    let mut e = Event::default();
    build_into(&mut e, strings, kind, now, thread, attrs);
    e
}

/// Makes `e` the event [`build`] returns (without zeroing the slots of unset fields).
pub fn build_into(
    e: &mut Event,
    strings: &mut ThreadStrings,
    kind: accprof_abi::acc_event_t,
    now: u64,
    thread: i64,
    attrs: &NvtxAttrs,
) {
    e.reset(kind, now, now);
    e.set_i64(Field::Thread, thread);
    let message = match attrs.message {
        Message::None => None,
        // SAFETY: the program's NUL-terminated string, live during its NVTX call.
        Message::Ascii(p) => unsafe { strings.intern(p) }.map(|id| id.0),
        Message::Id(id) => Some(id),
    };
    if let Some(m) = message {
        e.set(Field::NvtxMessage, u64::from(m));
    }
    if let Some(d) = attrs.domain {
        e.set(Field::NvtxDomain, u64::from(d));
    }
    if attrs.category != 0 {
        e.set(Field::NvtxCategory, u64::from(attrs.category));
    }
    if let Some(c) = attrs.color {
        e.set(Field::NvtxColor, u64::from(c));
    }
    if let Some((v, t)) = attrs.payload {
        e.set(Field::NvtxPayload, v);
        e.set(Field::NvtxPayloadType, u64::from(t));
    }
}

// ---- start/end ranges: shared by all threads -------------------------------------------------

/// Start/end ranges waiting for their end: a range's id picks its slot; the slot says which id
/// it holds, so a range ended after its slot was taken again (more than SLOTS ranges started
/// meanwhile) is found missing instead of mistaken for another.
const SLOTS: usize = 4096;

struct Started {
    /// The id the slot holds (0: free; BUSY: a thread is writing or reading the event).
    id: AtomicU64,
    event: std::cell::UnsafeCell<Event>,
}

const BUSY: u64 = u64::MAX;

// SAFETY: `event` is touched only by the thread that set `id` to BUSY (with a
// compare-exchange), until it stores another value: never by two threads at once.
unsafe impl Sync for Started {}

impl Started {
    /// Takes the slot if it holds `want` (any value but BUSY when `None`), as BUSY.
    fn claim(&self, want: Option<u64>) -> bool {
        for _ in 0..1000 {
            let cur = self.id.load(Ordering::Acquire);
            if cur == BUSY || want.is_some_and(|w| w != cur) {
                if cur != BUSY {
                    return false;
                }
                std::hint::spin_loop();
                continue;
            }
            if self
                .id
                .compare_exchange(cur, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        }
        false
    }
}

static STARTED: std::sync::LazyLock<Box<[Started]>> = std::sync::LazyLock::new(|| {
    (0..SLOTS)
        .map(|_| Started {
            id: AtomicU64::new(0),
            event: std::cell::UnsafeCell::new(Event::default()),
        })
        .collect()
});

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Starts a start/end range; returns its id for nvtxRangeEnd (never 0).
pub fn start(event: Event) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let slot = &STARTED[(id % SLOTS as u64) as usize];
    // A slot still held (a range never ended, SLOTS ranges ago) is taken over: its end will
    // find it gone.
    if slot.claim(None) {
        // SAFETY: claimed (see Started).
        unsafe { *slot.event.get() = event };
        slot.id.store(id, Ordering::Release);
    }
    id
}

/// Ends start/end range `id` `now`: its event, or `None` when the id is unknown (never
/// started while recording, ended twice, or its slot taken over).
pub fn end(id: u64, now: u64) -> Option<Event> {
    if id == 0 || id == BUSY {
        return None;
    }
    let slot = STARTED.get((id % SLOTS as u64) as usize)?;
    if !slot.claim(Some(id)) {
        return None;
    }
    // SAFETY: claimed (see Started): the starter wrote the event before publishing `id`.
    let mut e = unsafe { *slot.event.get() };
    slot.id.store(0, Ordering::Release);
    e.end_ns = now.max(e.start_ns);
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_close_the_innermost_range_of_their_domain_and_count_levels() {
        let mut strings = ThreadStrings::default();
        let mut t = NvtxThread::default();
        let a = NvtxAttrs::message(Message::Id(1));
        let d = NvtxAttrs {
            domain: Some(9),
            ..NvtxAttrs::message(Message::Id(2))
        };
        let none = |_: &Event| panic!("nothing is given up");
        assert_eq!(t.push(&mut strings, 10, 1, &a, none), 0);
        let outer = t.top();
        assert_eq!(
            t.push(&mut strings, 11, 1, &d, none),
            0,
            "another domain: level 0"
        );
        assert_eq!(t.push(&mut strings, 12, 1, &a, none), 1);
        let mut inner = Event::default();
        let level = t.pop(13, None, |e| inner = *e).unwrap();
        assert_eq!(level, 1);
        assert_eq!((inner.start_ns, inner.end_ns), (12, 13));
        assert_eq!(inner.get(Field::NvtxMessage), Some(1));
        assert!(inner.get(Field::NvtxParent).is_some());
        let mut dom = Event::default();
        t.pop(14, Some(9), |e| dom = *e).unwrap();
        assert_eq!(dom.get(Field::NvtxDomain), Some(9));
        assert_eq!(dom.get(Field::NvtxParent), Some(u64::from(outer)));
        assert_eq!(t.top(), outer);
        assert!(
            t.pop(15, Some(9), |_| panic!("not this one")).is_none(),
            "nothing open in that domain"
        );
        // A reused entry keeps nothing of the range it held before.
        let b = NvtxAttrs::message(Message::None);
        t.push(&mut strings, 16, 1, &b, none);
        let mut reused = Event::default();
        t.pop(17, None, |e| reused = *e).unwrap();
        assert_eq!(reused.get(Field::NvtxMessage), None);
        assert_eq!(reused.get(Field::NvtxParent), Some(u64::from(outer)));
        let mut left = Vec::new();
        t.close_all(20, |e| left.push(*e));
        assert_eq!(left.len(), 1);
        assert!(left[0].flags().contains(EventFlags::NO_END));
        assert_eq!(t.top(), 0);
    }

    #[test]
    fn a_start_end_range_ends_once() {
        let id = start(Event::new(nvtx::START_END, 5));
        let e = end(id, 9).unwrap();
        assert_eq!((e.start_ns, e.end_ns), (5, 9));
        assert!(end(id, 10).is_none(), "ended twice");
        assert!(end(0, 10).is_none(), "never started");
    }
}
