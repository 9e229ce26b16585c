//! What each map kind of GCC's OpenACC lowering does, on the shim's present table and with its
//! events: the data clauses of compute and data constructs (structured references, undone at
//! the construct's end), enter/exit data (dynamic references), update, host_data's use_device,
//! wait. Every kind is checked before anything is done: one the shim does not handle stops the
//! program with one line naming it ([`unsupported`]), before any wrong result.

use super::kinds::MapKind;
use crate::backend::{Val, ACC_DEVICE_EMULATED};
use crate::data::{self, Clause, ClauseKind, Entered, Op};
use crate::error::{AccError, OrFatal, Result};
use crate::loc::Loc;
use crate::present::Lookup;
use crate::profiling::dispatch::{self, DataInfo};
use crate::runtime::op_for;
use crate::runtime::{self, Runtime};
use crate::sequence::{self, wait_on, DataDirective, WaitClause};
use accprof_abi::{acc_construct_t, acc_event_t};
use std::cell::RefCell;
use std::ffi::c_void;

/// GCC gives no source location: a tool finds the call site from the return address.
pub const NOWHERE: Loc = Loc::UNKNOWN;

/// `GOACC_FLAG_HOST_FALLBACK` (after unmarshalling): an `if` clause that is false.
pub const FLAG_HOST_FALLBACK: i32 = 1;

/// Stops the program: the shim cannot do what the program asks without risking a wrong result.
pub fn unsupported(what: &str, why: &str) -> ! {
    crate::error::unsupported(what, why)
}

/// The map arrays of one call, as GCC passes them.
pub struct Vars {
    n: usize,
    hostaddrs: *mut *mut c_void,
    sizes: *const usize,
    kinds: *const u16,
}

