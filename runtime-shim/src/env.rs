//! The runtime's environment variables, read in one place: flags, counts and byte sizes (with
//! K/M/G suffixes), each value that cannot be used said once on stderr instead of being
//! silently replaced by the default.

use std::sync::Mutex;

/// Variables already reported, so that a value read at every initialisation (or by two code
/// paths) is reported once per process.
static REPORTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Says once per variable that its value is ignored, and why.
pub fn report_once(name: &str, value: &str, why: &str) {
    let mut reported = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if !reported.iter().any(|n| n == name) {
        reported.push(name.to_string());
        eprintln!("accshim: {name}={value} is {why}; ignored");
    }
}

fn value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A switch: set to anything but "0", "false", "no" or "off" (or empty) is on.
pub fn flag(name: &str) -> bool {
    value(name).is_some_and(|v| {
        !matches!(
            v.to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    })
}

/// A whole number (threads, buffers, microseconds); None when unset or not a number.
pub fn count(name: &str) -> Option<usize> {
    let v = value(name)?;
    v.parse()
        .map_err(|_| report_once(name, &v, "not a whole number"))
        .ok()
}

/// A signed whole number (a device number).
pub fn int(name: &str) -> Option<i32> {
    let v = value(name)?;
    v.parse()
        .map_err(|_| report_once(name, &v, "not a whole number"))
        .ok()
}

/// A byte size: a number of bytes, or one with a K, M, G or T suffix (powers of 1024; "KiB",
/// "MB" and lower case read the same). None when unset or unreadable.
pub fn size(name: &str) -> Option<usize> {
    let v = value(name)?;
    parse_size(&v).or_else(|| {
        report_once(
            name,
            &v,
            "not a size (bytes, or a number with K, M, G or T)",
        );
        None
    })
}

fn parse_size(v: &str) -> Option<usize> {
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(digits);
    let number: usize = number.parse().ok()?;
    let shift = match unit
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches("ib")
        .trim_end_matches('b')
    {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    number.checked_mul(1usize << shift)
}

/// `bytes` for a person: whole GiB, MiB or KiB where exact enough, else bytes.
pub fn human_bytes(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_and_without_units() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("4K"), Some(4096));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("2 GiB"), Some(2 << 30));
        assert_eq!(parse_size("3gb"), Some(3 << 30));
        assert_eq!(parse_size("1t"), Some(1 << 40));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_size("17179869184T"), None, "overflows");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_bytes(1 << 20), "1 MiB");
        assert_eq!(human_bytes(11 << 30), "11 GiB");
    }
}
