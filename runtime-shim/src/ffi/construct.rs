//! The construct API for C (declared in include/accshim.h): plain structures in, the same
//! implementation as the Rust API (src/construct.rs) behind.

use super::guard;
use crate::backend::{CHostFn, HostKernel, RedOp};
use crate::construct::{self, Arg, ComputeSpec, CudaSrc, DataRegion, Kernel};
use crate::data::{Clause, ClauseKind};
use crate::error::{fatal, AccError};
use crate::loc::Loc;
use accprof_abi::acc_construct_t;
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};
use std::sync::Mutex;

/// `accshim_clause`.
#[repr(C)]
pub struct CClause {
    pub kind: c_int,
    pub implicit: c_int,
    pub host: *const c_void,
    pub bytes: usize,
    pub name: *const c_char,
}

/// `accshim_arg`: kind 0 = host address of present data, 1 = device address, 2 = long long,
/// 3 = double; the value in the 8-byte union `v`.
#[repr(C)]
pub struct CArg {
    pub kind: c_int,
    pub pad: c_int,
    pub v: u64,
}

/// `accshim_kernel`.
#[repr(C)]
pub struct CKernel {
    pub name: *const c_char,
    pub work: usize,
    pub host: Option<CHostFn>,
    pub user: *mut c_void,
    pub cuda_src: *const c_char,
    pub args: *const CArg,
    pub nargs: c_int,
    /// 0 none, 1 sum, 2 max, 3 min.
    pub reduction_op: c_int,
    pub reduction_var: *mut f64,
    pub reduction_name: *const c_char,
}

/// `accshim_compute`.
#[repr(C)]
pub struct CCompute {
    pub construct: c_int,
    pub loc: *const Loc,
    pub clauses: *const CClause,
    pub nclauses: c_int,
    pub num_gangs: c_int,
    pub num_workers: c_int,
    pub vector_length: c_int,
    pub async_: c_longlong,
    /// -1: no wait clause; 0: `wait` (all queues); n > 0: `wait(waits[0..n])`.
    pub nwaits: c_int,
    pub waits: *const c_longlong,
}

/// The `n` elements at `p`; none for n <= 0. A NULL array with elements is the caller's error
/// (`what` names it), reported rather than read as "none".
unsafe fn slice<'a, T>(p: *const T, n: c_int, what: &str, loc: &Loc) -> &'a [T] {
    if n <= 0 {
        &[]
    } else if p.is_null() {
        fatal(
            &AccError::InvalidArgument(format!("{n} {what} at a NULL address")),
            "construct",
            loc,
        )
    } else {
        // SAFETY: the C caller passes n valid elements.
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }
}

/// The data regions begun and not yet ended (accshim_data_begin's handles), so that ending
/// one twice, or ending something that is no region, is reported instead of freeing garbage.
/// One short lock per region begin and end, never held across runtime work.
static OPEN_REGIONS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

fn open_regions() -> std::sync::MutexGuard<'static, BTreeSet<usize>> {
    OPEN_REGIONS.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe fn loc_of(p: *const Loc) -> Loc {
    if p.is_null() {
        Loc::UNKNOWN
    } else {
        // SAFETY: not NULL; the C caller passes a valid Loc (the function's contract).
        unsafe { *p }
    }
}

unsafe fn clauses(p: *const CClause, n: c_int, loc: &Loc) -> Vec<Clause> {
    // SAFETY: the caller's contract: `p` holds `n` clauses.
    unsafe { slice(p, n, "clauses", loc) }
        .iter()
        .map(|c| {
            let Some(kind) = ClauseKind::from_i32(c.kind) else {
                fatal(
                    &AccError::InvalidArgument(format!("unknown clause kind {}", c.kind)),
                    "construct",
                    loc,
                )
            };
            Clause {
                kind,
                host: c.host,
                bytes: c.bytes,
                name: c.name,
                implicit: c.implicit != 0,
            }
        })
        .collect()
}

unsafe fn waits(p: *const c_longlong, n: c_int, loc: &Loc) -> Option<Vec<i64>> {
    // SAFETY: the caller's contract: `p` holds `n` queue numbers when n >= 0.
    (n >= 0).then(|| unsafe { slice(p, n, "wait queues", loc) }.to_vec())
}

