//! What each recording thread keeps: its slot, the constructs it has open, its string cache.
//!
//! A start event is held on the thread's open stack until its end event arrives; then the two
//! are joined into one [`Event`] and buffered. Runtimes nest events properly on a thread, but
//! not always (an end without its start, a start never ended), so matching searches the stack
//! from the top and every odd case is kept and flagged rather than dropped.

use crate::recorder::message::{ship, Message};
use crate::recorder::slots::Slot;
use crate::recorder::{self, late, Recorder};
use crate::strings::StringCache;
use accprof_abi::read::{ApiView, EventView, ProfView};
use accprof_abi::{acc_device_api, acc_event_t, EventInfoKind, EventShape};
use accprof_trace::{Event, EventFlags, Field, StrId};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Deeper nesting than this means ends are being lost; the oldest open event is then written
/// out as unfinished so the stack stays bounded.
const MAX_OPEN: usize = 128;

pub struct ThreadState {
    slot: Arc<Slot>,
    open: OpenStack,
    /// Where point events and unmatched ends are built (reused, like the open stack's events).
    scratch: Event,
    fields: FieldReader,
    /// CUDA events around launches and copies, when they are in use (cuda_events).
    cuda: Option<crate::device::cuda_events::pending::ThreadEvents>,
}

/// Copies runtime fields into events, interning their strings.
struct FieldReader {
    strings: StringCache,
    /// Strings first seen since the last event was buffered.
    new_strings: Vec<(StrId, Box<[u8]>)>,
    os_tid: i64,
    /// The thread id last published to [`crate::recorder::thread_id::current_thread_id`].
    last_tid: i64,
}

/// The fields of one callback, as read from the runtime's structures.
pub struct Incoming<'a> {
    pub now: u64,
    pub kind: acc_event_t,
    pub prof: ProfView<'a>,
    pub info: Option<EventView<'a>>,
    pub api: Option<ApiView<'a>>,
}

impl ThreadState {
    pub fn new(rec: &Recorder) -> Self {
        // SAFETY: gettid has no preconditions.
        let os_tid = i64::from(unsafe { libc::gettid() });
        let slot = Arc::new(Slot::new(os_tid));
        rec.registry.add(slot.clone());
        Self {
            slot,
            open: OpenStack::default(),
            scratch: Event::default(),
            fields: FieldReader {
                strings: StringCache::default(),
                new_strings: Vec::new(),
                os_tid,
                last_tid: i64::MIN,
            },
            cuda: crate::device::cuda_events::thread_events(),
        }
    }

    /// This thread's buffer slot.
    pub fn slot(&self) -> &Slot {
        &self.slot
    }

