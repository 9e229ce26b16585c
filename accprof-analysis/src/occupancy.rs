//! Theoretical occupancy: how many warps of a kernel a multiprocessor can hold at once, given
//! its block size, registers per thread and shared memory per block, and which of the device's
//! limits stops it (threads, registers, shared memory, blocks per multiprocessor).
//!
//! The arithmetic is CUDA's occupancy calculator's (`cuda_occupancy.h`, as documented in the
//! CUDA C Programming Guide): registers are allocated per warp in units of 256 and split over
//! the multiprocessor's four sub-partitions, shared memory per block in units of 128 bytes plus
//! what the driver reserves per block. Cache-partitioning modes and shared-memory carveout
//! preferences are not modelled: the figure is the best the hardware allows for that launch.

use serde::Serialize;

/// A device's limits, from the trace's device properties event (kind 1004).
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct DeviceLimits {
    /// The CUDA device ordinal kernel records name.
    pub device: i64,
    pub name: Option<String>,
    /// `"9.0"` for an H100.
    pub compute_capability: Option<String>,
    pub multiprocessors: u64,
    pub warp_size: u64,
    pub max_threads_per_block: u64,
    pub max_threads_per_multiprocessor: u64,
    pub max_blocks_per_multiprocessor: u64,
    pub registers_per_block: u64,
    pub registers_per_multiprocessor: u64,
    pub shared_memory_per_block: u64,
    /// What a block may use when the kernel opts in (larger than `shared_memory_per_block`).
    pub shared_memory_per_block_optin: Option<u64>,
    pub shared_memory_per_multiprocessor: u64,
    /// Shared memory the driver keeps per block for itself.
    pub reserved_shared_memory_per_block: u64,
}

/// Registers are allocated to warps in units of this many.
const REGISTER_UNIT: u64 = 256;
/// Each multiprocessor's registers are split evenly over this many sub-partitions (every
/// architecture since Volta, and most before).
const SUB_PARTITIONS: u64 = 4;
/// Shared memory is allocated to blocks in units of this many bytes (compute capability 7+).
const SHARED_UNIT: u64 = 128;
/// Registers a thread may use at most.
const MAX_REGISTERS_PER_THREAD: u64 = 255;

impl DeviceLimits {
    /// Reads the `key=value` lines libaccprof writes; `None` when a limit occupancy needs is
    /// missing. Unknown keys are skipped.
    pub fn parse(device: i64, text: &str) -> Option<Self> {
        let mut d = DeviceLimits {
            device,
            ..Self::default()
        };
        let mut reserved = None;
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let n = v.trim().parse::<u64>().ok();
            match k {
                "name" => d.name = Some(v.to_string()),
                "compute_capability" => d.compute_capability = Some(v.to_string()),
                "multiprocessors" => d.multiprocessors = n?,
                "warp_size" => d.warp_size = n?,
                "max_threads_per_block" => d.max_threads_per_block = n?,
                "max_threads_per_multiprocessor" => d.max_threads_per_multiprocessor = n?,
                "max_blocks_per_multiprocessor" => d.max_blocks_per_multiprocessor = n?,
                "registers_per_block" => d.registers_per_block = n?,
                "registers_per_multiprocessor" => d.registers_per_multiprocessor = n?,
                "shared_memory_per_block" => d.shared_memory_per_block = n?,
                "shared_memory_per_block_optin" => d.shared_memory_per_block_optin = n,
                "shared_memory_per_multiprocessor" => d.shared_memory_per_multiprocessor = n?,
                "reserved_shared_memory_per_block" => reserved = n,
                _ => {}
            }
        }
        // Drivers that do not say keep 1 KiB per block from compute capability 8.0 on.
        let major = d
            .compute_capability
            .as_deref()
            .and_then(|c| c.split('.').next()?.parse::<u32>().ok());
        d.reserved_shared_memory_per_block = reserved.unwrap_or(if major.is_some_and(|m| m >= 8) {
            1024
        } else {
            0
        });
        let needed = [
            d.multiprocessors,
            d.warp_size,
            d.max_threads_per_block,
            d.max_threads_per_multiprocessor,
            d.max_blocks_per_multiprocessor,
            d.registers_per_multiprocessor,
        ];
        needed.iter().all(|&v| v > 0).then_some(d)
    }

    /// Warps a multiprocessor holds at most.
    pub fn max_warps_per_multiprocessor(&self) -> u64 {
        self.max_threads_per_multiprocessor / self.warp_size.max(1)
    }
}

/// The limit that stops more blocks from running on a multiprocessor at once.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// The multiprocessor's warp (thread) slots are full, or the block is larger than a block
    /// may be.
    Threads,
    /// The most blocks a multiprocessor runs at once.
    Blocks,
    Registers,
    SharedMemory,
}

