//! The runtime's own transfers: GCC's argument blocks and reduction cells (8-80 bytes, at stack
//! addresses, with no variable name). One row per address fills the per-variable tables with
//! entries that never match between runs, so the tables fold them into one row per direction.

use crate::model::{Variable, MAX_SAMPLES};

/// The name of the folded row.
pub const NAME: &str = "runtime internal";

/// Transfers at most this large on average, with no name, are the runtime's own.
pub const MAX_BYTES: u64 = 256;

/// Whether `v` is one of the runtime's own transfers rather than a program's array.
pub fn is_runtime_internal(v: &Variable) -> bool {
    !v.named && v.count > 0 && v.bytes / v.count <= MAX_BYTES
}

/// `vars` with the runtime's own transfers folded into one row per direction, named [`NAME`]
/// (count and bytes summed), after the program's variables.
pub fn fold(vars: &[Variable]) -> Vec<Variable> {
    let mut out: Vec<Variable> = Vec::with_capacity(vars.len());
    let mut folded: Vec<Variable> = Vec::new();
    for v in vars {
        if !is_runtime_internal(v) {
            out.push(v.clone());
            continue;
        }
        match folded.iter_mut().find(|f| f.direction == v.direction) {
            Some(f) => {
                f.count += v.count;
                f.bytes += v.bytes;
                f.time.merge(&v.time);
                f.host_time.merge(&v.host_time);
                f.samples.extend(v.samples.iter().copied());
                f.samples.sort_by_key(|r| r.start_ns);
                f.samples.truncate(MAX_SAMPLES);
            }
            None => folded.push(Variable {
                name: NAME.to_string(),
                named: false,
                host_ptr: None,
                direction: v.direction,
                count: v.count,
                bytes: v.bytes,
                time: v.time,
                host_time: v.host_time,
                samples: v.samples.clone(),
            }),
        }
    }
    out.extend(folded);
    out
}
