//! Encoding events into an events chunk payload, and decoding them back.
//!
//! Each event is written relative to the one before it in the same chunk (the state is reset at
//! every chunk, so a chunk decodes on its own):
//!
//! ```text
//! kind        zigzag varint
//! start       zigzag varint: start_ns minus the previous event's start_ns
//! duration    varint: end_ns - start_ns
//! changed     varint bit mask over Field: which fields differ from the previous event
//! per changed field, in index order:
//!             varint 0 if the field is now absent, else zigzag(value - previous value) + 1
//! ```
//!
//! Consecutive launches or transfers from one construct share most fields, so a typical event is
//! 8 to 20 bytes.

use crate::model::{Event, Field, FIELD_COUNT};
use crate::varint::{unzigzag, zigzag, Cursor, Malformed};
use accprof_abi::acc_event_t;

/// Delta state for one chunk.
#[derive(Debug, Default)]
pub struct EventEncoder {
    prev: Event,
}

impl EventEncoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `ev` to `out`.
    pub fn encode(&mut self, ev: &Event, out: &mut Vec<u8>) {
        // The writer thread encodes every event the program's threads record, so this works
        // on the fields' indices and values directly, writes the varints straight into the
        // output's spare capacity, and carries only the changed fields into the next event's
        // base (an event is 400 bytes; a typical one changes a handful of fields).
        let prev = &self.prev;
        let (now_set, before_set) = (ev.present_mask(), prev.present_mask());
        let (now, before) = (ev.values(), prev.values());
        // A field set in one event only differs; one set in both, when its values do.
        let mut changed = now_set ^ before_set;
        let mut both = now_set & before_set;
        while both != 0 {
            let i = both.trailing_zeros() as usize;
            both &= both - 1;
            if now[i] != before[i] {
                changed |= 1 << i;
            }
        }
        out.reserve(MAX_ENCODED);
        let start = out.len();
        let buf = out.spare_capacity_mut();
        let mut at = put_at(buf, 0, zigzag(i64::from(ev.kind.0)));
        at = put_at(
            buf,
            at,
            zigzag(ev.start_ns.wrapping_sub(prev.start_ns) as i64),
        );
        at = put_at(buf, at, ev.duration_ns());
        at = put_at(buf, at, changed);
        let mut bits = changed;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let d = if now_set & (1 << i) == 0 {
                0
            } else {
                let base = if before_set & (1 << i) == 0 {
                    0
                } else {
                    before[i]
                };
                zigzag(now[i].wrapping_sub(base) as i64).wrapping_add(1)
            };
            at = put_at(buf, at, d);
        }
        // SAFETY: the first `at` bytes of the spare capacity were just written.
        unsafe { out.set_len(start + at) };
        self.prev.take_changed(ev, changed);
    }
}

/// The longest encoding of one event: a varint (at most 10 bytes) for the kind, start,
/// duration and mask, and one per field.
const MAX_ENCODED: usize = 10 * (4 + FIELD_COUNT);

/// Writes `v` as a varint at `at` of `buf` (which has room: see [`MAX_ENCODED`]); returns
/// where the next one goes.
#[inline(always)]
fn put_at(buf: &mut [std::mem::MaybeUninit<u8>], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at].write((v as u8) | 0x80);
        v >>= 7;
        at += 1;
    }
    buf[at].write(v as u8);
    at + 1
}

/// The decoding side of [`EventEncoder`].
#[derive(Debug, Default)]
pub struct EventDecoder {
    prev: Event,
}

impl EventDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the next event and returns a copy of it.
    pub fn decode(&mut self, cur: &mut Cursor<'_>) -> Result<Event, Malformed> {
        self.decode_next(cur).copied()
    }

    /// Decodes the next event over the previous one, in place, and returns it. A reader of
    /// millions of events copies each ~330-byte event once, into wherever its caller keeps it,
    /// instead of at every layer. After an error the state is unusable: the chunk is corrupt.
    pub fn decode_next(&mut self, cur: &mut Cursor<'_>) -> Result<&Event, Malformed> {
        let kind = i32::try_from(unzigzag(cur.u64()?)).map_err(|_| Malformed)?;
        let start = self.prev.start_ns.wrapping_add(unzigzag(cur.u64()?) as u64);
        let duration = cur.u64()?;
        let changed = cur.u64()?;
        if changed >> FIELD_COUNT != 0 {
            return Err(Malformed);
        }
        let ev = &mut self.prev;
        ev.kind = acc_event_t(kind);
        ev.start_ns = start;
        ev.end_ns = start.checked_add(duration).ok_or(Malformed)?;
        let mut bits = changed;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let f = Field::ALL[i];
            match cur.u64()? {
                0 => ev.clear(f),
                // Each field changes at most once per event, so its old value is still the
                // previous event's.
                v => {
                    let base = ev.get(f).unwrap_or(0);
                    ev.set(f, base.wrapping_add(unzigzag(v - 1) as u64));
                }
            }
        }
        Ok(&self.prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64) -> Event {
        let mut e = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 1_000_000 + i * 1500);
        e.end_ns = e.start_ns + 700;
        e.set(Field::Thread, 3);
        e.set(Field::Bytes, 8 * 4096);
        e.set(Field::HostPtr, 0x7f00_0000_0000 + i * 32768);
        e.set(Field::DevicePtr, 0x7000_0000_0000 + i * 32768);
        e.set(Field::VarName, 4);
        e.set_i64(Field::LineNo, 57);
        e.set_i64(Field::Async, -1);
        e
    }

    #[test]
    fn round_trip_with_absent_and_extreme_values() {
        let mut evs: Vec<Event> = (0..50).map(sample).collect();
        evs[10].clear(Field::Bytes);
        evs[11].set(Field::Bytes, u64::MAX);
        evs[12].set_i64(Field::LineNo, i64::MIN);
        evs[13].kind = acc_event_t(12345);
        evs[14].start_ns = 5; // time going backwards across threads is legal
        evs[14].end_ns = 5;
        // Absent for one event, then back with the value it had before: the encoder's base
        // must not be the stale value it kept.
        evs[20].clear(Field::VarName);
        evs[21].set(Field::VarName, 4);
        let mut enc = EventEncoder::new();
        let mut buf = Vec::new();
        for e in &evs {
            enc.encode(e, &mut buf);
        }
        let mut dec = EventDecoder::new();
        let mut cur = Cursor::new(&buf);
        for e in &evs {
            assert_eq!(&dec.decode(&mut cur).unwrap(), e);
        }
        assert!(cur.is_empty());
    }

    #[test]
    fn repeated_transfers_are_small() {
        let mut enc = EventEncoder::new();
        let mut buf = Vec::new();
        for i in 0..1000 {
            enc.encode(&sample(i), &mut buf);
        }
        let per_event = buf.len() as f64 / 1000.0;
        assert!(per_event < 16.0, "{per_event} bytes per event");
    }
}
