//! The cost of recording, measured the way the issue defines it: a harness that calls the
//! registered callback directly, against an empty callback in the same run.
//!
//! Run: `cargo bench -p libaccprof --bench hot_path` (add `-- --events N` to change the size).
//! Prints: ns per callback for an empty callback and for ours (launch and transfer pairs), in
//! wall-clock time and in the thread's CPU time (which load from other processes inflates
//! less);
//! events per second from 2 threads, with the count read back from the trace; bytes per event
//! on disk. Results go in docs/PERFORMANCE.md.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof::bench::register_with;
use accprof_abi::*;
use std::ffi::c_void;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

static REGISTERED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn fake_reg(_ev: acc_event_t, cb: acc_prof_callback, _r: acc_register_t) {
    if let Some(cb) = cb {
        REGISTERED.store(cb as usize, Ordering::Relaxed);
    }
}

#[inline(never)]
unsafe extern "C" fn empty_callback(
    p: *mut acc_prof_info,
    e: *mut acc_event_info,
    a: *mut acc_api_info,
) {
    black_box((p, e, a));
}

type Callback = unsafe extern "C" fn(*mut acc_prof_info, *mut acc_event_info, *mut acc_api_info);

/// What a runtime like the shim or NVHPC passes for one launch or transfer pair.
struct Infos {
    prof: acc_prof_info,
    info: acc_event_info,
    api: acc_api_info,
}

fn infos(kind: acc_event_t) -> Infos {
    let prof = acc_prof_info {
        event_type: kind,
        valid_bytes: valid_bytes::PROF_INFO,
        version: ACC_PROF_INFO_VERSION_2_6,
        device_type: acc_device_t::NVIDIA,
        device_number: 0,
        thread_id: -1,
        async_: -1,
        async_queue: -1,
        src_file: c"laplace.c".as_ptr(),
        func_name: c"main".as_ptr(),
        line_no: 62,
        end_line_no: 70,
        func_line_no: 40,
        func_end_line_no: 90,
    };
    let info = if kind.info_kind() == EventInfoKind::Launch {
        acc_event_info {
            launch_event: acc_launch_event_info {
                event_type: kind,
                valid_bytes: valid_bytes::LAUNCH_EVENT_INFO,
                parent_construct: acc_construct_t::PARALLEL,
                implicit: 0,
                tool_info: std::ptr::null_mut(),
                kernel_name: c"main_62_gpu".as_ptr(),
                num_gangs: 4096,
                num_workers: 1,
                vector_length: 128,
            },
        }
    } else {
        acc_event_info {
            data_event: acc_data_event_info {
                event_type: kind,
                valid_bytes: valid_bytes::DATA_EVENT_INFO,
                parent_construct: acc_construct_t::PARALLEL,
                implicit: 0,
                tool_info: std::ptr::null_mut(),
                var_name: c"A[0:n*n]".as_ptr(),
                bytes: 8 << 20,
                host_ptr: 0x7f00_0000_0000usize as *const c_void,
                device_ptr: 0x7000_0000_0000usize as *const c_void,
            },
        }
    };
    let api = acc_api_info {
        device_api: acc_device_api::CUDA,
        valid_bytes: valid_bytes::API_INFO,
        device_type: acc_device_t::NVIDIA,
        vendor: 0,
        device_handle: std::ptr::without_provenance(1),
        context_handle: 0x1234 as *const c_void,
        async_handle: 0x5678 as *const c_void,
    };
    Infos { prof, info, api }
}

