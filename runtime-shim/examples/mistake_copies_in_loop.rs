//! "11 Tips", tip 10 (use data regions): the compute construct inside the time loop carries the
//! data clauses, so every iteration copies the arrays in and out although they never leave the
//! device in between. Fix: `#pragma acc data copy(x)` around the loop, `present(x)` inside.
//!
//!   for (it = 0; it < iters; it++) {
//!     #pragma acc parallel loop copy(x[0:n])      // <- copies n doubles both ways, every time
//!     for (i...) x[i] = 0.5 * x[i] + 1;
//!   }
//!
//! Options: --n N (default 1048576), --iters K (default 20).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::here;

fn main() {
    common::usage(
        "mistake_copies_in_loop: the compute construct in the time loop copies its arrays in and out\nevery iteration (\"11 Tips\", tip 10).\n\nOptions:\n  --n N       elements (default 1048576)\n  --iters K   iterations (default 20)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let iters: usize = common::arg("iters", 20);
    let x = vec![1.0f64; n];
    let t = common::Timer::start();
    for _ in 0..iters {
        accshim::parallel(here!())
            .copy(&x, c"x[0:n]")
            .end_line(line!() + 1)
            .run(affine!("relax", &x, 0.5, 1.0));
    }
    println!(
        "mistake_copies_in_loop n={n} iters={iters}: {:.3} ms, x[0]={}",
        t.secs() * 1e3,
        x[0]
    );
}
