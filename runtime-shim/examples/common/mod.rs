//! Shared by the examples: argument parsing and timing. Not part of the runtime.
#![allow(dead_code)]

use std::time::Instant;

/// Handles `--help` (prints `usage`, exits 0) and refuses options that `usage` does not name
/// (each option appears in it as `--name`), so a mistyped option is an error rather than a
/// silent run with the defaults. Call first in `main`.
pub fn usage(usage: &str) {
    // Like a C program, end quietly when the reader of stdout goes away (`laplace | head`)
    // instead of panicking on the failed print: Rust ignores SIGPIPE by default.
    // SAFETY: restoring a signal's default disposition, before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let known: Vec<&str> = usage
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(['.', ':', ';']))
        .collect();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", usage.trim_end());
        std::process::exit(0);
    }
    let mut i = 0;
    while i < args.len() {
        let name = args[i].split('=').next().unwrap_or_default();
        if !known.contains(&name) {
            eprintln!("unknown argument {} (--help lists the options)", args[i]);
            std::process::exit(2);
        }
        // `--name value` takes the next word too; `--name=value` is one word.
        i += if args[i].contains('=') { 1 } else { 2 };
    }
}

/// `--name value` or `--name=value` from the command line, parsed, or `default`. A value that
/// does not parse, or a missing value, ends the program with a message.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let flag = format!("--{name}");
    let args: Vec<String> = std::env::args().collect();
    let value = args.iter().enumerate().find_map(|(i, a)| {
        if *a == flag {
            Some(args.get(i + 1).cloned())
        } else {
            a.strip_prefix(&format!("{flag}="))
                .map(|v| Some(v.to_string()))
        }
    });
    match value {
        None => default,
        Some(None) => {
            eprintln!("{flag} needs a value");
            std::process::exit(2);
        }
        Some(Some(v)) => v.parse().unwrap_or_else(|_| {
            eprintln!("bad value for {flag}: {v}");
            std::process::exit(2);
        }),
    }
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
    let (o, x, y) = (
        v[0].ptr::<f64>(),
        v[1].ptr::<f64>() as *const f64,
        v[2].ptr::<f64>() as *const f64,
    );
    for i in r {
        // SAFETY: device copies of n doubles, i < n.
        unsafe { *o.add(i) = *x.add(i) + *y.add(i) };
    }
    0.0
}