    /// Records one callback. Events are built in place (a start on the open stack, anything
    /// else in `scratch`), reusing the memory of earlier events, and copied once, into the
    /// batch, packed: only the fields set (accprof_trace::packed).
    pub fn handle(&mut self, rec: &Recorder, inc: &Incoming<'_>) {
        match inc.kind.shape() {
            EventShape::Start => {
                if self.open.len() >= MAX_OPEN {
                    let oldest = self.open.remove_to_spare(0);
                    oldest.end_ns = inc.now;
                    oldest.add_flags(EventFlags::NO_END);
                    emit_into(&self.slot, &mut self.fields.new_strings, rec, oldest);
                    if let Some(c) = self.cuda.as_mut() {
                        c.shift_down();
                    }
                }
                // An event the runtime calls implicit (the implicit enter/exit data of a compute
                // construct, the device init of a first construct) comes from the directive that
                // is open around it: take that directive's call site instead of walking the
                // stack again. The walk is what the tool costs most per construct (~0.5-1.5 us).
                let enclosing_call_site = self.open.top().and_then(|p| p.get(Field::ReturnAddress));
                let e = self.open.push(inc.kind, inc.now);
                self.fields.fill(e, inc, false);
                if crate::content::on() {
                    crate::content::hash_transfer(e, false);
                }
                if wants_call_site(inc.kind) && e.get(Field::SrcFile).is_none() {
                    let call_site = match enclosing_call_site {
                        Some(ra) if e.implicit() => Some(ra),
                        _ => crate::unwind::caller_return_address(inc.kind.0 as u32),
                    };
                    if let Some(ra) = call_site {
                        e.set(Field::ReturnAddress, ra);
                    }
                }
                if let Some(c) = self.cuda.as_mut() {
                    c.on_start(inc.kind, self.open.len() - 1, inc.api.as_ref());
                }
            }
            EventShape::End => {
                let start_kind = inc.kind.partner();
                match self.open.find_last(start_kind) {
                    Some(i) => {
                        let e = self.open.get_mut(i);
                        e.end_ns = inc.now.max(e.start_ns);
                        // Some runtimes fill a field only at the end (bytes of a download).
                        self.fields.fill(e, inc, true);
                        if crate::content::on() {
                            crate::content::hash_transfer(e, true);
                        }
                        let e = self.open.remove_to_spare(i);
                        emit_into(&self.slot, &mut self.fields.new_strings, rec, e);
                        if let Some(c) = self.cuda.as_mut() {
                            c.on_end(start_kind, i, e);
                        }
                    }
                    None => {
                        self.scratch.reset(start_kind, inc.now, inc.now);
                        self.fields.fill(&mut self.scratch, inc, false);
                        self.scratch.add_flags(EventFlags::NO_START);
                        emit_into(&self.slot, &mut self.fields.new_strings, rec, &self.scratch);
                    }
                }
            }
            EventShape::Point | EventShape::Unknown => {
                self.scratch.reset(inc.kind, inc.now, inc.now);
                self.fields.fill(&mut self.scratch, inc, false);
                if self.open.len() == 0 && wants_api_call_site(&self.scratch) {
                    if let Some(ra) = crate::unwind::caller_return_address(inc.kind.0 as u32) {
                        self.scratch.set(Field::ReturnAddress, ra);
                    }
                }
                emit_into(&self.slot, &mut self.fields.new_strings, rec, &self.scratch);
            }
        }
        if inc.kind == acc_event_t::DEVICE_SHUTDOWN_START && self.cuda.is_some() {
            self.before_device_shutdown(rec, inc);
        }
        if inc.kind == acc_event_t::RUNTIME_SHUTDOWN {
            self.flush(rec);
            rec.request_flush();
        }
    }

    /// The runtime is about to shut down a device: its CUDA context may be gone after this
    /// event, so the CUDA events recorded in it are finished now (waiting a bounded time).
    #[cold]
    fn before_device_shutdown(&mut self, rec: &Recorder, inc: &Incoming<'_>) {
        let Some(a) = inc
            .api
            .filter(|a| a.device_api() == Some(acc_device_api::CUDA))
        else {
            return;
        };
        let Some(ctx) = a.context_handle().filter(|p| !p.is_null()) else {
            return;
        };
        // The names the records use travel in this thread's batch: send it first.
        self.flush(rec);
        let events = crate::device::cuda_events::device_shutdown(ctx as usize);
        if !events.is_empty() {
            let _ = rec.tx.send(Message::CudaEvents(events));
        }
    }

    /// Hands this thread's buffer to the collector now.
    pub fn flush(&mut self, rec: &Recorder) {
        let new_strings = &mut self.fields.new_strings;
        self.slot.with_batch(|batch, _| {
            if !new_strings.is_empty() {
                new_strings_to_live_file(new_strings);
            }
            batch.strings.append(new_strings);
            ship(batch, &rec.tx);
        });
    }

    /// Writes out constructs still open (the program is ending inside them) as unfinished.
    pub fn close_open(&mut self, rec: &Recorder, now: u64) {
        if let Some(c) = self.cuda.as_mut() {
            c.abandon_open();
        }
        while self.open.len() > 0 {
            let e = self.open.remove_to_spare(0);
            e.end_ns = now.max(e.start_ns);
            e.add_flags(EventFlags::NO_END);
            emit_into(&self.slot, &mut self.fields.new_strings, rec, e);
        }
    }

