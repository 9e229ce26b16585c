//! Directives whose `if` clause is false (GOACC_FLAG_HOST_FALLBACK): they run on the host, but
//! their events are still reported, as libgomp reports them, with the host as the device type:
//! a program whose constructs all have a false `if` still initialises the runtime (and so
//! loads its tools) and shows its constructs in a trace.

use crate::backend::SYNC;
use crate::loc::Loc;
use crate::profiling::dispatch::{self, EvCtx};
use crate::runtime::{self, ACC_ASYNC_SYNC};
use accprof_abi::{acc_construct_t, acc_device_t, acc_event_t};

/// The event context of a directive of kind `construct` run on the host.
pub fn host_ctx(construct: acc_construct_t) -> EvCtx {
    // GCC gives no location; a tool finds it from the return address.
    let rt = runtime::get(construct, &Loc::UNKNOWN);
    let mut ctx = rt.ctx(construct, false, &Loc::UNKNOWN, ACC_ASYNC_SYNC, SYNC);
    ctx.device_type = acc_device_t::HOST;
    ctx.api = dispatch::ApiHandles::NONE;
    ctx
}

/// Runs `body` (the construct on the host, or nothing) between `start` and `end`.
pub fn on_host(
    construct: acc_construct_t,
    start: acc_event_t,
    end: acc_event_t,
    body: impl FnOnce(),
) {
    let ctx = host_ctx(construct);
    let t = dispatch::other_start(start, &ctx);
    body();
    dispatch::other_end(end, &ctx, t);
}