impl Vars {
    pub fn new(
        n: usize,
        hostaddrs: *mut *mut c_void,
        sizes: *const usize,
        kinds: *const u16,
    ) -> Vars {
        let n = if hostaddrs.is_null() || sizes.is_null() || kinds.is_null() {
            0
        } else {
            n
        };
        Vars {
            n,
            hostaddrs,
            sizes,
            kinds,
        }
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn host(&self, i: usize) -> usize {
        // SAFETY: i < n, and GCC's arrays have n elements.
        unsafe { *self.hostaddrs.add(i) as usize }
    }
    pub fn size(&self, i: usize) -> usize {
        // SAFETY: as host.
        unsafe { *self.sizes.add(i) }
    }
    pub fn kind(&self, i: usize) -> MapKind {
        // SAFETY: as host.
        MapKind::of(unsafe { *self.kinds.add(i) })
    }
    /// host_data's use_device: the program reads the translated address back from the array.
    fn set_host(&self, i: usize, v: u64) {
        // SAFETY: as host; GCC's hostaddrs array is the program's writable stack array.
        unsafe { *self.hostaddrs.add(i) = v as usize as *mut c_void }
    }
    /// GOACC_enter_exit_data's direction: an exit data if any kind is one of exit data's.
    pub fn is_exit_data(&self) -> bool {
        (0..self.n).any(|i| {
            matches!(
                self.kind(i),
                MapKind::FROM
                    | MapKind::FORCE_FROM
                    | MapKind::RELEASE
                    | MapKind::DELETE
                    | MapKind::DETACH
                    | MapKind::FORCE_DETACH
            )
        })
    }
    /// Stops with one line if a kind is not one `allowed` accepts.
    pub fn check(&self, what: &str, allowed: fn(MapKind) -> bool) {
        for i in 0..self.n {
            let k = self.kind(i);
            if !allowed(k) {
                unsupported(
                    what,
                    &format!(
                        "map kind {} ({}, clause {} of {})",
                        k.name(),
                        k.0,
                        i + 1,
                        self.n
                    ),
                );
            }
        }
    }
}

/// What a construct's exit undoes, last entered first.
pub enum Undo {
    /// A structured reference taken by [`data::enter`].
    Exit(Clause),
    /// A firstprivate copy's device memory.
    Free { dev: u64, host: usize, bytes: usize },
    /// An attached pointer.
    Detach(usize),
}

/// A construct's mapped variables: the device addresses its function gets, and the undo list.
#[derive(Default)]
pub struct Mapped {
    pub devaddrs: Vec<Val>,
    /// Values the kernel gets with its arguments instead of in device data of their own (its
    /// firstprivate scalars): (index in `devaddrs`, the value's bytes, zero-padded). The backend
    /// places them beside the argument block and points `devaddrs` at them.
    pub inline: Vec<(usize, u64)>,
    pub undo: Vec<Undo>,
    /// Pointers the function gets that point at data not on the device (it gets NULL for them).
    pub absent_pointers: Vec<usize>,
}

fn clause(kind: ClauseKind, host: usize, bytes: usize) -> Clause {
    Clause {
        kind,
        host: host as *const c_void,
        bytes,
        name: std::ptr::null(),
        implicit: false,
    }
}

fn data_clause(k: MapKind) -> Option<ClauseKind> {
    Some(match k {
        MapKind::ALLOC | MapKind::FORCE_ALLOC => ClauseKind::Create,
        MapKind::TO | MapKind::FORCE_TO | MapKind::TO_PSET => ClauseKind::CopyIn,
        MapKind::FROM | MapKind::FORCE_FROM => ClauseKind::CopyOut,
        MapKind::TOFROM | MapKind::FORCE_TOFROM => ClauseKind::Copy,
        MapKind::FORCE_PRESENT => ClauseKind::Present,
        _ => return None,
    })
}

/// The kinds a compute construct's clauses may have.
pub fn compute_kind(k: MapKind) -> bool {
    data_clause(k).is_some()
        || matches!(
            k,
            MapKind::FORCE_DEVICEPTR
                | MapKind::FIRSTPRIVATE
                | MapKind::FIRSTPRIVATE_INT
                | MapKind::ZERO_LEN_ARRAY_SECTION
                | MapKind::POINTER
                | MapKind::ATTACH
                | MapKind::STRUCT
        )
}

/// The kinds of a data construct and of host_data.
fn data_kind(k: MapKind) -> bool {
    data_clause(k).is_some()
        || matches!(
            k,
            MapKind::FORCE_DEVICEPTR
                | MapKind::ZERO_LEN_ARRAY_SECTION
                | MapKind::POINTER
                | MapKind::ATTACH
                | MapKind::USE_DEVICE_PTR
                | MapKind::USE_DEVICE_PTR_IF_PRESENT
                | MapKind::STRUCT
        )
}

/// A variable passed by value (src/goacc/by_value.rs), mapped after the construct's other
/// clauses so that data they map is present when its value is looked at.
enum Deferred {
    /// With the kernel's arguments.
    Inline,
    /// In device data of its own, as the clause of this kind says.
    Mapped(ClauseKind),
}

/// The entry of a compute construct (`kernel`) or a data construct: structured references for
/// every clause, in order, attachments last (their targets must be present first).
pub fn map_structured(op: &Op, vars: &Vars, kernel: bool) -> Result<Mapped> {
    let mut m = Mapped {
        devaddrs: vec![Val(0); vars.len()],
        inline: Vec::new(),
        undo: Vec::with_capacity(vars.len()),
        absent_pointers: Vec::new(),
    };
    let mut created: Vec<(usize, usize)> = Vec::new();
    let mut by_value = Vec::new();
    let members = struct_members(vars);
    let order = (0..vars.len())
        .filter(|&i| vars.kind(i) != MapKind::ATTACH)
        .chain((0..vars.len()).filter(|&i| vars.kind(i) == MapKind::ATTACH));
    for i in order {
        let (k, host, bytes) = (vars.kind(i), vars.host(i), vars.size(i));
        if members[i] {
            continue; // mapped with its struct
        }
        let dev = match k {
            MapKind::STRUCT => {
                let undo = map_struct(op, vars, i, false, &mut m.devaddrs, &mut created)?;
                m.undo.extend(undo.into_iter().map(Undo::Exit));
                continue;
            }
            _ if data_clause(k).is_some() => {
                let kind = data_clause(k).expect("checked");
                let c = clause(kind, host, bytes);
                let was_absent = host != 0
                    && bytes != 0
                    && op.rt.table().lookup(host, bytes, std::ptr::null())? == Lookup::Absent;
                // GOMP_MAP_FORCE_TO is a copyin clause the program wrote, never a by-value one;
                // data that a pointer entry right after it points to (a Fortran dummy argument,
                // `*level` then `level`) is the pointer's target, mapped before it.
                let by_value_kind = k != MapKind::FORCE_TO && k != MapKind::TO_PSET;
                let pointed_to = i + 1 < vars.len()
                    && matches!(vars.kind(i + 1), MapKind::POINTER | MapKind::ATTACH);
                if kernel && !pointed_to && super::by_value::inline_candidate(k, bytes, was_absent)
                {
                    by_value.push((i, Deferred::Inline));
                    continue;
                }
                if by_value_kind
                    && !pointed_to
                    && super::by_value::candidate(kind, bytes, was_absent)
                {
                    by_value.push((i, Deferred::Mapped(kind)));
                    continue;
                }
                let e = data::enter(op, &c, false)?;
                if k == MapKind::TO_PSET {
                    descriptor_mapped(op, host, was_absent);
                }
                if let Entered::Mapped(_) = e {
                    m.undo.push(Undo::Exit(c));
                    if was_absent {
                        created.push((host, bytes));
                    }
                }
                e.device_addr()
            }
            // deviceptr(p): GCC passes the pointer variable's address; the construct gets a
            // device copy of the variable (its value already a device address), as libgomp
            // gives it.
            MapKind::FORCE_DEVICEPTR => firstprivate(op, host, bytes.max(8), &mut m)?,
            MapKind::FIRSTPRIVATE_INT => host as u64,
            MapKind::FIRSTPRIVATE if kernel && super::by_value::inline_size(bytes) && host != 0 => {
                by_value.push((i, Deferred::Inline));
                continue;
            }
            MapKind::FIRSTPRIVATE => firstprivate(op, host, bytes, &mut m)?,
            MapKind::ZERO_LEN_ARRAY_SECTION => match data::device_addr(op.rt, host) {
                Some(d) => d,
                None if host == 0 => 0,
                None => {
                    m.absent_pointers.push(host);
                    0
                }
            },
            MapKind::POINTER => pointer(op, host, bytes, &created, &mut m)?,
            MapKind::ATTACH => {
                data::attach_biased(op, &op.ctx, host, bytes)?;
                m.undo.push(Undo::Detach(host));
                host as u64
            }
            MapKind::USE_DEVICE_PTR | MapKind::USE_DEVICE_PTR_IF_PRESENT => {
                let d = match data::device_addr(op.rt, host) {
                    Some(d) => d,
                    None if host == 0 || k == MapKind::USE_DEVICE_PTR_IF_PRESENT => host as u64,
                    None => {
                        return Err(AccError::NotPresent {
                            host,
                            bytes: 1,
                            name: "use_device".into(),
                        })
                    }
                };
                vars.set_host(i, d);
                d
            }
            other => unsupported("a construct", &format!("map kind {}", other.name())),
        };
        m.devaddrs[i] = Val(dev);
    }
    for (i, how) in by_value {
        let Deferred::Mapped(kind) = how else {
            m.inline.push((
                i,
                super::by_value::inline_value(op, vars.host(i), vars.size(i)),
            ));
            continue;
        };
        let (c, dev) = super::by_value::map(op, vars.host(i), kind)?;
        m.undo.push(Undo::Exit(c));
        created.push((vars.host(i), 8));
        m.devaddrs[i] = Val(dev);
    }
    Ok(m)
}

/// A Fortran array descriptor (GOMP_MAP_TO_PSET) mapped at `host`: its device copy holds the
/// device address of the data (written by the GOMP_MAP_POINTER that follows), never results a
/// kernel computed, so it is left out of the missing-copyout check (src/dropped.rs). When
/// `fresh`, the data it points to (mapped just before it) remembers it, for the array's name.
fn descriptor_mapped(op: &Op, host: usize, fresh: bool) {
    let mut table = op.rt.table();
    if let Some(e) = table.get_mut(host) {
        e.digest = None;
    }
    if fresh {
        // SAFETY: GCC passes a gfortran array descriptor for this kind; its first word is the
        // address of the array's data.
        let data = unsafe { *(host as *const usize) };
        if let Some(e) = table
            .containing_mut(data)
            .filter(|e| e.descriptor == 0 && e.host != host)
        {
            e.descriptor = host;
        }
    }
}

/// Which entries are members of a GOMP_MAP_STRUCT group (its size is the number of members
/// that follow it).
fn struct_members(vars: &Vars) -> Vec<bool> {
    let mut members = vec![false; vars.len()];
    for i in 0..vars.len() {
        if vars.kind(i) == MapKind::STRUCT {
            for m in members.iter_mut().skip(i + 1).take(vars.size(i)) {
                *m = true;
            }
        }
    }
    members
}

/// GOMP_MAP_STRUCT at `i`: its members (the `sizes[i]` entries after it) mapped together, with
/// a structured or `dynamic` reference each (src/members.rs). Each member's device address is
/// its place in the struct's device copy, and the struct's own entry stands for the struct's
/// base address there (the construct function reaches the members through it). Returns the
/// members' clauses, whose exits undo a construct's mapping.
fn map_struct(
    op: &Op,
    vars: &Vars,
    i: usize,
    dynamic: bool,
    devaddrs: &mut [Val],
    created: &mut Vec<(usize, usize)>,
) -> Result<Vec<Clause>> {
    let group: Vec<usize> = (i + 1..vars.len()).take(vars.size(i)).collect();
    let mut members = Vec::with_capacity(group.len());
    for &j in &group {
        let k = vars.kind(j);
        let Some(kind) = data_clause(k) else {
            unsupported(
                "a struct's members",
                &format!("member map kind {}", k.name()),
            );
        };
        members.push(clause(kind, vars.host(j), vars.size(j)));
    }
    let reached_from = (!dynamic).then(|| vars.host(i));
    let g = crate::members::enter(op, &members, dynamic, reached_from)?;
    if g.created {
        created.extend(members.iter().map(|c| (c.host as usize, c.bytes)));
    }
    for (&j, &d) in group.iter().zip(&g.devs) {
        if let Some(slot) = devaddrs.get_mut(j) {
            *slot = Val(d);
        }
    }
    if let (Some(&first), Some(slot)) = (group.first(), devaddrs.get_mut(i)) {
        let offset = vars.host(i).wrapping_sub(vars.host(first)) as u64;
        *slot = Val(g.devs[0].wrapping_add(offset));
    }
    Ok(members)
}

/// A firstprivate variable: a device copy of its own for the construct.
fn firstprivate(op: &Op, host: usize, bytes: usize, m: &mut Mapped) -> Result<u64> {
    if host == 0 || bytes == 0 {
        return Ok(host as u64);
    }
    let dev = op.rt.backend.alloc(bytes)?;
    let d = DataInfo {
        var_name: std::ptr::null(),
        bytes,
        host_ptr: host as *const c_void,
        device_ptr: dev as usize as *const c_void,
    };
    dispatch::data_point(acc_event_t::ALLOC, &op.ctx, &d);
    m.undo.push(Undo::Free { dev, host, bytes });
    data::upload(op, &op.ctx, host, dev, bytes, std::ptr::null())?;
    Ok(dev)
}

/// GOMP_MAP_POINTER: the pointer variable at `ptr_addr` is mapped (8 bytes), and its device
/// copy, when this construct created it (or the data holding it), gets the device address of
/// its target (`bias` bytes before the address it holds is the start of the mapped section).
fn pointer(
    op: &Op,
    ptr_addr: usize,
    bias: usize,
    created: &[(usize, usize)],
    m: &mut Mapped,
) -> Result<u64> {
    let c = clause(ClauseKind::Create, ptr_addr, 8);
    let was_absent = op.rt.table().lookup(ptr_addr, 8, std::ptr::null())? == Lookup::Absent;
    let slot = data::enter(op, &c, false)?.device_addr();
    m.undo.push(Undo::Exit(c));
    let fresh = was_absent
        || created
            .iter()
            .any(|&(h, b)| ptr_addr >= h && ptr_addr + 8 <= h + b);
    if fresh {
        // SAFETY: GCC passes the address of a pointer variable for this kind.
        let target = unsafe { *(ptr_addr as *const usize) };
        let value = if target == 0 {
            0
        } else {
            let start = target.wrapping_add(bias);
            match data::device_addr(op.rt, start) {
                Some(d) => d.wrapping_sub(bias as u64),
                None => {
                    return Err(AccError::NotPresent {
                        host: start,
                        bytes: 1,
                        name: "pointer target".into(),
                    })
                }
            }
        };
        data::write_pointer(op, &op.ctx, ptr_addr, slot, value, c".attach.".as_ptr())?;
    }
    Ok(slot)
}

/// The exit of a compute or data construct: undoes `m` (copy backs, deletes, frees).
pub fn unmap_structured(op: &Op, m: &Mapped) -> Result<()> {
    for u in m.undo.iter().rev().filter(|u| matches!(u, Undo::Detach(_))) {
        if let Undo::Detach(p) = u {
            data::detach(op, &op.ctx, *p, std::ptr::null(), false)?;
        }
    }
    for u in m.undo.iter().rev() {
        match u {
            Undo::Exit(c) => data::exit(op, c, false, false)?,
            Undo::Free { dev, host, bytes } => {
                op.rt.backend.free(op.q, *dev)?;
                let d = DataInfo {
                    var_name: std::ptr::null(),
                    bytes: *bytes,
                    host_ptr: *host as *const c_void,
                    device_ptr: *dev as usize as *const c_void,
                };
                dispatch::data_point(acc_event_t::FREE, &op.ctx, &d);
            }
            Undo::Detach(_) => {}
        }
    }
    Ok(())
}

/// The runtime: the emulated device (GCC's host-fallback functions run there with device
/// addresses) or CUDA (GCC's nvptx kernels, src/backend/cuda/gcc_kernels.rs).
pub fn device(construct: acc_construct_t, what: &str) -> &'static Runtime {
    let rt = runtime::get(construct, &NOWHERE);
    if rt.device_type != ACC_DEVICE_EMULATED && rt.device_type != accprof_abi::acc_device_t::NVIDIA
    {
        unsupported(
            what,
            "running GCC-compiled OpenACC code on this device type",
        );
    }
    rt
}

