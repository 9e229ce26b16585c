//! What each recording thread keeps: its slot, the constructs it has open, its string cache.
//!
//! A start event is held on the thread's open stack until its end event arrives; then the two
//! are joined into one [`Event`] and buffered. Runtimes nest events properly on a thread, but
//! not always (an end without its start, a start never ended), so matching searches the stack
//! from the top and every odd case is kept and flagged rather than dropped.

use crate::lifecycle::{self, Recorder};
use crate::slots::{ship, Slot};
use crate::strings::StringCache;
use accprof_abi::read::{ApiFields, EventFields, ProfFields};
use accprof_abi::{acc_device_api, acc_event_t, EventShape};
use accprof_trace::{Event, EventFlags, Field, StrId};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Deeper nesting than this means ends are being lost; the oldest open event is then written
/// out as unfinished so the stack stays bounded.
const MAX_OPEN: usize = 128;

pub struct ThreadState {
    slot: Arc<Slot>,
    open: Vec<Event>,
    strings: StringCache,
    /// Strings first seen since the last event was buffered.
    new_strings: Vec<(StrId, Box<[u8]>)>,
    os_tid: i64,
}

/// The fields of one callback, as read from the runtime's structures.
pub struct Incoming<'a> {
    pub now: u64,
    pub kind: acc_event_t,
    pub prof: &'a ProfFields,
    pub info: Option<&'a EventFields>,
    pub api: Option<&'a ApiFields>,
}

impl ThreadState {
    pub fn new(rec: &Recorder) -> Self {
        // SAFETY: gettid has no preconditions.
        let os_tid = i64::from(unsafe { libc::gettid() });
        let slot = Arc::new(Slot::new(os_tid));
        rec.registry.add(slot.clone());
        Self { slot, open: Vec::with_capacity(16), strings: StringCache::default(), new_strings: Vec::new(), os_tid }
    }

    /// Records one callback.
    pub fn handle(&mut self, rec: &Recorder, inc: &Incoming<'_>) {
        match inc.kind.shape() {
            EventShape::Start => {
                let mut e = Event::new(inc.kind, inc.now);
                self.fill(&mut e, inc, false);
                if wants_call_site(inc.kind) && e.get(Field::SrcFile).is_none() {
                    if let Some(ra) = crate::unwind::caller_return_address() {
                        e.set(Field::ReturnAddress, ra);
                    }
                }
                if self.open.len() >= MAX_OPEN {
                    let mut oldest = self.open.remove(0);
                    oldest.end_ns = inc.now;
                    oldest.add_flags(EventFlags::NO_END);
                    self.emit(rec, oldest);
                }
                self.open.push(e);
            }
            EventShape::End => {
                let start_kind = inc.kind.partner();
                let e = match self.open.iter().rposition(|o| o.kind == start_kind) {
                    Some(i) => {
                        let mut e = self.open.remove(i);
                        e.end_ns = inc.now.max(e.start_ns);
                        // Some runtimes fill a field only at the end (bytes of a download).
                        self.fill(&mut e, inc, true);
                        e
                    }
                    None => {
                        let mut e = Event::new(start_kind, inc.now);
                        self.fill(&mut e, inc, false);
                        e.add_flags(EventFlags::NO_START);
                        e
                    }
                };
                self.emit(rec, e);
            }
            EventShape::Point | EventShape::Unknown => {
                let mut e = Event::new(inc.kind, inc.now);
                self.fill(&mut e, inc, false);
                self.emit(rec, e);
            }
        }
        if inc.kind == acc_event_t::RUNTIME_SHUTDOWN {
            self.flush(rec);
            lifecycle::request_flush(rec);
        }
    }

