//! GPU benchmark for docs/performance/shim.md: async launch overhead (shim vs raw cudarc on the same
//! context) and host-to-device bandwidth from pageable memory (shim vs raw cuMemcpyHtoD).
//! Exits with a message on machines without a CUDA device. Options: --launches N (default
//! 20000), --reps R (default 5), --only launch|h2d|calls (default launch and h2d), --sizes
//! MiB,MiB (default 64,256), --cold 1|2|3 (before each pageable upload, read (1) or write (2)
//! 512 MiB elsewhere so that the source is not in the CPU's caches, as for an array the program
//! last touched long ago; writing also leaves the caches full of lines to write back; or (3)
//! write every line of the source itself, as for an array the program has just computed;
//! without it the source has just been read by the previous copy). The staging pipeline's
//! shape comes from ACCSHIM_STAGE_* (runtime-shim/README.md). Beside the staged copy, `h2d` times the alternative of pinning the
//! caller's buffer for the copy (cuMemHostRegister, copy, unregister): registering costs more
//! than the copy it serves (docs/performance/shim.md), which is why the runtime stages instead.
//!
//! `--only calls` measures what a profiling tool loaded into the process adds to each CUDA driver
//! call an OpenACC runtime makes (run it bare, then under each tool, and subtract): an async
//! launch, an 8-byte device-to-host copy with its stream synchronisation, an 8-byte pinned
//! host-to-device copy, and a stream query (a call no tool subscribes to). Medians of --reps
//! rounds of --launches calls each, in ns per call.

#![warn(clippy::undocumented_unsafe_blocks)]

#[path = "common/mod.rs"]
mod common;

use accshim::ffi::api::*;
use accshim::{here, Clause, Kernel};
use cudarc::driver::sys;
use std::ffi::c_void;
use std::time::Instant;

const EMPTY_CU: &str = "extern \"C\" __global__ void bench_empty() {}\n";

fn main() {
    common::usage(
        "bench_gpu: launch overhead and pageable host-to-device bandwidth, shim against raw CUDA\n(needs a CUDA device; docs/performance/shim.md).\n\nOptions:\n  --launches N      launches per repetition (default 20000)\n  --reps R          repetitions (default 5)\n  --only WHAT       launch, h2d or calls (default launch and h2d)\n  --sizes MIB,MIB   upload sizes in MiB (default 64,256)\n  --cold C          source before each upload: 1 evicted by reading, 2 by writing, 3 just\n                    rewritten (default: as the previous copy left it)",
    );
    let launches: usize = common::arg("launches", 20000);
    let reps: usize = common::arg("reps", 5);
    let only: String = common::arg("only", String::new());
    let sizes: String = common::arg("sizes", "64,256".to_string());
    let sizes: Vec<usize> = sizes
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let cold: usize = common::arg("cold", 0);
    if acc_get_num_devices(accprof_abi::acc_device_t::NVIDIA) == 0 {
        println!("bench_gpu: no CUDA device here; nothing to measure");
        return;
    }
    acc_init(accprof_abi::acc_device_t::NVIDIA);
    let name = acc_get_property_string(0, accprof_abi::acc_device_t::NVIDIA, 0x10001);
    let name = if name.is_null() {
        "(name unknown)".into()
    } else {
        // SAFETY: not NULL: the runtime's NUL-terminated property string, valid for the process.
        unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy()
    };
    println!("device: {name}");

    if only == "calls" {
        driver_calls(launches, reps);
        return;
    }
    if only != "h2d" {
        launch_overhead(launches, reps);
    }
    if only != "launch" {
        h2d(&sizes, reps, cold);
    }
    print_cpu_time();
}

/// The process's CPU time so far, all threads: what the staging threads cost besides the
/// benchmark's own work (their warm window, stage_pool), to compare between settings.
fn print_cpu_time() {
    // SAFETY: `rusage` is a C struct of integers; all-zero bytes are a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the local `u`, a valid rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } == 0 {
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        println!(
            "cpu time: {:.2} s user, {:.2} s system",
            s(u.ru_utime),
            s(u.ru_stime)
        );
    }
}

