//! Data movement with the specification's present-table semantics and every data event:
//! alloc, create, enqueue_upload at entry; enqueue_download, delete, free at exit; uploads or
//! downloads for updates. Used by the constructs (src/construct.rs) and by the API routines
//! (src/ffi/api.rs) alike.
//!
//! The present-table lock is never held while a callback runs: each step changes the table
//! under the lock, releases it, then dispatches the events of what it did.

use crate::error::{AccError, Result};
use crate::present::{Attached, Entry, Filling, Lookup, Restore};
use crate::profiling::dispatch::{self, DataInfo, EvCtx};
use crate::runtime::Runtime;
use accprof_abi::acc_event_t;
use std::collections::HashSet;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

/// The data clauses of the construct API (C: `ACCSHIM_*` constants, same numbers).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClauseKind {
    Copy = 0,
    CopyIn = 1,
    CopyOut = 2,
    Create = 3,
    Present = 4,
    NoCreate = 5,
    DevicePtr = 6,
    Delete = 7,
    Attach = 8,
    Detach = 9,
    /// update device(...)
    UpdateDevice = 10,
    /// update self(...) / update host(...)
    UpdateSelf = 11,
}

impl ClauseKind {
    pub fn from_i32(v: i32) -> Option<ClauseKind> {
        use ClauseKind::*;
        Some(match v {
            0 => Copy,
            1 => CopyIn,
            2 => CopyOut,
            3 => Create,
            4 => Present,
            5 => NoCreate,
            6 => DevicePtr,
            7 => Delete,
            8 => Attach,
            9 => Detach,
            10 => UpdateDevice,
            11 => UpdateSelf,
            _ => return None,
        })
    }
}

/// One variable in a data clause: host address and length of the section, and its text as
/// written (`A[0:n]`), which the events report as var_name.
#[derive(Clone, Copy, Debug)]
pub struct Clause {
    pub kind: ClauseKind,
    pub host: *const c_void,
    pub bytes: usize,
    pub name: *const c_char,
    /// The compiler determined this data attribute (not written in a clause): events say implicit=1.
    pub implicit: bool,
}

// SAFETY: `host` is only an address here (never dereferenced through a Clause); `name` is a
// static string.
unsafe impl Send for Clause {}
// SAFETY: as for Send: nothing is read or written through the pointers via `&Clause`.
unsafe impl Sync for Clause {}

pub use crate::runtime::Op;

/// The event context of `op`'s action for clause `c` (its implicit flag is the clause's).
fn clause_ctx(op: &Op, c: &Clause) -> EvCtx {
    let mut ctx = op.ctx;
    ctx.implicit = c.implicit;
    ctx
}

/// What an entry did, so that the matching exit undoes exactly that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entered {
    /// A present-table reference was taken; the device address of the section.
    Mapped(u64),
    /// Nothing was mapped (no_create of absent data, deviceptr): the address to use on the device.
    Unmapped(u64),
}

impl Entered {
    pub fn device_addr(self) -> u64 {
        match self {
            Entered::Mapped(d) | Entered::Unmapped(d) => d,
        }
    }
}

fn info(host: usize, bytes: usize, dev: u64, name: *const c_char) -> DataInfo {
    DataInfo {
        var_name: name,
        bytes,
        host_ptr: host as *const c_void,
        device_ptr: dev as usize as *const c_void,
    }
}

/// Copies host -> device with enqueue_upload start/end around it.
pub fn upload(
    op: &Op,
    ctx: &EvCtx,
    host: usize,
    dev: u64,
    bytes: usize,
    name: *const c_char,
) -> Result<()> {
    let d = info(host, bytes, dev, name);
    let t = dispatch::data_start(acc_event_t::ENQUEUE_UPLOAD_START, ctx, &d);
    let r = op.rt.backend.upload(op.q, dev, host as *const u8, bytes);
    dispatch::data_end(acc_event_t::ENQUEUE_UPLOAD_END, ctx, &d, t);
    r
}

/// Copies device -> host with enqueue_download start/end around it.
pub fn download(
    op: &Op,
    ctx: &EvCtx,
    host: usize,
    dev: u64,
    bytes: usize,
    name: *const c_char,
) -> Result<()> {
    let d = info(host, bytes, dev, name);
    let t = dispatch::data_start(acc_event_t::ENQUEUE_DOWNLOAD_START, ctx, &d);
    let r = if bytes <= CONSTANT_MAX && crate::host_memory::is_read_only(host) {
        download_to_constant(op, host, dev, bytes)
    } else {
        op.rt.backend.download(op.q, host as *mut u8, dev, bytes)
    };
    dispatch::data_end(acc_event_t::ENQUEUE_DOWNLOAD_END, ctx, &d, t);
    r
}

