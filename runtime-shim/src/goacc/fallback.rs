//! Directives whose `if` clause is false (GOACC_FLAG_HOST_FALLBACK): they run on the host, but
//! their events are still reported, as libgomp reports them, with the host as the device type:
//! a program whose constructs all have a false `if` still initialises the runtime (and so
//! loads its tools) and shows its constructs in a trace.

use crate::backend::SYNC;
use crate::loc::Loc;
use crate::profiling::dispatch::{self, EvCtx};
use crate::runtime::{self, Op, ACC_ASYNC_SYNC};
use crate::sequence::{self, DataDirective, WaitClause};
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

/// An operation of a directive of kind `construct` run on the host: it maps nothing, and its
/// events say where it ran.
pub fn host_op(construct: acc_construct_t) -> Op {
    Op {
        rt: runtime::get(construct, &Loc::UNKNOWN),
        ctx: host_ctx(construct),
        q: SYNC,
    }
}

/// A data directive of kind `construct` run on the host: its events around nothing.
pub fn data_on_host(construct: acc_construct_t, directive: DataDirective) {
    let op = host_op(construct);
    // Nothing to map, so nothing can fail.
    let _ = sequence::data_directive(&op, directive, WaitClause::Absent, |_| Ok(()));
}

/// A compute construct of kind `construct` run on the host: `body` (the construct's function)
/// between compute_construct start and end.
pub fn compute_on_host(construct: acc_construct_t, body: impl FnOnce()) {
    let ctx = host_ctx(construct);
    let t = dispatch::other_start(acc_event_t::COMPUTE_CONSTRUCT_START, &ctx);
    body();
    dispatch::other_end(acc_event_t::COMPUTE_CONSTRUCT_END, &ctx, t);
}
