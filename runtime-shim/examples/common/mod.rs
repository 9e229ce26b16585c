//! Shared by the examples: argument parsing and timing. Not part of the runtime.
#![allow(dead_code)]

use std::time::Instant;

/// `--name value` from the command line, parsed, or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        if w[0] == format!("--{name}") {
            match w[1].parse() {
                Ok(v) => return v,
                Err(_) => {
                    eprintln!("bad value for --{name}: {}", w[1]);
                    std::process::exit(2);
                }
            }
        }
    }
    for a in &args {
        if let Some(v) = a.strip_prefix(&format!("--{name}=")) {
            if let Ok(v) = v.parse() {
                return v;
            }
        }
    }
    default
}

pub struct Timer(Instant);

impl Timer {
    pub fn start() -> Timer {
        Timer(Instant::now())
    }
    pub fn secs(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Builds an element-wise kernel `x[i] = a * x[i] + b` over `x` named `$name` (the CUDA entry
/// point and the kernel_name the events report), with host and CUDA implementations.
#[macro_export]
macro_rules! affine {
    ($name:literal, $x:expr, $a:expr, $b:expr) => {{
        const NAME: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(concat!($name, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("kernel name"),
        };
        const SRC: &str = concat!(
            "extern \"C\" __global__ void ", $name,
            "(double *x, long long n, double a, double b) {\n",
            "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n",
            "    x[i] = a * x[i] + b;\n}\n"
        );
        let x: &[f64] = $x;
        accshim::Kernel::new(NAME, x.len())
            .args(&[accshim::Arg::of(x), accshim::Arg::I64(x.len() as i64), accshim::Arg::F64($a), accshim::Arg::F64($b)])
            .host($crate::common::affine_host)
            .cuda(SRC)
    }};
}

/// Host implementation of [`affine!`].
pub fn affine_host(r: std::ops::Range<usize>, v: &[accshim::Val]) -> f64 {
    let (x, a, b) = (v[0].ptr::<f64>(), v[2].f64(), v[3].f64());
    for i in r {
        // SAFETY: x is a device copy of n doubles and i < n.
        unsafe { *x.add(i) = a * *x.add(i) + b };
    }
    0.0
}

/// Builds `out[i] = x[i] + y[i]` named `$name`.
#[macro_export]
macro_rules! add {
    ($name:literal, $out:expr, $x:expr, $y:expr) => {{
        const NAME: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(concat!($name, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("kernel name"),
        };
        const SRC: &str = concat!(
            "extern \"C\" __global__ void ", $name,
            "(double *out, const double *x, const double *y, long long n) {\n",
            "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n",
            "    out[i] = x[i] + y[i];\n}\n"
        );
        let (out, x, y): (&[f64], &[f64], &[f64]) = ($out, $x, $y);
        accshim::Kernel::new(NAME, out.len())
            .args(&[accshim::Arg::of(out), accshim::Arg::of(x), accshim::Arg::of(y), accshim::Arg::I64(out.len() as i64)])
            .host($crate::common::add_host)
            .cuda(SRC)
    }};
}

pub fn add_host(r: std::ops::Range<usize>, v: &[accshim::Val]) -> f64 {
    let (o, x, y) = (v[0].ptr::<f64>(), v[1].ptr::<f64>() as *const f64, v[2].ptr::<f64>() as *const f64);
    for i in r {
        // SAFETY: device copies of n doubles, i < n.
        unsafe { *o.add(i) = *x.add(i) + *y.add(i) };
    }
    0.0
}