    /// Buffers a finished event.
    fn emit(&mut self, rec: &Recorder, e: Event) {
        let new_strings = &mut self.new_strings;
        let slot = &self.slot;
        let late = slot.with_batch(|batch, closed| {
            // `closed` covers threads swept at exit; `finished` covers state created after it
            // (glibc runs thread-local destructors before atexit handlers, so a runtime's own
            // exit handler can call us on a thread whose state was already retired).
            if closed || lifecycle::finished() {
                return Some(e);
            }
            if !new_strings.is_empty() {
                batch.strings.append(new_strings);
            }
            if batch.events.len() >= batch.events.capacity() {
                ship(batch, &rec.tx);
                match rec.pool.take() {
                    Some(buf) => batch.events = buf,
                    None => {
                        slot.dropped.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                }
            }
            batch.events.push(e);
            None
        });
        if let Some(mut e) = late {
            e.add_flags(EventFlags::AFTER_SHUTDOWN);
            lifecycle::write_late(&mut self.new_strings, e);
        }
    }

    /// Hands this thread's buffer to the collector now.
    pub fn flush(&mut self, rec: &Recorder) {
        let new_strings = &mut self.new_strings;
        self.slot.with_batch(|batch, _| {
            batch.strings.append(new_strings);
            ship(batch, &rec.tx);
        });
    }

    /// Writes out constructs still open (the program is ending inside them) as unfinished.
    pub fn close_open(&mut self, rec: &Recorder, now: u64) {
        for mut e in std::mem::take(&mut self.open) {
            e.end_ns = now.max(e.start_ns);
            e.add_flags(EventFlags::NO_END);
            self.emit(rec, e);
        }
    }

    /// At thread exit: everything goes to the collector, and the slot is retired.
    pub fn retire(&mut self, rec: &Recorder) {
        self.close_open(rec, crate::clock::monotonic_ns());
        self.flush(rec);
        self.slot.dead.store(true, Ordering::Release);
    }

    /// Copies what the runtime filled into `e`. With `only_missing`, fields already set stay.
    fn fill(&mut self, e: &mut Event, inc: &Incoming<'_>, only_missing: bool) {
        let put = |e: &mut Event, f: Field, v: Option<u64>| {
            if let Some(v) = v {
                if !(only_missing && e.get(f).is_some()) {
                    e.set(f, v);
                }
            }
        };
        let p = inc.prof;
        if !only_missing {
            match p.thread_id {
                Some(t) if t >= 0 => e.set_i64(Field::Thread, i64::from(t)),
                _ => {
                    e.set_i64(Field::Thread, self.os_tid);
                    e.add_flags(EventFlags::OS_THREAD_ID);
                }
            }
        }
        let signed = |v: Option<i64>| v.map(|v| v as u64);
        let line = |v: Option<i32>| v.filter(|&l| l > 0).map(|l| l as u64);
        put(e, Field::Version, signed(p.version.map(i64::from)));
        put(e, Field::DeviceType, signed(p.device_type.map(|d| i64::from(d.0))));
        put(e, Field::DeviceNumber, signed(p.device_number.map(i64::from)));
        put(e, Field::Async, signed(p.async_.map(|a| a as i64)));
        put(e, Field::AsyncQueue, signed(p.async_queue.map(|a| a as i64)));
        put(e, Field::LineNo, line(p.line_no));
        put(e, Field::EndLineNo, line(p.end_line_no));
        put(e, Field::FuncLineNo, line(p.func_line_no));
        put(e, Field::FuncEndLineNo, line(p.func_end_line_no));
        let strings = &mut self.strings;
        let new = &mut self.new_strings;
        let mut intern = |ptr: Option<*const std::ffi::c_char>| {
            // SAFETY: the runtime hands us NUL-terminated strings that live through the callback.
            ptr.and_then(|p| unsafe { strings.intern(p, new) }).map(|id| u64::from(id.0))
        };
        put(e, Field::SrcFile, intern(p.src_file));
        put(e, Field::FuncName, intern(p.func_name));
        if let Some(i) = inc.info {
            put(e, Field::ParentConstruct, signed(i.parent_construct.map(|c| i64::from(c.0))));
            put(e, Field::Implicit, signed(i.implicit.map(i64::from)));
            put(e, Field::VarName, intern(i.var_name));
            put(e, Field::KernelName, intern(i.kernel_name));
            match i.bytes {
                Some(usize::MAX) => e.add_flags(EventFlags::BYTES_UNKNOWN),
                b => put(e, Field::Bytes, b.map(|b| b as u64)),
            }
            let ptr = |p: Option<*const std::ffi::c_void>| p.filter(|p| !p.is_null()).map(|p| p as u64);
            put(e, Field::HostPtr, ptr(i.host_ptr));
            put(e, Field::DevicePtr, ptr(i.device_ptr));
            let dim = |v: Option<usize>| v.filter(|&v| v != usize::MAX).map(|v| v as u64);
            put(e, Field::NumGangs, dim(i.num_gangs));
            put(e, Field::NumWorkers, dim(i.num_workers));
            put(e, Field::VectorLength, dim(i.vector_length));
        }
        if let Some(a) = inc.api {
            if let Some(api) = a.device_api.filter(|&d| d != acc_device_api::NONE) {
                put(e, Field::DeviceApi, Some(i64::from(api.0) as u64));
                let ptr = |p: Option<*const std::ffi::c_void>| p.filter(|p| !p.is_null()).map(|p| p as u64);
                put(e, Field::DeviceHandle, ptr(a.device_handle));
                put(e, Field::ContextHandle, ptr(a.context_handle));
                put(e, Field::AsyncHandle, ptr(a.async_handle));
            }
        }
    }
}

/// Construct-level starts: the events a user reads by source line.
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