fn static_cstr(p: *const c_char, fallback: &'static CStr) -> &'static CStr {
    if p.is_null() {
        fallback
    } else {
        // SAFETY: the C macros pass string literals.
        unsafe { CStr::from_ptr(p) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn accshim_data_begin(
    loc: *const Loc,
    cs: *const CClause,
    n: c_int,
) -> *mut c_void {
    guard("accshim_data_begin", || {
        // SAFETY: the C caller passes NULL or a valid Loc.
        let loc = unsafe { loc_of(loc) };
        // SAFETY: the C caller passes `n` clauses at `cs`.
        let cs = unsafe { clauses(cs, n, &loc) };
        let region = Box::into_raw(Box::new(construct::data(loc, &cs)));
        open_regions().insert(region as usize);
        region as *mut c_void
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_data_end(region: *mut c_void, end_line: c_int) {
    guard("accshim_data_end", || {
        if region.is_null() {
            return;
        }
        if !open_regions().remove(&(region as usize)) {
            let err = AccError::InvalidArgument(format!(
                "{region:p} is no open data region (ended twice, or not from accshim_data_begin)"
            ));
            fatal(&err, "accshim_data_end", &Loc::UNKNOWN)
        }
        // SAFETY: made by accshim_data_begin (it was open) and now taken out of the open set,
        // so ended once.
        let r = unsafe { Box::from_raw(region as *mut DataRegion) };
        r.end(end_line.max(0) as u32)
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_enter_data(
    loc: *const Loc,
    cs: *const CClause,
    n: c_int,
    async_: c_longlong,
    waits_: *const c_longlong,
    nwaits: c_int,
) {
    guard("accshim_enter_data", || {
        // SAFETY: the C caller passes NULL or a valid Loc.
        let loc = unsafe { loc_of(loc) };
        // SAFETY: the C caller passes `n` clauses at `cs`.
        let cs = unsafe { clauses(cs, n, &loc) };
        // SAFETY: the C caller passes `nwaits` queue numbers at `waits_` (when nwaits >= 0).
        let w = unsafe { waits(waits_, nwaits, &loc) };
        construct::enter_data(loc, &cs, async_, w.as_deref())
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_exit_data(
    loc: *const Loc,
    cs: *const CClause,
    n: c_int,
    async_: c_longlong,
    waits_: *const c_longlong,
    nwaits: c_int,
    finalize: c_int,
) {
    guard("accshim_exit_data", || {
        // SAFETY: the C caller passes NULL or a valid Loc.
        let loc = unsafe { loc_of(loc) };
        // SAFETY: the C caller passes `n` clauses at `cs`.
        let cs = unsafe { clauses(cs, n, &loc) };
        // SAFETY: the C caller passes `nwaits` queue numbers at `waits_` (when nwaits >= 0).
        let w = unsafe { waits(waits_, nwaits, &loc) };
        construct::exit_data(loc, &cs, async_, w.as_deref(), finalize != 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_update(
    loc: *const Loc,
    cs: *const CClause,
    n: c_int,
    async_: c_longlong,
    waits_: *const c_longlong,
    nwaits: c_int,
    if_present: c_int,
) {
    guard("accshim_update", || {
        // SAFETY: the C caller passes NULL or a valid Loc.
        let loc = unsafe { loc_of(loc) };
        // SAFETY: the C caller passes `n` clauses at `cs`.
        let cs = unsafe { clauses(cs, n, &loc) };
        // SAFETY: the C caller passes `nwaits` queue numbers at `waits_` (when nwaits >= 0).
        let w = unsafe { waits(waits_, nwaits, &loc) };
        construct::update(loc, &cs, async_, w.as_deref(), if_present != 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_wait(
    loc: *const Loc,
    queues: *const c_longlong,
    n: c_int,
    async_: c_longlong,
) {
    guard("accshim_wait", || {
        // SAFETY: the C caller passes NULL or a valid Loc.
        let loc = unsafe { loc_of(loc) };
        // SAFETY: the C caller passes `n` queue numbers at `queues` (when n >= 0).
        let qs = unsafe { waits(queues, n, &loc) };
        construct::wait(loc, qs.as_deref().filter(|q| !q.is_empty()), async_)
    })
}

#[no_mangle]
pub unsafe extern "C" fn accshim_compute(c: *const CCompute, ks: *const CKernel, nk: c_int) {
    guard("accshim_compute", || {
        if c.is_null() {
            fatal(
                &AccError::InvalidArgument("NULL construct descriptor".into()),
                "accshim_compute",
                &Loc::UNKNOWN,
            )
        }
        // SAFETY: not NULL; the C caller passes a valid descriptor.
        let c = unsafe { &*c };
        // SAFETY: `c.loc` is NULL or a valid Loc (part of the descriptor's contract).
        let loc = unsafe { loc_of(c.loc) };
        let kind = acc_construct_t(c.construct);
        if !matches!(
            kind,
            acc_construct_t::PARALLEL | acc_construct_t::KERNELS | acc_construct_t::SERIAL
        ) {
            fatal(
                &AccError::InvalidArgument(format!(
                    "construct {} is not a compute construct",
                    c.construct
                )),
                "accshim_compute",
                &loc,
            );
        }
        let pos = |v: c_int| (v > 0).then_some(v as u32);
        let spec = ComputeSpec {
            kind,
            loc,
            // SAFETY: the descriptor's contract: `clauses` holds `nclauses` clauses.
            clauses: unsafe { clauses(c.clauses, c.nclauses, &loc) },
            num_gangs: pos(c.num_gangs),
            num_workers: pos(c.num_workers),
            vector_length: pos(c.vector_length),
            async_: c.async_,
            // SAFETY: the descriptor's contract: `waits` holds `nwaits` queue numbers.
            wait: unsafe { waits(c.waits, c.nwaits, &loc) },
        };
        // SAFETY: the C caller passes `nk` kernel descriptors at `ks`.
        let kernels: Vec<Kernel> = unsafe { slice(ks, nk, "kernels", &loc) }
            .iter()
            .map(|k| Kernel {
                name: static_cstr(k.name, c"accshim_kernel"),
                work: k.work,
                host: k.host.map(|f| HostKernel::C {
                    f,
                    user: k.user as usize,
                }),
                cuda: (!k.cuda_src.is_null())
                    .then(|| CudaSrc::from_static_cstr(static_cstr(k.cuda_src, c""))),
                // SAFETY: each kernel descriptor's `args` holds `nargs` arguments (the caller's contract).
                args: unsafe { slice(k.args, k.nargs, "kernel arguments", &loc) }
                    .iter()
                    .map(|a| kernel_arg(a, &loc))
                    .collect(),
                reduction: reduction(k, &loc),
            })
            .collect();
        construct::compute(&spec, &kernels)
    })
}

fn kernel_arg(a: &CArg, loc: &Loc) -> Arg {
    match a.kind {
        0 => Arg::Present(a.v as usize as *const c_void),
        1 => Arg::Device(a.v),
        2 => Arg::I64(a.v as i64),
        3 => Arg::F64(f64::from_bits(a.v)),
        k => fatal(
            &AccError::InvalidArgument(format!("unknown kernel argument kind {k}")),
            "accshim_compute",
            loc,
        ),
    }
}

/// The kernel's reduction: none for op 0; an unknown operator or a NULL variable is an error
/// (the result would otherwise be dropped without a word).
fn reduction(k: &CKernel, loc: &Loc) -> Option<(RedOp, *mut f64, *const c_char)> {
    let op = match k.reduction_op {
        0 => return None,
        1 => RedOp::Sum,
        2 => RedOp::Max,
        3 => RedOp::Min,
        op => fatal(
            &AccError::InvalidArgument(format!("unknown reduction operator {op}")),
            "accshim_compute",
            loc,
        ),
    };
    if k.reduction_var.is_null() {
        fatal(
            &AccError::InvalidArgument("reduction variable at a NULL address".into()),
            "accshim_compute",
            loc,
        )
    }
    Some((op, k.reduction_var, k.reduction_name))
}
