//! Many small transfers of adjacent slices of one array: move the whole array once (tip 9).

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::{directive, Language};

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct WholeArray;

impl AdviceRule for WholeArray {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::WholeArray]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        whole_array(p, out);
    }
}

fn whole_array(p: &Profile, out: &mut Vec<Finding>) {
    for s in &p.slice_runs {
        // The runtime's pointer writes, and unnamed cells as small as the runtime's own (GCC
        // copies a Fortran routine's scalar arguments one by one, at neighbouring stack
        // addresses): separate values, not an array in slices.
        let average = s.bytes / s.transfers.max(1);
        if s.transfers < 16
            || crate::runtime_internal::is_pointer_write(&s.array)
            || (!s.named && average <= crate::runtime_internal::MAX_BYTES)
        {
            continue;
        }
        let c = p.construct(s.construct);
        let loc = c.map(FindingLocation::of).unwrap_or_default();
        // Each transfer pays a fixed cost; the fastest slice is at least that cost.
        let saving = (s.transfers - s.runs) * s.time.min_ns;
        let per_run = s.bytes / s.runs.max(1);
        let clause = match (c.map(|c| c.kind), s.direction) {
            (Some(ConstructKind::Update), Direction::HostToDevice) => "update device",
            (Some(ConstructKind::Update), Direction::DeviceToHost) => "update self",
            (_, d) => d.copy_word(),
        };
        out.push(Finding {
            rule: Rule::WholeArray,
            title: format!("{} moved in {} small slices instead of whole", s.array, s.transfers),
            location: loc,
            evidence: Evidence {
                count: s.transfers,
                bytes: s.bytes,
                time_ns: s.time.total_ns,
                details: vec![format!(
                    "{} transfers {} of adjacent slices ({} each on average) in {} runs of {} per run, costing {}",
                    s.transfers,
                    s.direction.label(),
                    bytes(s.bytes / s.transfers.max(1)),
                    s.runs,
                    bytes(per_run),
                    duration(s.time.total_ns)
                )],
            },
            estimated_saving_ns: saving,
            change: {
                // Fortran moves a whole array by its name; C and C++ need the section, which
                // only the program knows (the runs cover this many bytes).
                let file = c.and_then(|c| c.location.file.as_deref());
                let item = match Language::of(file.unwrap_or("")) {
                    Language::Fortran => format!("{clause}({})", s.array),
                    Language::C => format!("{clause}({}[...])", s.array),
                };
                let whole = match c.map(|c| c.kind) {
                    // An update is a directive of its own; a copy is a clause of its construct.
                    Some(ConstructKind::Update) => format!("`{}`", directive(file, &item)),
                    _ => format!("`{item}` on the construct"),
                };
                let whole = if item.contains("[...]") {
                    format!("{whole} (with the section the runs cover)")
                } else {
                    whole
                };
                format!(
                    "copy the whole array in one transfer: replace the per-slice {clause} of {a} with one {whole}, {} per run (tip 9)",
                    bytes(per_run),
                    a = s.array
                )
            },
            events: s.samples.clone(),
            time_ranges: vec![(s.first_ns, s.last_ns)],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;

    /// One compute construct uploading `slices` adjacent 4 KiB rows of A.
    fn run(slices: u64) -> Vec<Finding> {
        run_named("A", 4096, slices)
    }

    /// One compute construct uploading `slices` adjacent pieces of `bytes` named `name`.
    fn run_named(name: &str, bytes: u64, slices: u64) -> Vec<Finding> {
        let mut r = Run::new();
        r.compute(42, 10 * MS, 0, |r, t| {
            (0..slices)
                .map(|i| {
                    r.transfer(
                        acc_event_t::ENQUEUE_UPLOAD_START,
                        t + i * 10 * US,
                        t + i * 10 * US + 5 * US,
                        42,
                        name,
                        bytes,
                        0x7f00_0000 + i * bytes,
                    )
                })
                .collect()
        });
        let wall = r.now;
        findings(&WholeArray, &r.profile(wall))
    }

    #[test]
    fn fires_on_sixteen_adjacent_slices() {
        let f = run(16);
        assert_eq!(rules_of(&f), [Rule::WholeArray]);
        assert_eq!(f[0].evidence.count, 16);
        assert_eq!(f[0].evidence.bytes, 16 * 4096);
    }

    /// Adjacent transfers of separate variables (NPB SP's global scalars `c1`, `c2`, ... side
    /// by side in memory) are no slices of one array.
    #[test]
    fn silent_on_neighbouring_variables() {
        let mut r = Run::new();
        r.compute(42, 10 * MS, 0, |r, t| {
            (0..32u64)
                .map(|i| {
                    r.transfer(
                        acc_event_t::ENQUEUE_UPLOAD_START,
                        t + i * 10 * US,
                        t + i * 10 * US + 5 * US,
                        42,
                        &format!("c{i}"),
                        4096,
                        0x7f00_0000 + i * 4096,
                    )
                })
                .collect()
        });
        let wall = r.now;
        assert!(findings(&WholeArray, &r.profile(wall)).is_empty());
    }

    #[test]
    fn slices_of_one_array_are_named_by_their_sections() {
        let mut r = Run::new();
        r.compute(42, 10 * MS, 0, |r, t| {
            (0..16u64)
                .map(|i| {
                    r.transfer(
                        acc_event_t::ENQUEUE_UPLOAD_START,
                        t + i * 10 * US,
                        t + i * 10 * US + 5 * US,
                        42,
                        &format!("T[{}:512]", i * 512),
                        4096,
                        0x7f00_0000 + i * 4096,
                    )
                })
                .collect()
        });
        let wall = r.now;
        let f = findings(&WholeArray, &r.profile(wall));
        assert_eq!(rules_of(&f), [Rule::WholeArray]);
        assert!(f[0].title.starts_with("T moved in 16"), "{}", f[0].title);
        assert!(
            f[0].change.contains("`copyin(T[...])` on the construct"),
            "{}",
            f[0].change
        );
    }

    #[test]
    fn silent_on_eight() {
        assert!(run(8).is_empty());
    }

    /// One compute construct uploading `slices` adjacent unnamed pieces of `bytes` (GCC names
    /// no variable).
    fn run_unnamed(bytes: u64, slices: u64) -> Vec<Finding> {
        let mut r = Run::new();
        r.compute(42, 10 * MS, 0, |r, t| {
            (0..slices)
                .map(|i| {
                    let start = t + i * 10 * US;
                    let mut e = r.ev(acc_event_t::ENQUEUE_UPLOAD_START, start, start + US, 42);
                    e.set(accprof_trace::Field::Bytes, bytes);
                    e.set(accprof_trace::Field::HostPtr, 0x7ffd_0000 + i * bytes);
                    e
                })
                .collect()
        });
        let wall = r.now;
        findings(&WholeArray, &r.profile(wall))
    }

    #[test]
    fn silent_on_unnamed_scalars_but_not_on_unnamed_rows() {
        // A Fortran routine's scalar arguments, copied one by one from the stack.
        assert!(run_unnamed(8, 64).is_empty());
        assert_eq!(rules_of(&run_unnamed(4096, 16)), [Rule::WholeArray]);
    }

    #[test]
    fn silent_on_the_runtimes_pointer_writes() {
        // The bundled runtime's attach writes: 8 bytes into adjacent descriptor fields.
        assert!(run_named(".attach.", 8, 64).is_empty());
        assert_eq!(rules_of(&run_named("desc", 8, 64)), [Rule::WholeArray]);
    }
}
