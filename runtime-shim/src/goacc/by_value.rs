//! Variables GCC passes into a compute construct by value: its implicit `firstprivate` of a
//! scalar, which for OpenACC it maps as GOMP_MAP_TO of the variable (or of a temporary copy).
//!
//! A C or C++ pointer is such a scalar. In the pattern OpenACC codes written for NVHPC use
//! everywhere (miniWeather's kernels: `#pragma acc parallel loop default(present)` over
//! `state[...]`, where `state` is a global or a parameter and the array is present from a data
//! region in the caller), GCC hands the kernel the pointer's host value. On a GPU libgomp's
//! kernel then dereferences a host address (a fault, or with HMM the host's copy); on the
//! emulated device it silently read and wrote the host's copy while the rest of the program
//! used the device's, and the first `update host` brought stale device data back over the
//! host's results (miniWeather's output(): a wrong energy change with no word said).
//!
//! A `kernels` construct does the same with the pointer variable itself: GCC 12 maps it
//! GOMP_MAP_FORCE_TOFROM, 8 bytes (the validation suite's kernels_default_present.c), so the
//! device copy of the variable holds the host's address, and copying it back at the end is
//! what libgomp would do.
//!
//! So an 8-byte variable passed by value or mapped whole whose value points into data present on
//! the device gets the device address of that data in its device copy instead, as an attach would
//! give it (and as NVHPC does): the kernel works on the device copy, like every other kernel of
//! the program. The variable is never copied back, so the host's pointer keeps the host's
//! address. With `ACCSHIM_NOTES=1` one line per process says so, since the same binary on
//! libgomp and a GPU would not (the checker, `accprof check`, reports it as a finding); a plain
//! run says nothing, as the result is the one the program's author meant. A double's bits are
//! never a user-space address unless subnormal, and an integer equal to the address of mapped
//! data is vanishingly rare; both are mapped as their clause says unless they are such an
//! address.
//!
//! A copyin of a scalar of at most 8 bytes that is not on the device (what GCC makes of a
//! `parallel` or `serial` construct's firstprivate scalars: loop bounds, coefficients), and
//! GOMP_MAP_FIRSTPRIVATE of one, goes with the kernel's arguments ([`inline_value`]), as NVHPC
//! passes firstprivate scalars as kernel parameters and libgomp packs them into the block it
//! copies with the argument array: no device data of its own, so no alloc, create, upload,
//! delete or free per scalar and construct. Nothing is lost: the device copy of such a
//! variable lives for one construct and is never copied back. While dropped results are looked
//! for (`accprof check`, `ACCSHIM_DROP_CHECK=1`) such a copyin keeps its device data, so that
//! a kernel's write to it is seen.

use super::kinds::MapKind;
use crate::data::{self, Clause, ClauseKind, Op};
use crate::error::Result;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a compute construct's clause of `kind` (GOMP_MAP_TO: copyin; the tofrom kinds: copy)
/// of `bytes` whose variable was not present is one to map with [`map`]: then it is mapped after
/// the construct's other clauses, so that data they map is present when its value is looked at.
pub fn candidate(kind: ClauseKind, bytes: usize, was_absent: bool) -> bool {
    matches!(kind, ClauseKind::CopyIn | ClauseKind::Copy) && bytes == 8 && was_absent
}

/// The largest value that goes with a kernel's arguments.
pub const INLINE_MAX: usize = 8;

/// Whether a value of `bytes` may go with a kernel's arguments.
pub fn inline_size(bytes: usize) -> bool {
    (1..=INLINE_MAX).contains(&bytes)
}

/// Whether a compute construct's clause of GCC's kind `k`, of `bytes`, whose variable was not
/// present, is a firstprivate value the kernel gets with its arguments ([`inline_value`]).
/// Not while results dropped on the device are looked for (`accprof check`,
/// `ACCSHIM_DROP_CHECK=1`): an explicit `copyin(x)` of a scalar the kernel writes is mapped
/// as GCC maps a firstprivate one, and only its device copy shows the write that is lost.
pub fn inline_candidate(k: MapKind, bytes: usize, was_absent: bool) -> bool {
    k == MapKind::TO
        && was_absent
        && inline_size(bytes)
        && !crate::check::on()
        && !crate::dropped::asked()
}

/// The bytes (at most [`INLINE_MAX`], zero-padded) a kernel gets for the variable at `host`:
/// its value, or for a pointer into present data that data's device address (as [`map`]).
pub fn inline_value(op: &Op, host: usize, bytes: usize) -> u64 {
    let mut word = [0u8; 8];
    let n = bytes.min(INLINE_MAX);
    // SAFETY: GCC passes the address of the variable (or of its copy) with its size.
    unsafe { std::ptr::copy_nonoverlapping(host as *const u8, word.as_mut_ptr(), n) };
    let value = u64::from_le_bytes(word);
    if n == 8 {
        if let Some(target) = present_target(op, host, value as usize) {
            pointed_into_present_data(value as usize);
            return target;
        }
    }
    value
}

/// The device address of the present data that `value`, the 8 bytes at `host`, points into.
fn present_target(op: &Op, host: usize, value: usize) -> Option<u64> {
    let own = host..host + 8;
    (value != 0 && !own.contains(&value))
        .then(|| data::device_addr(op.rt, value))
        .flatten()
}

/// A kernel gets the device address of present data for a pointer that held `value`: a finding
/// for the checker, else a note with ACCSHIM_NOTES.
fn pointed_into_present_data(value: usize) {
    if crate::check::on() {
        // On libgomp and a GPU the kernel would get the host's address: a finding, not a note.
        crate::check::hooks::pointer_by_value(value, crate::loc::call_site());
    } else if crate::env::flag("ACCSHIM_NOTES") {
        say_once();
    }
}

/// Maps the 8-byte variable at `host` for one construct (a structured reference): a pointer
/// into present data gets that data's device address in its device copy and is not copied
/// back; any other value is mapped as `kind` (copyin or copy) says. Returns the clause that the
/// construct's exit undoes and the device address of the variable's copy.
pub fn map(op: &Op, host: usize, kind: ClauseKind) -> Result<(Clause, u64)> {
    // SAFETY: GCC passes the address of the variable (or of its copy) with its size, 8 bytes.
    let value = unsafe { (host as *const usize).read_unaligned() };
    let target = present_target(op, host, value);
    let clause = |kind| Clause {
        kind,
        host: host as *const c_void,
        bytes: 8,
        name: std::ptr::null(),
        implicit: false,
    };
    let Some(target) = target else {
        let c = clause(kind);
        let dev = data::enter(op, &c, false)?.device_addr();
        return Ok((c, dev));
    };
    let c = clause(ClauseKind::Create);
    let slot = data::enter(op, &c, false)?.device_addr();
    data::write_pointer(op, &op.ctx, host, slot, target, c".attach.".as_ptr())?;
    pointed_into_present_data(value);
    Ok((c, slot))
}

fn say_once() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "accshim: note: the compute construct{} gets a C/C++ pointer by value (GCC makes it firstprivate, or in a kernels construct maps the variable itself) that points into data present on the device: accshim gives it the device's address, as NVHPC does; libgomp on a GPU would give the kernel the host's address (add a present clause for that data where the program must also run with GCC on a GPU)",
            crate::loc::describe_call(crate::loc::call_site())
        );
    }
}
