//! A driver without a GPU for the tests: events take the time of a settable device clock when
//! recorded; a stream can be held busy so that its events stay not ready.

use super::driver::{CuResult, Driver, Handle, Query};
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Fake {
    inner: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: Handle,
    /// event -> (device ms when recorded, stream)
    events: HashMap<Handle, (Option<f64>, Handle)>,
    busy: Vec<Handle>,
    device_ms: f64,
    ctx_stack: Vec<Handle>,
    created_in: Vec<Handle>,
    records: usize,
    fail_records: bool,
    streams: usize,
}

impl Fake {
    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap()
    }
    pub fn set_device_ms(&self, ms: f64) {
        self.st().device_ms = ms;
    }
    /// Events recorded on `stream` stay not ready until [`Fake::release`].
    pub fn hold(&self, stream: Handle) {
        self.st().busy.push(stream);
    }
    pub fn release(&self, stream: Handle) {
        self.st().busy.retain(|&s| s != stream);
    }
    pub fn live_events(&self) -> usize {
        self.st().events.len()
    }
    pub fn created_in_context(&self) -> Vec<Handle> {
        self.st().created_in.clone()
    }
    pub fn records(&self) -> usize {
        self.st().records
    }
    pub fn streams(&self) -> usize {
        self.st().streams
    }
    pub fn fail_records(&self, yes: bool) {
        self.st().fail_records = yes;
    }
}

impl Driver for Fake {
    fn event_create(&self) -> Result<Handle, CuResult> {
        let mut s = self.st();
        s.next += 1;
        let h = 0x1000 + s.next;
        s.events.insert(h, (None, 0));
        let ctx = s.ctx_stack.last().copied().unwrap_or(0);
        s.created_in.push(ctx);
        Ok(h)
    }
    fn event_record(&self, event: Handle, stream: Handle) -> Result<(), CuResult> {
        let mut s = self.st();
        if s.fail_records {
            return Err(400);
        }
        s.records += 1;
        let t = s.device_ms;
        let e = s.events.get_mut(&event).ok_or(400)?;
        *e = (Some(t), stream);
        Ok(())
    }
    fn event_query(&self, event: Handle) -> Query {
        let s = self.st();
        match s.events.get(&event) {
            Some((Some(_), stream)) if s.busy.contains(stream) => Query::NotReady,
            Some((Some(_), _)) => Query::Done,
            _ => Query::Failed(400),
        }
    }
    fn elapsed_ms(&self, from: Handle, to: Handle) -> Result<f32, CuResult> {
        let s = self.st();
        let t = |e: Handle| s.events.get(&e).and_then(|(t, _)| *t).ok_or(400);
        Ok((t(to)? - t(from)?) as f32)
    }
    fn event_destroy(&self, event: Handle) {
        self.st().events.remove(&event);
    }
    fn stream_create(&self) -> Result<Handle, CuResult> {
        let mut s = self.st();
        s.streams += 1;
        Ok(0xa000 + s.streams)
    }
    fn stream_destroy(&self, _stream: Handle) {
        self.st().streams -= 1;
    }
    fn ctx_current(&self) -> Option<Handle> {
        self.st().ctx_stack.last().copied()
    }
    fn ctx_push(&self, ctx: Handle) -> Result<(), CuResult> {
        self.st().ctx_stack.push(ctx);
        Ok(())
    }
    fn ctx_pop(&self) {
        self.st().ctx_stack.pop();
    }
    fn as_fake(&self) -> Option<&Fake> {
        Some(self)
    }
}
