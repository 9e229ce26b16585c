//! Numbers for people: durations, byte counts, rates, thousands separators. Every view (report,
//! advice, diff, export, plot, TUI) formats through these, so one duration reads the same
//! everywhere: `12.3 us` in a table, `12.5 us` on an axis, never `µs` in one place and `us` in
//! another.
//!
//! Two widths of each: the table forms ([`duration`], [`bytes`]) keep a fixed number of decimals
//! so that columns line up; the compact forms ([`duration_compact`], [`bytes_compact`]) drop
//! trailing zeros, for axis ticks and slice names.

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

/// A duration with trailing zeros dropped, for axis ticks and labels: `0`, `750 ns`, `12.5 us`,
/// `3 ms`, `1.25 s`.
pub fn duration_compact(ns: u64) -> String {
    let trim = |v: f64, unit: &str| {
        let s = if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        };
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        format!("{s} {unit}")
    };
    match ns {
        0 => "0".into(),
        n if n < 1_000 => format!("{n} ns"),
        n if n < 1_000_000 => trim(n as f64 / 1e3, "us"),
        n if n < 1_000_000_000 => trim(n as f64 / 1e6, "ms"),
        n => trim(n as f64 / 1e9, "s"),
    }
}

/// Bytes as people write sizes in names: `12 B`, `64 KiB`, `128 MiB`, `1.5 GiB` (one decimal at
/// most, none when whole).
pub fn bytes_compact(b: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if b >= size {
            return if b.is_multiple_of(size) {
                format!("{} {unit}", b / size)
            } else {
                let v = b as f64 / size as f64;
                let s = format!("{v:.1}");
                format!("{} {unit}", s.trim_end_matches(".0"))
            };
        }
    }
    format!("{b} B")
}

/// Gigabytes (10^9) per second of `bytes` moved in `ns`: bytes per nanosecond. `None` when it
/// took no time or moved nothing.
pub fn gbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0 && bytes > 0).then(|| bytes as f64 / ns as f64)
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

    #[test]
    fn compact_forms_drop_trailing_zeros() {
        assert_eq!(duration_compact(0), "0");
        assert_eq!(duration_compact(750), "750 ns");
        assert_eq!(duration_compact(12_500), "12.5 us");
        assert_eq!(duration_compact(3_000_000), "3 ms");
        assert_eq!(duration_compact(1_250_000_000), "1.25 s");
        assert_eq!(bytes_compact(12), "12 B");
        assert_eq!(bytes_compact(2 << 20), "2 MiB");
        assert_eq!(bytes_compact(268_435_487), "256 MiB");
        assert_eq!(bytes_compact(3 << 29), "1.5 GiB");
        assert_eq!(gbps(1000, 100), Some(10.0));
        assert_eq!(gbps(1000, 0), None);
    }
}
