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

/// Maps the 8-byte variable at `host` for one construct (a structured reference): a pointer
/// into present data gets that data's device address in its device copy and is not copied
/// back; any other value is mapped as `kind` (copyin or copy) says. Returns the clause that the
/// construct's exit undoes and the device address of the variable's copy.
pub fn map(op: &Op, host: usize, kind: ClauseKind) -> Result<(Clause, u64)> {
    // SAFETY: GCC passes the address of the variable (or of its copy) with its size, 8 bytes.
    let value = unsafe { (host as *const usize).read_unaligned() };
    let own = host..host + 8;
    let target = (value != 0 && !own.contains(&value))
        .then(|| data::device_addr(op.rt, value))
        .flatten();
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
    if crate::check::on() {
        // On libgomp and a GPU the kernel would get the host's address: a finding, not a note.
        crate::check::hooks::pointer_by_value(value, crate::loc::call_site());
        return Ok((c, slot));
    }
    if crate::env::flag("ACCSHIM_NOTES") {
        say_once();
    }
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
