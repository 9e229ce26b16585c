//! GOACC_declare: `acc declare` of a function's local variables (C, C++; gfortran lowers
//! them to a data construct instead). GCC calls it at the function's entry with the entry
//! kinds (copyin and copy: to; copyout: force_alloc; create: alloc; present: force_present;
//! device_resident) and before its returns with the exit kinds (copy, copyout: from; create:
//! release). Each variable gets a dynamic reference, as libgomp gives it: its compute
//! constructs map it again, and find it present.
//!
//! GCC 12 emits no exit for `copyin` and `device_resident` locals, so their device copies
//! outlive the call (libgomp keeps them too). When the function declares them again at the
//! same address (the next call), the copy left behind is released first, so that the device
//! gets this call's values rather than the last call's. Other data that later reuses those
//! stack addresses while the copy is still there finds it present, as on libgomp.

use super::kinds::MapKind;
use super::mapping::{self, Vars, FLAG_HOST_FALLBACK, NOWHERE};
use crate::data::{self, Clause, ClauseKind, Op};
use crate::error::{AccError, OrFatal, Result};
use crate::runtime::op_for;
use crate::sequence::{self, DataDirective, WaitClause};
use accprof_abi::acc_construct_t;
use std::cell::RefCell;

fn declare_kind(k: MapKind) -> bool {
    matches!(
        k,
        MapKind::TO
            | MapKind::FORCE_TO
            | MapKind::ALLOC
            | MapKind::FORCE_ALLOC
            | MapKind::DEVICE_RESIDENT
            | MapKind::FROM
            | MapKind::FORCE_FROM
            | MapKind::RELEASE
            | MapKind::DELETE
            | MapKind::FORCE_PRESENT
            | MapKind::FORCE_DEVICEPTR
            | MapKind::POINTER
            | MapKind::TO_PSET
    )
}

fn is_exit(k: MapKind) -> bool {
    matches!(
        k,
        MapKind::FROM | MapKind::FORCE_FROM | MapKind::RELEASE | MapKind::DELETE
    )
}

thread_local! {
    /// This thread's locals declared with a kind GCC never releases: (address, bytes).
    static UNRELEASED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

fn clause(kind: ClauseKind, host: usize, bytes: usize) -> Clause {
    Clause {
        kind,
        host: host as *const std::ffi::c_void,
        bytes,
        name: std::ptr::null(),
        implicit: false,
    }
}

/// GOACC_declare.
pub fn declare(flags: i32, vars: &Vars) {
    vars.check("declare", declare_kind);
    if flags & FLAG_HOST_FALLBACK != 0 || vars.is_empty() {
        return;
    }
    let exit = (0..vars.len()).any(|i| is_exit(vars.kind(i)));
    let rt = mapping::device(acc_construct_t::DECLARE, "declare");
    (|| -> Result<()> {
        let op = op_for(
            rt,
            acc_construct_t::DECLARE,
            false,
            &NOWHERE,
            crate::runtime::ACC_ASYNC_SYNC,
        )?;
        let directive = if exit {
            DataDirective::Exit
        } else {
            DataDirective::Enter
        };
        sequence::data_directive(&op, directive, WaitClause::Absent, |op| {
            (0..vars.len()).try_for_each(|i| one(op, vars.kind(i), vars.host(i), vars.size(i)))
        })
    })()
    .or_fatal("declare", &NOWHERE)
}

fn one(op: &Op, k: MapKind, host: usize, bytes: usize) -> Result<()> {
    match k {
        MapKind::TO | MapKind::FORCE_TO => {
            if k == MapKind::TO {
                release_left_behind(op, host, bytes)?;
            }
            data::enter(op, &clause(ClauseKind::CopyIn, host, bytes), true)?;
        }
        MapKind::FORCE_ALLOC => {
            data::enter(op, &clause(ClauseKind::Create, host, bytes), true)?;
        }
        // Created only where absent (libgomp's create; device_resident, which libgomp's 12
        // does not handle, is a create whose data the host never sees).
        MapKind::ALLOC | MapKind::DEVICE_RESIDENT => {
            if k == MapKind::DEVICE_RESIDENT {
                release_left_behind(op, host, bytes)?;
            }
            if data::device_addr(op.rt, host).is_none() {
                data::enter(op, &clause(ClauseKind::Create, host, bytes), true)?;
            }
        }
        MapKind::FROM | MapKind::FORCE_FROM => data::exit(
            op,
            &clause(ClauseKind::CopyOut, host, bytes),
            true,
            k == MapKind::FORCE_FROM,
        )?,
        MapKind::RELEASE | MapKind::DELETE => data::exit(
            op,
            &clause(ClauseKind::Delete, host, bytes),
            true,
            k == MapKind::DELETE,
        )?,
        MapKind::FORCE_PRESENT if host != 0 && bytes != 0 && !present(op, host, bytes)? => {
            return Err(AccError::NotPresent {
                host,
                bytes,
                name: "declare present".into(),
            });
        }
        _ => {} // deviceptr, and a Fortran descriptor's parts: nothing to map
    }
    if matches!(k, MapKind::TO | MapKind::DEVICE_RESIDENT) && host != 0 && bytes != 0 {
        UNRELEASED.with(|u| {
            let mut u = u.borrow_mut();
            if !u.contains(&(host, bytes)) {
                u.push((host, bytes));
            }
        });
    }
    Ok(())
}

fn present(op: &Op, host: usize, bytes: usize) -> Result<bool> {
    Ok(op.rt.table().lookup(host, bytes, std::ptr::null())? != crate::present::Lookup::Absent)
}

/// The device copy an earlier call left at `[host, host+bytes)` (this thread declared it there,
/// and only that reference holds it): released without a copy back.
fn release_left_behind(op: &Op, host: usize, bytes: usize) -> Result<()> {
    let ours = UNRELEASED.with(|u| u.borrow().contains(&(host, bytes)));
    if !ours {
        return Ok(());
    }
    let only_ours = op.rt.table().get(host).is_some_and(|e| {
        e.bytes == bytes && e.dynamic == 1 && e.structured == 0 && !e.mapped && !e.declared
    });
    if only_ours {
        data::exit(op, &clause(ClauseKind::Delete, host, bytes), true, true)?;
    }
    Ok(())
}
