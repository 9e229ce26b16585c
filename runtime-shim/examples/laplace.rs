//! The seeds' Laplace 2D case study (Jacobi iteration), hand-lowered to the shim's construct API.
//!
//!   laplace --version naive   each iteration's kernels region copies A and Anew in and out
//!                             (what a compiler generates without a data region)
//!   laplace --version data    `#pragma acc data copy(A) create(Anew)` around the loop
//!
//! Options: --n N (grid is N x N, default 512), --iters K (iter_max, default 100),
//! --tol T (default 1e-6), --kernels quads|pairs|flat|flat4|rows (how the loops map to the GPU; default
//! quads for an even N, flat otherwise), --gangs G and --vector V (num_gangs / vector_length of
//! the kernels construct; default: the runtime's gangs, vector 256). The loop is the seed's:
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

#![warn(clippy::undocumented_unsafe_blocks)]

#[path = "common/mod.rs"]
mod common;

use accshim::{here, Arg, Clause, Kernel, RedOp, Val};
use std::ops::Range;

/// CUDA versions of the two loops (`--kernels flat4`): the interior flattened
/// row-major, grid-stride, each thread taking four points `stride` apart per step and loading all
/// of them before it stores (`__restrict__` allows that): at one 8-byte load in flight per thread
/// the H200 stayed near 3.2 TB/s (docs/performance/shim.md). Consecutive lanes take consecutive
/// points, so every warp reads and writes contiguous memory; (j, i) is found by one division per
/// point, which this memory-bound loop hides.
const STENCIL_FLAT4_CU: &str = r#"
extern "C" __global__ void laplace_stencil(const double *__restrict__ A, double *__restrict__ Anew, long long n, long long m, double *err) {
    unsigned int w = (unsigned int)(m - 2);
    unsigned int interior = (unsigned int)((n - 2) * (m - 2));
    unsigned int stride = gridDim.x * blockDim.x;
    double local = 0.0;
    for (unsigned int base = blockIdx.x * blockDim.x + threadIdx.x; base < interior; base += 4 * stride) {
        size_t c[4];
        double v[4], centre[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned int idx = base + k * stride;
            if (idx < interior) {
                c[k] = (size_t)(idx / w + 1) * m + idx % w + 1;
                centre[k] = A[c[k]];
                v[k] = 0.25 * (A[c[k] + 1] + A[c[k] - 1] + A[c[k] - m] + A[c[k] + m]);
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (base + k * stride < interior) {
                Anew[c[k]] = v[k];
                local = fmax(local, fabs(v[k] - centre[k]));
            }
        }
    }
    accshim_reduce_max(err, local);
}
"#;

const COPY_FLAT4_CU: &str = r#"
extern "C" __global__ void laplace_copy(double *__restrict__ A, const double *__restrict__ Anew, long long n, long long m) {
    unsigned int w = (unsigned int)(m - 2);
    unsigned int interior = (unsigned int)((n - 2) * (m - 2));
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int base = blockIdx.x * blockDim.x + threadIdx.x; base < interior; base += 4 * stride) {
        size_t c[4];
        double v[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned int idx = base + k * stride;
            if (idx < interior) {
                c[k] = (size_t)(idx / w + 1) * m + idx % w + 1;
                v[k] = Anew[c[k]];
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (base + k * stride < interior) A[c[k]] = v[k];
        }
    }
}
"#;

/// The loops with 16-byte accesses (`--kernels pairs`; rows of even length only):
/// each thread takes two neighbouring interior points whose pair starts at an even column, so the pair is
/// 16-byte aligned in A and Anew; the first and last interior column of a row are single points.
/// Half the memory instructions of `flat` for the same bytes.
const STENCIL_PAIRS_CU: &str = r#"
extern "C" __global__ void laplace_stencil(const double *__restrict__ A, double *__restrict__ Anew, long long n, long long m, double *err) {
    unsigned int r = (unsigned int)(m - 3);            /* interior columns after column 1 */
    unsigned int units = 1 + r / 2 + r % 2;            /* column 1, the pairs, a last single */
    unsigned int total = (unsigned int)(n - 2) * units;
    double local = 0.0;
    for (unsigned int u = blockIdx.x * blockDim.x + threadIdx.x; u < total; u += gridDim.x * blockDim.x) {
        unsigned int j = u / units + 1, k = u % units;
        size_t row = (size_t)j * m;
        if (k == 0 || k > r / 2) {
            size_t c = row + (k == 0 ? 1 : m - 2);
            double v = 0.25 * (A[c + 1] + A[c - 1] + A[c - m] + A[c + m]);
            Anew[c] = v;
            local = fmax(local, fabs(v - A[c]));
        } else {
            size_t c = row + 2 * k;
            double2 ctr = *(const double2 *)(A + c);
            double2 up = *(const double2 *)(A + c - m);
            double2 dn = *(const double2 *)(A + c + m);
            double l = A[c - 1], rt = A[c + 2];
            double v0 = 0.25 * (ctr.y + l + up.x + dn.x);
            double v1 = 0.25 * (rt + ctr.x + up.y + dn.y);
            *(double2 *)(Anew + c) = make_double2(v0, v1);
            local = fmax(local, fmax(fabs(v0 - ctr.x), fabs(v1 - ctr.y)));
        }
    }
    accshim_reduce_max(err, local);
}
"#;

/// The stencil over two rows at once (`--kernels quads`, the default for an even N, whose
/// interior has an even number of rows): a thread takes the same pair of columns in rows j and
/// j+1, so it loads four rows for two pairs instead of six, and takes its left and right
/// neighbours from the next lanes' registers (lane t's left neighbour is lane t-1's second
/// point when both pairs lie in one row); the loop runs by whole warps so that every lane takes
/// part in the shuffles. The copy is `pairs`'. On the H200 (CUPTI, 2026-11-22) the stencil took
/// 75 us against 80 for `pairs` and 86 for `pairs` with shuffles alone (more instructions, the
/// same rows loaded).
const STENCIL_QUADS_CU: &str = r#"
extern "C" __global__ void laplace_stencil(const double *__restrict__ A, double *__restrict__ Anew, long long n, long long m, double *err) {
    unsigned int r = (unsigned int)(m - 3);
    unsigned int half = r / 2;
    unsigned int units = 1 + half + r % 2;
    unsigned int total = (unsigned int)(n - 2) / 2 * units;
    unsigned int lane = threadIdx.x & 31, live = __activemask();
    double local = 0.0;
    for (unsigned int base = blockIdx.x * blockDim.x + threadIdx.x - lane; base < total; base += gridDim.x * blockDim.x) {
        unsigned int u = base + lane, j = 2 * (u / units) + 1, k = u % units;
        bool ok = u < total, pair = ok && k != 0 && k <= half;
        size_t c = (size_t)j * m + (pair ? 2 * k : (k == 0 ? 1 : m - 2));
        double2 c0 = make_double2(0.0, 0.0), c1 = make_double2(0.0, 0.0);
        if (pair) {
            c0 = *(const double2 *)(A + c);
            c1 = *(const double2 *)(A + c + m);
        }
        double l0 = __shfl_up_sync(live, c0.y, 1), l1 = __shfl_up_sync(live, c1.y, 1);
        double r0 = __shfl_down_sync(live, c0.x, 1), r1 = __shfl_down_sync(live, c1.x, 1);
        if (pair) {
            if (!(lane > 0 && k >= 2)) { l0 = A[c - 1]; l1 = A[c + m - 1]; }
            if (!(lane < 31 && ((live >> (lane + 1)) & 1u) && k < half)) { r0 = A[c + 2]; r1 = A[c + m + 2]; }
            double2 up = *(const double2 *)(A + c - m);
            double2 dn = *(const double2 *)(A + c + 2 * m);
            double a0 = 0.25 * (c0.y + l0 + up.x + c1.x), a1 = 0.25 * (r0 + c0.x + up.y + c1.y);
            double b0 = 0.25 * (c1.y + l1 + c0.x + dn.x), b1 = 0.25 * (r1 + c1.x + c0.y + dn.y);
            *(double2 *)(Anew + c) = make_double2(a0, a1);
            *(double2 *)(Anew + c + m) = make_double2(b0, b1);
            local = fmax(local, fmax(fmax(fabs(a0 - c0.x), fabs(a1 - c0.y)), fmax(fabs(b0 - c1.x), fabs(b1 - c1.y))));
        } else if (ok) {
            for (size_t p = c; p <= c + m; p += m) {
                double v = 0.25 * (A[p + 1] + A[p - 1] + A[p - m] + A[p + m]);
                Anew[p] = v;
                local = fmax(local, fabs(v - A[p]));
            }
        }
    }
    accshim_reduce_max(err, local);
}
"#;

const COPY_PAIRS_CU: &str = r#"
extern "C" __global__ void laplace_copy(double *__restrict__ A, const double *__restrict__ Anew, long long n, long long m) {
    unsigned int r = (unsigned int)(m - 3);
    unsigned int units = 1 + r / 2 + r % 2;
    unsigned int total = (unsigned int)(n - 2) * units;
    for (unsigned int u = blockIdx.x * blockDim.x + threadIdx.x; u < total; u += gridDim.x * blockDim.x) {
        unsigned int j = u / units + 1, k = u % units;
        size_t row = (size_t)j * m;
        if (k == 0 || k > r / 2) {
            size_t c = row + (k == 0 ? 1 : m - 2);
            A[c] = Anew[c];
        } else {
            size_t c = row + 2 * k;
            *(double2 *)(A + c) = *(const double2 *)(Anew + c);
        }
    }
}
"#;

/// The loops as a compiler maps `loop gang` over rows and `loop vector` over the columns of a
/// row (`--kernels rows`): no division, but on the H200 slower than the flat mappings (each
/// resident gang streams its own row: far more DRAM pages open at once).
const STENCIL_ROWS_CU: &str = r#"
extern "C" __global__ void laplace_stencil(const double *__restrict__ A, double *__restrict__ Anew, long long n, long long m, double *err) {
    double local = 0.0;
    for (long long j = blockIdx.x + 1; j < n - 1; j += gridDim.x) {
        const double *__restrict__ a = A + j * m;
        double *__restrict__ o = Anew + j * m;
#pragma unroll 4
        for (long long i = threadIdx.x + 1; i < m - 1; i += blockDim.x) {
            double v = 0.25 * (a[i + 1] + a[i - 1] + a[i - m] + a[i + m]);
            o[i] = v;
            local = fmax(local, fabs(v - a[i]));
        }
    }
    accshim_reduce_max(err, local);
}
"#;

const COPY_ROWS_CU: &str = r#"
extern "C" __global__ void laplace_copy(double *__restrict__ A, const double *__restrict__ Anew, long long n, long long m) {
    for (long long j = blockIdx.x + 1; j < n - 1; j += gridDim.x) {
        double *__restrict__ a = A + j * m;
        const double *__restrict__ o = Anew + j * m;
#pragma unroll 4
        for (long long i = threadIdx.x + 1; i < m - 1; i += blockDim.x) a[i] = o[i];
    }
}
"#;

/// The first mapping (`--kernels flat`, the default for odd N): one thread per interior point
/// of the flattened interior, grid-stride, with a division per point. On the H200 (CUPTI, 2026-11-22) it ran
/// the stencil in 87 us and the copy in 81 us at 4096 x 4096, faster than flat4 (114 / 88) and
/// rows (123 / 97).
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
    let (pa, pn, m) = (
        a[0].ptr::<f64>() as *const f64,
        a[1].ptr::<f64>(),
        a[3].usize(),
    );
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
    let (pa, pn, m) = (
        a[0].ptr::<f64>(),
        a[1].ptr::<f64>() as *const f64,
        a[3].usize(),
    );
    // SAFETY: for_rows gives interior row segments of the n x m arrays `a[0]` and `a[1]` hold;
    // the two arrays are distinct allocations, so the ranges do not overlap.
    for_rows(r, m, |start, len| unsafe {
        std::ptr::copy_nonoverlapping(pn.add(start), pa.add(start), len)
    });
    0.0
}

