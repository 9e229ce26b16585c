//! The profiling events of each directive, in their order, written once for the three ways into
//! the runtime: the construct API (src/construct.rs), GCC's GOACC_* entry points
//! (src/goacc/compute.rs, src/goacc/mapping.rs) and the acc_* routines (src/ffi/api.rs). Each
//! way in maps its own arguments (clauses, GCC's map arrays, a routine's pointer) in the steps
//! it hands in; the events around those steps come from here, so the same directive gives a
//! tool the same sequence whichever way it came:
//!
//! - a data directive (a data construct's entry and exit, enter data, exit data, update, and
//!   the data routines): [its wait clause's waits], start, the data events of its clauses, end;
//! - a compute construct: compute_construct start, [its wait clause's waits], the implicit
//!   data region's entry (enter_data start/end, implicit = 1, around its clauses' events), the
//!   launches, for a synchronous construct the implicit wait (wait start/end, implicit = 1),
//!   the implicit data region's exit (exit_data start/end, implicit = 1), compute_construct end;
//! - a wait directive or routine: wait start/end for each queue the host waits for.
//!
//! An error returns at once, leaving the end events of what it interrupts out: the program
//! ends with the error's line.

use crate::backend::{QueueId, SYNC};
use crate::error::Result;
use crate::loc::Loc;
use crate::profiling::dispatch;
use crate::runtime::{Op, Runtime};
use accprof_abi::{acc_construct_t, acc_event_t};

/// What a data directive does, which names its start and end events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataDirective {
    /// Mapping: a data construct's entry, enter data, acc_copyin and acc_create.
    Enter,
    /// Unmapping: a data construct's exit, exit data, acc_copyout and acc_delete.
    Exit,
    /// update, acc_update_device and acc_update_self.
    Update,
}

impl DataDirective {
    fn events(self) -> (acc_event_t, acc_event_t) {
        match self {
            DataDirective::Enter => (acc_event_t::ENTER_DATA_START, acc_event_t::ENTER_DATA_END),
            DataDirective::Exit => (acc_event_t::EXIT_DATA_START, acc_event_t::EXIT_DATA_END),
            DataDirective::Update => (acc_event_t::UPDATE_START, acc_event_t::UPDATE_END),
        }
    }
}

/// A directive's `wait` clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitClause<'a> {
    /// No wait clause.
    Absent,
    /// `wait` without arguments: every queue.
    All,
    /// `wait(q, ...)`: the async arguments as written.
    Queues(&'a [i64]),
}

impl<'a> From<Option<&'a [i64]>> for WaitClause<'a> {
    /// The construct API's form: None absent, an empty list every queue.
    fn from(w: Option<&'a [i64]>) -> Self {
        match w {
            None => WaitClause::Absent,
            Some([]) => WaitClause::All,
            Some(qs) => WaitClause::Queues(qs),
        }
    }
}

impl WaitClause<'_> {
    /// The waits before `op`'s directive, on its queue (the host waits when it is synchronous).
    fn run(self, op: &Op) -> Result<()> {
        let queues = match self {
            WaitClause::Absent => return Ok(()),
            WaitClause::All => None,
            WaitClause::Queues(qs) => Some(qs),
        };
        let ctx = &op.ctx;
        wait_on(
            op.rt,
            ctx.construct,
            false,
            &ctx.loc,
            queues,
            ctx.async_ as i64,
        )
    }
}

/// A data directive of `op`'s construct: its wait clause, its start event, `clauses` (which
/// map, unmap or copy its data, with their data events), its end event.
pub fn data_directive<T>(
    op: &Op,
    what: DataDirective,
    wait: WaitClause,
    clauses: impl FnOnce(&Op) -> Result<T>,
) -> Result<T> {
    wait.run(op)?;
    let (start, end) = what.events();
    let t = dispatch::other_start(start, &op.ctx);
    let r = clauses(op)?;
    dispatch::other_end(end, &op.ctx, t);
    Ok(r)
}

/// The steps of a compute construct that differ between the ways in.
pub struct ComputeSteps<M, Map, Launch, Unmap>
where
    Map: FnOnce(&Op) -> Result<M>,
    Launch: FnOnce(&Op, &M) -> Result<()>,
    Unmap: FnOnce(&Op, M) -> Result<()>,
{
    /// The implicit data region's entry: maps the clauses (events with `op`'s implicit flag,
    /// each clause's data events with its own), returning what the exit undoes.
    pub map: Map,
    /// Launches the kernels (and returns reductions) on the construct's queue; `op` is
    /// implicit.
    pub launch: Launch,
    /// The implicit data region's exit; `op` is implicit.
    pub unmap: Unmap,
}

/// A compute construct of `op`'s kind with its wait clause: the events around its steps.
pub fn compute<M, Map, Launch, Unmap>(
    op: &Op,
    wait: WaitClause,
    steps: ComputeSteps<M, Map, Launch, Unmap>,
) -> Result<()>
where
    Map: FnOnce(&Op) -> Result<M>,
    Launch: FnOnce(&Op, &M) -> Result<()>,
    Unmap: FnOnce(&Op, M) -> Result<()>,
{
    let t_cc = dispatch::other_start(acc_event_t::COMPUTE_CONSTRUCT_START, &op.ctx);
    wait.run(op)?;
    let mut implicit = *op;
    implicit.ctx.implicit = true;
    let (start, end) = DataDirective::Enter.events();
    let t = dispatch::other_start(start, &implicit.ctx);
    let mapped = (steps.map)(op)?;
    dispatch::other_end(end, &implicit.ctx, t);
    (steps.launch)(&implicit, &mapped)?;
    if op.q == SYNC {
        let t = dispatch::other_start(acc_event_t::WAIT_START, &implicit.ctx);
        let r = op.rt.backend.wait(SYNC);
        dispatch::other_end(acc_event_t::WAIT_END, &implicit.ctx, t);
        r?;
    }
    data_directive(&implicit, DataDirective::Exit, WaitClause::Absent, |imp| {
        (steps.unmap)(imp, mapped)
    })?;
    dispatch::other_end(acc_event_t::COMPUTE_CONSTRUCT_END, &op.ctx, t_cc);
    Ok(())
}

/// The `wait` directive, clause or routine: with the host (when `async_` is acc_async_sync),
/// dispatching wait start/end for each queue, or by making queue `async_` wait, without
/// blocking the host. `queues` None means every queue.
pub fn wait_on(
    rt: &'static Runtime,
    construct: acc_construct_t,
    implicit: bool,
    loc: &Loc,
    queues: Option<&[i64]>,
    async_: i64,
) -> Result<()> {
    let target = rt.queue_of(async_)?;
    let list: Vec<(i64, QueueId)> = match queues {
        Some(qs) => qs
            .iter()
            .map(|&a| rt.queue_of(a).map(|q| (a, q)))
            .collect::<Result<_>>()?,
        None => rt.backend.queues().into_iter().map(|q| (q, q)).collect(),
    };
    for (a, q) in list {
        if target == SYNC {
            let ctx = rt.ctx(construct, implicit, loc, a, q);
            let t = dispatch::other_start(acc_event_t::WAIT_START, &ctx);
            let r = rt.backend.wait(q);
            dispatch::other_end(acc_event_t::WAIT_END, &ctx, t);
            r?;
        } else {
            rt.backend.queue_wait(target, q)?;
        }
    }
    Ok(())
}
