//! A pipeline over several async queues: the array is processed in chunks; chunk c goes to queue
//! c % Q as update device -> kernel -> update self, all async, then one `wait`.
//!
//!   #pragma acc enter data create(x[0:n])
//!   for (c = 0; c < chunks; c++) {
//!     #pragma acc update device(x[c*len:len]) async(c%Q)
//!     #pragma acc parallel loop present(x) async(c%Q)
//!     for (i...) x[i] = sqrt(x[i]) * 2 + 1;
//!     #pragma acc update self(x[c*len:len]) async(c%Q)
//!   }
//!   #pragma acc wait
//!   #pragma acc exit data delete(x)
//!
//! Options: --n N (default 4194304), --chunks C (default 16), --queues Q (default 4).

#![warn(clippy::undocumented_unsafe_blocks)]

#[path = "common/mod.rs"]
mod common;

use accshim::{here, Arg, Clause, Kernel, Val};

const STEP_CU: &str = r#"
extern "C" __global__ void pipeline_step(double *x, long long off, long long len) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < len; i += (long long)gridDim.x * blockDim.x)
        x[off + i] = sqrt(x[off + i]) * 2.0 + 1.0;
}
"#;

fn step_host(r: std::ops::Range<usize>, v: &[Val]) -> f64 {
    let (x, off) = (v[0].ptr::<f64>(), v[1].usize());
    for i in r {
        // SAFETY: x is the device copy of n doubles and off + i < n.
        unsafe {
            let p = x.add(off + i);
            *p = (*p).sqrt() * 2.0 + 1.0;
        }
    }
    0.0
}

fn main() {
    common::usage(
        "async_pipeline: an array processed in chunks over several async queues (update device, kernel,\nupdate self per chunk), then one wait.\n\nOptions:\n  --n N        elements (default 4194304)\n  --chunks C   chunks (default 16)\n  --queues Q   async queues (default 4)",
    );
    let n: usize = common::arg("n", 1 << 22);
    let chunks: usize = common::arg("chunks", 16).max(1);
    let queues: i64 = common::arg("queues", 4).max(1);
    let mut x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let len = n.div_ceil(chunks);
    let t = common::Timer::start();
    accshim::enter_data(
        here!(),
        &[Clause::create(&x, c"x[0:n]")],
        accshim::ACC_ASYNC_SYNC,
        None,
    );
    for c in 0..chunks {
        let (off, this) = (c * len, len.min(n.saturating_sub(c * len)));
        if this == 0 {
            break;
        }
        let q = c as i64 % queues;
        let section = &x[off..off + this];
        accshim::update(
            here!(),
            &[Clause::update_device(section, c"x[c*len:len]")],
            q,
            None,
            false,
        );
        let k = Kernel::new(c"pipeline_step", this)
            .args(&[Arg::of(&x), Arg::I64(off as i64), Arg::I64(this as i64)])
            .host(step_host)
            .cuda(STEP_CU);
        accshim::parallel(here!())
            .present(&x, c"x[0:n]")
            .async_(q)
            .end_line(line!() + 1)
            .run(k);
        let section = &x[off..off + this];
        accshim::update(
            here!(),
            &[Clause::update_self(section, c"x[c*len:len]")],
            q,
            None,
            false,
        );
    }
    accshim::wait(here!(), None, accshim::ACC_ASYNC_SYNC);
    accshim::exit_data(
        here!(),
        &[Clause::delete(&x, c"x[0:n]")],
        accshim::ACC_ASYNC_SYNC,
        None,
        false,
    );
    let secs = t.secs();
    let bad = (0..n)
        .filter(|&i| (x[i] - (((i % 1000) as f64).sqrt() * 2.0 + 1.0)).abs() > 1e-9)
        .count();
    x.truncate(0);
    println!(
        "async_pipeline n={n} chunks={chunks} queues={queues}: {:.3} ms, {bad} wrong",
        secs * 1e3
    );
    if bad > 0 {
        std::process::exit(1);
    }
}