/// Downloads of at most this many bytes check whether their destination is read-only memory
/// (scalars: see [`crate::host_memory`]).
const CONSTANT_MAX: usize = 64;

/// A copy back into read-only memory: a constant the program passed by reference, which a
/// compute construct copied implicitly. The device's bytes are read into a buffer: when they
/// equal the constant, as they do unless the program wrote to a constant, there is nothing to
/// write (and writing would fault); else that is said once per address and not written.
fn download_to_constant(op: &Op, host: usize, dev: u64, bytes: usize) -> Result<()> {
    let mut device = [0u8; CONSTANT_MAX];
    op.rt
        .backend
        .download(op.q, device.as_mut_ptr(), dev, bytes)?;
    // The buffer must hold the bytes before it is read (and before it goes out of scope).
    op.rt.backend.wait(op.q)?;
    // SAFETY: `host` names `bytes` bytes of a mapping the program can read (a read-only one,
    // just looked up); nothing writes there.
    let constant = unsafe { std::slice::from_raw_parts(host as *const u8, bytes) };
    if constant != &device[..bytes] {
        static WARNED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
        let first = WARNED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashSet::new)
            .insert(host);
        if first {
            eprintln!(
                "accshim: warning: the device changed {bytes} bytes copied from read-only memory at {host:#x} (a constant passed by reference?); not copied back"
            );
        }
    }
    Ok(())
}

/// Data entry for one clause: structured (data construct, compute construct) or dynamic
/// (enter data, acc_copyin/acc_create).
pub fn enter(op: &Op, c: &Clause, dynamic: bool) -> Result<Entered> {
    let host = c.host as usize;
    let ctx = clause_ctx(op, c);
    match c.kind {
        ClauseKind::DevicePtr => return Ok(Entered::Unmapped(host as u64)),
        ClauseKind::Attach => {
            attach(op, &ctx, host, c.name)?;
            return Ok(Entered::Mapped(0));
        }
        ClauseKind::Detach
        | ClauseKind::Delete
        | ClauseKind::UpdateDevice
        | ClauseKind::UpdateSelf => {
            return Err(AccError::InvalidArgument(format!(
                "{:?} is not an entry clause",
                c.kind
            )));
        }
        _ => {}
    }
    if host == 0 {
        // A NULL section (an unallocated array) is ignored, like GCC does.
        return Ok(Entered::Unmapped(0));
    }
    let mut table = op.rt.table();
    if c.bytes == 0 {
        // A zero-length section maps nothing and takes no reference; it stands for the device
        // address of its start if that is present, else NULL (as GCC treats them). Mapping it
        // would leave a hidden entry that made the whole array "partly present" later.
        return Ok(Entered::Unmapped(
            table.containing(host).map_or(0, |e| e.dev_of(host)),
        ));
    }
    match table.lookup(host, c.bytes, c.name)? {
        Lookup::Present { dev, .. } => {
            // One entry, or the members of a struct that hold the range together: each takes
            // the reference.
            let mut fillings = Vec::new();
            for key in table.holding(host, c.bytes) {
                let e = table.get_mut(key).expect("looked up");
                if dynamic {
                    e.dynamic += 1;
                } else {
                    e.structured += 1;
                }
                fillings.extend(e.filling.clone());
            }
            drop(table);
            for f in fillings {
                // Another thread created it and is still uploading: the data is not there yet.
                f.wait();
            }
            Ok(Entered::Mapped(dev))
        }
        Lookup::Absent => match c.kind {
            ClauseKind::Present => Err(AccError::NotPresent {
                host,
                bytes: c.bytes,
                name: crate::present::cstr_lossy(c.name),
            }),
            ClauseKind::NoCreate => Ok(Entered::Unmapped(host as u64)),
            _ => {
                let dev = op.rt.backend.alloc(c.bytes)?;
                let mut e = Entry::new(host, c.bytes, dev, c.name);
                if dynamic {
                    e.dynamic = 1;
                } else {
                    e.structured = 1;
                }
                // Published now so that other threads see the data as present (and the
                // partly-present checks see it), marked as being filled until the upload is
                // issued: a thread that maps it meanwhile waits (GCC holds its device lock
                // for the whole mapping instead).
                let filling = Filling::new();
                e.filling = Some(Arc::clone(&filling));
                let digest = (c.kind == ClauseKind::CopyIn)
                    .then(|| crate::dropped::track(op.rt))
                    .flatten();
                e.digest = digest.clone();
                table.insert(e);
                drop(table);
                if crate::check::on() {
                    let uploads = matches!(c.kind, ClauseKind::Copy | ClauseKind::CopyIn);
                    let name = crate::present::cstr_lossy(c.name);
                    let site = crate::loc::call_site();
                    crate::check::hooks::mapped(host, c.bytes, dev, uploads, name, site);
                }
                let _filled = Filled {
                    rt: op.rt,
                    host,
                    filling,
                };
                let d = info(host, c.bytes, dev, c.name);
                dispatch::data_point(acc_event_t::ALLOC, &ctx, &d);
                dispatch::data_point(acc_event_t::CREATE, &ctx, &d);
                if matches!(c.kind, ClauseKind::Copy | ClauseKind::CopyIn) {
                    upload(op, &ctx, host, dev, c.bytes, c.name)?;
                }
                crate::goacc::globals::mapped(&*op.rt.backend, op.q, host, c.bytes, dev)?;
                if let Some(d) = digest {
                    crate::dropped::record(op, dev, c.bytes, d)?;
                }
                Ok(Entered::Mapped(dev))
            }
        },
    }
}

