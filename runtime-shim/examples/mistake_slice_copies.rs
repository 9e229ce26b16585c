//! "11 Tips", tip 8 (be aware of data movement): the interior of a 2D array is copied back one
//! row slice at a time, so one large transfer becomes many small ones, each paying the
//! per-transfer latency. Fix: one `update self(A[0:n*m])` (or a contiguous block of rows).
//!
//!   #pragma acc data copyin(A[0:n*m])
//!   { #pragma acc parallel loop ...   (compute A)
//!     for (j = 1; j < n-1; j++)
//!       #pragma acc update self(A[j*m+1:m-2])   // <- n-2 transfers of m-2 doubles
//!   }
//!
//! Options: --n N (rows, default 1024), --m M (columns, default 1024).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::{here, Clause};

fn main() {
    common::usage(
        "mistake_slice_copies: the interior of a 2D array copied back one row slice at a time\n(\"11 Tips\", tip 8).\n\nOptions:\n  --n N   rows (default 1024)\n  --m M   columns (default 1024)",
    );
    let n: usize = common::arg("n", 1024);
    let m: usize = common::arg("m", 1024);
    let a = vec![1.0f64; n * m];
    let t = common::Timer::start();
    let region = accshim::data_region(here!(), &[Clause::copyin(&a, c"A[0:n*m]")]);
    accshim::parallel(here!())
        .present(&a, c"A[0:n*m]")
        .end_line(line!() + 1)
        .run(affine!("scale_grid", &a, 2.0, 0.0));
    for j in 1..n.saturating_sub(1) {
        let row = &a[j * m + 1..j * m + m - 1];
        accshim::update(
            here!(),
            &[Clause::update_self(row, c"A[j*m+1:m-2]")],
            accshim::ACC_ASYNC_SYNC,
            None,
            false,
        );
    }
    region.end(line!());
    println!(
        "mistake_slice_copies {n}x{m}: {} row transfers, {:.3} ms, A[m+1]={}",
        n.saturating_sub(2),
        t.secs() * 1e3,
        a[m + 1]
    );
}
