//! What each recording thread keeps: its slot, the constructs it has open, its strings.
//!
//! A start event is held until its end event arrives; then the two are joined into one record
//! and committed to the thread's buffer. A transfer's, launch's or wait's record is built where
//! it will be committed, in the buffer's free words; a construct's, which holds other events, on
//! the thread's open stack. Runtimes nest events properly on a thread, but not
//! always (an end without its start, a start never ended), so matching searches the stack from
//! the top and every odd case is kept and flagged rather than dropped.
//!
//! A callback copies the runtime's structures as they are into the record (accprof_trace::raw)
//! and interns their strings; the writer thread reads the fields from the copies. Reading,
//! testing and packing each field here cost four times the instructions (docs/performance/
//! libaccprof.md): this runs on the program's thread, under the runtime's lock.

use crate::record::nvtx::{self, NvtxAttrs, NvtxThread};
use crate::recorder::slots::{Slot, SlotHome};
use crate::recorder::{self, late, Recorder};
use crate::strings::ThreadStrings;
use crate::unwind::Shortcuts;
use accprof_abi::read::{ApiView, EventView, ProfView};
use accprof_abi::{
    acc_api_info, acc_device_api, acc_event_info, acc_event_t, acc_prof_info, EventInfoKind,
    EventShape,
};
use accprof_trace::raw::{self, word};
use accprof_trace::{Event, PackedEvents};
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Deeper nesting than this means ends are being lost; the oldest open event is then written
/// out as unfinished so the stack stays bounded.
const MAX_OPEN: usize = 128;

type Words = [u64; raw::MAX_WORDS];

/// A recording thread's slot and state, in one allocation. A callback that follows a driver
/// call finds the address translations of its pages gone as well as their cache lines
/// (docs/performance/libaccprof.md, the harness's `tlb` mode), so everything a common callback
/// touches here lies in the first page: the home is page-aligned, the slot comes first, then
/// the state's small fields, and the state's open-event stack last, its first entries (the
/// usual nesting: construct, data event, transfer) inside that page.
///
/// The registry holds the home (as the slot's [`SlotHome`]) until the writer is done with the
/// slot, which can be after the thread ended; the state is dropped when the thread ends
/// ([`ThreadBox`]), the memory when the last holder lets go.
#[repr(C, align(4096))]
pub struct ThreadHome {
    slot: Slot,
    state: UnsafeCell<ManuallyDrop<ThreadState>>,
}

// SAFETY: the slot is Sync (slots.rs); the state is touched only through the one ThreadBox
// (its thread, or the orphan lock's holder), never through the registry's references.
unsafe impl Sync for ThreadHome {}
// SAFETY: as above.
unsafe impl Send for ThreadHome {}

impl SlotHome for ThreadHome {
    fn slot(&self) -> &Slot {
        &self.slot
    }
}

/// The owner of a thread's state: dereferences to it, and drops it (not the slot, which the
/// registry may still hold) when dropped.
pub struct ThreadBox(Arc<ThreadHome>);

impl ThreadBox {
    /// The state's address, stable for the box's life (what CURRENT and the thread tables
    /// hold).
    pub fn state_ptr(&self) -> *mut ThreadState {
        self.0.state.get().cast()
    }
}

impl std::ops::Deref for ThreadBox {
    type Target = ThreadState;

    fn deref(&self) -> &ThreadState {
        // SAFETY: the state lives until this box drops it; only this box reaches it.
        unsafe { &*self.state_ptr() }
    }
}

impl std::ops::DerefMut for ThreadBox {
    fn deref_mut(&mut self) -> &mut ThreadState {
        // SAFETY: as above, and `&mut self` makes this the only reference made through it.
        unsafe { &mut *self.state_ptr() }
    }
}

impl Drop for ThreadBox {
    fn drop(&mut self) {
        // SAFETY: the state is dropped once, here; nothing reaches it afterwards (the registry
        // reads the slot only).
        unsafe { ManuallyDrop::drop(&mut *self.0.state.get()) }
    }
}

/// The thread's slot, in its home beside the state (valid as long as the state is).
#[derive(Clone, Copy)]
struct SlotRef(NonNull<Slot>);

impl std::ops::Deref for SlotRef {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        // SAFETY: the slot is in the home that holds the state holding this reference.
        unsafe { self.0.as_ref() }
    }
}

/// A recording thread's state (in its [`ThreadHome`], after its slot). Within it, the fields
/// every callback reads come first: the first two cache lines.
#[repr(C, align(64))]
pub struct ThreadState {
    slot: SlotRef,
    /// The innermost open event's record is being built in the buffer's free words, where it
    /// will be committed, instead of in its entry of `open` (see [`ThreadState::start`]).
    top_in_buffer: bool,
    /// `cuda` is in use (read without touching its cache line).
    cuda_on: bool,
    os_tid: i64,
    /// The thread id last published to [`crate::recorder::thread_id::current_thread_id`].
    last_tid: i64,
    strings: ThreadStrings,
    /// Where construct calls were found on the stack (unwind).
    shortcuts: Shortcuts,
    /// CUDA events around launches and copies, when they are in use (cuda_events).
    cuda: Option<crate::device::cuda_events::pending::ThreadEvents>,
    /// Where a point event or an unmatched end is built.
    scratch: Open,
    /// The program's NVTX ranges open on this thread.
    nvtx: NvtxThread,
    open: OpenStack,
}

/// One callback's arguments, read only as far as every callback needs: the event's kind and
/// how many bytes of `acc_prof_info` the runtime filled. The structures are copied whole into
/// the record; the field-by-field views (accprof_abi::read) are built only on the rare paths
/// that read a single field (a structure filled in part, CUDA events, a device shutdown).
#[derive(Clone, Copy)]
pub struct Call {
    pub now: u64,
    pub kind: acc_event_t,
    pub shape: EventShape,
    prof: *const acc_prof_info,
    prof_valid: usize,
    /// Null when the runtime passed none.
    info: *const acc_event_info,
    /// Null when the runtime passed none, and for end events (which take their handles from
    /// their start).
    api: *const acc_api_info,
}