/// Marks a new entry's device copy as filled when the entry's creator is done with it, also
/// when it returns early with an error.
struct Filled {
    rt: &'static Runtime,
    host: usize,
    filling: Arc<Filling>,
}

impl Drop for Filled {
    fn drop(&mut self) {
        if let Some(e) = self.rt.table().get_mut(self.host) {
            if e.filling
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, &self.filling))
            {
                e.filling = None;
            }
        }
        self.filling.finish();
    }
}

/// Data exit for one clause. `copyout` is whether data goes back to the host when the last
/// reference goes (copy, copyout); `finalize` zeroes the dynamic counter.
pub fn exit(op: &Op, c: &Clause, dynamic: bool, finalize: bool) -> Result<()> {
    let host = c.host as usize;
    let ctx = clause_ctx(op, c);
    match c.kind {
        ClauseKind::DevicePtr => return Ok(()),
        ClauseKind::Attach | ClauseKind::Detach => return detach(op, &ctx, host, c.name, finalize),
        _ => {}
    }
    if host == 0 || c.bytes == 0 {
        // Entry mapped nothing for these (see enter).
        return Ok(());
    }
    let copyout = matches!(c.kind, ClauseKind::Copy | ClauseKind::CopyOut);
    let mut table = op.rt.table();
    if table.lookup(host, c.bytes, c.name)? == Lookup::Absent {
        // Exit of data that is not present: no action (OpenACC 3.x).
        return Ok(());
    }
    // One entry, or the members of a struct that hold the range together: each gives up the
    // reference, and goes with its last one.
    let mut gone = Vec::new();
    for key in table.holding(host, c.bytes) {
        let e = table.get_mut(key).expect("looked up");
        // acc_map_data'd data is only removed by acc_unmap_data, a declared global never.
        let kept = e.mapped || e.declared;
        if !dynamic {
            e.structured = e.structured.saturating_sub(1);
        } else if !kept {
            e.dynamic = if finalize {
                0
            } else {
                e.dynamic.saturating_sub(1)
            };
        }
        if e.total_refs() == 0 && !kept {
            gone.push(table.remove(key).expect("present"));
        }
    }
    // Pointers elsewhere that point into this data lose their target.
    let restores: Vec<Restore> = gone
        .iter()
        .flat_map(|e| table.detach_pointers_into(e.host, e.bytes))
        .collect();
    drop(table);
    for r in restores {
        restore_pointer(op, &ctx, r)?;
    }
    for e in gone {
        // Only the clause's section goes back (GCC copies [h, h+s) too): the rest of the entry
        // may hold device data the program never asked for, over host data it has changed
        // since.
        let from = host.max(e.host);
        let to = (host + c.bytes).min(e.host + e.bytes);
        release(
            op,
            &ctx,
            e,
            (copyout && from < to).then_some((from, to - from)),
            dynamic,
        )?;
    }
    Ok(())
}

