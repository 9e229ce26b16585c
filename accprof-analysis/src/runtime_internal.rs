//! The runtime's own transfers: GCC's argument blocks and reduction cells (8-80 bytes, at stack
//! addresses, with no variable name). One row per address fills the per-variable tables with
//! entries that never match between runs, so the tables fold them into one row per direction.

use crate::model::{Variable, MAX_SAMPLES};

/// The name of the folded row.
pub const NAME: &str = "runtime internal";

/// Transfers at most this large on average, with no name, are the runtime's own.
pub const MAX_BYTES: u64 = 256;

/// Names runtimes give their own pointer writes: the bundled runtime reports attaching a
/// pointer (storing a device address into the device copy of a pointer or Fortran descriptor)
/// as an 8-byte upload of `.attach.`, detaching as `.detach.`.
const POINTER_WRITES: [&str; 2] = [".attach.", ".detach."];

/// Whether `name` is what a runtime calls its own pointer writes, not a program's variable.
pub fn is_pointer_write(name: &str) -> bool {
    POINTER_WRITES.contains(&name)
}

/// Whether `v` is one of the runtime's own transfers rather than a program's array.
pub fn is_runtime_internal(v: &Variable) -> bool {
    v.count > 0 && ((!v.named && v.bytes / v.count <= MAX_BYTES) || is_pointer_write(&v.name))
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
                alloc_site: None,
                host_ptr: None,
                direction: v.direction,
                count: v.count,
                bytes: v.bytes,
                time: v.time,
                host_time: v.host_time,
                samples: v.samples.clone(),
                content: None,
            }),
        }
    }
    out.extend(folded);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Direction;

    fn var(name: &str, named: bool, count: u64, bytes: u64) -> Variable {
        Variable {
            name: name.into(),
            named,
            alloc_site: None,
            host_ptr: None,
            direction: Direction::HostToDevice,
            count,
            bytes,
            time: Default::default(),
            host_time: Default::default(),
            samples: Vec::new(),
            content: None,
        }
    }

    #[test]
    fn pointer_writes_and_small_unnamed_cells_are_the_runtimes() {
        assert!(is_runtime_internal(&var(".attach.", true, 100, 800)));
        assert!(is_runtime_internal(&var(".detach.", true, 1, 8)));
        assert!(is_runtime_internal(&var("0x7ffd0010", false, 20, 160)));
        assert!(!is_runtime_internal(&var("A", true, 20, 160)));
        assert!(!is_runtime_internal(&var("0x7f000000", false, 2, 1 << 20)));
        let folded = fold(&[var(".attach.", true, 100, 800), var("A", true, 1, 64)]);
        let names: Vec<&str> = folded.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["A", NAME]);
    }
}
