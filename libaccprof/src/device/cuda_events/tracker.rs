//! The collector's side: takes the pairs threads handed over, waits for the device to pass
//! them (cuEventQuery at every sweep, never blocking), places them on CLOCK_MONOTONIC through a
//! fresh anchor per context, and turns them into device records. Their events go back to the
//! pool.
//!
//! Runs on the collector thread, with each context made current there only for the time of
//! its queries; and on the runtime's thread when it shuts a device down (the context may be
//! destroyed right after, so its pairs are finished first, waiting a bounded time).

use super::anchor::{self, Anchor};
use super::driver::{with_context, Driver, Handle, Query};
use super::pending::Pair;
use super::records;
use accprof_trace::Event;
use std::time::{Duration, Instant};

/// Our own stream and event per context, for anchors.
#[derive(Debug)]
struct AnchorSlot {
    ctx: Handle,
    stream: Handle,
    event: Handle,
}

#[derive(Debug, Default)]
pub struct Tracker {
    waiting: Vec<Pair>,
    anchors: Vec<AnchorSlot>,
}

/// What one pass did, for the counters.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub written: u64,
    pub failed: u64,
}

impl Tracker {
    /// Pairs still waiting for the device.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn add(&mut self, pairs: impl IntoIterator<Item = Pair>) {
        self.waiting.extend(pairs);
    }

    /// Turns every waiting pair the device has passed into a device record, appended to `out`.
    /// Only pairs of context `only` when given. With `wait`, polls again until none is left or
    /// the time is up (at device shutdown and exit).
    pub fn complete(
        &mut self,
        d: &dyn Driver,
        clock: &dyn Fn() -> u64,
        only: Option<Handle>,
        wait: Option<Duration>,
        out: &mut Vec<Event>,
    ) -> Pass {
        let deadline = wait.map(|w| Instant::now() + w);
        let mut pass = Pass::default();
        loop {
            self.complete_once(d, clock, only, out, &mut pass);
            let left = self
                .waiting
                .iter()
                .any(|p| only.is_none_or(|c| p.ctx.ctx == c));
            match deadline {
                Some(t) if left && Instant::now() < t => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => return pass,
            }
        }
    }

    fn complete_once(
        &mut self,
        d: &dyn Driver,
        clock: &dyn Fn() -> u64,
        only: Option<Handle>,
        out: &mut Vec<Event>,
        pass: &mut Pass,
    ) {
        // Contexts are few (one per device); pairs of one context are handled together so that
        // it is made current once.
        let mut ctxs: Vec<Handle> = Vec::new();
        for p in &self.waiting {
            if only.is_none_or(|c| p.ctx.ctx == c) && !ctxs.contains(&p.ctx.ctx) {
                ctxs.push(p.ctx.ctx);
            }
        }
        for ctx in ctxs {
            let mut waiting = std::mem::take(&mut self.waiting);
            let slot = self.anchor_slot(d, ctx);
            let r = with_context(d, ctx, || {
                let mut anchor: Option<Option<Anchor>> = None;
                waiting.retain(|p| {
                    if p.ctx.ctx != ctx {
                        return true;
                    }
                    match d.event_query(p.end) {
                        Query::NotReady => return true,
                        Query::Done => {
                            // One anchor per context and pass, taken only when there is work
                            // to place, after that work is done.
                            let a = *anchor.get_or_insert_with(|| {
                                slot.and_then(|(s, e)| anchor::take(d, s, e, clock))
                            });
                            match a.and_then(|a| anchor::span(d, a, p.start, p.end)) {
                                Some((s, e)) => {
                                    out.push(records::to_event(p, s, e));
                                    pass.written += 1;
                                }
                                None => pass.failed += 1,
                            }
                        }
                        Query::Failed(_) => pass.failed += 1,
                    }
                    p.ctx.give_back(d, p.start);
                    p.ctx.give_back(d, p.end);
                    false
                });
            });
            if r.is_err() {
                // The context cannot be made current: it is gone, and so are its events.
                waiting.retain(|p| {
                    let keep = p.ctx.ctx != ctx;
                    if !keep {
                        pass.failed += 1;
                    }
                    keep
                });
            }
            self.waiting = waiting;
        }
    }

    /// The anchor stream and event of `ctx`, created on first use (with the context current).
    fn anchor_slot(&mut self, d: &dyn Driver, ctx: Handle) -> Option<(Handle, Handle)> {
        if let Some(a) = self.anchors.iter().find(|a| a.ctx == ctx) {
            return Some((a.stream, a.event));
        }
        let made = with_context(d, ctx, || {
            let stream = d.stream_create().ok()?;
            match d.event_create() {
                Ok(event) => Some((stream, event)),
                Err(_) => {
                    d.stream_destroy(stream);
                    None
                }
            }
        });
        let (stream, event) = made.ok().flatten()?;
        self.anchors.push(AnchorSlot { ctx, stream, event });
        Some((stream, event))
    }

    /// Destroys what was made for `ctx` (before the runtime destroys the context), and gives
    /// up on its pairs still waiting; returns how many. Their events are not touched again.
    pub fn forget_context(&mut self, d: &dyn Driver, ctx: Handle) -> u64 {
        let before = self.waiting.len();
        self.waiting.retain(|p| p.ctx.ctx != ctx);
        let dropped = (before - self.waiting.len()) as u64;
        if let Some(i) = self.anchors.iter().position(|a| a.ctx == ctx) {
            let a = self.anchors.remove(i);
            let _ = with_context(d, ctx, || {
                d.event_destroy(a.event);
                d.stream_destroy(a.stream);
            });
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::Fake;
    use super::super::pending::Op;
    use super::super::pool::Context;
    use super::*;
    use accprof_trace::{device, Field};
    use std::sync::Arc;

    fn pair(d: &Fake, ctx: &Arc<Context>, stream: Handle, at_ms: (f64, f64)) -> Pair {
        let (s, e) = (ctx.take(d).unwrap(), ctx.take(d).unwrap());
        d.set_device_ms(at_ms.0);
        d.event_record(s, stream).unwrap();
        d.set_device_ms(at_ms.1);
        d.event_record(e, stream).unwrap();
        Pair {
            ctx: ctx.clone(),
            start: s,
            end: e,
            op: Op::Kernel,
            thread: 1,
            host_start: 42,
            stream,
            bytes: None,
            name: Some(3),
            host_ptr: None,
            nvtx_range: None,
        }
    }

    #[test]
    fn done_pairs_become_records_placed_from_the_anchor_and_pending_ones_wait() {
        let d = Fake::default();
        let ctx = Arc::new(Context::new(0xc0, 64));
        let mut t = Tracker::default();
        t.add([pair(&d, &ctx, 5, (1.0, 1.5)), pair(&d, &ctx, 6, (2.0, 4.0))]);
        d.hold(6);
        // The anchor is recorded at device time 10 ms, and the host clock reads 1 s around it.
        d.set_device_ms(10.0);
        let mut out = Vec::new();
        let pass = t.complete(&d, &|| 1_000_000_000, None, None, &mut out);
        assert_eq!(
            pass,
            Pass {
                written: 1,
                failed: 0
            }
        );
        assert_eq!(t.waiting(), 1, "the pair on the busy stream waits");
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].start_ns, out[0].end_ns),
            (991_000_000, 991_500_000),
            "9 ms before the anchor, 0.5 ms long"
        );
        assert_eq!(out[0].kind, device::KERNEL);
        assert_eq!(out[0].get(Field::AsyncHandle), Some(5));
        assert_eq!(
            d.ctx_current(),
            None,
            "the context is made current only for the pass"
        );
        d.release(6);
        d.set_device_ms(20.0);
        t.complete(&d, &|| 2_000_000_000, None, None, &mut out);
        assert_eq!(t.waiting(), 0);
        assert_eq!(
            (out[1].start_ns, out[1].end_ns),
            (1_982_000_000, 1_984_000_000)
        );
        assert_eq!(
            d.live_events(),
            64 + 1,
            "the pool's events (back in the pool) and one anchor event"
        );
        assert_eq!(d.streams(), 1, "one anchor stream per context");
        assert!(ctx.take(&d).is_some());
    }

    #[test]
    fn a_bounded_wait_gives_up_on_pairs_that_never_finish() {
        let d = Fake::default();
        let ctx = Arc::new(Context::new(0xc0, 64));
        let mut t = Tracker::default();
        t.add([pair(&d, &ctx, 5, (1.0, 1.5))]);
        d.hold(5);
        let mut out = Vec::new();
        let started = Instant::now();
        t.complete(&d, &|| 0, None, Some(Duration::from_millis(20)), &mut out);
        assert!(out.is_empty());
        assert_eq!(t.waiting(), 1);
        assert!(started.elapsed() < Duration::from_secs(5), "bounded");
        assert_eq!(t.forget_context(&d, 0xc0), 1, "given up at device shutdown");
        assert_eq!(t.waiting(), 0);
        assert_eq!(d.streams(), 0, "nothing left that was made for the context");
    }

    #[test]
    fn only_the_named_context_is_finished() {
        let d = Fake::default();
        let (a, b) = (
            Arc::new(Context::new(0xa0, 64)),
            Arc::new(Context::new(0xb0, 64)),
        );
        let mut t = Tracker::default();
        t.add([pair(&d, &a, 5, (1.0, 2.0)), pair(&d, &b, 6, (1.0, 2.0))]);
        let mut out = Vec::new();
        t.complete(&d, &|| 1_000_000, Some(0xb0), None, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].get(Field::AsyncHandle), Some(6));
        assert_eq!(t.waiting(), 1);
    }
}
