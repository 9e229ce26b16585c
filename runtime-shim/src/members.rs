//! Members of one struct mapped together (GCC's GOMP_MAP_STRUCT groups: `copyin(v.x[0:n],
//! v.n)`, a Fortran derived type's components). As libgomp maps them: one device allocation laid
//! out as the struct is on the host, from the first member to the end of the last, so that code
//! reaching a member through the struct's base address finds it; and a present-table entry of
//! its own for each member, so that the bytes between the members are not present and each
//! member is copied back and released on its own. The allocation goes with the last member's
//! entry ([`crate::present::Entry::release_allocation`]).
//!
//! The bytes between the members (padding, members not named) are copied in with the group, so
//! that the whole struct, found present later through its members (`present(v)`), holds no
//! uninitialised bytes.
//!
//! A group whose members are all present (in entries of their own from an earlier group, or
//! inside the whole struct's entry after `enter data copyin(v)`) takes a reference on each, and
//! copies nothing; a group of which some members are present and others not is an error, as in
//! libgomp (the device copy could not be laid out as the struct is).

use crate::data::{self, Clause, ClauseKind, Op};
use crate::error::{AccError, Result};
use crate::present::{DeviceBlock, Entry, Filling, Lookup, PresentTable};
use crate::profiling::dispatch::{self, DataInfo};
use accprof_abi::acc_event_t;
use std::ffi::c_void;
use std::sync::{Arc, MutexGuard};

/// Maps the members of one struct (`members`, each a Create, CopyIn, CopyOut, Copy or Present
/// clause on the member's bytes) with one structured or `dynamic` reference each, and returns
/// each member's device address, and whether the group was created here. A member of no bytes
/// maps nothing; its address is its place in the device copy.
///
/// `reached_from`: the struct's address, when the construct's code reaches the members through
/// it (a compute or data construct is given the struct's device address). A new device copy is
/// then refused while another part of the struct before its last member is present elsewhere:
/// code reaching that part through the struct would read another allocation's bytes (libgomp
/// refuses it too). Enter data reaches nothing through the struct, and the members of one
/// struct mapped by separate directives get device copies of their own.
pub fn enter(
    op: &Op,
    members: &[Clause],
    dynamic: bool,
    reached_from: Option<usize>,
) -> Result<Group> {
    let sized: Vec<&Clause> = members.iter().filter(|c| c.bytes > 0).collect();
    let Some(first) = sized.first() else {
        return Ok(Group {
            devs: vec![0; members.len()],
            created: false,
        });
    };
    let mut table = op.rt.table();
    let mut found = Vec::with_capacity(sized.len());
    for c in &sized {
        found.push(table.lookup(c.host as usize, c.bytes, c.name)?);
    }
    let present = found.iter().filter(|l| **l != Lookup::Absent).count();
    // Where the first sized member's host bytes are on the device: every member is at the
    // same offset from it as on the host.
    let created = present == 0;
    let (h0, d0) = if present == sized.len() {
        let d0 = take_references(&mut table, &sized, &found, dynamic)?;
        let fillings: Vec<Arc<Filling>> = found
            .iter()
            .filter_map(|l| match l {
                Lookup::Present { key, .. } => table.get(*key).and_then(|e| e.filling.clone()),
                Lookup::Absent => None,
            })
            .collect();
        drop(table);
        for f in fillings {
            // Another thread created them and is still uploading.
            f.wait();
        }
        (first.host as usize, d0)
    } else if present > 0 {
        let i = found.iter().position(|l| *l == Lookup::Absent).unwrap_or(0);
        let c = sized[i];
        return Err(AccError::InvalidArgument(format!(
            "struct member [{:#x},+{}] is not present while other members of the same struct are: members mapped together must be mapped again together",
            c.host as usize, c.bytes
        )));
    } else {
        if let Some(base) = reached_from {
            let end = sized.iter().map(|c| c.host as usize + c.bytes).max();
            if let Some(e) = end.and_then(|end| table.first_overlapping(base, end)) {
                return Err(AccError::InvalidArgument(format!(
                    "struct members mapped at [{:#x},...) while [{:#x},+{}] of the same struct is present apart from them: members a construct reaches through the struct must be mapped together",
                    first.host as usize, e.host, e.bytes
                )));
            }
        }
        create(op, table, &sized, dynamic)?
    };
    let devs = members
        .iter()
        .map(|c| d0.wrapping_add((c.host as usize).wrapping_sub(h0) as u64))
        .collect();
    Ok(Group { devs, created })
}

/// What [`enter`] did.
pub struct Group {
    /// Each member's device address.
    pub devs: Vec<u64>,
    /// The members were not present: their device copies are new.
    pub created: bool,
}

