//! "11 Tips", tip 11 (leave data on the GPU across procedure boundaries): the time loop calls two
//! procedures that each carry their own copy clauses, and the caller has no data region, so the
//! array travels to the device and back at every call. Fix: a data region in the caller and
//! `present(x)` in the procedures.
//!
//!   void heat(double *x, int n)  { #pragma acc parallel loop copy(x[0:n]) ... }
//!   void relax(double *x, int n) { #pragma acc parallel loop copy(x[0:n]) ... }
//!   for (it...) { heat(x, n); relax(x, n); }     // <- no data region around the calls
//!
//! Options: --n N (default 1048576), --iters K (default 10).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::here;

fn heat(x: &[f64]) {
    accshim::parallel(here!())
        .copy(x, c"x[0:n]")
        .end_line(line!() + 1)
        .run(affine!("heat", x, 1.0, 0.25));
}

fn relax(x: &[f64]) {
    accshim::parallel(here!())
        .copy(x, c"x[0:n]")
        .end_line(line!() + 1)
        .run(affine!("relax", x, 0.5, 0.0));
}

fn main() {
    common::usage(
        "mistake_no_present_across_calls: procedures with their own copy clauses called from a loop\nwithout a data region (\"11 Tips\", tip 11).\n\nOptions:\n  --n N       elements (default 1048576)\n  --iters K   iterations (default 10)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let iters: usize = common::arg("iters", 10);
    let x = vec![1.0f64; n];
    let t = common::Timer::start();
    for _ in 0..iters {
        heat(&x);
        relax(&x);
    }
    println!(
        "mistake_no_present_across_calls n={n} iters={iters}: {:.3} ms, x[0]={}",
        t.secs() * 1e3,
        x[0]
    );
}
