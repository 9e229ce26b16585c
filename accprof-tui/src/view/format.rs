//! How numbers read on screen: durations, byte counts, event counts.

/// Formats a duration with a unit that keeps 3 to 4 significant digits: `1.25 ms`, `830 ns`.
pub fn fmt_duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{} µs", trim(f / 1e3))
    } else if ns < 1_000_000_000 {
        format!("{} ms", trim(f / 1e6))
    } else {
        format!("{} s", trim(f / 1e9))
    }
}

/// Three significant digits, without trailing zeros.
fn trim(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Human-readable byte counts: `8 MiB`, `512 B`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// 9625008 -> "9,625,008".
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(fmt_duration(830), "830 ns");
        assert_eq!(fmt_duration(1_250_000), "1.25 ms");
        assert_eq!(fmt_duration(54_000), "54 µs");
        assert_eq!(fmt_duration(2_000_000_000), "2 s");
    }

    #[test]
    fn bytes_read_naturally() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(8 << 20), "8 MiB");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(group_digits(9_625_008), "9,625,008");
        assert_eq!(group_digits(12), "12");
    }
}
