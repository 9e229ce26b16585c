//! Kernels whose launch geometry wastes the device: fewer blocks (gangs) than multiprocessors,
//! blocks that are not whole warps, or an occupancy that registers hold down. Read from the
//! device's kernel records and limits only (CUPTI): a host fallback run has neither.

use crate::advise::*;
use crate::format::{duration, percent};
use crate::model::*;
use crate::occupancy::{occupancy, DeviceLimits, Limiter};

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct LaunchGeometryRule;

impl AdviceRule for LaunchGeometryRule {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::LaunchGeometry]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        launch_geometry(p, out);
    }
}

/// A kernel matters when its device time is at least this share of the run (1/20 = 5%).
const MATTERS_SHARE: u64 = 20;
/// Occupancy below this (percent), limited by registers, is worth a finding.
const LOW_OCCUPANCY: f64 = 25.0;

fn launch_geometry(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns.max(1);
    for k in &p.kernels {
        let Some(g) = &k.geometry else { continue };
        // Only the device's own times: a host fallback or launch-call time says nothing of how
        // the GPU was used.
        if k.time.source != TimeSource::Device || k.time.total_ns * MATTERS_SHARE < wall {
            continue;
        }
        let Some(device) = p.devices.iter().find(|d| Some(d.device) == g.device) else {
            continue;
        };
        let Some(c) = p.construct(k.construct) else {
            continue;
        };
        let finding = |title: String, detail: String, saving: u64, change: String| Finding {
            rule: Rule::LaunchGeometry,
            title,
            location: FindingLocation::of(c),
            evidence: Evidence {
                count: k.launches,
                bytes: 0,
                // The construct's host time, as the other rules give; the device's is below.
                time_ns: c.time.total_ns,
                details: vec![
                    detail,
                    format!(
                        "{} launches took {} on the device ({} of the run)",
                        k.launches,
                        duration(k.time.total_ns),
                        percent(k.time.total_ns, wall)
                    ),
                ],
            },
            estimated_saving_ns: saving,
            change,
            events: k.samples.clone(),
            time_ranges: vec![(k.first_ns, k.last_ns)],
        };
        let at = c.location.short();
        let sm = device.multiprocessors;
        if g.blocks.max < sm {
            let gangs = g.blocks.max;
            // What the directive asks for, where the source says: NPB CG's `gang(...)
            // vector(1024)` asks for no gang count, and runs one gang all the same.
            let asks = match (c.location.file.as_deref(), c.location.line) {
                (Some(f), Some(l)) => crate::source::read_matching(p, f, &[l])
                    .map(|s| s.directive_has_clause(l, "num_gangs")),
                _ => None,
            };
            let clause = match (asks, k.num_gangs) {
                (Some(true), _) => format!("remove its `num_gangs({gangs})` clause"),
                (Some(false), _) => format!(
                    "its directive asks for no gang count, so the compiler chose {gangs}: put `gang` on the outermost loop (not an inner one), or `collapse` the loops under it, so that gangs have iterations to share"
                ),
                (None, Some(r)) if r.max == gangs => format!(
                    "if its directive has a `num_gangs({gangs})` clause, remove it; otherwise put `gang` on the outermost loop"
                ),
                _ => "give it more gangs".into(),
            };
            out.push(finding(
                format!(
                    "kernel {} runs {gangs} gang{} on a GPU of {sm} SMs: most of the GPU idles",
                    k.name,
                    if gangs == 1 { "" } else { "s" }
                ),
                format!(
                    "every launch had at most {gangs} blocks (gangs) for the {sm} multiprocessors of {}; {} of them had nothing to run",
                    device.name.as_deref().unwrap_or("the device"),
                    sm - gangs
                ),
                // Spread over every multiprocessor, the same work would take gangs/sm of the
                // time if it scales with them; what stays is at least one SM's share.
                k.time.total_ns / sm * (sm - gangs),
                format!(
                    "at {at}, {clause} so that the compiler picks the gangs (or ask for a multiple of the GPU's {sm} SMs); if the loop has too few iterations, `collapse` the loops nested in it"
                ),
            ));
        }
        let warp = device.warp_size.max(1);
        let threads = g.threads_per_block.max;
        if threads % warp != 0 {
            let lanes = threads.div_ceil(warp) * warp;
            out.push(finding(
                format!(
                    "kernel {} runs blocks of {threads} threads, not a multiple of the warp size {warp}",
                    k.name
                ),
                format!(
                    "each block occupies {} warps, {} of whose {lanes} lanes do nothing",
                    lanes / warp,
                    lanes - threads
                ),
                k.time.total_ns * (lanes - threads) / lanes,
                format!(
                    "at {at}, use a vector_length (times num_workers) that is a multiple of {warp}, such as `vector_length({})`",
                    lanes.max(128)
                ),
            ));
        }
        if let Some(o) = g.occupancy.filter(|o| {
            o.limited_by == Limiter::Registers && o.percent < LOW_OCCUPANCY && o.active_warps > 0
        }) {
            let regs = g.registers_per_thread.max;
            let smaller = smaller_blocks(device, g, o.percent);
            let mut change = format!(
                "at {at}, lower the registers each thread needs: split the loop body into two loops, or keep fewer values live across it; compilers cap them with an option (NVHPC `-gpu=maxregcount:{}`, nvcc `-maxrregcount`), trading registers for local memory",
                regs_for_quarter(device, threads).unwrap_or(64)
            );
            if let Some((v, pct)) = smaller {
                change.push_str(&format!(
                    "; `vector_length({v})` alone would let {pct:.0}% of the warps run"
                ));
            }
            out.push(finding(
                format!(
                    "kernel {} keeps {:.0}% of the GPU's warps busy at most: {regs} registers per thread",
                    k.name, o.percent
                ),
                format!(
                    "{regs} registers per thread and {threads} threads per block fit {} block(s) per SM, {} of {} warps (theoretical occupancy {:.0}%, limited by registers)",
                    o.blocks_per_multiprocessor, o.active_warps, o.max_warps, o.percent
                ),
                // Assumes a quarter of the kernel's time goes once more warps hide its latency;
                // the real gain depends on whether the kernel waits on memory.
                k.time.total_ns / 4,
                change,
            ));
        }
    }
}

