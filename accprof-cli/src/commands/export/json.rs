//! Just enough JSON writing for a fast export: numbers and escaped strings straight into a
//! byte buffer, with no intermediate values (serde_json would build a `Value` per event).

/// Appends `v` in decimal.
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    put_u64(out, v.unsigned_abs());
}

/// Appends nanoseconds as microseconds with three decimals ("12.345"), the unit of `ts` and
/// `dur`. Exact: every viewer multiplies back by 1000 and rounds to the same nanosecond.
pub fn put_micros(out: &mut Vec<u8>, ns: u64) {
    put_u64(out, ns / 1000);
    let frac = ns % 1000;
    if frac != 0 {
        out.push(b'.');
        out.push(b'0' + (frac / 100) as u8);
        out.push(b'0' + (frac / 10 % 10) as u8);
        out.push(b'0' + (frac % 10) as u8);
    }
}

/// Appends `s` as a quoted JSON string.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    put_str_body(out, s);
    out.push(b'"');
}

/// Appends the escaped characters of `s`, without quotes (for names built from pieces).
pub fn put_str_body(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(format!("\\u{:04x}", b).as_bytes());
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Writes the members of a JSON object, placing the commas.
pub struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    pub fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Starts member `key` and returns the buffer to write its value into.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    pub fn str(&mut self, key: &str, v: &str) {
        put_str(self.key(key), v);
    }

    pub fn u64(&mut self, key: &str, v: u64) {
        put_u64(self.key(key), v);
    }

    pub fn i64(&mut self, key: &str, v: i64) {
        put_i64(self.key(key), v);
    }

    /// A finite number with two decimals (rates); non-finite values, which JSON cannot hold,
    /// are written as 0.
    pub fn f64(&mut self, key: &str, v: f64) {
        let v = if v.is_finite() { v } else { 0.0 };
        self.key(key)
            .extend_from_slice(format!("{v:.2}").as_bytes());
    }

    pub fn close(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn numbers() {
        assert_eq!(s(|o| put_u64(o, 0)), "0");
        assert_eq!(s(|o| put_u64(o, u64::MAX)), u64::MAX.to_string());
        assert_eq!(s(|o| put_i64(o, -42)), "-42");
        assert_eq!(s(|o| put_i64(o, i64::MIN)), i64::MIN.to_string());
        assert_eq!(s(|o| put_micros(o, 1_234_567)), "1234.567");
        assert_eq!(s(|o| put_micros(o, 5)), "0.005");
        assert_eq!(s(|o| put_micros(o, 3000)), "3");
    }

    #[test]
    fn strings_round_trip_through_a_json_parser() {
        let nasty = "a\"b\\c\nd\te\u{1}f é";
        let json = s(|o| put_str(o, nasty));
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), nasty);
    }

    #[test]
    fn object_places_commas() {
        let json = s(|o| {
            let mut obj = Object::open(o);
            obj.str("a", "x");
            obj.u64("b", 1);
            obj.i64("c", -1);
            obj.close();
        });
        assert_eq!(json, r#"{"a":"x","b":1,"c":-1}"#);
    }
}