    /// At thread exit: everything goes to the collector, and the slot is retired.
    pub fn retire(&mut self, rec: &Recorder) {
        self.close_open(rec, crate::clock::now());
        self.flush(rec);
        self.slot.dead.store(true, Ordering::Release);
    }
}

/// Appends `e` to the slot's batch, shipping the batch when full; after exit, writes it late.
#[inline]
fn emit_into(slot: &Slot, new_strings: &mut Vec<(StrId, Box<[u8]>)>, rec: &Recorder, e: &Event) {
    let late = slot.with_batch(|batch, closed| {
        // `closed` covers threads swept at exit; `finished` covers state created after it
        // (glibc runs thread-local destructors before atexit handlers, so a runtime's own
        // exit handler can call us on a thread whose state was already retired).
        if closed || recorder::finished() {
            return true;
        }
        if !new_strings.is_empty() {
            new_strings_to_live_file(new_strings);
            batch.strings.append(new_strings);
        }
        if !batch.events.push(e) {
            ship(batch, &rec.tx);
            match rec.pool.take() {
                Some(buf) => {
                    buf.set_owner(slot.thread);
                    batch.events = buf;
                }
                None => {
                    slot.dropped.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
            // A fresh buffer always has room for one event.
            batch.events.push(e);
        }
        // The next event is copied to fresh lines of the buffer, which the writer thread last
        // read: fetched now, they arrive while the program runs instead of during the next
        // callback (about 30 ns less per callback on the H200 machine, docs/performance/libaccprof.md).
        batch.events.prefetch_next(3);
        false
    });
    if late {
        let mut e = *e;
        e.add_flags(EventFlags::AFTER_SHUTDOWN);
        late::write_late(new_strings, e);
    }
}

/// The events a thread has started and not yet ended, innermost last.
///
/// The events stay allocated when they end: the next start reuses one with [`Event::reset`],
/// which clears only the fields that were set, instead of building a 300-byte event and
/// moving it onto the stack (two copies of five cache lines per callback).
#[derive(Default)]
struct OpenStack {
    /// `events[..depth]` are open; the rest are spares.
    events: Vec<Event>,
    depth: usize,
}

impl OpenStack {
    fn len(&self) -> usize {
        self.depth
    }

    fn top(&self) -> Option<&Event> {
        self.depth.checked_sub(1).map(|i| &self.events[i])
    }

    /// Opens an event of `kind` at `now` and returns it to be filled.
    #[inline]
    fn push(&mut self, kind: acc_event_t, now: u64) -> &mut Event {
        if self.depth == self.events.len() {
            self.events.push(Event::default());
        }
        let e = &mut self.events[self.depth];
        self.depth += 1;
        e.reset(kind, now, now);
        e
    }

    /// The innermost open event of `kind`.
    fn find_last(&self, kind: acc_event_t) -> Option<usize> {
        self.events[..self.depth]
            .iter()
            .rposition(|o| o.kind == kind)
    }

    fn get_mut(&mut self, i: usize) -> &mut Event {
        &mut self.events[i]
    }

    /// Closes the `i`th open event, keeping the order of the others, and returns it: it stays
    /// valid until the next push.
    #[inline]
    fn remove_to_spare(&mut self, i: usize) -> &mut Event {
        // Ends come innermost first; only a runtime that nests oddly makes this move events.
        if i + 1 < self.depth {
            self.events[i..self.depth].rotate_left(1);
        }
        self.depth -= 1;
        &mut self.events[self.depth]
    }
}

impl FieldReader {
    /// Copies what the runtime filled into `e`. With `only_missing` (an end event completing
    /// its start), fields already set stay, and nothing is read when nothing is missing.
    #[inline]
    fn fill(&mut self, e: &mut Event, inc: &Incoming<'_>, only_missing: bool) {
        let p = &inc.prof;
        if only_missing {
            // The common case: the start event carried everything its end could add.
            let wanted = match inc.kind.info_kind() {
                EventInfoKind::Data => DATA_FIELDS,
                EventInfoKind::Launch => LAUNCH_FIELDS,
                EventInfoKind::Other => 0,
            };
            if e.present_mask() & wanted == wanted {
                return;
            }
        } else {
            let tid = match p.thread_id() {
                Some(t) if t >= 0 => {
                    e.set_i64(Field::Thread, i64::from(t));
                    i64::from(t)
                }
                _ => {
                    e.set_i64(Field::Thread, self.os_tid);
                    e.add_flags(EventFlags::OS_THREAD_ID);
                    self.os_tid
                }
            };
            if tid != self.last_tid {
                self.last_tid = tid;
                crate::recorder::thread_id::set_current_thread_id(tid);
            }
            if let Some(v) = p.version() {
                e.set_i64(Field::Version, i64::from(v));
            }
            if let Some(v) = p.device_type() {
                e.set_i64(Field::DeviceType, i64::from(v.0));
            }
            if let Some(v) = p.device_number() {
                e.set_i64(Field::DeviceNumber, i64::from(v));
            }
            if let Some(v) = p.async_() {
                e.set_i64(Field::Async, v as i64);
            }
            if let Some(v) = p.async_queue() {
                e.set_i64(Field::AsyncQueue, v as i64);
            }
            // Runtimes say "unknown line" with -1 (GCC) or 0.
            for (f, v) in [
                (Field::LineNo, p.line_no()),
                (Field::EndLineNo, p.end_line_no()),
                (Field::FuncLineNo, p.func_line_no()),
                (Field::FuncEndLineNo, p.func_end_line_no()),
            ] {
                if let Some(l) = v.filter(|&l| l > 0) {
                    e.set_i64(f, i64::from(l));
                }
            }
            self.set_string(e, Field::SrcFile, p.src_file());
            self.set_string(e, Field::FuncName, p.func_name());
            if let Some(a) = &inc.api {
                if let Some(api) = a.device_api().filter(|&d| d != acc_device_api::NONE) {
                    e.set_i64(Field::DeviceApi, i64::from(api.0));
                    set_ptr(e, Field::DeviceHandle, a.device_handle());
                    set_ptr(e, Field::ContextHandle, a.context_handle());
                    set_ptr(e, Field::AsyncHandle, a.async_handle());
                }
            }
        }
        let Some(i) = &inc.info else { return };
        let missing = |e: &Event, f: Field| !only_missing || e.get(f).is_none();
        if missing(e, Field::ParentConstruct) {
            if let Some(v) = i.parent_construct() {
                e.set_i64(Field::ParentConstruct, i64::from(v.0));
            }
        }
        if missing(e, Field::Implicit) {
            if let Some(v) = i.implicit() {
                e.set_i64(Field::Implicit, i64::from(v));
            }
        }
        if let Some(d) = i.data() {
            if missing(e, Field::VarName) {
                self.set_string(e, Field::VarName, d.var_name());
            }
            if missing(e, Field::Bytes) {
                match d.bytes() {
                    // libgomp passes SIZE_MAX on free: the size is not known.
                    Some(usize::MAX) => e.add_flags(EventFlags::BYTES_UNKNOWN),
                    Some(b) => e.set(Field::Bytes, b as u64),
                    None => {}
                }
            }
            if missing(e, Field::HostPtr) {
                set_ptr(e, Field::HostPtr, d.host_ptr());
            }
            if missing(e, Field::DevicePtr) {
                set_ptr(e, Field::DevicePtr, d.device_ptr());
            }
        } else if let Some(l) = i.launch() {
            if missing(e, Field::KernelName) {
                self.set_string(e, Field::KernelName, l.kernel_name());
            }
            for (f, v) in [
                (Field::NumGangs, l.num_gangs()),
                (Field::NumWorkers, l.num_workers()),
                (Field::VectorLength, l.vector_length()),
            ] {
                if let Some(v) = v.filter(|&v| v != usize::MAX) {
                    if missing(e, f) {
                        e.set(f, v as u64);
                    }
                }
            }
        }
    }

    #[inline]
    fn set_string(&mut self, e: &mut Event, f: Field, p: Option<*const std::ffi::c_char>) {
        let Some(p) = p else { return };
        // SAFETY: the runtime hands us NUL-terminated strings that live through the callback.
        if let Some(id) = unsafe { self.strings.intern(p, &mut self.new_strings) } {
            e.set(f, u64::from(id.0));
        }
    }
}

/// Strings first used by the event being buffered (warm-up): their definitions go into the
/// live file before the event, for a reader recovering a killed run; the trace gets them with
/// the thread's batch.
#[cold]
fn new_strings_to_live_file(defs: &[(StrId, Box<[u8]>)]) {
    if let Some(live) = crate::recorder::live::get() {
        for (id, bytes) in defs {
            live.add_string(id.0, bytes);
        }
    }
}

#[inline]
fn set_ptr(e: &mut Event, f: Field, p: Option<*const std::ffi::c_void>) {
    if let Some(p) = p.filter(|p| !p.is_null()) {
        e.set(f, p as u64);
    }
}

const fn mask(fields: &[Field]) -> u64 {
    let mut m = 0;
    let mut i = 0;
    while i < fields.len() {
        m |= 1 << fields[i] as u64;
        i += 1;
    }
    m
}

/// Fields a data event's start usually carries; an end adds nothing when all are there.
const DATA_FIELDS: u64 = mask(&[
    Field::Bytes,
    Field::HostPtr,
    Field::DevicePtr,
    Field::VarName,
]);
const LAUNCH_FIELDS: u64 = mask(&[
    Field::KernelName,
    Field::NumGangs,
    Field::NumWorkers,
    Field::VectorLength,
]);

/// Construct-level starts: the events a user reads by source line.
/// A device allocation or free the program asked for itself (`acc_malloc`, `acc_free`): its
/// call site names the pointer and the loop that repeats it. Rare next to construct events, and
/// outside every directive, so the stack walk costs nothing on their path.
fn wants_api_call_site(e: &Event) -> bool {
    matches!(e.kind, acc_event_t::ALLOC | acc_event_t::FREE)
        && e.get(Field::SrcFile).is_none()
        && e.get_i64(Field::ParentConstruct)
            == Some(i64::from(accprof_abi::acc_construct_t::RUNTIME_API.0))
}

fn wants_call_site(kind: acc_event_t) -> bool {
    matches!(
        kind,
        acc_event_t::COMPUTE_CONSTRUCT_START
            | acc_event_t::ENTER_DATA_START
            | acc_event_t::EXIT_DATA_START
            | acc_event_t::UPDATE_START
            | acc_event_t::WAIT_START
            | acc_event_t::DEVICE_INIT_START
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_stack_reuses_events_without_their_old_fields() {
        let mut s = OpenStack::default();
        for (k, t) in [(16, 1), (10, 2), (20, 3)] {
            s.push(acc_event_t(k), t).set(Field::Bytes, t * 100);
        }
        assert_eq!(s.find_last(acc_event_t(10)), Some(1));
        // An end that is not the innermost (odd nesting): the others keep their order.
        let e = s.remove_to_spare(1);
        assert_eq!((e.kind, e.get(Field::Bytes)), (acc_event_t(10), Some(200)));
        assert_eq!(s.len(), 2);
        assert_eq!(s.top().map(|e| e.kind), Some(acc_event_t(20)));
        assert_eq!(s.find_last(acc_event_t(16)), Some(0));
        assert_eq!(
            s.find_last(acc_event_t(10)),
            None,
            "closed events are not found"
        );
        // The next start takes a spare: same memory, none of its fields.
        let e = s.push(acc_event_t(22), 9);
        assert_eq!(
            (e.kind, e.start_ns, e.end_ns, e.get(Field::Bytes)),
            (acc_event_t(22), 9, 9, None)
        );
        assert_eq!(s.events.len(), 3, "no new event was allocated");
        while s.len() > 0 {
            s.remove_to_spare(s.len() - 1);
        }
        assert!(s.top().is_none());
    }
}