/// Puts the caches in the state `cold` names before an upload of `source`: reads (1) or
/// writes (2) `buf`, larger than the last-level cache, evicting whatever the caches held; or (3)
/// rewrites every line of `source` with the bytes it holds, leaving it in the caches, modified;
/// nothing for 0.
fn set_cache_state(buf: &mut [u8], source: &mut [u8], cold: usize, round: usize) {
    match cold {
        3 => {
            for i in (0..source.len()).step_by(64) {
                // SAFETY: in bounds; volatile so that the store of an unchanged byte stays.
                unsafe {
                    std::ptr::write_volatile(&mut source[i], std::ptr::read_volatile(&source[i]))
                };
            }
        }
        1 => {
            let sum = buf
                .iter()
                .step_by(64)
                .fold(0u64, |s, &b| s.wrapping_add(b as u64));
            std::hint::black_box(sum);
        }
        2 => {
            buf.fill(round as u8);
            std::hint::black_box(buf);
        }
        _ => {}
    }
}

fn launch_overhead(launches: usize, reps: usize) {
    // ---- launch overhead: the shim (async parallel construct, no data clauses) ----
    let k = Kernel::new(c"bench_empty", 1).cuda(EMPTY_CU);
    let run_shim = |n: usize| {
        let t = Instant::now();
        for _ in 0..n {
            accshim::parallel(here!())
                .async_(1)
                .num_gangs(1)
                .vector_length(32)
                .run(k.clone());
        }
        acc_wait(1);
        t.elapsed().as_secs_f64() / n as f64
    };
    run_shim(1000); // compile + warm up
                    // ---- raw cudarc on the same context: the same PTX, cuLaunchKernel on a stream ----
    let ptx = cudarc::nvrtc::compile_ptx(EMPTY_CU)
        .expect("nvrtc")
        .to_src();
    let cptx = std::ffi::CString::new(ptx).unwrap();
    // SAFETY: `cptx` is NUL-terminated PTX that outlives the load; `s` is a local out-parameter;
    // the shim's acc_init above made its context current on this thread.
    let (f, stream) = unsafe {
        let m = cudarc::driver::result::module::load_data(cptx.as_ptr().cast()).unwrap();
        let f = cudarc::driver::result::module::get_function(m, c"bench_empty".to_owned()).unwrap();
        let mut s: sys::CUstream = std::ptr::null_mut();
        sys::cuStreamCreate(&mut s, 1);
        (f, s)
    };
    let run_raw = |n: usize| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: `f` takes no parameters (empty slice); `f` and `stream` are live handles.
            unsafe {
                cudarc::driver::result::launch_kernel(f, (1, 1, 1), (32, 1, 1), 0, stream, &mut [])
                    .unwrap()
            };
        }
        // SAFETY: `stream` is a live stream of the current context.
        unsafe { sys::cuStreamSynchronize(stream) };
        t.elapsed().as_secs_f64() / n as f64
    };
    run_raw(1000);
    let mut raw = Vec::new();
    let mut shim = Vec::new();
    for _ in 0..reps {
        raw.push(run_raw(launches));
        shim.push(run_shim(launches));
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let (r, s) = (med(&mut raw), med(&mut shim));
    println!(
        "launch: raw cudarc {:.2} us, shim async parallel {:.2} us, ratio {:.2} (median of {reps} x {launches})",
        r * 1e6,
        s * 1e6,
        s / r
    );
}

