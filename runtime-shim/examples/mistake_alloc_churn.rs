//! "11 Tips", tip 10: a scratch array is created and deleted on the device every iteration
//! (enter data create / exit data delete inside the loop), so the runtime allocates and frees
//! device memory each time. Fix: create it once outside the loop.
//!
//!   for (it...) {
//!     #pragma acc enter data create(scratch[0:n])   // <- alloc every iteration
//!     #pragma acc parallel loop present(scratch) ...
//!     #pragma acc exit data delete(scratch[0:n])    // <- free every iteration
//!   }
//!
//! Options: --n N (default 1048576), --iters K (default 50).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::{here, Clause, ACC_ASYNC_SYNC};

fn main() {
    common::usage(
        "mistake_alloc_churn: a scratch array created and deleted on the device every iteration\n(\"11 Tips\", tip 10).\n\nOptions:\n  --n N       elements (default 1048576)\n  --iters K   iterations (default 50)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let iters: usize = common::arg("iters", 50);
    let scratch = vec![0.0f64; n];
    let t = common::Timer::start();
    for _ in 0..iters {
        accshim::enter_data(
            here!(),
            &[Clause::create(&scratch, c"scratch[0:n]")],
            ACC_ASYNC_SYNC,
            None,
        );
        accshim::parallel(here!())
            .present(&scratch, c"scratch[0:n]")
            .end_line(line!() + 1)
            .run(affine!("fill_scratch", &scratch, 0.0, 3.0));
        accshim::exit_data(
            here!(),
            &[Clause::delete(&scratch, c"scratch[0:n]")],
            ACC_ASYNC_SYNC,
            None,
            false,
        );
    }
    println!(
        "mistake_alloc_churn n={n} iters={iters}: {:.3} ms",
        t.secs() * 1e3
    );
}
