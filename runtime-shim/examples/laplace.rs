//! The seeds' Laplace 2D case study (Jacobi iteration), hand-lowered to the shim's construct API.
//!
//!   laplace --version naive   each iteration's kernels region copies A and Anew in and out
//!                             (what a compiler generates without a data region)
//!   laplace --version data    `#pragma acc data copy(A) create(Anew)` around the loop
//!
//! Options: --n N (grid is N x N, default 512), --iters K (iter_max, default 100),
//! --tol T (default 1e-6). The loop is the seed's:
//!
//!   while ( error > tol && iter < iter_max ) {
//!     error = 0.0;
//!   #pragma acc kernels
//!     { for j, i: Anew[j][i] = 0.25*(A[j][i+1]+A[j][i-1]+A[j-1][i]+A[j+1][i]);
//!                 error = max(error, abs(Anew[j][i]-A[j][i]));
//!       for j, i: A[j][i] = Anew[j][i]; }
//!     if (iter % 100 == 0) printf("%5d, %0.6f\n", iter, error);
//!     iter++;
//!   }

#[path = "common/mod.rs"]
mod common;

use accshim::{here, Arg, Clause, Kernel, RedOp, Val};
use std::ops::Range;

/// CUDA versions of the two loops: one thread per interior point, grid-stride.
const STENCIL_CU: &str = r#"
extern "C" __global__ void laplace_stencil(const double *A, double *Anew, long long n, long long m, double *err) {
    unsigned int w = (unsigned int)(m - 2);
    unsigned int interior = (unsigned int)((n - 2) * (m - 2));
    double local = 0.0;
    for (unsigned int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < interior; idx += gridDim.x * blockDim.x) {
        unsigned int j = idx / w + 1, i = idx % w + 1;
        size_t c = (size_t)j * m + i;
        double v = 0.25 * (A[c + 1] + A[c - 1] + A[c - m] + A[c + m]);
        Anew[c] = v;
        local = fmax(local, fabs(v - A[c]));
    }
    accshim_reduce_max(err, local);
}
"#;

const COPY_CU: &str = r#"
extern "C" __global__ void laplace_copy(double *A, const double *Anew, long long n, long long m) {
    unsigned int w = (unsigned int)(m - 2);
    unsigned int interior = (unsigned int)((n - 2) * (m - 2));
    for (unsigned int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < interior; idx += gridDim.x * blockDim.x) {
        unsigned int j = idx / w + 1, i = idx % w + 1;
        size_t c = (size_t)j * m + i;
        A[c] = Anew[c];
    }
}
"#;

/// Visits the interior points `range` (flattened row-major over the (n-2) x (m-2) interior) as
/// row segments, so the inner loop is a plain stride-1 loop.
fn for_rows(range: Range<usize>, m: usize, mut f: impl FnMut(usize, usize)) {
    let w = m - 2;
    let mut idx = range.start;
    while idx < range.end {
        let (j, i0) = (idx / w + 1, idx % w + 1);
        let len = (range.end - idx).min(w - (i0 - 1));
        f(j * m + i0, len);
        idx += len;
    }
}

fn stencil_host(r: Range<usize>, a: &[Val]) -> f64 {
    let (pa, pn, m) = (a[0].ptr::<f64>() as *const f64, a[1].ptr::<f64>(), a[3].usize());
    let mut err = 0.0f64;
    for_rows(r, m, |start, len| {
        // SAFETY: device copies of A and Anew hold n*m doubles; interior points have neighbours.
        unsafe {
            for c in start..start + len {
                let v = 0.25 * (*pa.add(c + 1) + *pa.add(c - 1) + *pa.add(c - m) + *pa.add(c + m));
                *pn.add(c) = v;
                err = err.max((v - *pa.add(c)).abs());
            }
        }
    });
    err
}

fn copy_host(r: Range<usize>, a: &[Val]) -> f64 {
    let (pa, pn, m) = (a[0].ptr::<f64>(), a[1].ptr::<f64>() as *const f64, a[3].usize());
    for_rows(r, m, |start, len| unsafe { std::ptr::copy_nonoverlapping(pn.add(start), pa.add(start), len) });
    0.0
}

