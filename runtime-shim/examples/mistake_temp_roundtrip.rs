//! "11 Tips", tip 9 (use the right data clause): a temporary computed by one kernel and consumed by
//! the next is copied out to the host after the first and copied in again for the second,
//! although the host never reads it. Fix: `create(tmp)` in a data region spanning both kernels.
//!
//!   #pragma acc parallel loop copyin(x[0:n]) copyout(tmp[0:n])   // <- tmp goes to the host...
//!   for (i...) tmp[i] = x[i] + x[i];
//!   #pragma acc parallel loop copyin(tmp[0:n], x[0:n]) copyout(y[0:n])   // <- ...and back
//!   for (i...) y[i] = tmp[i] + x[i];
//!
//! Options: --n N (default 1048576), --iters K (default 10).

#[path = "common/mod.rs"]
#[macro_use]
mod common;

use accshim::here;

fn main() {
    common::usage(
        "mistake_temp_roundtrip: a temporary copied out after one kernel and in again for the next\n(\"11 Tips\", tip 9).\n\nOptions:\n  --n N       elements (default 1048576)\n  --iters K   iterations (default 10)",
    );
    let n: usize = common::arg("n", 1 << 20);
    let iters: usize = common::arg("iters", 10);
    let x = vec![1.0f64; n];
    let tmp = vec![0.0f64; n];
    let y = vec![0.0f64; n];
    let t = common::Timer::start();
    for _ in 0..iters {
        accshim::parallel(here!())
            .copyin(&x, c"x[0:n]")
            .copyout(&tmp, c"tmp[0:n]")
            .end_line(line!() + 1)
            .run(add!("make_tmp", &tmp, &x, &x));
        accshim::parallel(here!())
            .copyin(&tmp, c"tmp[0:n]")
            .copyin(&x, c"x[0:n]")
            .copyout(&y, c"y[0:n]")
            .end_line(line!() + 1)
            .run(add!("use_tmp", &y, &tmp, &x));
    }
    println!(
        "mistake_temp_roundtrip n={n} iters={iters}: {:.3} ms, y[0]={}",
        t.secs() * 1e3,
        y[0]
    );
}