/// A smaller block (vector length, a multiple of the warp size) that packs the same registers
/// per thread into more warps, with its occupancy, when one does better than `now` percent.
fn smaller_blocks(d: &DeviceLimits, g: &LaunchGeometry, now: f64) -> Option<(u64, f64)> {
    let warp = d.warp_size.max(1);
    let threads = g.threads_per_block.max;
    [1024, 512, 256, 128, 64, 32]
        .into_iter()
        .filter(|&v| v < threads && v % warp == 0)
        .filter_map(|v| {
            let o = occupancy(d, v, g.registers_per_thread.max, g.shared_mem_bytes.max)?;
            (o.percent > now).then_some((v, o.percent))
        })
        // The largest block of the best occupancy.
        .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
}

/// The most registers per thread at which blocks of `threads` reach a quarter of the warps.
fn regs_for_quarter(d: &DeviceLimits, threads: u64) -> Option<u64> {
    (16..=255u64)
        .rev()
        .step_by(8)
        .find(|&r| occupancy(d, threads, r, 0).is_some_and(|o| o.percent >= LOW_OCCUPANCY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_trace::{device, Field};

    const H100: &str = "compute_capability=9.0\nmultiprocessors=132\nwarp_size=32\n\
        max_threads_per_block=1024\nmax_threads_per_multiprocessor=2048\n\
        max_blocks_per_multiprocessor=32\nregisters_per_block=65536\n\
        registers_per_multiprocessor=65536\nshared_memory_per_block=49152\n\
        shared_memory_per_multiprocessor=233472\nname=NVIDIA H100 80GB HBM3";

    /// `launches` launches of one kernel at line 15 with the runtime's `gangs` x `vector`, each
    /// run by the device as `blocks` blocks of `threads` threads using `regs` registers, taking
    /// `ms` of a run of about 10 x `ms`. With `limits`, the trace has the device's properties.
    fn run(gangs: u64, vector: u64, blocks: u64, threads: u64, regs: u64, limits: bool) -> Profile {
        let mut r = Run::with_device_records();
        if limits {
            let text = r.intern(H100);
            let mut e = accprof_trace::Event::new(device::PROPERTIES, MS);
            e.set_i64(Field::DeviceNumber, 0);
            e.set(Field::DeviceProperties, u64::from(text.0));
            r.feed(e);
        }
        let mut kernels = Vec::new();
        for _ in 0..5 {
            r.compute(15, 10 * MS, 0, |r, t| {
                let launch = r.launch(t + US, t + 2 * US, 15, "few$_omp_fn$0", gangs, vector);
                let mut k = r.device_kernel(t + 3 * US, t + 9 * MS, t + 2 * US, "few$_omp_fn$0");
                k.set(Field::GridDim, device::pack_dim3(blocks, 1, 1));
                k.set(Field::BlockDim, device::pack_dim3(threads, 1, 1));
                k.set(Field::Registers, regs);
                k.set(Field::SharedMem, 16);
                k.set_i64(Field::DeviceNumber, 0);
                kernels.push(k);
                vec![launch]
            });
        }
        for k in kernels {
            r.feed(k);
        }
        let wall = r.now;
        r.profile(wall)
    }

    #[test]
    fn four_gangs_on_132_sms_name_the_clause_and_the_line() {
        let p = run(4, 128, 4, 128, 20, true);
        let f = findings(&LaunchGeometryRule, &p);
        assert_eq!(rules_of(&f), [Rule::LaunchGeometry], "{f:#?}");
        assert!(
            f[0].title.contains("4 gangs on a GPU of 132 SMs"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].location.line, Some(15));
        assert!(
            f[0].change.contains("a `num_gangs(4)` clause, remove it"),
            "{}",
            f[0].change
        );
        assert_eq!(f[0].estimated_saving_ns, 5 * (9 * MS - 3 * US) / 132 * 128);
    }

    /// The launch's gang count read against the directive: NPB CG's `gang vector(1024)` asks
    /// for none, so there is no `num_gangs` clause to remove.
    #[test]
    fn the_advice_follows_what_the_directive_asks_for() {
        let dir = tempfile::tempdir().unwrap();
        for (name, directive, want) in [
            (
                "cg.c",
                "#pragma acc parallel loop gang vector(1024)",
                "asks for no gang count",
            ),
            (
                "few.c",
                "#pragma acc parallel loop num_gangs(1)",
                "remove its `num_gangs(1)` clause",
            ),
        ] {
            let path = dir.path().join(name);
            std::fs::write(
                &path,
                format!("{}{directive}\nfor (;;) ;\n", "\n".repeat(14)),
            )
            .unwrap();
            let mut p = run(1, 1024, 1, 1024, 20, true);
            p.constructs
                .iter_mut()
                .for_each(|c| c.location.file = Some(path.display().to_string()));
            let f = findings(&LaunchGeometryRule, &p);
            assert!(f[0].change.contains(want), "{name}: {}", f[0].change);
        }
    }

    #[test]
    fn silent_when_the_gangs_fill_the_gpu() {
        assert!(findings(&LaunchGeometryRule, &run(16896, 128, 16896, 128, 20, true)).is_empty());
    }

    #[test]
    fn silent_without_the_devices_limits() {
        assert!(findings(&LaunchGeometryRule, &run(4, 128, 4, 128, 20, false)).is_empty());
    }

    #[test]
    fn silent_without_device_records() {
        // The host's view only: the same launches, no kernel records, no geometry.
        let mut r = Run::new();
        for _ in 0..5 {
            r.compute(15, 10 * MS, 0, |r, t| {
                vec![r.launch(t + US, t + 9 * MS, 15, "few$_omp_fn$0", 4, 128)]
            });
        }
        let wall = r.now;
        assert!(findings(&LaunchGeometryRule, &r.profile(wall)).is_empty());
    }

    #[test]
    fn blocks_of_partial_warps_are_named() {
        let f = findings(&LaunchGeometryRule, &run(1000, 100, 1000, 100, 20, true));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0]
            .title
            .contains("100 threads, not a multiple of the warp size 32"));
        assert!(
            f[0].change.contains("vector_length(128)"),
            "{}",
            f[0].change
        );
    }

    #[test]
    fn register_bound_occupancy_suggests_fewer_registers_and_smaller_blocks() {
        // 136 registers: 4352 per warp, 3 warps per sub-partition, 12 warps per SM: one block
        // of 256 threads (8 warps) runs, 12.5%; blocks of 128 would fit 3 (12 warps, 19%).
        let f = findings(&LaunchGeometryRule, &run(1000, 256, 1000, 256, 136, true));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.contains("12% of the GPU's warps"),
            "{}",
            f[0].title
        );
        assert!(f[0].change.contains("maxregcount"), "{}", f[0].change);
        assert!(
            f[0].change
                .contains("`vector_length(128)` alone would let 19%"),
            "{}",
            f[0].change
        );
        assert!(
            findings(&LaunchGeometryRule, &run(1000, 256, 1000, 256, 32, true)).is_empty(),
            "32 registers fill the SM"
        );
    }
}
