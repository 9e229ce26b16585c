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
        let head = [
            zigzag(i64::from(ev.kind.0)),
            zigzag(ev.start_ns.wrapping_sub(prev.start_ns) as i64),
            ev.duration_ns(),
            changed,
        ];
        put_event(out, head, changed, |i| {
            if now_set & (1 << i) == 0 {
                0
            } else {
                let base = if before_set & (1 << i) == 0 {
                    0
                } else {
                    before[i]
                };
                zigzag(now[i].wrapping_sub(base) as i64).wrapping_add(1)
            }
        });
        self.prev.take_changed(ev, changed);
    }
}

/// Delta state for one chunk, fed field by field: the writer decodes each raw record
/// (crate::raw) or packed event straight into it, and each field is compared with the previous
/// event's value as it is set, so that no event is built and compared afterwards, and fields
/// the record repeats from the one before (crate::raw::Memo) are not read again. Writes exactly
/// what [`EventEncoder`] writes for the same events.
#[derive(Debug, Default)]
pub struct FieldEncoder {
    fields: Fields,
    memo: crate::raw::Memo,
}

/// The event being read and the previous event's delta base.
#[derive(Debug)]
struct Fields {
    /// The event being read. Until a field is set, its slot holds the previous event's value
    /// (or an older one: only the fields of `prev_present` are the previous event's).
    cur: Event,
    /// The previous event's fields and start (0 and 0 at the start of a chunk).
    prev_present: u64,
    prev_start: u64,
    /// The fields set so far that differ from the previous event's, and what each is written
    /// as (zigzag of the difference, plus one).
    changed: u64,
    deltas: [u64; FIELD_COUNT],
}

impl Default for Fields {
    fn default() -> Self {
        Self {
            cur: Event::default(),
            prev_present: 0,
            prev_start: 0,
            changed: 0,
            deltas: [0; FIELD_COUNT],
        }
    }
}

impl FieldEncoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The event read last, as it will be encoded.
    #[inline]
    pub fn event(&self) -> &Event {
        &self.fields.cur
    }

    /// Sets a field (a name found by the writer), replacing the value the event had.
    #[inline]
    pub fn set(&mut self, f: Field, v: u64) {
        let bit = 1u64 << f as usize;
        if self.memo.fields() & bit != 0 {
            // A slot the next record may keep as it is.
            self.memo.forget();
        }
        let f_ = &mut self.fields;
        if f_.cur.present_mask() & bit != 0 {
            // Set already: back to the previous event's value before setting it again.
            let (present, slots) = f_.cur.parts_mut();
            *present &= !bit;
            let now = slots[f as usize];
            if f_.changed & bit != 0 && f_.prev_present & bit != 0 {
                slots[f as usize] =
                    now.wrapping_sub(unzigzag(f_.deltas[f as usize].wrapping_sub(1)) as u64);
            }
            f_.changed &= !bit;
        }
        crate::raw::Sink::set(f_, f, v);
    }

    /// Replaces the event's times (converted to the trace's clock).
    #[inline]
    pub fn set_times(&mut self, start_ns: u64, end_ns: u64) {
        (self.fields.cur.start_ns, self.fields.cur.end_ns) = (start_ns, end_ns);
    }

    /// A new chunk: the next event is encoded against nothing.
    pub(crate) fn restart(&mut self) {
        self.fields.prev_present = 0;
        self.fields.prev_start = 0;
    }

    /// Reads the next event of a thread buffer's words (a raw record or a packed event, as
    /// crate::packed::Unpack does); returns the words it took, `None` at words that do not
    /// decode.
    #[inline]
    pub(crate) fn read(&mut self, words: &[u64]) -> Option<usize> {
        crate::packed::read_next(words, &mut self.fields, &mut self.memo)
    }

    /// Appends the event read last to `out`.
    #[inline]
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let f = &mut self.fields;
        let ev = &f.cur;
        let present = ev.present_mask();
        let changed = f.changed | (f.prev_present & !present);
        let head = [
            zigzag(i64::from(ev.kind.0)),
            zigzag(ev.start_ns.wrapping_sub(f.prev_start) as i64),
            ev.duration_ns(),
            changed,
        ];
        let deltas = &f.deltas;
        put_event(out, head, changed, |i| {
            if present & (1 << i) == 0 {
                0
            } else {
                deltas[i]
            }
        });
        f.prev_present = present;
        f.prev_start = ev.start_ns;
    }
}

