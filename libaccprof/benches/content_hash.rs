//! What ACCPROF_CONTENT costs a transfer: the hash's throughput on arrays of a transfer's size,
//! against copying the same bytes (memcpy: what an emulated device's transfer does, and an upper
//! bound for a pageable copy to a GPU). Prints a table; `cargo bench -p libaccprof --bench
//! content_hash`.

use std::hint::black_box;
use std::time::Instant;

fn best_of<F: FnMut()>(runs: usize, mut f: F) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    println!(
        "{:>10} {:>14} {:>14} {:>10}",
        "bytes", "hash GB/s", "memcpy GB/s", "hash/copy"
    );
    for shift in [12u32, 16, 20, 23, 26] {
        let n = 1usize << shift;
        let src: Vec<u8> = (0..n).map(|i| (i * 31) as u8).collect();
        let mut dst = vec![0u8; n];
        let reps = ((1usize << 28) / n).max(1);
        let hash = best_of(7, || {
            for _ in 0..reps {
                black_box(accprof::bench::content_hash(black_box(&src)));
            }
        });
        let copy = best_of(7, || {
            for _ in 0..reps {
                dst.copy_from_slice(black_box(&src));
                black_box(&dst);
            }
        });
        let gb = (n * reps) as f64 / 1e9;
        println!(
            "{:>10} {:>14.2} {:>14.2} {:>10.2}",
            n,
            gb / hash,
            gb / copy,
            hash / copy
        );
    }
}