fn h2d(sizes: &[usize], reps: usize, cold: usize) {
    // ---- host-to-device from pageable memory ----
    // Filled, so that reading it reads memory rather than the shared zero page.
    let mut evict = if cold > 0 {
        vec![1u8; 512 << 20]
    } else {
        Vec::new()
    };
    let source = match cold {
        0 => "",
        1 => ", source evicted from the caches by reading",
        2 => ", source evicted from the caches by writing",
        _ => ", source just rewritten",
    };
    for &mib in sizes {
        let bytes = mib << 20;
        let mut host: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        let h = host.as_ptr() as *mut c_void;
        let d = acc_copyin(h, bytes); // present from here on
        let mut best_raw = 0.0f64;
        let mut best_shim = 0.0f64;
        for rep in 0..reps {
            set_cache_state(&mut evict, &mut host, cold, rep);
            let t = Instant::now();
            // SAFETY: `h` points at `bytes` readable bytes of `host`; `d` is its device copy of `bytes` bytes.
            unsafe { sys::cuMemcpyHtoD_v2(d as u64, h, bytes) };
            best_raw = best_raw.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
            set_cache_state(&mut evict, &mut host, cold, rep);
            let t = Instant::now();
            accshim::update(
                here!(),
                &[Clause::update_device(&host, c"host[0:n]")],
                accshim::ACC_ASYNC_SYNC,
                None,
                false,
            );
            best_shim = best_shim.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        // Pinning the caller's buffer for the copy instead of staging it: register, copy,
        // unregister, timed together (module docs).
        let (mut best_reg, mut reg_us, mut unreg_us) = (0.0f64, f64::MAX, f64::MAX);
        for _ in 0..reps {
            let t = Instant::now();
            // SAFETY: `h` is `host`'s buffer of `bytes` bytes, alive and not freed while registered.
            let r = unsafe { sys::cuMemHostRegister_v2(h, bytes, 0) };
            let t_reg = t.elapsed().as_secs_f64();
            if r != sys::CUresult::CUDA_SUCCESS {
                println!("h2d {mib} MiB: cuMemHostRegister failed: {r:?}");
                break;
            }
            // SAFETY: as for the first copy: `bytes` bytes at `h` and at `d`.
            unsafe { sys::cuMemcpyHtoD_v2(d as u64, h, bytes) };
            let t_copy = t.elapsed().as_secs_f64();
            // SAFETY: `h` was registered just above (the loop breaks when registration fails).
            unsafe { sys::cuMemHostUnregister(h) };
            let t_all = t.elapsed().as_secs_f64();
            best_reg = best_reg.max(bytes as f64 / t_all / 1e9);
            reg_us = reg_us.min(t_reg * 1e6);
            unreg_us = unreg_us.min((t_all - t_copy) * 1e6);
        }
        println!("h2d {mib} MiB register+copy+unregister: {best_reg:.1} GB/s (best of {reps}; register {reg_us:.0} us, unregister {unreg_us:.0} us at best)");
        // Check the bytes arrived.
        let mut back = vec![0u8; bytes];
        acc_memcpy_from_device(back.as_mut_ptr().cast(), d, bytes);
        let ok = back == host;
        // Device-to-host into pageable memory: raw, and the shim's `update self` (staged).
        let (mut best_raw_down, mut best_shim_down) = (0.0f64, 0.0f64);
        let mut down = vec![0u8; bytes];
        for _ in 0..reps {
            let t = Instant::now();
            // SAFETY: `down` has `bytes` writable bytes; `d` is a device copy of `bytes` bytes.
            unsafe { sys::cuMemcpyDtoH_v2(down.as_mut_ptr().cast(), d as u64, bytes) };
            best_raw_down = best_raw_down.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        down.fill(0);
        // `down` is mapped to a device copy of its own: one device block mapped to two host
        // arrays (host's and down's) is an error, as in GCC.
        let d_down = acc_malloc(bytes);
        acc_memcpy_device(d_down, d, bytes);
        acc_map_data(down.as_mut_ptr().cast(), d_down, bytes);
        for _ in 0..reps {
            let t = Instant::now();
            accshim::update(
                here!(),
                &[Clause::update_self(&down, c"down[0:n]")],
                accshim::ACC_ASYNC_SYNC,
                None,
                false,
            );
            best_shim_down = best_shim_down.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        acc_unmap_data(down.as_mut_ptr().cast());
        acc_free(d_down);
        let down_ok = down == host;
        println!(
            "d2h {mib} MiB pageable: raw cuMemcpyDtoH {best_raw_down:.1} GB/s, shim update self {best_shim_down:.1} GB/s (best of {reps}), data {}",
            if down_ok { "ok" } else { "CORRUPT" }
        );
        acc_delete(h, bytes);
        println!(
            "h2d {mib} MiB pageable: raw cuMemcpyHtoD {best_raw:.1} GB/s, shim update device {best_shim:.1} GB/s (best of {reps}{source}), data {}",
            if ok { "ok" } else { "CORRUPT" }
        );
        // The link's ceiling on this machine start: the same size from pinned memory.
        let mut pinned: *mut c_void = std::ptr::null_mut();
        // SAFETY: `pinned` is a local out-parameter.
        if unsafe { sys::cuMemAllocHost_v2(&mut pinned, bytes) } == sys::CUresult::CUDA_SUCCESS {
            let d = acc_malloc(bytes);
            let mut best = 0.0f64;
            for _ in 0..reps {
                let t = Instant::now();
                // SAFETY: `pinned` has `bytes` bytes (allocated above); `d` is a device block of `bytes` bytes.
                unsafe { sys::cuMemcpyHtoD_v2(d as u64, pinned, bytes) };
                best = best.max(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
            acc_free(d);
            // SAFETY: allocated by cuMemAllocHost above and freed once here.
            unsafe { sys::cuMemFreeHost(pinned) };
            println!("h2d {mib} MiB pinned: raw cuMemcpyHtoD {best:.1} GB/s (best of {reps}; the link's ceiling here)");
        }
    }
}

/// ns per call of a few driver calls, median of `reps` rounds of `n` calls (module docs).
fn driver_calls(n: usize, reps: usize) {
    let ptx = cudarc::nvrtc::compile_ptx(EMPTY_CU)
        .expect("nvrtc")
        .to_src();
    let cptx = std::ffi::CString::new(ptx).unwrap();
    // SAFETY: `cptx` is NUL-terminated PTX that outlives the load; `s` and `p` are local
    // out-parameters; the shim's context is current on this thread.
    let (f, stream, dev, pinned) = unsafe {
        let m = cudarc::driver::result::module::load_data(cptx.as_ptr().cast()).unwrap();
        let f = cudarc::driver::result::module::get_function(m, c"bench_empty".to_owned()).unwrap();
        let mut s: sys::CUstream = std::ptr::null_mut();
        sys::cuStreamCreate(&mut s, 1);
        let mut p: *mut c_void = std::ptr::null_mut();
        sys::cuMemAllocHost_v2(&mut p, 4096);
        (f, s, acc_malloc(4096) as u64, p)
    };
    let time = |body: &dyn Fn()| {
        let t = Instant::now();
        for _ in 0..n {
            body();
        }
        // SAFETY: `stream` is a live stream of the current context.
        unsafe { sys::cuStreamSynchronize(stream) };
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    };
    // SAFETY: `f` takes no parameters; `f` and `stream` are live handles.
    let launch = || unsafe {
        cudarc::driver::result::launch_kernel(f, (1, 1, 1), (32, 1, 1), 0, stream, &mut []).unwrap()
    };
    // SAFETY: `pinned` has 4096 bytes and `dev` is a 4096-byte device block; 8 bytes are copied.
    let d2h_sync = || unsafe {
        sys::cuMemcpyDtoHAsync_v2(pinned, dev, 8, stream);
        sys::cuStreamSynchronize(stream);
    };
    // SAFETY: as above: 8 bytes of the 4096-byte pinned block and device block.
    let h2d = || unsafe {
        sys::cuMemcpyHtoDAsync_v2(dev, pinned, 8, stream);
    };
    // SAFETY: `stream` is a live stream.
    let query = || unsafe {
        sys::cuStreamQuery(stream);
    };
    let cases: [(&str, &dyn Fn()); 4] = [
        ("launch", &launch),
        ("d2h 8 B + sync", &d2h_sync),
        ("h2d 8 B pinned", &h2d),
        ("stream query", &query),
    ];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for (_, body) in &cases {
        time(*body); // warm up
    }
    for _ in 0..reps {
        for (i, (_, body)) in cases.iter().enumerate() {
            results[i].push(time(*body));
        }
    }
    for ((name, _), mut v) in cases.iter().zip(results) {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "calls: {name}: {:.0} ns (median of {reps} x {n}; min {:.0})",
            v[v.len() / 2],
            v[0]
        );
    }
}