impl Limiter {
    pub fn label(self) -> &'static str {
        match self {
            Limiter::Threads => "threads",
            Limiter::Blocks => "blocks per SM",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
        }
    }
}

/// A launch's theoretical occupancy on one device.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct Occupancy {
    /// Blocks of this launch a multiprocessor holds at once (0: the launch cannot run).
    pub blocks_per_multiprocessor: u64,
    pub active_warps: u64,
    pub max_warps: u64,
    /// `active_warps / max_warps`, in percent.
    pub percent: f64,
    pub limited_by: Limiter,
}

fn round_up(v: u64, unit: u64) -> u64 {
    v.div_ceil(unit) * unit
}

/// The theoretical occupancy of blocks of `threads` threads, each using `registers` registers
/// per thread and `shared_bytes` of shared memory (static plus dynamic), on device `d`. `None`
/// for an empty block.
pub fn occupancy(
    d: &DeviceLimits,
    threads: u64,
    registers: u64,
    shared_bytes: u64,
) -> Option<Occupancy> {
    if threads == 0 || d.warp_size == 0 {
        return None;
    }
    let warps_per_block = threads.div_ceil(d.warp_size);
    let max_warps = d.max_warps_per_multiprocessor();
    let by_threads = if threads > d.max_threads_per_block {
        0
    } else {
        max_warps / warps_per_block
    };
    let by_blocks = d.max_blocks_per_multiprocessor;
    let by_registers = if registers == 0 {
        u64::MAX
    } else {
        let per_warp = round_up(registers * d.warp_size, REGISTER_UNIT);
        // The hardware checks a block's registers as if its warps filled every sub-partition.
        let checked = per_warp * round_up(warps_per_block, SUB_PARTITIONS);
        let limit = if d.registers_per_block > 0 {
            d.registers_per_block
        } else {
            d.registers_per_multiprocessor
        };
        if registers > MAX_REGISTERS_PER_THREAD
            || checked > limit
            || per_warp * warps_per_block > limit
        {
            0
        } else {
            let warps_per_partition = d.registers_per_multiprocessor / SUB_PARTITIONS / per_warp;
            warps_per_partition * SUB_PARTITIONS / warps_per_block
        }
    };
    let by_shared = {
        let per_block = round_up(
            shared_bytes + d.reserved_shared_memory_per_block,
            SHARED_UNIT,
        );
        let block_limit = d
            .shared_memory_per_block_optin
            .unwrap_or(d.shared_memory_per_block)
            .max(d.shared_memory_per_block)
            + d.reserved_shared_memory_per_block;
        if per_block == 0 {
            u64::MAX
        } else if shared_bytes > 0 && per_block > block_limit {
            0
        } else {
            d.shared_memory_per_multiprocessor / per_block
        }
    };
    // On a tie the first named is the limit: the hardware's slots before the kernel's
    // resources.
    let (blocks, limited_by) = [
        (by_threads, Limiter::Threads),
        (by_blocks, Limiter::Blocks),
        (by_registers, Limiter::Registers),
        (by_shared, Limiter::SharedMemory),
    ]
    .into_iter()
    .fold((u64::MAX, Limiter::Threads), |best, (n, l)| {
        if n < best.0 {
            (n, l)
        } else {
            best
        }
    });
    let active_warps = (blocks * warps_per_block).min(max_warps);
    Some(Occupancy {
        blocks_per_multiprocessor: blocks,
        active_warps,
        max_warps,
        percent: if max_warps == 0 {
            0.0
        } else {
            active_warps as f64 * 100.0 / max_warps as f64
        },
        limited_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An A100 (compute capability 8.0) as CUDA reports it.
    fn a100() -> DeviceLimits {
        DeviceLimits::parse(
            0,
            "compute_capability=8.0\nmultiprocessors=108\nwarp_size=32\nmax_threads_per_block=1024\n\
             max_threads_per_multiprocessor=2048\nmax_blocks_per_multiprocessor=32\n\
             registers_per_block=65536\nregisters_per_multiprocessor=65536\n\
             shared_memory_per_block=49152\nshared_memory_per_block_optin=166912\n\
             shared_memory_per_multiprocessor=167936\nreserved_shared_memory_per_block=1024\n\
             name=NVIDIA A100-SXM4-40GB",
        )
        .unwrap()
    }

    /// The H100 the committed trace traces/gpu/gcc_geometry.trace ran on, as libaccprof wrote it.
    fn h100() -> DeviceLimits {
        DeviceLimits::parse(
            0,
            "compute_capability=9.0\nmultiprocessors=132\nwarp_size=32\nmax_threads_per_block=1024\n\
             max_threads_per_multiprocessor=2048\nmax_blocks_per_multiprocessor=32\n\
             registers_per_block=65536\nregisters_per_multiprocessor=65536\n\
             shared_memory_per_block=49152\nshared_memory_per_block_optin=232448\n\
             shared_memory_per_multiprocessor=233472\nreserved_shared_memory_per_block=1024\n\
             name=NVIDIA H100 80GB HBM3",
        )
        .unwrap()
    }

    fn occ(d: &DeviceLimits, t: u64, r: u64, s: u64) -> (u64, u64, Limiter) {
        let o = occupancy(d, t, r, s).unwrap();
        (o.blocks_per_multiprocessor, o.active_warps, o.limited_by)
    }

    // The expected figures are those of CUDA's occupancy calculator for compute capability 8.0
    // (64 warps, 32 blocks, 64 Ki registers and 164 KiB of shared memory per multiprocessor).

    #[test]
    fn small_blocks_of_few_registers_fill_the_multiprocessor() {
        assert_eq!(occ(&a100(), 256, 32, 0), (8, 64, Limiter::Threads));
        let o = occupancy(&a100(), 256, 32, 0).unwrap();
        assert_eq!((o.max_warps, o.percent), (64, 100.0));
    }

    #[test]
    fn registers_halve_occupancy_at_64_per_thread() {
        assert_eq!(occ(&a100(), 128, 64, 0), (8, 32, Limiter::Registers));
        assert_eq!(occ(&a100(), 1024, 64, 0), (1, 32, Limiter::Registers));
    }

    #[test]
    fn the_most_registers_leave_one_block_of_256() {
        let o = occupancy(&a100(), 256, 255, 0).unwrap();
        assert_eq!((o.blocks_per_multiprocessor, o.percent), (1, 12.5));
        assert_eq!(o.limited_by, Limiter::Registers);
    }

    #[test]
    fn a_block_over_the_register_file_cannot_launch() {
        // 65 registers round to 2304 per warp; 32 warps need 73728 > 65536.
        assert_eq!(occ(&a100(), 1024, 65, 0), (0, 0, Limiter::Registers));
    }

    #[test]
    fn shared_memory_limits_blocks_of_48_kib() {
        // 48 KiB + 1 KiB reserved per block: 3 blocks in 164 KiB.
        assert_eq!(
            occ(&a100(), 256, 32, 48 * 1024),
            (3, 24, Limiter::SharedMemory)
        );
    }

    #[test]
    fn one_warp_blocks_hit_the_block_limit() {
        let o = occupancy(&a100(), 32, 16, 0).unwrap();
        assert_eq!((o.blocks_per_multiprocessor, o.percent), (32, 50.0));
        assert_eq!(o.limited_by, Limiter::Blocks);
    }

    #[test]
    fn partial_warps_count_as_whole_ones() {
        // 96 threads = 3 warps: 21 blocks fill 63 of 64 warp slots.
        assert_eq!(occ(&a100(), 96, 32, 0), (21, 63, Limiter::Threads));
        assert_eq!(
            occ(&a100(), 100, 32, 0).1,
            64,
            "4 warps, one of them partial"
        );
    }

    #[test]
    fn gccs_kernels_on_the_h100_are_fully_occupied() {
        // traces/gpu/gcc_geometry.trace: 128 threads, 20 registers, 16 bytes of shared memory.
        let o = occupancy(&h100(), 128, 20, 16).unwrap();
        assert_eq!((o.blocks_per_multiprocessor, o.active_warps), (16, 64));
        assert_eq!(o.limited_by, Limiter::Threads);
    }

    #[test]
    fn a_block_larger_than_allowed_cannot_launch() {
        assert_eq!(occ(&h100(), 2048, 16, 0), (0, 0, Limiter::Threads));
    }

    #[test]
    fn parsing_needs_the_core_limits_and_skips_unknown_keys() {
        let d = h100();
        assert_eq!(d.multiprocessors, 132);
        assert_eq!(d.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(d.max_warps_per_multiprocessor(), 64);
        assert!(DeviceLimits::parse(0, "warp_size=32\nname=x").is_none());
        let old = "compute_capability=8.6\nmultiprocessors=84\nwarp_size=32\nmax_threads_per_block=1024\n\
                   max_threads_per_multiprocessor=1536\nmax_blocks_per_multiprocessor=16\n\
                   registers_per_multiprocessor=65536\nfuture_key=7";
        let d = DeviceLimits::parse(1, old).unwrap();
        assert_eq!(d.reserved_shared_memory_per_block, 1024, "assumed from 8.x");
        assert!(DeviceLimits::parse(0, "multiprocessors=lots").is_none());
    }
}