/// Removes an entry whose references are gone: copy `copy_back` (a host section inside it)
/// back, delete, free (with their events). `by_directive`: an exit data (or acc_copyout) asked
/// for the copy back, where the checker reports it; otherwise the end of the construct that
/// mapped the data did, reported at that construct's directive.
fn release(
    op: &Op,
    ctx: &EvCtx,
    e: Entry,
    copy_back: Option<(usize, usize)>,
    by_directive: bool,
) -> Result<()> {
    if let Some((host, bytes)) = copy_back {
        // Attached pointers inside the section get their host values back on the device first,
        // so that the copy back never writes device addresses into host pointers.
        for (ptr_addr, _) in e
            .attachments()
            .filter(|&(p, _)| p >= host && p < host + bytes)
        {
            restore_pointer(
                op,
                ctx,
                Restore {
                    ptr_addr,
                    slot_dev: e.dev_of(ptr_addr),
                },
            )?;
        }
        let _release = (!by_directive).then(crate::check::hooks::release_scope);
        download(op, ctx, host, e.dev_of(host), bytes, e.name)?;
    }
    if copy_back.is_none() {
        if let Some(digest) = &e.digest {
            crate::dropped::check(op, &e, digest.clone())?;
        }
    }
    if crate::check::on() {
        // In queue order, after the copy back and before the memory is given back.
        let (host, copied) = (e.host, copy_back.is_some());
        op.rt.backend.host_fn(
            op.q,
            Box::new(move || crate::check::hooks::released(host, copied)),
        )?;
    }
    let d = info(e.host, e.bytes, e.dev, e.name);
    dispatch::data_point(acc_event_t::DELETE, ctx, &d);
    if let Some(a) = e.release_allocation() {
        op.rt.backend.free(op.q, a.dev)?;
        dispatch::data_point(
            acc_event_t::FREE,
            ctx,
            &info(a.host, a.bytes, a.dev, e.name),
        );
    }
    Ok(())
}

/// `update device` / `update self` of one section.
pub fn update(op: &Op, c: &Clause, if_present: bool) -> Result<()> {
    let host = c.host as usize;
    if host == 0 || c.bytes == 0 {
        return Ok(());
    }
    let ctx = clause_ctx(op, c);
    let table = op.rt.table();
    let (dev, digest) = match table.lookup(host, c.bytes, c.name)? {
        Lookup::Present { dev, key } => {
            // After an update device the device copy is what the program wants there, and after
            // an update self of the whole copy the host has the device's results: either way a
            // tracked copy (src/dropped.rs) is digested again after it, and only later changes
            // count. (A part copied back leaves the rest's changes to be found.)
            let whole = |e: &crate::present::Entry| {
                c.kind == ClauseKind::UpdateDevice || (e.host == host && e.bytes == c.bytes)
            };
            let digest = table
                .get(key)
                .filter(|e| whole(e))
                .and_then(|e| e.digest.clone().map(|g| (e.dev, e.bytes, g)));
            (dev, digest)
        }
        Lookup::Absent if if_present => return Ok(()),
        Lookup::Absent => {
            return Err(AccError::NotPresent {
                host,
                bytes: c.bytes,
                name: crate::present::cstr_lossy(c.name),
            })
        }
    };
    drop(table);
    match c.kind {
        ClauseKind::UpdateDevice => {
            upload(op, &ctx, host, dev, c.bytes, c.name)?;
            digest.map_or(Ok(()), |(d, b, g)| crate::dropped::record(op, d, b, g))
        }
        ClauseKind::UpdateSelf => {
            download(op, &ctx, host, dev, c.bytes, c.name)?;
            digest.map_or(Ok(()), |(d, b, g)| crate::dropped::record(op, d, b, g))
        }
        other => Err(AccError::InvalidArgument(format!(
            "{other:?} is not an update clause"
        ))),
    }
}

/// The device address of a host address inside present data.
pub fn device_addr(rt: &Runtime, host: usize) -> Option<u64> {
    rt.table()
        .containing(host)
        .map(|e| e.dev + (host - e.host) as u64)
}

const ATTACH_NAME: *const c_char = c".attach.".as_ptr();
const DETACH_NAME: *const c_char = c".detach.".as_ptr();

/// Attaches the pointer stored at host address `ptr_addr`: its device copy gets the device
/// address of what it points to (NULL stays NULL). Counted per pointer and target, as the
/// specification says.
pub fn attach(op: &Op, ctx: &EvCtx, ptr_addr: usize, _name: *const c_char) -> Result<()> {
    attach_biased(op, ctx, ptr_addr, 0)
}

