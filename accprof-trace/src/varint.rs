//! LEB128 varints and zigzag, the building blocks of every chunk payload.

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
#[inline]
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Maps signed to unsigned so that small magnitudes of either sign encode short.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over a chunk payload. Every read fails cleanly at the end instead of panicking.
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Reading ran past the payload or found a malformed varint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = *self.buf.get(self.pos).ok_or(Malformed)?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(Malformed);
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(Malformed);
            }
        }
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        u32::try_from(self.u64()?).map_err(|_| Malformed)
    }

    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(len).ok_or(Malformed)?;
        let s = self.buf.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(s)
    }

    /// A length-prefixed byte string.
    pub fn blob(&mut self) -> Result<&'a [u8], Malformed> {
        let len = usize::try_from(self.u64()?).map_err(|_| Malformed)?;
        self.bytes(len)
    }
}

/// Appends a length-prefixed byte string.
pub fn put_blob(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_u64(&mut b, v);
            assert_eq!(Cursor::new(&b).u64(), Ok(v));
            assert!(b.len() <= 10);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -300] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn truncated_and_overlong_are_malformed() {
        assert_eq!(Cursor::new(&[0x80]).u64(), Err(Malformed));
        assert_eq!(Cursor::new(&[0xff; 11]).u64(), Err(Malformed));
        assert_eq!(Cursor::new(&[3, 1]).blob(), Err(Malformed));
    }
}