impl crate::raw::Sink for Fields {
    #[inline(always)]
    fn begin(&mut self, kind: acc_event_t, start: u64, end: u64) {
        self.cur.reset(kind, start, end);
        self.changed = 0;
    }

    #[inline(always)]
    fn set(&mut self, f: Field, v: u64) {
        let (i, bit) = (f as usize, 1u64 << f as usize);
        let (present, slots) = self.cur.parts_mut();
        let old = std::mem::replace(&mut slots[i], v);
        *present |= bit;
        let base = if self.prev_present & bit == 0 {
            0
        } else if old == v {
            return;
        } else {
            old
        };
        self.changed |= bit;
        self.deltas[i] = zigzag(v.wrapping_sub(base) as i64).wrapping_add(1);
    }

    #[inline(always)]
    fn present(&self) -> u64 {
        self.cur.present_mask()
    }

    #[inline(always)]
    fn keep(&mut self, mask: u64) {
        let (present, slots) = self.cur.parts_mut();
        *present |= mask;
        // Kept fields the previous event lacked (the first of a chunk) are new all the same.
        let mut fresh = mask & !self.prev_present;
        while fresh != 0 {
            let i = fresh.trailing_zeros() as usize;
            fresh &= fresh - 1;
            self.changed |= 1 << i;
            self.deltas[i] = zigzag(slots[i] as i64).wrapping_add(1);
        }
    }
}

/// The longest encoding of one event: a varint (at most 10 bytes) for the kind, start,
/// duration and mask, and one per field.
const MAX_ENCODED: usize = 10 * (4 + FIELD_COUNT);

/// Writes `v` as a varint at `p`; returns where the next one goes.
///
/// # Safety
/// `p` has room for 10 bytes (the longest varint).
#[inline(always)]
unsafe fn put(mut p: *mut u8, mut v: u64) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe {
        // Most values of an event (kinds, masks, small deltas) take one or two bytes.
        if v < 0x80 {
            p.write(v as u8);
            return p.add(1);
        }
        if v < 0x4000 {
            (p as *mut u16).write_unaligned((v as u16 & 0x7f | 0x80) | ((v >> 7) as u16) << 8);
            return p.add(2);
        }
        while v >= 0x80 {
            p.write((v as u8) | 0x80);
            v >>= 7;
            p = p.add(1);
        }
        p.write(v as u8);
        p.add(1)
    }
}

/// Appends one event's encoding to `out`: its kind, start delta, duration and change mask,
/// then `delta(i)` for each field `i` of the mask, in index order. The writer thread writes
/// every byte of the trace here: one capacity check per event, not one per byte.
#[inline(always)]
fn put_event(out: &mut Vec<u8>, head: [u64; 4], changed: u64, mut delta: impl FnMut(usize) -> u64) {
    out.reserve(MAX_ENCODED);
    let len = out.len();
    // SAFETY: MAX_ENCODED bytes were reserved past `len`: four varints of at most 10 bytes
    // for the head and one per field of the mask (at most FIELD_COUNT); all written before
    // the length covers them.
    unsafe {
        let start = out.as_mut_ptr().add(len);
        let mut p = start;
        for v in head {
            p = put(p, v);
        }
        let mut bits = changed;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            p = put(p, delta(i));
        }
        out.set_len(len + p.offset_from(start) as usize);
    }
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
