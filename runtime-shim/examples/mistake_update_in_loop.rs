//! "11 Tips", tip 8: inside a data region, the whole array is updated to the host and back every
//! iteration, although the host only looks at one value (a convergence check on x[0]). Fix:
//! update only what the host reads (`update self(x[0:1])`), or nothing.
//!
//!   #pragma acc data copy(x[0:n])
//!   for (it...) {
//!     #pragma acc parallel loop present(x)  ...
//!     #pragma acc update self(x[0:n])      // <- whole array, every iteration
//!     check(x[0]);
//!     #pragma acc update device(x[0:n])    // <- and back
//!   }
//!
//! Options: --n N (default 1048576), --iters K (default 20).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::{here, Clause, ACC_ASYNC_SYNC};

fn main() {
    common::usage(
        "mistake_update_in_loop: the whole array updated to the host and back every iteration\n(\"11 Tips\", tip 8).\n\nOptions:\n  --n N       elements (default 1048576)\n  --iters K   iterations (default 20)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let iters: usize = common::arg("iters", 20);
    let x = vec![1.0f64; n];
    let t = common::Timer::start();
    let region = accshim::data_region(here!(), &[Clause::copy(&x, c"x[0:n]")]);
    let mut last = 0.0;
    for _ in 0..iters {
        accshim::parallel(here!())
            .present(&x, c"x[0:n]")
            .end_line(line!() + 1)
            .run(affine!("iterate", &x, 0.5, 1.0));
        accshim::update(
            here!(),
            &[Clause::update_self(&x, c"x[0:n]")],
            ACC_ASYNC_SYNC,
            None,
            false,
        );
        last = x[0];
        accshim::update(
            here!(),
            &[Clause::update_device(&x, c"x[0:n]")],
            ACC_ASYNC_SYNC,
            None,
            false,
        );
    }
    region.end(line!());
    println!(
        "mistake_update_in_loop n={n} iters={iters}: {:.3} ms, x[0]={last}",
        t.secs() * 1e3
    );
}
