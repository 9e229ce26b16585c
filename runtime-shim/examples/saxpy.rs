//! saxpy: y = a*x + y, as `#pragma acc parallel loop copyin(x[0:n]) copy(y[0:n])`, repeated.
//! Options: --n N (default 1048576), --reps R (default 10).

#![warn(clippy::undocumented_unsafe_blocks)]

#[path = "common/mod.rs"]
mod common;

use accshim::{here, Arg, Kernel, Val};

const SAXPY_CU: &str = r#"
extern "C" __global__ void saxpy(long long n, double a, const double *x, double *y) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
"#;

fn saxpy_host(r: std::ops::Range<usize>, v: &[Val]) -> f64 {
    let (a, x, y) = (
        v[1].f64(),
        v[2].ptr::<f64>() as *const f64,
        v[3].ptr::<f64>(),
    );
    for i in r {
        // SAFETY: x and y are device copies of n doubles; i < n.
        unsafe { *y.add(i) = a * *x.add(i) + *y.add(i) };
    }
    0.0
}

fn main() {
    common::usage(
        "saxpy: y = a*x + y as parallel loop copyin(x) copy(y), repeated.\n\nOptions:\n  --n N      elements (default 1048576)\n  --reps R   repetitions (default 10)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let reps: usize = common::arg("reps", 10);
    let a = 2.0f64;
    let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut y = vec![1.0f64; n];
    let t = common::Timer::start();
    for _ in 0..reps {
        let k = Kernel::new(c"saxpy", n)
            .args(&[
                Arg::I64(n as i64),
                Arg::F64(a),
                Arg::of(&x),
                Arg::of_mut(&mut y),
            ])
            .host(saxpy_host)
            .cuda(SAXPY_CU);
        accshim::parallel(here!())
            .copyin(&x, c"x[0:n]")
            .copy(&y, c"y[0:n]")
            .end_line(line!())
            .run(k);
    }
    let expect = |i: usize| 1.0 + reps as f64 * a * i as f64;
    let bad = (0..n)
        .filter(|&i| (y[i] - expect(i)).abs() > 1e-9 * expect(i).abs().max(1.0))
        .count();
    println!(
        "saxpy n={n} reps={reps}: {:.3} ms per rep, {} wrong",
        t.secs() * 1e3 / reps as f64,
        bad
    );
    if bad > 0 {
        std::process::exit(1);
    }
}