/// None of the members is present: one allocation from the first member to the end of the
/// last, an entry for each member, the `to` members uploaded. Returns the allocation's host
/// start and device address.
fn create(
    op: &Op,
    mut table: MutexGuard<'_, PresentTable>,
    sized: &[&Clause],
    dynamic: bool,
) -> Result<(usize, u64)> {
    if let Some(c) = sized.iter().find(|c| c.kind == ClauseKind::Present) {
        return Err(AccError::NotPresent {
            host: c.host as usize,
            bytes: c.bytes,
            name: "struct member".into(),
        });
    }
    let start = sized.iter().map(|c| c.host as usize).min().unwrap_or(0);
    let end = sized
        .iter()
        .map(|c| c.host as usize + c.bytes)
        .max()
        .unwrap_or(start);
    let bytes = end - start;
    let dev = op.rt.backend.alloc(bytes)?;
    let block = DeviceBlock::new(dev, start, bytes, sized.len());
    let filling = Filling::new();
    for c in sized {
        let host = c.host as usize;
        let mut e = Entry::new(host, c.bytes, dev + (host - start) as u64, c.name);
        if dynamic {
            e.dynamic = 1;
        } else {
            e.structured = 1;
        }
        e.block = Some(Arc::clone(&block));
        e.filling = Some(Arc::clone(&filling));
        table.insert(e);
    }
    drop(table);
    let _filled = Filled {
        op,
        members: sized,
        filling,
    };
    let block_info = DataInfo {
        var_name: std::ptr::null(),
        bytes,
        host_ptr: start as *const c_void,
        device_ptr: dev as usize as *const c_void,
    };
    dispatch::data_point(acc_event_t::ALLOC, &op.ctx, &block_info);
    for c in sized {
        let (host, d) = (c.host as usize, dev + (c.host as usize - start) as u64);
        let info = DataInfo {
            var_name: c.name,
            bytes: c.bytes,
            host_ptr: c.host,
            device_ptr: d as usize as *const c_void,
        };
        dispatch::data_point(acc_event_t::CREATE, &op.ctx, &info);
        if matches!(c.kind, ClauseKind::CopyIn | ClauseKind::Copy) {
            data::upload(op, &op.ctx, host, d, c.bytes, c.name)?;
        }
    }
    // The bytes between members (padding, or members not named) get the host's: a construct
    // that finds the whole struct present reads no uninitialised device memory there.
    let mut by_address: Vec<(usize, usize)> = sized
        .iter()
        .map(|c| (c.host as usize, c.host as usize + c.bytes))
        .collect();
    by_address.sort_unstable();
    let mut covered = start;
    for (h, e) in by_address {
        if h > covered {
            data::upload(
                op,
                &op.ctx,
                covered,
                dev + (covered - start) as u64,
                h - covered,
                std::ptr::null(),
            )?;
        }
        covered = covered.max(e);
    }
    Ok((start, dev))
}

/// Every member is present: they must lie in one device copy laid out as the struct (one
/// entry holding the whole struct, or the entries of one earlier group); each takes a
/// reference. Returns the device address of the first member.
fn take_references(
    table: &mut PresentTable,
    sized: &[&Clause],
    found: &[Lookup],
    dynamic: bool,
) -> Result<u64> {
    let dev = |l: &Lookup| match l {
        Lookup::Present { dev, .. } => *dev,
        Lookup::Absent => 0,
    };
    let (h0, d0) = (sized[0].host as usize, dev(&found[0]));
    for (c, l) in sized.iter().zip(found) {
        let offset = (c.host as usize).wrapping_sub(h0) as u64;
        if dev(l).wrapping_sub(d0) != offset {
            return Err(AccError::InvalidArgument(format!(
                "struct member [{:#x},+{}] is present, but not in the same device copy as the other members it is mapped with",
                c.host as usize, c.bytes
            )));
        }
    }
    for l in found {
        if let Lookup::Present { key, .. } = l {
            let e = table.get_mut(*key).expect("looked up");
            if dynamic {
                e.dynamic += 1;
            } else {
                e.structured += 1;
            }
        }
    }
    Ok(d0)
}

/// Marks the new members' device copies as filled when their creator is done with them, also
/// when it returns early with an error.
struct Filled<'a> {
    op: &'a Op,
    members: &'a [&'a Clause],
    filling: Arc<Filling>,
}

impl Drop for Filled<'_> {
    fn drop(&mut self) {
        let mut table = self.op.rt.table();
        for c in self.members {
            if let Some(e) = table.get_mut(c.host as usize) {
                if e.filling
                    .as_ref()
                    .is_some_and(|f| Arc::ptr_eq(f, &self.filling))
                {
                    e.filling = None;
                }
            }
        }
        drop(table);
        self.filling.finish();
    }
}