/// `valid_bytes` (the second `int` of every structure) as a byte count: negative covers nothing.
#[inline(always)]
fn valid_bytes(head: u64) -> usize {
    let v = (head >> 32) as u32 as i32;
    if v < 0 {
        0
    } else {
        v as usize
    }
}

impl Call {
    /// The callback's arguments; `None` when `prof` is NULL.
    ///
    /// # Safety
    /// As for the callback: each pointer is NULL or points at its structure, whose first
    /// `valid_bytes` bytes (at least the first 8) are readable through the callback.
    #[inline(always)]
    pub unsafe fn new(
        now: u64,
        prof: *const acc_prof_info,
        info: *const acc_event_info,
        api: *const acc_api_info,
    ) -> Option<Self> {
        if prof.is_null() {
            return None;
        }
        // SAFETY: event_type and valid_bytes are the first 8 bytes, which every runtime fills.
        let head = unsafe { (prof as *const u64).read_unaligned() };
        let kind = acc_event_t(head as u32 as i32);
        let shape = kind.shape();
        Some(Self {
            now,
            kind,
            shape,
            prof,
            prof_valid: valid_bytes(head),
            info,
            api: if shape == EventShape::End {
                std::ptr::null()
            } else {
                api
            },
        })
    }

    /// `acc_prof_info`, field by field.
    fn prof_view(&self) -> Option<ProfView<'_>> {
        // SAFETY: the contract of `new`.
        unsafe { ProfView::new(self.prof) }
    }

    /// The event information, field by field.
    fn info_view(&self) -> Option<EventView<'_>> {
        // SAFETY: as above.
        unsafe { EventView::new(self.info, self.kind) }
    }

    /// `acc_api_info`, field by field (`None` for end events).
    pub fn api_view(&self) -> Option<ApiView<'_>> {
        // SAFETY: as above.
        unsafe { ApiView::new(self.api) }
    }
}

impl ThreadState {
    /// A new state for the calling thread, its slot registered with `rec`. Built in place on
    /// the heap: the open-event stack makes it 41 KiB, too much to pass through the stack of a
    /// thread the runtime made.
    pub fn boxed(rec: &Recorder) -> ThreadBox {
        // SAFETY: gettid has no preconditions.
        let os_tid = i64::from(unsafe { libc::gettid() });
        let cuda = crate::device::cuda_events::thread_events();
        let mut home = Arc::<ThreadHome>::new_uninit();
        let h = Arc::get_mut(&mut home)
            .expect("a new Arc has one holder")
            .as_mut_ptr();
        // SAFETY: every field of the allocation is written once below, through raw pointers
        // (no reference to uninitialised memory is made), before `assume_init`.
        let home = unsafe {
            let slot = std::ptr::addr_of_mut!((*h).slot);
            slot.write(Slot::new(os_tid));
            let p: *mut ThreadState = std::ptr::addr_of_mut!((*h).state).cast();
            std::ptr::addr_of_mut!((*p).slot).write(SlotRef(NonNull::new_unchecked(slot)));
            std::ptr::addr_of_mut!((*p).top_in_buffer).write(false);
            std::ptr::addr_of_mut!((*p).cuda_on).write(cuda.is_some());
            std::ptr::addr_of_mut!((*p).os_tid).write(os_tid);
            std::ptr::addr_of_mut!((*p).last_tid).write(i64::MIN);
            std::ptr::addr_of_mut!((*p).strings).write(ThreadStrings::default());
            std::ptr::addr_of_mut!((*p).shortcuts).write(Shortcuts::default());
            std::ptr::addr_of_mut!((*p).cuda).write(cuda);
            std::ptr::addr_of_mut!((*p).scratch).write(NO_OPEN);
            std::ptr::addr_of_mut!((*p).nvtx).write(NvtxThread::default());
            std::ptr::addr_of_mut!((*p).open.depth).write(0);
            let entries = std::ptr::addr_of_mut!((*p).open.entries) as *mut Open;
            for i in 0..MAX_OPEN {
                entries.add(i).write(NO_OPEN);
            }
            home.assume_init()
        };
        rec.registry.add(home.clone());
        ThreadBox(home)
    }

    /// This thread's buffer slot.
    #[inline(always)]
    pub fn slot(&self) -> &Slot {
        &self.slot
    }

    /// Records one callback.
    #[inline(always)]
    pub fn handle(&mut self, rec: &Recorder, c: &Call) {
        match c.shape {
            EventShape::Start => self.start(rec, c),
            EventShape::End => self.end(rec, c),
            EventShape::Point | EventShape::Unknown => self.point(rec, c),
        }
        // One test for the three kinds that need more than a record (the bits of
        // DEVICE_SHUTDOWN_START, RUNTIME_SHUTDOWN and ENQUEUE_LAUNCH_START).
        const SPECIAL: u32 = 1 << 3 | 1 << 5 | 1 << 18;
        if (c.kind.0 as u32) < 32 && SPECIAL >> c.kind.0 & 1 != 0 {
            self.special(rec, c);
        }
    }

    #[cold]
    fn special(&mut self, rec: &Recorder, c: &Call) {
        match c.kind {
            acc_event_t::DEVICE_SHUTDOWN_START if self.cuda_on => {
                self.before_device_shutdown(rec, c)
            }
            acc_event_t::RUNTIME_SHUTDOWN => rec.request_flush(),
            // Before the launch reaches the driver, so that CUPTI's callback already skips it.
            acc_event_t::ENQUEUE_LAUNCH_START
                if crate::hot::load() & crate::hot::LAUNCH_SWITCH != 0 =>
            {
                crate::device::cupti::runtime_reports_launches()
            }
            _ => {}
        }
    }

