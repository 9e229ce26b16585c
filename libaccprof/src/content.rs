//! Proof by content (ACCPROF_CONTENT=on): a 64-bit hash of the host bytes each transfer moved,
//! so that readers can tell an upload that carried bytes the device already held, or a download
//! that brought back bytes the device never changed, from one that was needed.
//!
//! The hash reads every byte the transfer moved, on the thread that made it: an upload's at its
//! start (what the runtime is about to copy), a synchronous download's at its end (what it
//! delivered). That costs about as much as the copy itself (docs/performance/content-hash.md),
//! so it is off unless asked for. Asynchronous downloads are not hashed: at their end event the
//! bytes may not have arrived.
//!
//! The runtime's pointer and size are trusted only as far as the runtime itself would use them:
//! a null or non-canonical pointer, an unknown size (SIZE_MAX) or a range that wraps is not read.

use accprof_abi::acc_event_t;
use accprof_trace::{Event, EventFlags, Field};

/// Turns hashing on or off (recording start, from ACCPROF_CONTENT). A bit of the word every
/// callback reads first, so that off costs no other cache line.
pub fn set(on: bool) {
    crate::hot::set(crate::hot::CONTENT, on);
}

/// Whether transfers are hashed.
#[inline(always)]
pub fn on() -> bool {
    crate::hot::load() & crate::hot::CONTENT != 0
}

/// The hash of a transfer's bytes, from its raw record as a callback buffers it
/// (accprof_trace::raw), when the record is one to hash now: an upload at its start
/// (`at_end` false), a synchronous download at its end. Reads the record's fields as the
/// writer will, so that the same checks apply to the pointer and size.
#[cold]
pub fn hash_record(words: &[u64], at_end: bool) -> Option<u64> {
    let kind = accprof_trace::raw::kind_of(*words.first()?);
    let wanted = match kind {
        acc_event_t::ENQUEUE_UPLOAD_START => !at_end,
        acc_event_t::ENQUEUE_DOWNLOAD_START => at_end,
        _ => false,
    };
    if !wanted {
        return None;
    }
    let mut e = Event::default();
    accprof_trace::raw::decode(words, &mut e)?;
    hash_transfer(&mut e, at_end);
    e.get(Field::ContentHash)
}

/// The async value of a synchronous operation (OpenACC's `acc_async_sync`).
const ACC_ASYNC_SYNC: i64 = -2;
/// The largest user-space address on x86-64 and AArch64 (48-bit): a pointer past it is no
/// host array.
const USER_SPACE_END: u64 = 1 << 47;

/// Sets `content_hash` on a transfer event that is ready to be hashed: an upload at its start
/// (`at_end` false), a synchronous download at its end.
#[inline]
pub fn hash_transfer(e: &mut Event, at_end: bool) {
    let wanted = match e.kind {
        acc_event_t::ENQUEUE_UPLOAD_START => !at_end,
        acc_event_t::ENQUEUE_DOWNLOAD_START => {
            at_end && e.get_i64(Field::Async).is_none_or(|a| a == ACC_ASYNC_SYNC)
        }
        _ => false,
    };
    if !wanted || e.flags().contains(EventFlags::BYTES_UNKNOWN) {
        return;
    }
    let (Some(ptr), Some(len)) = (e.get(Field::HostPtr), e.bytes()) else {
        return;
    };
    if ptr == 0 || len == 0 || ptr.checked_add(len).is_none_or(|end| end > USER_SPACE_END) {
        return;
    }
    // SAFETY: the runtime reads (upload) or wrote (download) exactly these bytes of the
    // program's memory for this transfer; the range is a user-space range that does not wrap.
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len as usize) };
    e.set(Field::ContentHash, hash(bytes));
}

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

#[inline(always)]
fn round(acc: u64, w: u64) -> u64 {
    acc.wrapping_add(w.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

#[inline(always)]
fn word(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// A 64-bit hash of `data` in the style of xxHash64: eight independent lanes over 64-byte
/// stripes (so that the multiplies overlap), mixed with the length.
pub fn hash(data: &[u8]) -> u64 {
    let mut lanes = [0u64; 8];
    for (i, l) in lanes.iter_mut().enumerate() {
        *l = P1.wrapping_mul(i as u64 + 1) ^ P5;
    }
    let mut stripes = data.chunks_exact(64);
    for s in &mut stripes {
        for (i, l) in lanes.iter_mut().enumerate() {
            *l = round(*l, word(&s[8 * i..]));
        }
    }
    let mut h = 0u64;
    for (i, l) in lanes.iter().enumerate() {
        h = h.wrapping_add(l.rotate_left(1 + 7 * i as u32));
    }
    for l in lanes {
        h = (h ^ round(0, l)).wrapping_mul(P1).wrapping_add(P4);
    }
    h = h.wrapping_add(data.len() as u64);
    let mut rest = stripes.remainder();
    while rest.len() >= 8 {
        h = (h ^ round(0, word(rest)))
            .rotate_left(27)
            .wrapping_mul(P1)
            .wrapping_add(P4);
        rest = &rest[8..];
    }
    for &b in rest {
        h = (h ^ u64::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_hash_equal_and_a_changed_byte_anywhere_does_not() {
        let a: Vec<u8> = (0..100_003u32).map(|i| (i * 7) as u8).collect();
        let base = hash(&a);
        assert_eq!(hash(&a.clone()), base);
        for at in [0, 31, 32, 50_000, 100_000, 100_002] {
            let mut b = a.clone();
            b[at] ^= 1;
            assert_ne!(hash(&b), base, "a change at byte {at}");
        }
        assert_ne!(hash(&a[..100_002]), base, "the length counts");
        assert_ne!(hash(&[0u8; 64]), hash(&[0u8; 72]), "zeros of two lengths");
    }

    #[test]
    fn transfers_the_runtime_cannot_have_made_are_not_read() {
        let data = vec![1u8; 4096];
        let mut e = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 1);
        e.set(Field::HostPtr, data.as_ptr() as u64);
        e.set(Field::Bytes, 4096);
        hash_transfer(&mut e, false);
        assert_eq!(e.get(Field::ContentHash), Some(hash(&data)));
        for (ptr, bytes) in [
            (0, 8),
            (u64::MAX, 8),
            (data.as_ptr() as u64, u64::MAX),
            (1 << 47, 8),
        ] {
            let mut bad = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 1);
            bad.set(Field::HostPtr, ptr);
            bad.set(Field::Bytes, bytes);
            hash_transfer(&mut bad, false);
            assert_eq!(bad.get(Field::ContentHash), None, "{ptr:#x} + {bytes}");
        }
        // An asynchronous download is not hashed at its end: its bytes may not be there yet.
        let mut d = Event::new(acc_event_t::ENQUEUE_DOWNLOAD_START, 1);
        d.set(Field::HostPtr, data.as_ptr() as u64);
        d.set(Field::Bytes, 4096);
        d.set_i64(Field::Async, 1);
        hash_transfer(&mut d, true);
        assert_eq!(d.get(Field::ContentHash), None);
        d.set_i64(Field::Async, ACC_ASYNC_SYNC);
        hash_transfer(&mut d, true);
        assert_eq!(d.get(Field::ContentHash), Some(hash(&data)));
    }
}