/// How the two loops are mapped onto the GPU (`--kernels`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mapping {
    Pairs,
    Quads,
    Flat4,
    Flat,
    Rows,
}

fn kernels_for(
    a: &[f64],
    anew: &[f64],
    n: usize,
    m: usize,
    error: &mut f64,
    mapping: Mapping,
) -> [Kernel; 2] {
    let args = [
        Arg::of(a),
        Arg::of(anew),
        Arg::I64(n as i64),
        Arg::I64(m as i64),
    ];
    let interior = (n - 2) * (m - 2);
    let (stencil_cu, copy_cu) = match mapping {
        Mapping::Pairs => (STENCIL_PAIRS_CU, COPY_PAIRS_CU),
        Mapping::Quads => (STENCIL_QUADS_CU, COPY_PAIRS_CU),
        Mapping::Flat4 => (STENCIL_FLAT4_CU, COPY_FLAT4_CU),
        Mapping::Flat => (STENCIL_CU, COPY_CU),
        Mapping::Rows => (STENCIL_ROWS_CU, COPY_ROWS_CU),
    };
    [
        Kernel::new(c"laplace_stencil", interior)
            .args(&args)
            .host(stencil_host)
            .cuda(stencil_cu)
            .reduction(RedOp::Max, error, c"error"),
        Kernel::new(c"laplace_copy", interior)
            .args(&args)
            .host(copy_host)
            .cuda(copy_cu),
    ]
}