/// A wait list from GCC: acc_async_noval in it means every queue.
fn wait_list(waits: &[i32]) -> Option<Vec<i64>> {
    if waits.contains(&(crate::runtime::ACC_ASYNC_NOVAL as i32)) {
        None
    } else {
        Some(waits.iter().map(|&w| w as i64).collect())
    }
}

/// `f` given the wait clause that GCC's wait list `waits` stands for (none when empty).
pub fn with_wait_clause<T>(waits: &[i32], f: impl FnOnce(WaitClause) -> T) -> T {
    if waits.is_empty() {
        return f(WaitClause::Absent);
    }
    match wait_list(waits) {
        None => f(WaitClause::All),
        Some(list) => f(WaitClause::Queues(&list)),
    }
}

struct Region {
    op: Op,
    mapped: Mapped,
}

thread_local! {
    /// This thread's open data constructs (GOACC_data_end closes the innermost).
    static REGIONS: RefCell<Vec<Region>> = const { RefCell::new(Vec::new()) };
}

/// GOACC_data_start.
pub fn data_start(flags: i32, vars: Vars) {
    vars.check("data construct", data_kind);
    if flags & FLAG_HOST_FALLBACK != 0 {
        // if(false): no device data; host_data gets the host addresses it already has. The
        // region's events are still reported, with the host as the device (as libgomp does).
        super::fallback::data_on_host(acc_construct_t::DATA, DataDirective::Enter);
        REGIONS.with(|r| {
            r.borrow_mut().push(Region {
                op: super::fallback::host_op(acc_construct_t::DATA),
                mapped: Mapped::default(),
            })
        });
        return;
    }
    let rt = device(acc_construct_t::DATA, "data construct");
    let r = (|| -> Result<Region> {
        let op = op_for(
            rt,
            acc_construct_t::DATA,
            false,
            &NOWHERE,
            crate::runtime::ACC_ASYNC_SYNC,
        )?;
        let mapped =
            sequence::data_directive(&op, DataDirective::Enter, WaitClause::Absent, |op| {
                map_structured(op, &vars, false)
            })?;
        Ok(Region { op, mapped })
    })()
    .or_fatal("data construct", &NOWHERE);
    REGIONS.with(|r2| r2.borrow_mut().push(r));
}