    /// A start: the record of a transfer, a launch or a wait (events that runtimes nest nothing
    /// in) is built where it will be committed, in the buffer's free words; its end then only
    /// stamps its time and commits it. Should another record be committed first
    /// ([`spill`](Self::spill)), or for the other events (constructs, which hold transfers and
    /// launches), the record is built in its entry of the open stack and copied at its end.
    #[inline]
    fn start(&mut self, rec: &Recorder, c: &Call) {
        if self.open.depth >= MAX_OPEN {
            self.give_up_oldest(rec, c.now);
        }
        // An event the runtime calls implicit (the implicit enter/exit data of a compute
        // construct, the device init of a first construct) comes from the directive that is
        // open around it: take that directive's call site instead of finding it again.
        let enclosing = if self.open.depth == 0 {
            0
        } else {
            self.top_words()[word::CALL_SITE]
        };
        self.spill();
        let i = self.open.depth;
        self.open.depth += 1;
        // SAFETY: this thread state owns its slot's buffer.
        // ENQUEUE_LAUNCH_START, ENQUEUE_UPLOAD_START, ENQUEUE_DOWNLOAD_START, WAIT_START.
        const LEAVES: u32 = 1 << 18 | 1 << 20 | 1 << 22 | 1 << 24;
        let leaf = (c.kind.0 as u32) < 32 && LEAVES >> c.kind.0 & 1 != 0;
        let spare = if !leaf
            || recorder::finished()
            || crate::bench_stage::stops_after(crate::bench_stage::NO_EMIT)
        {
            None
        } else {
            // SAFETY: this thread state owns its slot's buffer.
            unsafe { self.slot.buffer() }.spare_raw()
        };
        self.top_in_buffer = spare.is_some();
        let o = &mut self.open.entries[i];
        let w = match spare {
            Some(w) => w,
            None => &mut o.words,
        };
        let threads = (self.os_tid, self.nvtx.top());
        (o.len, o.complete) = fill(
            w,
            c,
            (&mut self.strings, &mut self.shortcuts),
            threads,
            &mut self.last_tid,
            enclosing,
        );
        o.hash = None;
        if crate::content::on() {
            // An upload's bytes are what the runtime is about to copy: hashed now.
            o.hash = crate::content::hash_record(&w[..o.len], false);
        }
        if self.cuda_on {
            if let Some(cuda) = self.cuda.as_mut() {
                cuda.on_start(c.kind, i, c.api_view().as_ref());
            }
        }
    }

    /// The innermost open event's words, wherever they are being built.
    #[inline(always)]
    fn top_words(&mut self) -> &mut Words {
        let top = self.open.depth - 1;
        if self.top_in_buffer {
            // SAFETY: this thread state owns its slot's buffer; its free words hold the record
            // (nothing was committed or shipped since `start` put it there: `spill` runs first).
            if let Some(w) = unsafe { self.slot.buffer() }.spare_raw() {
                return w;
            }
        }
        &mut self.open.entries[top].words
    }

    /// Moves the innermost open event's record from the buffer's free words to its entry:
    /// before anything else is committed to the buffer or the buffer is shipped.
    #[inline(always)]
    fn spill(&mut self) {
        if self.top_in_buffer {
            self.spill_top();
        }
    }

    #[inline(never)]
    fn spill_top(&mut self) {
        self.top_in_buffer = false;
        let o = &mut self.open.entries[self.open.depth - 1];
        // SAFETY: as in `top_words`.
        if let Some(w) = unsafe { self.slot.buffer() }.spare_raw() {
            o.words[..o.len].copy_from_slice(&w[..o.len]);
        }
    }

    #[inline]
    fn end(&mut self, rec: &Recorder, c: &Call) {
        // An end event's number is its start's plus one (Call::shape said End).
        let start_kind = acc_event_t(c.kind.0 - 1);
        let want = u64::from(start_kind.0 as u32);
        // After the exit flush a record goes to the file directly (emit), not to the buffer.
        if self.top_in_buffer
            && self.top_words()[word::HEAD] & 0xffff_ffff == want
            && !recorder::finished()
        {
            return self.end_in_buffer(c, start_kind);
        }
        self.spill();
        let Some(i) = self.open.find_last(start_kind) else {
            return self.unmatched_end(rec, c, start_kind);
        };
        let o = &mut self.open.entries[i];
        o.words[word::END] = c.now.max(o.words[word::START]);
        if !o.complete {
            // Some runtimes fill a field only at the end (bytes of a download).
            complete(&mut o.words, &mut o.len, c, &mut self.strings);
        }
        if crate::content::on() && o.hash.is_none() {
            // A synchronous download's bytes are what it delivered: hashed now.
            o.hash = crate::content::hash_record(&o.words[..o.len], true);
        }
        let len = seal(&mut o.words, o.len, o.hash);
        emit(&self.slot, rec, &o.words, len);
        if self.cuda_on {
            if let Some(cuda) = self.cuda.as_mut() {
                if let Some(e) = as_event(&o.words, len) {
                    cuda.on_end(start_kind, i, &e);
                }
            }
        }
        self.open.close(i);
    }

    /// The end of the innermost open event, whose record is in the buffer's free words:
    /// stamped and committed where it lies.
    #[inline(always)]
    fn end_in_buffer(&mut self, c: &Call, start_kind: acc_event_t) {
        let i = self.open.depth - 1;
        self.open.depth = i;
        self.top_in_buffer = false;
        // SAFETY: as in `top_words`.
        let buf = unsafe { self.slot.buffer() };
        let Some(w) = buf.spare_raw() else { return };
        let o = &mut self.open.entries[i];
        w[word::END] = c.now.max(w[word::START]);
        if !o.complete {
            complete(w, &mut o.len, c, &mut self.strings);
        }
        if crate::content::on() && o.hash.is_none() {
            o.hash = crate::content::hash_record(&w[..o.len], true);
        }
        let len = seal(w, o.len, o.hash);
        if self.cuda_on {
            if let Some(cuda) = self.cuda.as_mut() {
                if let Some(e) = as_event(w, len) {
                    cuda.on_end(start_kind, i, &e);
                }
            }
        }
        buf.commit_in_place(len);
        fetch_next_lines(buf);
    }

