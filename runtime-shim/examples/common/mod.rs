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