/// GOACC_data_end.
pub fn data_end() {
    let Some(r) = REGIONS.with(|r| r.borrow_mut().pop()) else {
        unsupported(
            "GOACC_data_end",
            "the end of a data construct that was never entered on this thread",
        );
    };
    sequence::data_directive(&r.op, DataDirective::Exit, WaitClause::Absent, |op| {
        unmap_structured(op, &r.mapped)
    })
    .or_fatal("end of data construct", &NOWHERE);
}

fn enter_kind(k: MapKind) -> bool {
    matches!(
        k,
        MapKind::TO
            | MapKind::FORCE_TO
            | MapKind::ALLOC
            | MapKind::FORCE_ALLOC
            | MapKind::ATTACH
            | MapKind::POINTER
            | MapKind::TO_PSET
            | MapKind::STRUCT
            | MapKind::ZERO_LEN_ARRAY_SECTION
    )
}

fn exit_kind(k: MapKind) -> bool {
    matches!(
        k,
        MapKind::FROM
            | MapKind::FORCE_FROM
            | MapKind::RELEASE
            | MapKind::DELETE
            | MapKind::DETACH
            | MapKind::FORCE_DETACH
            | MapKind::POINTER
            | MapKind::TO_PSET
            | MapKind::STRUCT
            | MapKind::ZERO_LEN_ARRAY_SECTION
    )
}