/// `vector_length(256)` on the kernels construct unless `--vector` says otherwise: on the H200
/// both mappings ran fastest with it (CUPTI, 2026-11-22: pairs 148 us per iteration against 156
/// with the runtime's default of 128; docs/performance/shim.md). `--vector 0` leaves it to the
/// runtime.
const DEFAULT_VECTOR: u32 = 256;

/// The kernels construct with the launch geometry asked for on the command line.
fn kernels_construct(loc: accshim::Loc, gangs: u32, vector: u32) -> accshim::Compute {
    let mut c = accshim::kernels(loc);
    if gangs > 0 {
        c = c.num_gangs(gangs);
    }
    if vector > 0 {
        c = c.vector_length(vector);
    }
    c
}

fn main() {
    common::usage(
        "laplace: the seeds' Laplace 2D case study (Jacobi iteration) on the shim.\n\nOptions:\n  --version V   naive (each iteration copies A and Anew in and out) or data (a data region\n                around the loop; default)\n  --n N         grid N x N (default 512)\n  --iters K     iter_max (default 100)\n  --tol T       convergence tolerance (default 1e-6)\n  --kernels M   quads, pairs, flat, flat4 or rows: how the loops map to the GPU (default quads\n                for an even N, flat otherwise)\n  --gangs G     num_gangs (default: the runtime's)\n  --vector V    vector_length (default 256)",
    );
    let version: String = common::arg("version", "data".to_string());
    let n: usize = common::arg("n", 512);
    let iter_max: usize = common::arg("iters", 100);
    let tol: f64 = common::arg("tol", 1.0e-6);
    let kernels: String = common::arg(
        "kernels",
        if n.is_multiple_of(2) { "quads" } else { "flat" }.to_string(),
    );
    let gangs: u32 = common::arg("gangs", 0);
    let vector: u32 = common::arg("vector", DEFAULT_VECTOR);
    let mapping = match kernels.as_str() {
        "pairs" if n.is_multiple_of(2) => Some(Mapping::Pairs),
        "quads" if n.is_multiple_of(2) => Some(Mapping::Quads),
        "flat4" => Some(Mapping::Flat4),
        "flat" => Some(Mapping::Flat),
        "rows" => Some(Mapping::Rows),
        _ => None,
    };
    let (true, true, Some(mapping)) = (n >= 3, version == "naive" || version == "data", mapping)
    else {
        eprintln!("usage: laplace [--version naive|data] [--n N>=3] [--iters K] [--tol T] [--kernels quads|pairs|flat|flat4|rows (quads, pairs: even N)] [--gangs G] [--vector V]");
        std::process::exit(2);
    };
    let m = n;
    // Written like the seed's memset, so that the pages are touched here and not first by the
    // copy back at the end of the timed loop (vec![0.0; n] would leave them unmapped).
    let zeroed = || {
        let mut v = Vec::with_capacity(n * m);
        v.resize(n * m, 0.0f64);
        std::hint::black_box(v)
    };
    let mut a = zeroed();
    let mut anew = zeroed();
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
            let ks = kernels_for(&a, &anew, n, m, &mut error, mapping);
            kernels_construct(here!(), gangs, vector)
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
            &[
                Clause::copy(&a, c"A[0:n*m]"),
                Clause::create(&anew, c"Anew[0:n*m]"),
            ],
        );
        while error > tol && iter < iter_max {
            error = 0.0;
            // #pragma acc kernels  (A and Anew are present: no transfers)
            let ks = kernels_for(&a, &anew, n, m, &mut error, mapping);
            kernels_construct(here!(), gangs, vector)
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
    println!(
        " per iteration: {:.6} ms ({iter} iterations)",
        secs * 1e3 / iter.max(1) as f64
    );
    // Iteration 0 includes compiling the kernels (NVRTC) on a GPU; the rest is the steady state.
    if let (Some(t0), true) = (after_first, iter > 1) {
        println!(
            " per iteration after the first: {:.6} ms",
            (secs - t0) * 1e3 / (iter - 1) as f64
        );
    }
    let checksum: f64 = a.iter().sum();
    println!(" checksum: {checksum:.6}");
}