/// [`attach`] of a pointer to a section that starts `bias` bytes after where it points (GCC's
/// attach kinds carry it: `attach(p[2:n])`).
pub fn attach_biased(op: &Op, ctx: &EvCtx, ptr_addr: usize, bias: usize) -> Result<()> {
    if ptr_addr == 0 {
        return Err(AccError::InvalidArgument(
            "attach of a NULL pointer address".into(),
        ));
    }
    // SAFETY: the caller passes the address of a pointer variable (acc_attach's contract).
    let target = unsafe { *(ptr_addr as *const usize) };
    let attached = op.rt.table().attach(ptr_addr, target, bias);
    match attached {
        None => Err(AccError::NotPresent {
            host: ptr_addr,
            bytes: 8,
            name: "pointer to attach".into(),
        }),
        Some(Err(e)) => Err(e),
        Some(Ok(Attached::Again)) => Ok(()),
        Some(Ok(Attached::Write { slot_dev, value })) => {
            write_pointer(op, ctx, ptr_addr, slot_dev, value, ATTACH_NAME)
        }
    }
}

/// Detaches: when the count reaches zero the device copy gets the host pointer value back.
pub fn detach(
    op: &Op,
    ctx: &EvCtx,
    ptr_addr: usize,
    _name: *const c_char,
    finalize: bool,
) -> Result<()> {
    let restore = op.rt.table().detach(ptr_addr, finalize);
    restore.map_or(Ok(()), |r| restore_pointer(op, ctx, r))
}

/// Gives a pointer's device copy its host value back (detach).
fn restore_pointer(op: &Op, ctx: &EvCtx, r: Restore) -> Result<()> {
    // SAFETY: an attached pointer's host address, inside present (so live) host data.
    let host_value = unsafe { *(r.ptr_addr as *const u64) };
    write_pointer(op, ctx, r.ptr_addr, r.slot_dev, host_value, DETACH_NAME)
}

/// Writes a pointer's device copy, reported as an 8-byte upload named `.attach.`/`.detach.`.
pub(crate) fn write_pointer(
    op: &Op,
    ctx: &EvCtx,
    ptr_addr: usize,
    slot_dev: u64,
    value: u64,
    name: *const c_char,
) -> Result<()> {
    if crate::check::on() {
        crate::check::hooks::pointer_written(ptr_addr);
    }
    let d = info(ptr_addr, 8, slot_dev, name);
    let t = dispatch::data_start(acc_event_t::ENQUEUE_UPLOAD_START, ctx, &d);
    let r = op.rt.backend.write_u64(op.q, slot_dev, value);
    dispatch::data_end(acc_event_t::ENQUEUE_UPLOAD_END, ctx, &d, t);
    r
}

/// acc_map_data: make `[host, host+bytes)` present at `dev` (user-owned device memory).
pub fn map(op: &Op, host: usize, dev: u64, bytes: usize) -> Result<()> {
    if dev.checked_add(bytes.max(1) as u64).is_none() {
        return Err(AccError::past_address_space(
            "device address",
            dev,
            bytes,
            "",
        ));
    }
    let mut table = op.rt.table();
    match table.lookup(host, bytes, std::ptr::null())? {
        Lookup::Present { .. } => {
            return Err(AccError::InvalidArgument(format!(
                "[{host:#x},+{bytes}] is already present"
            )))
        }
        Lookup::Absent => {}
    }
    if let Some(e) = table.overlapping_device(dev, bytes) {
        return Err(AccError::InvalidArgument(format!(
            "device address [{dev:#x},+{bytes}] is already mapped (to host [{:#x},+{}])",
            e.host, e.bytes
        )));
    }
    let mut e = Entry::new(host, bytes, dev, std::ptr::null());
    e.dynamic = 1;
    e.mapped = true;
    table.insert(e);
    drop(table);
    dispatch::data_point(
        acc_event_t::CREATE,
        &op.ctx,
        &info(host, bytes, dev, std::ptr::null()),
    );
    Ok(())
}

/// acc_unmap_data.
pub fn unmap(op: &Op, host: usize) -> Result<()> {
    let mut table = op.rt.table();
    let ok = table.get(host).is_some_and(|e| e.mapped && !e.declared);
    if !ok {
        return Err(AccError::InvalidArgument(format!(
            "{host:#x} was not mapped by acc_map_data"
        )));
    }
    if table.get(host).is_some_and(|e| e.structured > 0) {
        return Err(AccError::InvalidArgument(format!(
            "{host:#x} is still in use by a data construct"
        )));
    }
    let e = table.remove(host).expect("checked");
    drop(table);
    dispatch::data_point(
        acc_event_t::DELETE,
        &op.ctx,
        &info(e.host, e.bytes, e.dev, e.name),
    );
    Ok(())
}