/// GOACC_enter_data / GOACC_exit_data / GOACC_enter_exit_data: dynamic references. GCC encodes
/// `finalize` in the kinds: copyout finalize is FORCE_FROM, delete finalize is DELETE (plain
/// delete is RELEASE).
pub fn enter_exit(what: &str, exit: bool, flags: i32, vars: &Vars, async_: i32, waits: &[i32]) {
    vars.check(what, if exit { exit_kind } else { enter_kind });
    if vars.is_empty() {
        warn_no_variables(if exit {
            "an exit data"
        } else {
            "an enter data"
        });
    }
    let construct = if exit {
        acc_construct_t::EXIT_DATA
    } else {
        acc_construct_t::ENTER_DATA
    };
    let directive = if exit {
        DataDirective::Exit
    } else {
        DataDirective::Enter
    };
    if flags & FLAG_HOST_FALLBACK != 0 {
        super::fallback::data_on_host(construct, directive);
        return;
    }
    let rt = device(construct, what);
    (|| -> Result<()> {
        let op = op_for(rt, construct, false, &NOWHERE, async_ as i64)?;
        with_wait_clause(waits, |wait| {
            sequence::data_directive(&op, directive, wait, |op| enter_exit_vars(op, exit, vars))
        })
    })()
    .or_fatal(if exit { "exit data" } else { "enter data" }, &NOWHERE)
}