/// CPU time of the calling thread, in seconds: unlike wall-clock time, not inflated when
/// other processes take the CPU (the development machine is shared).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Calls `cb` for `pairs` start/end pairs alternating launches and uploads; returns seconds.
fn drive(cb: Callback, pairs: usize) -> f64 {
    let mut evs = [
        infos(acc_event_t::ENQUEUE_LAUNCH_START),
        infos(acc_event_t::ENQUEUE_LAUNCH_END),
        infos(acc_event_t::ENQUEUE_UPLOAD_START),
        infos(acc_event_t::ENQUEUE_UPLOAD_END),
    ];
    let t = Instant::now();
    for i in 0..pairs {
        let base = (i & 1) * 2;
        for j in base..base + 2 {
            let e = &mut evs[j];
            // SAFETY: well-formed structures, as a runtime passes them.
            unsafe { cb(&mut e.prof, &mut e.info, &mut e.api) };
        }
    }
    t.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events: usize = args
        .iter()
        .position(|a| a == "--events")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::env::temp_dir().join(format!("accprof-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("bench.trace");
    std::env::set_var("ACCPROF_OUT", &trace);
    std::env::set_var("ACCPROF_QUIET", "1");
    // The events' CUDA handles are made up: with a CUDA driver present, timing device work
    // with CUDA events (the default when CUPTI is not recording) would call the driver on them
    // at every launch and copy. Measured here is recording.
    for (k, v) in [("ACCPROF_CUDA_EVENTS", "off"), ("ACCPROF_CUPTI", "off")] {
        if std::env::var_os(k).is_none() {
            std::env::set_var(k, v);
        }
    }
    register_with(Some(fake_reg), "benchmark");
    // SAFETY: the registered pointer is accprof's on_event.
    let ours: Callback =
        unsafe { std::mem::transmute::<usize, Callback>(REGISTERED.load(Ordering::Relaxed)) };

    // `--instructions-only P`: P pairs through our callback and nothing else, for
    // `valgrind --tool=callgrind`, whose instruction counts do not depend on machine load.
    if let Some(p) = args
        .iter()
        .position(|a| a == "--instructions-only")
        .and_then(|i| args.get(i + 1)?.parse().ok())
    {
        drive(ours, p);
        accprof::bench::finish();
        return;
    }

    // Single thread: per-callback cost, median of 5 rounds, warmed up first.
    let pairs = 1_000_000;
    drive(ours, 100_000);
    drive(empty_callback, 100_000);
    let (mut base, mut tool, mut base_cpu, mut tool_cpu) = (vec![], vec![], vec![], vec![]);
    for _ in 0..5 {
        for (cb, wall, cpu) in [
            (empty_callback as Callback, &mut base, &mut base_cpu),
            (ours, &mut tool, &mut tool_cpu),
        ] {
            let c0 = thread_cpu();
            wall.push(drive(cb, pairs));
            cpu.push(thread_cpu() - c0);
        }
    }
    let (base, tool) = (median(base), median(tool));
    let (base_cpu, tool_cpu) = (median(base_cpu), median(tool_cpu));
    let calls = (pairs * 2) as f64;
    println!(
        "single thread, {} callbacks per round, median of 5:",
        pairs * 2
    );
    println!(
        "  empty callback      {:7.1} ns per callback",
        base / calls * 1e9
    );
    println!(
        "  accprof callback    {:7.1} ns per callback",
        tool / calls * 1e9
    );
    println!(
        "  added by accprof    {:7.1} ns per callback ({:.1} ns per recorded event = start+end)",
        (tool - base) / calls * 1e9,
        (tool - base) / (calls / 2.0) * 1e9
    );
    println!(
        "  thread CPU time: empty {:.1}, accprof {:.1}, added {:.1} ns per callback",
        base_cpu / calls * 1e9,
        tool_cpu / calls * 1e9,
        (tool_cpu - base_cpu) / calls * 1e9
    );

    // Two threads at full speed: throughput, and nothing may be lost.
    let per_thread_pairs = events / 4; // each pair is 2 callbacks, 1 recorded event... counted as 2 events
    let t = Instant::now();
    let handles: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || drive(ours, per_thread_pairs)))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    let callbacks = (per_thread_pairs * 2 * 2) as f64;
    println!(
        "two threads: {} callbacks ({} recorded events) in {:.3} s = {:.1} M callbacks/s",
        callbacks,
        callbacks / 2.0,
        secs,
        callbacks / secs / 1e6
    );

    accprof::bench::finish();
    let mut reader = accprof_trace::TraceReader::open(&trace).unwrap();
    let mut n = 0u64;
    while reader.next_event().unwrap().is_some() {
        n += 1;
    }
    let size = std::fs::metadata(&trace).unwrap().len();
    let expected = (5 * pairs + 100_000) as u64 + (per_thread_pairs * 2) as u64;
    println!(
        "read back: {n} events (expected {expected}), dropped {}",
        reader.dropped_total()
    );
    println!(
        "on disk: {size} bytes = {:.1} bytes per recorded event",
        size as f64 / n as f64
    );
    std::fs::remove_dir_all(&dir).ok();
    if n != expected || reader.dropped_total() != 0 {
        eprintln!("LOST EVENTS");
        std::process::exit(1);
    }
}
