//! The application thread's side: a CUDA event recorded on the runtime's stream at each
//! enqueue start, a second at its end, and the pair handed to the collector.
//!
//! Only launches, uploads and downloads whose acc_api_info names a CUDA context and stream pay
//! anything: two event records (about a microsecond each, in the driver) and a few atomics. No
//! lock is shared with other threads (the pool and this thread's queue are lock-free bounded
//! queues), nothing is allocated after warm-up, nothing waits: with no event to spare or the
//! queue full, the operation keeps its host times only and is counted in `skipped`.

use super::driver::Handle;
use super::pool::Context;
use super::Shared;
use accprof_abi::read::ApiView;
use accprof_abi::{acc_device_api, acc_event_t};
use accprof_trace::{Event, Field};
use crossbeam_channel::Sender;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the device did for an operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Kernel,
    Upload,
    Download,
}

impl Op {
    /// The operation an enqueue start event begins, if it is one that is timed.
    pub fn of_start(kind: acc_event_t) -> Option<Op> {
        match kind {
            acc_event_t::ENQUEUE_LAUNCH_START => Some(Op::Kernel),
            acc_event_t::ENQUEUE_UPLOAD_START => Some(Op::Upload),
            acc_event_t::ENQUEUE_DOWNLOAD_START => Some(Op::Download),
            _ => None,
        }
    }
}

/// An operation's two recorded events and what its device record will say.
#[derive(Debug)]
pub struct Pair {
    pub ctx: Arc<Context>,
    pub start: Handle,
    pub end: Handle,
    pub op: Op,
    pub thread: i64,
    /// The enqueue start, in the hot path's clock unit (see records::to_event).
    pub host_start: u64,
    pub stream: Handle,
    pub bytes: Option<u64>,
    /// Kernel name or variable name (string id).
    pub name: Option<u64>,
    pub host_ptr: Option<u64>,
    /// The program's NVTX range the host event was recorded in.
    pub nvtx_range: Option<u64>,
}

/// A start event recorded, waiting for the operation's end.
#[derive(Debug)]
struct Open {
    op: Op,
    /// Index of the host event on the thread's open stack.
    depth: usize,
    event: Handle,
    ctx: Arc<Context>,
    stream: Handle,
}

/// Pairs a thread may have handed over and the collector not yet taken.
pub const QUEUE: usize = 2048;

pub struct ThreadEvents {
    shared: &'static Shared,
    /// The context last used, so that the registry is only looked at when it changes.
    cached: Option<Arc<Context>>,
    open: Vec<Open>,
    tx: Sender<Pair>,
}

impl ThreadEvents {
    pub fn new(shared: &'static Shared) -> Self {
        let tx = shared.new_queue();
        Self {
            shared,
            cached: None,
            open: Vec::with_capacity(8),
            tx,
        }
    }