/// The variables of an enter or exit data directive, with dynamic references.
fn enter_exit_vars(op: &Op, exit: bool, vars: &Vars) -> Result<()> {
    if exit {
        // Detachments first: a pointer's device copy holds its host value again before the
        // data holding it is copied back.
        let detach = |k: MapKind| matches!(k, MapKind::DETACH | MapKind::FORCE_DETACH);
        let order = (0..vars.len())
            .filter(|&i| detach(vars.kind(i)))
            .chain((0..vars.len()).filter(|&i| !detach(vars.kind(i))));
        for i in order {
            let (k, host, bytes) = (vars.kind(i), vars.host(i), vars.size(i));
            match k {
                // Its members follow and are released one by one, as libgomp does (GCC 12
                // emits none in exit data).
                MapKind::STRUCT => {}
                MapKind::DETACH | MapKind::FORCE_DETACH => data::detach(
                    op,
                    &op.ctx,
                    host,
                    std::ptr::null(),
                    k == MapKind::FORCE_DETACH,
                )?,
                MapKind::POINTER => {
                    data::exit(op, &clause(ClauseKind::Delete, host, 8), true, false)?
                }
                _ => {
                    let kind = if matches!(k, MapKind::FROM | MapKind::FORCE_FROM) {
                        ClauseKind::CopyOut
                    } else {
                        ClauseKind::Delete
                    };
                    let finalize = matches!(k, MapKind::FORCE_FROM | MapKind::DELETE);
                    data::exit(op, &clause(kind, host, bytes), true, finalize)?
                }
            }
        }
    } else {
        let attach = |k: MapKind| k == MapKind::ATTACH;
        let order = (0..vars.len())
            .filter(|&i| !attach(vars.kind(i)))
            .chain((0..vars.len()).filter(|&i| attach(vars.kind(i))));
        let mut created: Vec<(usize, usize)> = Vec::new();
        let members = struct_members(vars);
        for i in order.filter(|&i| !members[i]) {
            let (k, host, bytes) = (vars.kind(i), vars.host(i), vars.size(i));
            match k {
                MapKind::STRUCT => {
                    map_struct(op, vars, i, true, &mut [], &mut created)?;
                }
                MapKind::ATTACH => data::attach_biased(op, &op.ctx, host, bytes)?,
                MapKind::POINTER => {
                    // A dynamic reference to the pointer variable; its device copy gets the
                    // target's device address as for a construct.
                    let mut m = Mapped::default();
                    pointer(op, host, bytes, &created, &mut m)?;
                    // pointer() took a structured reference: make it a dynamic one.
                    if let Some(e) = op.rt.table().containing_mut(host) {
                        e.structured = e.structured.saturating_sub(1);
                        e.dynamic += 1;
                    }
                }
                _ => {
                    let kind = if matches!(k, MapKind::ALLOC | MapKind::FORCE_ALLOC) {
                        ClauseKind::Create
                    } else {
                        ClauseKind::CopyIn
                    };
                    let was_absent = host != 0
                        && bytes != 0
                        && op.rt.table().lookup(host, bytes, std::ptr::null())? == Lookup::Absent;
                    if was_absent {
                        created.push((host, bytes));
                    }
                    data::enter(op, &clause(kind, host, bytes), true)?;
                    if k == MapKind::TO_PSET {
                        descriptor_mapped(op, host, was_absent);
                    }
                }
            }
        }
    }
    Ok(())
}