    /// A point event: built in the buffer's free words and committed there, or (after the
    /// exit flush, or with no buffer) built aside and emitted.
    #[inline]
    fn point(&mut self, rec: &Recorder, c: &Call) {
        self.spill();
        let threads = (self.os_tid, self.nvtx.top());
        let outside = self.open.depth == 0;
        let in_buffer =
            !recorder::finished() && !crate::bench_stage::stops_after(crate::bench_stage::NO_EMIT);
        // SAFETY: this thread state owns its slot's buffer.
        let buf = unsafe { self.slot.buffer() };
        if let Some(w) = buf.spare_raw().filter(|_| in_buffer) {
            let (len, _) = fill(
                w,
                c,
                (&mut self.strings, &mut self.shortcuts),
                threads,
                &mut self.last_tid,
                0,
            );
            w[word::END] = c.now;
            if outside && wants_api_call_site(w) {
                api_call_site(w, &mut self.shortcuts, c.kind);
            }
            buf.commit_in_place(len);
            fetch_next_lines(buf);
            return;
        }
        let o = &mut self.scratch;
        (o.len, o.complete) = fill(
            &mut o.words,
            c,
            (&mut self.strings, &mut self.shortcuts),
            threads,
            &mut self.last_tid,
            0,
        );
        o.words[word::END] = c.now;
        if outside && wants_api_call_site(&o.words) {
            api_call_site(&mut o.words, &mut self.shortcuts, c.kind);
        }
        emit(&self.slot, rec, &o.words, o.len);
    }

    /// An end whose start this thread never saw: kept, flagged, at the end's time, with what
    /// the end event carries.
    #[cold]
    fn unmatched_end(&mut self, rec: &Recorder, c: &Call, start_kind: acc_event_t) {
        let o = &mut self.scratch;
        let threads = (self.os_tid, self.nvtx.top());
        (o.len, o.complete) = fill(
            &mut o.words,
            c,
            (&mut self.strings, &mut self.shortcuts),
            threads,
            &mut self.last_tid,
            0,
        );
        o.words[word::HEAD] =
            o.words[word::HEAD] & !0xffff_ffff | u64::from(start_kind.0 as u32) | raw::NO_START;
        o.words[word::END] = c.now;
        emit(&self.slot, rec, &o.words, o.len);
    }

    /// The stack is full: the oldest open event is written out as unfinished.
    #[cold]
    fn give_up_oldest(&mut self, rec: &Recorder, now: u64) {
        self.spill();
        let o = &mut self.open.entries[0];
        o.words[word::END] = now.max(o.words[word::START]);
        o.words[word::HEAD] |= raw::NO_END;
        let len = seal(&mut o.words, o.len, o.hash);
        emit(&self.slot, rec, &o.words, len);
        self.open.close(0);
        if let Some(c) = self.cuda.as_mut() {
            c.shift_down();
        }
    }

    /// The runtime is about to shut down a device: its CUDA context may be gone after this
    /// event, so the CUDA events recorded in it are finished now (waiting a bounded time).
    #[cold]
    fn before_device_shutdown(&mut self, rec: &Recorder, c: &Call) {
        let Some(a) = c
            .api_view()
            .filter(|a| a.device_api() == Some(acc_device_api::CUDA))
        else {
            return;
        };
        let Some(ctx) = a.context_handle().filter(|p| !p.is_null()) else {
            return;
        };
        let events = crate::device::cuda_events::device_shutdown(ctx as usize);
        if !events.is_empty() {
            let _ = rec
                .tx
                .send(crate::recorder::message::Message::CudaEvents(events));
        }
    }

    /// Hands this thread's buffer to the collector now.
    pub fn flush(&mut self, rec: &Recorder) {
        self.spill();
        // SAFETY: this thread state owns its slot's buffer.
        unsafe { self.slot.ship(&rec.tx) };
    }

    /// Writes out constructs and NVTX ranges still open (the program is ending inside them)
    /// as unfinished.
    pub fn close_open(&mut self, rec: &Recorder, now: u64) {
        if let Some(c) = self.cuda.as_mut() {
            c.abandon_open();
        }
        self.spill();
        let slot = &self.slot;
        self.nvtx.close_all(now, |e| emit_event(slot, rec, e));
        for o in &mut self.open.entries[..self.open.depth] {
            o.words[word::END] = now.max(o.words[word::START]);
            o.words[word::HEAD] |= raw::NO_END;
            let len = seal(&mut o.words, o.len, o.hash);
            emit(&self.slot, rec, &o.words, len);
        }
        self.open.depth = 0;
    }

    /// At thread exit: everything goes to the collector, and the slot is retired.
    pub fn retire(&mut self, rec: &Recorder) {
        self.close_open(rec, crate::clock::now());
        self.flush(rec);
        self.slot.dead.store(true, Ordering::Release);
    }
}

impl ThreadState {
    /// The thread id this thread's events carry (the runtime's, else the OS's).
    fn thread_id(&self) -> i64 {
        if self.last_tid != i64::MIN {
            self.last_tid
        } else {
            self.os_tid
        }
    }

    /// nvtxRangePush: opens a range on this thread; its level in its domain.
    pub fn nvtx_push(&mut self, rec: &Recorder, now: u64, attrs: &NvtxAttrs) -> i32 {
        self.spill();
        let thread = self.thread_id();
        let slot = &self.slot;
        let level = self.nvtx.push(&mut self.strings, now, thread, attrs, |e| {
            emit_event(slot, rec, e)
        });
        crate::recorder::thread_id::set_current_nvtx_range(self.nvtx.top());
        level
    }

    /// nvtxRangePop: closes the innermost range of `domain`; its level, or -1 when none was
    /// open (as nvtx3 says an error).
    pub fn nvtx_pop(&mut self, rec: &Recorder, now: u64, domain: Option<u32>) -> i32 {
        self.spill();
        let slot = &self.slot;
        let level = self.nvtx.pop(now, domain, |e| emit_event(slot, rec, e));
        crate::recorder::thread_id::set_current_nvtx_range(self.nvtx.top());
        level.unwrap_or(-1)
    }

    /// nvtxMark.
    pub fn nvtx_mark(&mut self, rec: &Recorder, now: u64, attrs: &NvtxAttrs) {
        self.spill();
        let thread = self.thread_id();
        let slot = &self.slot;
        self.nvtx.mark(&mut self.strings, now, thread, attrs, |e| {
            emit_event(slot, rec, e)
        });
    }

    /// nvtxRangeStart: a range any thread may end; its id.
    pub fn nvtx_start(&mut self, now: u64, attrs: &NvtxAttrs) -> u64 {
        let thread = self.thread_id();
        let mut e = nvtx::build(
            &mut self.strings,
            accprof_trace::nvtx::START_END,
            now,
            thread,
            attrs,
        );
        let top = self.nvtx.top();
        if top != 0 {
            e.set(accprof_trace::Field::NvtxParent, u64::from(top));
        }
        nvtx::start(e)
    }