fn kernels_for(a: &[f64], anew: &[f64], n: usize, m: usize, error: &mut f64) -> [Kernel; 2] {
    let args = [Arg::of(a), Arg::of(anew), Arg::I64(n as i64), Arg::I64(m as i64)];
    let interior = (n - 2) * (m - 2);
    [
        Kernel::new(c"laplace_stencil", interior)
            .args(&args)
            .host(stencil_host)
            .cuda(STENCIL_CU)
            .reduction(RedOp::Max, error, c"error"),
        Kernel::new(c"laplace_copy", interior).args(&args).host(copy_host).cuda(COPY_CU),
    ]
}

fn main() {
    let version: String = common::arg("version", "data".to_string());
    let n: usize = common::arg("n", 512);
    let iter_max: usize = common::arg("iters", 100);
    let tol: f64 = common::arg("tol", 1.0e-6);
    if n < 3 || !(version == "naive" || version == "data") {
        eprintln!("usage: laplace [--version naive|data] [--n N>=3] [--iters K] [--tol T]");
        std::process::exit(2);
    }
    let m = n;
    let mut a = vec![0.0f64; n * m];
    let mut anew = vec![0.0f64; n * m];
    for j in 0..n {
        a[j * m] = 1.0;
        anew[j * m] = 1.0;
    }
    println!("Jacobi relaxation Calculation: {n} x {m} mesh ({version} version)");
    // The seed initialises the device before timing (PGI's "acc init" region).
    accshim::ffi::api::acc_init(accprof_abi::acc_device_t::DEFAULT);

    let timer = common::Timer::start();
    let mut after_first = None;
    let mut error = 1.0f64;
    let mut iter = 0usize;
    if version == "naive" {
        while error > tol && iter < iter_max {
            error = 0.0;
            // #pragma acc kernels  (implicit copy(A), copy(Anew): every iteration moves both)
            let ks = kernels_for(&a, &anew, n, m, &mut error);
            accshim::kernels(here!())
                .clause(Clause::copy(&a, c"A[0:n*m]").implicit())
                .clause(Clause::copy(&anew, c"Anew[0:n*m]").implicit())
                .end_line(line!())
                .run_all(&ks);
            if iter.is_multiple_of(100) {
                println!("{iter:5}, {error:0.6}");
            }
            if iter == 0 {
                after_first = Some(timer.secs());
            }
            iter += 1;
        }
    } else {
        // #pragma acc data copy(A) create(Anew)
        let region = accshim::data_region(
            here!(),
            &[Clause::copy(&a, c"A[0:n*m]"), Clause::create(&anew, c"Anew[0:n*m]")],
        );
        while error > tol && iter < iter_max {
            error = 0.0;
            // #pragma acc kernels  (A and Anew are present: no transfers)
            let ks = kernels_for(&a, &anew, n, m, &mut error);
            accshim::kernels(here!())
                .clause(Clause::copy(&a, c"A[0:n*m]").implicit())
                .clause(Clause::copy(&anew, c"Anew[0:n*m]").implicit())
                .end_line(line!())
                .run_all(&ks);
            if iter.is_multiple_of(100) {
                println!("{iter:5}, {error:0.6}");
            }
            if iter == 0 {
                after_first = Some(timer.secs());
            }
            iter += 1;
        }
        region.end(line!());
    }
    let secs = timer.secs();
    println!(" total: {secs:.6} s");
    println!(" per iteration: {:.6} ms ({iter} iterations)", secs * 1e3 / iter.max(1) as f64);
    // Iteration 0 includes compiling the kernels (NVRTC) on a GPU; the rest is the steady state.
    if let (Some(t0), true) = (after_first, iter > 1) {
        println!(" per iteration after the first: {:.6} ms", (secs - t0) * 1e3 / (iter - 1) as f64);
    }
    let checksum: f64 = a.iter().sum();
    println!(" checksum: {checksum:.6}");
}