fn update_kind(k: MapKind) -> bool {
    matches!(
        k,
        MapKind::TO
            | MapKind::FORCE_TO
            | MapKind::FROM
            | MapKind::FORCE_FROM
            | MapKind::POINTER
            | MapKind::TO_PSET
            | MapKind::ALWAYS_POINTER
    )
}

/// GOMP_MAP_ALWAYS_POINTER after an update device (`update device(this->arr[0:n])` in a C++
/// member function, a Fortran derived type's allocatable component): the pointer at
/// `ptr_addr` is given, on the device, the device address of what it points to on the host
/// (its data is looked up `bias` bytes further, where the section starts), as libgomp does
/// after an update device. A pointer or data not present has nothing to point: nothing is
/// done. (libgomp takes the device address of the entry before the pointer instead, which is
/// the same for a C pointer, and the descriptor itself for a Fortran component.)
fn always_pointer(op: &Op, ptr_addr: usize, bias: usize) -> Result<()> {
    let (slot, value) = {
        let table = op.rt.table();
        let Some(slot) = table
            .containing(ptr_addr)
            .filter(|e| ptr_addr + 8 <= e.end())
            .map(|e| e.dev_of(ptr_addr))
        else {
            return Ok(());
        };
        // SAFETY: GCC passes the address of a pointer (or of a Fortran descriptor, whose first
        // word is its data's address) for this kind, inside data present on the device.
        let target = unsafe { *(ptr_addr as *const usize) };
        let Some(e) = table.containing(target.wrapping_add(bias)) else {
            return Ok(());
        };
        (slot, e.dev.wrapping_add(target.wrapping_sub(e.host) as u64))
    };
    data::write_pointer(op, &op.ctx, ptr_addr, slot, value, c".attach.".as_ptr())
}

