//! Numbers for people: durations, byte counts, rates, thousands separators.

/// `1234567` -> `1,234,567` (NV_ACC_TIME writes microseconds this way).
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Nanoseconds as microseconds with separators, NV_ACC_TIME style.
pub fn us(ns: u64) -> String {
    thousands(ns / 1000)
}

/// A duration with a unit that fits: `850 ns`, `12.3 us`, `4.56 ms`, `1.234 s`.
pub fn duration(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// Bytes in binary units: `512 B`, `8 KiB`, `128 MiB`, `1.50 GiB`.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// A rate in GB/s (10^9 bytes per second), or `-` when unknown.
pub fn rate(gbps: Option<f64>) -> String {
    match gbps {
        Some(r) => format!("{r:.2} GB/s"),
        None => "-".into(),
    }
}

/// `part` as a percentage of `whole`.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_the_reports() {
        assert_eq!(thousands(97_692_259), "97,692,259");
        assert_eq!(thousands(217), "217");
        assert_eq!(us(22_323_291_000), "22,323,291");
        assert_eq!(bytes(8 << 20), "8 MiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(duration(1_500_000), "1.50 ms");
        assert_eq!(percent(1, 4), "25.0%");
    }
}