    /// At an enqueue start that is the `depth`th open event of the thread: records an event on
    /// the runtime's stream, when acc_api_info names a CUDA context and stream.
    #[inline]
    pub fn on_start(&mut self, kind: acc_event_t, depth: usize, api: Option<&ApiView<'_>>) {
        let Some(op) = Op::of_start(kind) else { return };
        let Some(a) = api else { return };
        if a.device_api() != Some(acc_device_api::CUDA) {
            return;
        }
        let (Some(ctx), Some(stream)) = (
            a.context_handle().filter(|p| !p.is_null()),
            a.async_handle().filter(|p| !p.is_null()),
        ) else {
            return;
        };
        let (ctx, stream) = (ctx as Handle, stream as Handle);
        let c = match &self.cached {
            Some(c) if c.ctx == ctx && !c.is_closed() => c.clone(),
            _ => {
                let c = self.shared.context(ctx);
                self.cached = Some(c.clone());
                c
            }
        };
        let d = self.shared.driver();
        let Some(event) = c.take(d) else {
            self.shared.stats.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if d.event_record(event, stream).is_err() {
            c.give_back(d, event);
            self.shared.stats.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.open.push(Open {
            op,
            depth,
            event,
            ctx: c,
            stream,
        });
    }

    /// At the end of the operation whose host event `e` (complete now) was the `depth`th open
    /// event: records the end event and hands the pair over.
    #[inline]
    pub fn on_end(&mut self, start_kind: acc_event_t, depth: usize, e: &Event) {
        if self.open.is_empty() {
            return;
        }
        let Some(op) = Op::of_start(start_kind) else {
            return;
        };
        let Some(i) = self
            .open
            .iter()
            .rposition(|o| o.op == op && o.depth == depth)
        else {
            return;
        };
        let o = self.open.remove(i);
        let d = self.shared.driver();
        let Some(end) = o.ctx.take(d) else {
            o.ctx.give_back(d, o.event);
            self.shared.stats.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if d.event_record(end, o.stream).is_err() {
            o.ctx.give_back(d, o.event);
            o.ctx.give_back(d, end);
            self.shared.stats.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let name = match op {
            Op::Kernel => e.get(Field::KernelName),
            _ => e.get(Field::VarName),
        };
        let pair = Pair {
            ctx: o.ctx,
            start: o.event,
            end,
            op,
            thread: e.thread().unwrap_or(-1),
            host_start: e.start_ns,
            stream: o.stream,
            bytes: e.bytes(),
            name,
            host_ptr: e.get(Field::HostPtr),
            nvtx_range: e.get(Field::NvtxRange),
        };
        if let Err(err) = self.tx.try_send(pair) {
            let p = err.into_inner();
            p.ctx.give_back(d, p.start);
            p.ctx.give_back(d, p.end);
            self.shared.stats.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The thread's open stack lost its oldest entry (index 0): indices shift down by one.
    pub fn shift_down(&mut self) {
        let d = self.shared.driver();
        self.open.retain(|o| {
            if o.depth == 0 {
                o.ctx.give_back(d, o.event);
                false
            } else {
                true
            }
        });
        for o in &mut self.open {
            o.depth -= 1;
        }
    }

    /// Operations that never ended (the program exits inside them): their events go back.
    pub fn abandon_open(&mut self) {
        let d = self.shared.driver();
        for o in self.open.drain(..) {
            o.ctx.give_back(d, o.event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::Fake;
    use super::super::pool::GROW;
    use super::*;
    use accprof_abi::acc_api_info;
    use std::ffi::c_void;

    fn shared() -> &'static Shared {
        Box::leak(Box::new(Shared::new(Box::new(Fake::default()))))
    }
    fn fake(s: &Shared) -> &Fake {
        s.fake().unwrap()
    }
    fn cuda(ctx: usize, stream: usize) -> acc_api_info {
        acc_api_info {
            device_api: acc_device_api::CUDA,
            valid_bytes: accprof_abi::valid_bytes::API_INFO,
            device_type: accprof_abi::acc_device_t::NVIDIA,
            vendor: 0,
            device_handle: std::ptr::null(),
            context_handle: ctx as *const c_void,
            async_handle: stream as *const c_void,
        }
    }
    fn view(a: &acc_api_info) -> ApiView<'_> {
        // SAFETY: `a` is a live, fully initialised `acc_api_info` borrowed for the view's
        // lifetime, so its `valid_bytes` are readable and cannot change while the view exists.
        unsafe { ApiView::new(a) }.unwrap()
    }
    fn host_event(kind: acc_event_t, start: u64) -> Event {
        let mut e = Event::new(kind, start);
        e.set_i64(Field::Thread, 4);
        e.set(Field::Bytes, 64);
        e.set(Field::VarName, 9);
        e
    }

    #[test]
    fn start_and_end_become_one_pair_on_the_runtimes_stream() {
        let s = shared();
        let mut t = ThreadEvents::new(s);
        t.on_start(
            acc_event_t::ENQUEUE_UPLOAD_START,
            2,
            Some(&view(&cuda(0xc0, 0x5e))),
        );
        assert_eq!(fake(s).records(), 1);
        t.on_end(
            acc_event_t::ENQUEUE_UPLOAD_START,
            2,
            &host_event(acc_event_t::ENQUEUE_UPLOAD_START, 1234),
        );
        assert_eq!(fake(s).records(), 2);
        let p = s.drain_queues().pop().expect("a pair was handed over");
        assert_eq!(
            (p.op, p.stream, p.ctx.ctx, p.thread, p.host_start),
            (Op::Upload, 0x5e, 0xc0, 4, 1234)
        );
        assert_eq!((p.bytes, p.name), (Some(64), Some(9)));
        assert_ne!(p.start, p.end);
    }

    #[test]
    fn events_without_cuda_handles_cost_nothing() {
        let s = shared();
        let mut t = ThreadEvents::new(s);
        let mut none = cuda(0xc0, 0x5e);
        none.device_api = acc_device_api::NONE;
        t.on_start(acc_event_t::ENQUEUE_LAUNCH_START, 0, Some(&view(&none)));
        t.on_start(
            acc_event_t::ENQUEUE_LAUNCH_START,
            0,
            Some(&view(&cuda(0xc0, 0))),
        );
        t.on_start(acc_event_t::ENQUEUE_LAUNCH_START, 0, None);
        t.on_start(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            0,
            Some(&view(&cuda(0xc0, 0x5e))),
        );
        assert_eq!(fake(s).records(), 0);
        assert_eq!(fake(s).live_events(), 0, "no context was even set up");
    }

    #[test]
    fn ends_pair_with_their_own_start_when_operations_nest() {
        let s = shared();
        let mut t = ThreadEvents::new(s);
        t.on_start(
            acc_event_t::ENQUEUE_UPLOAD_START,
            1,
            Some(&view(&cuda(0xc0, 0x5e))),
        );
        t.on_start(
            acc_event_t::ENQUEUE_LAUNCH_START,
            2,
            Some(&view(&cuda(0xc0, 0x5f))),
        );
        // An end whose start was not timed (different depth) hands nothing over.
        t.on_end(
            acc_event_t::ENQUEUE_LAUNCH_START,
            3,
            &host_event(acc_event_t::ENQUEUE_LAUNCH_START, 1),
        );
        assert!(s.drain_queues().is_empty());
        t.on_end(
            acc_event_t::ENQUEUE_LAUNCH_START,
            2,
            &host_event(acc_event_t::ENQUEUE_LAUNCH_START, 2),
        );
        t.on_end(
            acc_event_t::ENQUEUE_UPLOAD_START,
            1,
            &host_event(acc_event_t::ENQUEUE_UPLOAD_START, 3),
        );
        let got: Vec<(Op, Handle)> = s.drain_queues().iter().map(|p| (p.op, p.stream)).collect();
        assert_eq!(got, vec![(Op::Kernel, 0x5f), (Op::Upload, 0x5e)]);
    }

    #[test]
    fn an_exhausted_pool_skips_and_counts_without_waiting() {
        let s = shared();
        let mut t = ThreadEvents::new(s);
        // Never completed: every operation holds two events until the pool runs dry.
        let ops = super::super::pool::MAX_EVENTS / 2 + 10;
        let mut held = Vec::new();
        for i in 0..ops {
            t.on_start(
                acc_event_t::ENQUEUE_LAUNCH_START,
                0,
                Some(&view(&cuda(0xc0, 0x5e))),
            );
            t.on_end(
                acc_event_t::ENQUEUE_LAUNCH_START,
                0,
                &host_event(acc_event_t::ENQUEUE_LAUNCH_START, i as u64),
            );
            if i % 1000 == 999 {
                // Keep the queue from being the limit.
                held.extend(s.drain_queues());
            }
        }
        held.extend(s.drain_queues());
        assert_eq!(held.len(), super::super::pool::MAX_EVENTS / 2);
        assert_eq!(s.stats.skipped.load(Ordering::Relaxed), 10);
        assert_eq!(
            fake(s).live_events(),
            super::super::pool::MAX_EVENTS,
            "created in steps of {GROW}, never more"
        );
    }

    #[test]
    fn a_failed_record_returns_the_event_and_counts() {
        let s = shared();
        let mut t = ThreadEvents::new(s);
        fake(s).fail_records(true);
        t.on_start(
            acc_event_t::ENQUEUE_LAUNCH_START,
            0,
            Some(&view(&cuda(0xc0, 0x5e))),
        );
        assert_eq!(s.stats.failed.load(Ordering::Relaxed), 1);
        fake(s).fail_records(false);
        t.on_start(
            acc_event_t::ENQUEUE_LAUNCH_START,
            0,
            Some(&view(&cuda(0xc0, 0x5e))),
        );
        t.shift_down();
        t.on_end(
            acc_event_t::ENQUEUE_LAUNCH_START,
            0,
            &host_event(acc_event_t::ENQUEUE_LAUNCH_START, 1),
        );
        assert!(
            s.drain_queues().is_empty(),
            "the start fell off the open stack; its event went back"
        );
    }
}