/// A data directive that reaches the runtime with no variable at all: GCC 12 leaves `acc
/// declare` globals out of update and enter/exit data directives (it treats them as the
/// device's own), so the directive moves nothing, on a GPU too. Said once per call site.
fn warn_no_variables(what: &str) {
    static WARNED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    let site = crate::loc::call_site();
    {
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        if warned.contains(&site) {
            return;
        }
        warned.push(site);
    }
    eprintln!(
        "accshim: warning: {what} directive{} reached the runtime with no variable: GCC 12 leaves `acc declare` globals out of update and enter/exit data directives, so it copies nothing (on a GPU too); acc_update_self/acc_update_device copy them",
        crate::loc::describe_site(site)
    );
}

/// GOACC_update. Without if_present GCC passes the FORCE_ kinds (the data must be present);
/// with it, the plain ones (absent data is skipped).
pub fn update(flags: i32, vars: &Vars, async_: i32, waits: &[i32]) {
    vars.check("update", update_kind);
    if vars.is_empty() {
        warn_no_variables("an update");
    }
    if flags & FLAG_HOST_FALLBACK != 0 {
        super::fallback::data_on_host(acc_construct_t::UPDATE, DataDirective::Update);
        return;
    }
    let rt = device(acc_construct_t::UPDATE, "update");
    (|| -> Result<()> {
        let op = op_for(rt, acc_construct_t::UPDATE, false, &NOWHERE, async_ as i64)?;
        with_wait_clause(waits, |wait| {
            sequence::data_directive(&op, DataDirective::Update, wait, |op| update_vars(op, vars))
        })
    })()
    .or_fatal("update", &NOWHERE)
}

/// The variables of an update directive.
fn update_vars(op: &Op, vars: &Vars) -> Result<()> {
    // Whether the data just before was copied to the device (an always_pointer after it
    // points the device's pointer at it).
    let mut updated_device = false;
    for i in 0..vars.len() {
        let (k, host, bytes) = (vars.kind(i), vars.host(i), vars.size(i));
        let kind = match k {
            MapKind::TO | MapKind::FORCE_TO => ClauseKind::UpdateDevice,
            MapKind::FROM | MapKind::FORCE_FROM => ClauseKind::UpdateSelf,
            MapKind::ALWAYS_POINTER => {
                if std::mem::take(&mut updated_device) {
                    always_pointer(op, host, bytes)?;
                }
                continue;
            }
            // A Fortran array's descriptor (TO_PSET) and its data pointer (POINTER): only the
            // data is updated, as libgomp does. The device's descriptor points at the device's
            // data; the host's, copied over it, would send the next kernel to the host's data.
            _ => continue,
        };
        let if_present = matches!(k, MapKind::TO | MapKind::FROM);
        updated_device =
            kind == ClauseKind::UpdateDevice && data::device_addr(op.rt, host).is_some();
        data::update(op, &clause(kind, host, bytes), if_present)?;
    }
    Ok(())
}

/// GOACC_wait: no queues means all of them.
pub fn wait(async_: i32, waits: &[i32]) {
    let rt = device(acc_construct_t::WAIT, "wait");
    let list = if waits.is_empty() {
        None
    } else {
        wait_list(waits)
    };
    wait_on(
        rt,
        acc_construct_t::WAIT,
        false,
        &NOWHERE,
        list.as_deref(),
        async_ as i64,
    )
    .or_fatal("wait", &NOWHERE)
}