    /// nvtxRangeEnd, on whichever thread ends the range.
    pub fn nvtx_end(&mut self, rec: &Recorder, now: u64, id: u64) {
        self.spill();
        if let Some(e) = nvtx::end(id, now) {
            emit_event(&self.slot, rec, &e);
        }
    }
}

/// Appends an event built whole (NVTX ranges and marks: their own path, a few per construct
/// at most) to the slot's buffer, packed; after the exit flush, writes it late.
fn emit_event(slot: &Slot, rec: &Recorder, e: &Event) {
    if recorder::finished() {
        let mut e = *e;
        e.add_flags(accprof_trace::EventFlags::AFTER_SHUTDOWN);
        return late::write_late(e);
    }
    // SAFETY: only the thread state owning the slot emits into it.
    if unsafe { slot.buffer() }.push(e) {
        return;
    }
    // SAFETY: as above.
    if !unsafe { slot.next_buffer(&rec.pool, &rec.tx) } {
        slot.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: as above; a fresh buffer has room for one event.
    unsafe { slot.buffer() }.push(e);
}

/// Appends a record to the slot's buffer, taking a fresh buffer when it is full; after the exit
/// flush, writes it late.
#[inline]
fn emit(slot: &Slot, rec: &Recorder, words: &Words, len: usize) {
    if recorder::finished() {
        return emit_late(words, len);
    }
    if crate::bench_stage::stops_after(crate::bench_stage::NO_EMIT) {
        std::hint::black_box((words, len));
        return;
    }
    // SAFETY: only the thread state owning the slot emits into it.
    let buf = unsafe { slot.buffer() };
    if !buf.push_raw(words, len) {
        // SAFETY: as above.
        if !unsafe { slot.next_buffer(&rec.pool, &rec.tx) } {
            slot.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // A fresh buffer always has room for one record.
        // SAFETY: as above.
        unsafe { slot.buffer() }.push_raw(words, len);
    }
    // SAFETY: as above.
    fetch_next_lines(unsafe { slot.buffer() });
}

/// After a commit: the next record is written to fresh lines of the buffer, which the writer
/// thread last read; fetched now, they arrive while the program runs instead of during the next
/// callback (measured in docs/performance/libaccprof.md).
#[inline(always)]
fn fetch_next_lines(buf: &PackedEvents) {
    buf.prefetch_next(4);
}

#[cold]
fn emit_late(words: &Words, len: usize) {
    let mut e = Event::default();
    if raw::decode(&words[..len], &mut e).is_some() {
        e.add_flags(accprof_trace::EventFlags::AFTER_SHUTDOWN);
        late::write_late(e);
    }
}

/// A start event waiting for its end, as the record it will be.
// What an end reads of a record built in the buffer (`len`, `complete`, `hash`) comes first:
// one cache line of the entry.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Open {
    /// The hash of the transfer's bytes (ACCPROF_CONTENT), written as the record's last word
    /// when it is emitted: the end's information, when copied, comes before it.
    hash: Option<u64>,
    /// Words of `words` in use.
    len: usize,
    /// The start carried every field its end could add (so the end's information is not
    /// copied).
    complete: bool,
    words: Words,
}

const NO_OPEN: Open = Open {
    hash: None,
    len: 0,
    complete: true,
    words: [0; raw::MAX_WORDS],
};

/// The length of the record in `w` (of `len` words) once its hash, if any, is its last word.
#[inline(always)]
fn seal(w: &mut Words, len: usize, hash: Option<u64>) -> usize {
    match hash {
        None => len,
        Some(h) => seal_hash(w, len, h),
    }
}

#[cold]
fn seal_hash(w: &mut Words, len: usize, h: u64) -> usize {
    w[len] = h;
    w[word::HEAD] |= raw::HASH;
    len + 1
}

/// The event a record reads as (for the rare paths that need it on this thread).
fn as_event(w: &Words, len: usize) -> Option<Event> {
    let mut e = Event::default();
    raw::decode(&w[..len], &mut e).map(|_| e)
}

/// The events a thread has started and not yet ended, innermost last. Entries are reused:
/// a start writes only the words of its record.
#[repr(C)]
struct OpenStack {
    depth: usize,
    entries: [Open; MAX_OPEN],
}

impl OpenStack {
    /// The innermost open event of `kind`.
    #[inline]
    fn find_last(&self, kind: acc_event_t) -> Option<usize> {
        let want = u64::from(kind.0 as u32);
        self.entries[..self.depth]
            .iter()
            .rposition(|o| o.words[word::HEAD] & 0xffff_ffff == want)
    }

    /// Closes the `i`th open event, keeping the order of the others.
    #[inline]
    fn close(&mut self, i: usize) {
        // Ends come innermost first; only a runtime that nests oddly makes this move events.
        if i + 1 < self.depth {
            self.entries[i..self.depth].rotate_left(1);
        }
        self.depth -= 1;
    }
}

/// Copies `N` words of the structure at `p` (of which the runtime filled `valid` bytes) to
/// `to`: all of it at once when valid_bytes covers it (the usual case: a few 16-byte moves),
/// else the bytes covered and zeros after (a reader then sees exactly what the runtime filled).
/// Returns whether the whole structure was covered.
///
/// # Safety
/// `p` points at a structure of `N` words of which at least `valid` bytes are readable.
#[inline(always)]
unsafe fn copy_struct<const N: usize>(to: &mut [u64], p: *const u8, valid: usize) -> bool {
    let to = &mut to[..N];
    if valid < N * 8 {
        // SAFETY: forwarded.
        unsafe { copy_part(to, p, valid) };
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
        let (src, dst) = (p as *const __m128i, to.as_mut_ptr() as *mut __m128i);
        for i in 0..N / 2 {
            // SAFETY: the whole structure is readable and `to` holds N words; unaligned
            // 16-byte moves (SSE2, always there on x86-64).
            unsafe { _mm_storeu_si128(dst.add(i), _mm_loadu_si128(src.add(i))) };
        }
        if N % 2 == 1 {
            // SAFETY: as above, the last word.
            to[N - 1] = unsafe { (p as *const u64).add(N - 1).read_unaligned() };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (i, w) in to.iter_mut().enumerate() {
        // SAFETY: the whole structure is readable.
        *w = unsafe { (p as *const u64).add(i).read_unaligned() };
    }
    true
}

#[cold]
unsafe fn copy_part(to: &mut [u64], p: *const u8, valid: usize) {
    to.fill(0);
    let n = valid.min(to.len() * 8);
    // SAFETY: the caller's contract: `valid` bytes readable; `to` holds at least `n` bytes.
    unsafe { std::ptr::copy_nonoverlapping(p, to.as_mut_ptr() as *mut u8, n) };
}

/// Copies the event information at `p` of an event of `kind` (7 words, or 3 for the other
/// events); returns the words copied and whether the runtime filled all of them.
///
/// # Safety
/// `p` points at the member of acc_event_info that `kind` uses, its first `valid_bytes` bytes
/// (at least the first 8) readable.
#[inline(always)]
unsafe fn copy_info(
    to: &mut [u64],
    p: *const acc_event_info,
    kind: EventInfoKind,
) -> (usize, bool) {
    // SAFETY: valid_bytes is in the first 8 bytes of every member.
    let valid = valid_bytes(unsafe { (p as *const u64).read_unaligned() });
    let p = p as *const u8;
    // SAFETY: forwarded.
    unsafe {
        match kind {
            EventInfoKind::Other => (OTHER_WORDS, copy_struct::<OTHER_WORDS>(to, p, valid)),
            _ => (INFO_WORDS, copy_struct::<INFO_WORDS>(to, p, valid)),
        }
    }
}

const PROF_WORDS: usize = raw::PROF_WORDS;
const API_WORDS: usize = raw::API_WORDS;
const INFO_WORDS: usize = std::mem::size_of::<accprof_abi::acc_event_info>() / 8;
const OTHER_WORDS: usize = std::mem::size_of::<accprof_abi::acc_other_event_info>() / 8;
/// Word indices inside copied structures (x86-64 C layout, checked by a test).
mod at {
    /// acc_prof_info: thread_id is the high half of word 2; the two strings.
    pub const THREAD_ID: usize = 2;
    pub const SRC_FILE: usize = 5;
    pub const FUNC_NAME: usize = 6;
    /// acc_*_event_info: implicit is the high half of word 1; the name (var_name or
    /// kernel_name), then bytes / host_ptr / device_ptr or the three launch sizes.
    pub const IMPLICIT: usize = 1;
    pub const NAME: usize = 3;
}

/// Makes `w` the record of the event `c` (its start and, for a point event, its end); returns
/// its length in words and whether the start carried every field its end could add.
#[inline(always)]
fn fill(
    w: &mut Words,
    c: &Call,
    (strings, shortcuts): (&mut ThreadStrings, &mut Shortcuts),
    (os_tid, nvtx_range): (i64, u32),
    last_tid: &mut i64,
    enclosing: u64,
) -> (usize, bool) {
    let kind = c.kind;
    w[word::START] = c.now;
    let mut at = raw::HEADER_WORDS;
    let mut parts = raw::PROF;
    let prof_at = at;
    // SAFETY: `c.prof` covers `prof_valid` bytes (Call::new's contract).
    let whole_prof =
        unsafe { copy_struct::<PROF_WORDS>(&mut w[at..], c.prof as *const u8, c.prof_valid) };
    at += PROF_WORDS;
    let (mut name, mut implicit) = (None, false);
    let info_kind = kind.info_kind();
    let mut complete = info_kind == EventInfoKind::Other;
    if !c.info.is_null() {
        let info_at = at;
        // SAFETY: as above, for the event information.
        let (n, whole) = unsafe { copy_info(&mut w[at..], c.info, info_kind) };
        at += n;
        parts |= raw::INFO;
        if whole {
            // Read from the copy: the fields lie where a test checks.
            let iw = &w[info_at..info_at + n];
            implicit = iw[at::IMPLICIT] >> 32 != 0;
            if n == INFO_WORDS {
                let p = iw[at::NAME] as *const std::ffi::c_char;
                complete = match info_kind {
                    // var_name, bytes (SIZE_MAX: unknown), host_ptr, device_ptr.
                    EventInfoKind::Data => {
                        !p.is_null() && iw[4] != u64::MAX && iw[5] != 0 && iw[6] != 0
                    }
                    // kernel_name and the three sizes (SIZE_MAX: unknown).
                    _ => !p.is_null() && iw[4..7].iter().all(|&v| v != u64::MAX),
                };
                name = intern(strings, Some(p));
            }
        } else {
            (implicit, name) = partial_info(c, strings);
            complete = false;
        }
    }
    if !c.api.is_null() {
        // SAFETY: as above, for acc_api_info (valid_bytes in its first 8 bytes).
        unsafe {
            let valid = valid_bytes((c.api as *const u64).read_unaligned());
            copy_struct::<API_WORDS>(&mut w[at..], c.api as *const u8, valid)
        };
        at += API_WORDS;
        parts |= raw::API;
    }
    let (file_func, tid) = if whole_prof {
        let pw = &w[prof_at..prof_at + PROF_WORDS];
        // SAFETY: the runtime's strings live through the callback.
        let file_func = unsafe {
            strings.file_func(
                pw[at::SRC_FILE] as *const std::ffi::c_char,
                pw[at::FUNC_NAME] as *const std::ffi::c_char,
            )
        };
        (file_func, (pw[at::THREAD_ID] >> 32) as u32 as i32)
    } else {
        partial_prof(c, strings)
    };
    w[word::FILE_FUNC] = file_func;
    w[word::NAMES] = id_word(name);
    w[word::OS_THREAD] = u64::from(os_tid as u32) | u64::from(nvtx_range) << 32;
    let tid = if tid >= 0 { i64::from(tid) } else { os_tid };
    if tid != *last_tid {
        publish_tid(last_tid, tid);
    }
    w[word::CALL_SITE] = if file_func as u32 == 0 && wants_call_site(kind) {
        if enclosing != 0 && implicit {
            enclosing
        } else {
            crate::unwind::caller_return_address(shortcuts, kind.0 as u32).unwrap_or(0)
        }
    } else {
        0
    };
    w[word::HEAD] = raw::TAG | parts | u64::from(kind.0 as u32);
    (at, complete)
}

/// `implicit` and the variable or kernel name of an event information the runtime filled in
/// part.
#[cold]
fn partial_info(c: &Call, strings: &mut ThreadStrings) -> (bool, Option<u32>) {
    let Some(i) = c.info_view() else {
        return (false, None);
    };
    (
        i.implicit().is_some_and(|v| v != 0),
        intern_name(strings, &i),
    )
}

/// The file-and-function word and the thread id (-1: none) of an `acc_prof_info` the runtime
/// filled in part.
#[cold]
fn partial_prof(c: &Call, strings: &mut ThreadStrings) -> (u64, i32) {
    let Some(p) = c.prof_view() else {
        return (0, -1);
    };
    let (src, func) = (
        intern(strings, p.src_file()),
        intern(strings, p.func_name()),
    );
    (
        id_word(src) | id_word(func) << 32,
        p.thread_id().unwrap_or(-1),
    )
}

/// The variable or kernel name of a partly filled event information.
#[cold]
fn intern_name(strings: &mut ThreadStrings, i: &EventView<'_>) -> Option<u32> {
    match i.info_kind() {
        EventInfoKind::Data => intern(strings, i.data().and_then(|d| d.var_name())),
        EventInfoKind::Launch => intern(strings, i.launch().and_then(|l| l.kernel_name())),
        EventInfoKind::Other => None,
    }
}

/// An end event completing its start: the end's information goes into the record, for the
/// fields the start lacked (GCC names no variable, so every transfer of GCC's comes here).
#[inline(never)]
fn complete(w: &mut Words, len: &mut usize, c: &Call, strings: &mut ThreadStrings) {
    let Some(i) = c.info_view() else { return };
    let n = raw::info_words(c.kind);
    if w[word::HEAD] & raw::END_INFO != 0 || *len + n > raw::MAX_WORDS {
        return;
    }
    let at = *len;
    // SAFETY: the view's pointer covers `valid_bytes` bytes.
    let _ = unsafe { copy_info(&mut w[at..], c.info, c.kind.info_kind()) };
    // An end that repeats its start's information (libgomp fills one structure for both and
    // changes only its event number) adds no field: the record is left as it was.
    if w[word::HEAD] & raw::INFO != 0 && same_info(&w[INFO_AT..INFO_AT + n], &w[at..at + n]) {
        return;
    }
    let name = intern_name(strings, &i);
    w[word::NAMES] |= id_word(name) << 32;
    w[word::HEAD] |= raw::END_INFO;
    *len = at + n;
}

/// Whether two copies of an event information are the same but for their event numbers (the
/// low half of their first word).
#[inline(always)]
fn same_info(start: &[u64], end: &[u64]) -> bool {
    start[0] >> 32 == end[0] >> 32 && start[1..] == end[1..]
}

/// A string id as a record stores it: id + 1, 0 for none.
#[inline(always)]
fn id_word(id: Option<u32>) -> u64 {
    id.map_or(0, |i| u64::from(i) + 1)
}

#[inline(always)]
fn intern(strings: &mut ThreadStrings, p: Option<*const std::ffi::c_char>) -> Option<u32> {
    let p = p?;
    // SAFETY: the runtime hands us NUL-terminated strings that live through the callback.
    unsafe { strings.intern(p) }.map(|id| id.0)
}

#[cold]
fn publish_tid(last: &mut i64, tid: i64) {
    *last = tid;
    crate::recorder::thread_id::set_current_thread_id(tid);
}

/// A device allocation or free the program asked for itself (`acc_malloc`, `acc_free`), from
/// its point record: its call site names the pointer and the loop that repeats it. Rare next to
/// construct events, and outside every directive, so the stack walk costs nothing on their path.
#[inline(always)]
fn wants_api_call_site(w: &Words) -> bool {
    matches!(
        raw::kind_of(w[word::HEAD]),
        acc_event_t::ALLOC | acc_event_t::FREE
    ) && w[word::FILE_FUNC] & 0xffff_ffff == 0
        && w[word::HEAD] & raw::INFO != 0
        // parent_construct, the low half of the event information's second word (zero when
        // valid_bytes did not cover it).
        && w[INFO_AT + at::IMPLICIT] as u32 as i32 == accprof_abi::acc_construct_t::RUNTIME_API.0
}

/// Where the event information lies in a record (after acc_prof_info, always copied).
const INFO_AT: usize = raw::HEADER_WORDS + PROF_WORDS;

#[cold]
fn api_call_site(w: &mut Words, shortcuts: &mut Shortcuts, kind: acc_event_t) {
    if let Some(ra) = crate::unwind::caller_return_address(shortcuts, kind.0 as u32) {
        w[word::CALL_SITE] = ra;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn open(kind: i32, start: u64) -> Open {
        let mut o = NO_OPEN;
        o.words[word::HEAD] = raw::TAG | u64::from(kind as u32);
        o.words[word::START] = start;
        o.len = raw::HEADER_WORDS;
        o
    }

    #[test]
    fn a_common_callback_touches_one_page_of_the_thread_state() {
        // The home starts a page; the slot, the state's fields, the stack's depth and its
        // first entries (a construct, a data event inside it, a transfer inside that, and room
        // for a wait and an NVTX-heavy nesting) end inside that page.
        assert_eq!(std::mem::align_of::<ThreadHome>(), 4096);
        assert_eq!(std::mem::offset_of!(ThreadHome, slot), 0);
        let entries = std::mem::offset_of!(ThreadHome, state)
            + std::mem::offset_of!(ThreadState, open)
            + std::mem::offset_of!(OpenStack, entries);
        assert!(
            entries + 6 * std::mem::size_of::<Open>() <= 4096,
            "the first six open entries end at {}",
            entries + 6 * std::mem::size_of::<Open>()
        );
    }

    #[test]
    fn the_slot_outlives_its_thread_state_in_the_registry() {
        // The writer may sweep a slot after its thread ended: the box drops the state, the
        // registry's reference keeps the slot readable.
        let rec = crate::recorder::Recorder::for_tests();
        let b = ThreadState::boxed(&rec);
        let slot: *const Slot = b.slot();
        assert_eq!(slot as usize % 4096, 0, "the slot starts the home's page");
        assert_eq!(b.state_ptr() as usize / 4096, slot as usize / 4096);
        drop(b);
        let held = rec.registry.snapshot();
        assert_eq!(held.len(), 1);
        assert!(std::ptr::eq(held[0].slot(), slot));
        assert!(!held[0].dead.load(Ordering::Relaxed));
    }

    #[test]
    fn the_open_stack_keeps_order_when_an_inner_end_is_missing() {
        let mut s = Box::new(OpenStack {
            depth: 0,
            entries: [NO_OPEN; MAX_OPEN],
        });
        for (k, t) in [(16, 1), (10, 2), (20, 3)] {
            s.entries[s.depth] = open(k, t);
            s.depth += 1;
        }
        assert_eq!(s.find_last(acc_event_t(10)), Some(1));
        // An end that is not the innermost (odd nesting): the others keep their order.
        s.close(1);
        assert_eq!(s.depth, 2);
        assert_eq!(s.find_last(acc_event_t(20)), Some(1));
        assert_eq!(s.find_last(acc_event_t(16)), Some(0));
        assert_eq!(
            s.find_last(acc_event_t(10)),
            None,
            "closed events are not found"
        );
    }

    #[test]
    fn an_end_repeating_its_start_adds_nothing_a_reader_sees() {
        // A GCC-like upload: no variable name, so the start is incomplete; the end repeats the
        // start's information but for its event number.
        let n = raw::info_words(acc_event_t::ENQUEUE_UPLOAD_START);
        let mut info = [0u64; 7];
        info[0] = u64::from(acc_event_t::ENQUEUE_UPLOAD_START.0 as u32)
            | (accprof_abi::valid_bytes::DATA_EVENT_INFO as u64) << 32;
        info[4] = 4096; // bytes
        info[5] = 0x7f00_0000_1000; // host_ptr
        info[6] = 0x7e00_0000_1000; // device_ptr
        let mut end_info = info;
        end_info[0] =
            end_info[0] & !0xffff_ffff | u64::from(acc_event_t::ENQUEUE_UPLOAD_END.0 as u32);
        let mut w = [0u64; raw::MAX_WORDS];
        w[word::HEAD] = raw::TAG
            | raw::PROF
            | raw::INFO
            | u64::from(acc_event_t::ENQUEUE_UPLOAD_START.0 as u32);
        w[word::START] = 10;
        w[word::END] = 20;
        w[raw::HEADER_WORDS] = u64::from(acc_event_t::ENQUEUE_UPLOAD_START.0 as u32)
            | (accprof_abi::valid_bytes::PROF_INFO as u64) << 32;
        w[INFO_AT..INFO_AT + n].copy_from_slice(&info[..n]);
        let len = INFO_AT + n;
        assert!(same_info(&info[..n], &end_info[..n]));
        let mut with_end = w;
        with_end[len..len + n].copy_from_slice(&end_info[..n]);
        with_end[word::HEAD] |= raw::END_INFO;
        let (mut a, mut b) = (Event::default(), Event::default());
        raw::decode(&w[..len], &mut a).unwrap();
        raw::decode(&with_end[..len + n], &mut b).unwrap();
        assert_eq!(
            a, b,
            "the end's copy of the same information changes nothing"
        );
        let mut differs = end_info;
        differs[6] = 0x7e00_0000_2000;
        assert!(!same_info(&info[..n], &differs[..n]));
    }

    #[test]
    fn a_structure_the_runtime_filled_in_part_is_copied_in_part() {
        let src: [u64; 3] = [u64::MAX; 3];
        let mut to = [7u64; 3];
        // SAFETY: `src` is 24 readable bytes.
        assert!(!unsafe { copy_struct::<3>(&mut to, src.as_ptr() as *const u8, 12) });
        assert_eq!(to, [u64::MAX, 0xffff_ffff, 0], "12 bytes, then zeros");
        // SAFETY: as above.
        assert!(unsafe { copy_struct::<3>(&mut to, src.as_ptr() as *const u8, 24) });
        assert_eq!(to, [u64::MAX; 3]);
    }

    #[test]
    fn the_copied_words_hold_the_fields_where_the_callback_reads_them() {
        use accprof_abi::*;
        use std::mem::offset_of;
        assert_eq!(offset_of!(acc_prof_info, thread_id), 8 * at::THREAD_ID + 4);
        assert_eq!(offset_of!(acc_prof_info, src_file), 8 * at::SRC_FILE);
        assert_eq!(offset_of!(acc_prof_info, func_name), 8 * at::FUNC_NAME);
        assert_eq!(
            offset_of!(acc_other_event_info, implicit),
            8 * at::IMPLICIT + 4
        );
        assert_eq!(
            offset_of!(acc_data_event_info, implicit),
            8 * at::IMPLICIT + 4
        );
        assert_eq!(offset_of!(acc_data_event_info, var_name), 8 * at::NAME);
        assert_eq!(
            offset_of!(acc_data_event_info, parent_construct),
            8 * at::IMPLICIT,
            "wants_api_call_site reads it from the low half"
        );
        assert_eq!(offset_of!(acc_launch_event_info, kernel_name), 8 * at::NAME);
        assert_eq!(offset_of!(acc_data_event_info, bytes), 8 * 4);
        assert_eq!(offset_of!(acc_data_event_info, host_ptr), 8 * 5);
        assert_eq!(offset_of!(acc_data_event_info, device_ptr), 8 * 6);
        assert_eq!(offset_of!(acc_launch_event_info, num_gangs), 8 * 4);
        assert_eq!(offset_of!(acc_launch_event_info, vector_length), 8 * 6);
        assert_eq!(
            INFO_WORDS,
            raw::info_words(acc_event_t::ENQUEUE_LAUNCH_START)
        );
        assert_eq!(
            OTHER_WORDS,
            raw::info_words(acc_event_t::COMPUTE_CONSTRUCT_START)
        );
    }
}
