//! The host side of a staged upload: copying the caller's pageable bytes into a pinned buffer
//! that a DMA reads next, so that they cost the host's memory as little as possible.
//!
//! A staged byte crosses host memory up to three times: the CPU reads the source, writes the
//! buffer, and the copy engine reads the buffer. How the buffer is written decides the last
//! two (figures in docs/performance/shim.md):
//! - ordinary stores first read every line for ownership, and leave it in the writing core's
//!   private cache, where the copy engine's read must fetch it: slowest;
//! - non-temporal stores skip the read but send every line to DRAM, which the copy engine then
//!   reads back;
//! - ordinary stores followed by CLDEMOTE move the lines to the shared last-level cache, where
//!   the copy engine finds them without going to DRAM: fastest.
//!   CLDEMOTE is a hint that older CPUs execute as a no-op, which would leave the slowest
//!   case, so it is used only where CPUID reports it.

/// How the staging threads write the pinned buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stores {
    /// Ordinary stores (for measuring only).
    Regular,
    NonTemporal,
    /// Ordinary stores, then CLDEMOTE of every line written.
    Demoted,
}

impl Stores {
    /// The fastest this CPU has: demoted where CLDEMOTE exists, else non-temporal.
    pub fn best() -> Stores {
        if cpu_has_cldemote() {
            Stores::Demoted
        } else {
            Stores::NonTemporal
        }
    }

    /// `regular`, `nt` or `demote` (`ACCSHIM_STAGE_STORES`); `demote` only where it exists.
    pub fn parse(s: &str) -> Option<Stores> {
        match s.trim() {
            "regular" => Some(Stores::Regular),
            "nt" => Some(Stores::NonTemporal),
            "demote" if cpu_has_cldemote() => Some(Stores::Demoted),
            _ => None,
        }
    }
}

/// The stores for the bytes at `offset` of an upload: non-temporal in its first `nt_head` bytes
/// where `stores` would demote (cuda.rs, STAGE_NT_HEAD says why), else `stores`.
pub fn stores_at(stores: Stores, nt_head: usize, offset: usize) -> Stores {
    if stores == Stores::Demoted && offset < nt_head {
        Stores::NonTemporal
    } else {
        stores
    }
}

/// CPUID leaf 7, sub-leaf 0, ECX bit 25.
fn cpu_has_cldemote() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 7 is checked against the maximum leaf.
        // (Safe functions since Rust 1.89; unsafe before, hence the allow.)
        #[allow(unused_unsafe)]
        unsafe {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ecx & (1 << 25) != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Copies `len` bytes from `src` to the 16-byte aligned `dst` with `stores`; when it returns,
/// the bytes are visible to a DMA started afterwards. The non-temporal copy prefetches the
/// source `prefetch` bytes ahead (0: not at all): the hardware's prefetchers stop at each 4 KiB
/// page, so a thread copying memory that is not in the caches otherwise waits on every page's
/// first lines (docs/performance/shim.md measures the difference).
///
/// # Safety
/// `src` and `dst` are valid for `len` bytes and do not overlap; `dst` is 16-byte aligned.
pub unsafe fn copy_to_staging(
    src: *const u8,
    dst: *mut u8,
    len: usize,
    stores: Stores,
    prefetch: usize,
) {
    #[cfg(target_arch = "x86_64")]
    match stores {
        Stores::NonTemporal => {
            use std::arch::x86_64::{
                __m128i, _mm_loadu_si128, _mm_prefetch, _mm_sfence, _mm_stream_si128, _MM_HINT_T1,
            };
            let body = len / 64 * 64;
            let mut i = 0;
            // SAFETY: in bounds (i + 64 <= body <= len); dst + i is 16-byte aligned; SSE2 is
            // part of x86-64. A prefetch never faults, and its address is computed with
            // wrapping arithmetic, so one past the source's end is harmless.
            unsafe {
                while i < body {
                    if prefetch > 0 {
                        _mm_prefetch::<_MM_HINT_T1>(src.wrapping_add(i + prefetch) as *const i8);
                    }
                    let s = src.add(i) as *const __m128i;
                    let d = dst.add(i) as *mut __m128i;
                    let (a, b, c, e) = (
                        _mm_loadu_si128(s),
                        _mm_loadu_si128(s.add(1)),
                        _mm_loadu_si128(s.add(2)),
                        _mm_loadu_si128(s.add(3)),
                    );
                    _mm_stream_si128(d, a);
                    _mm_stream_si128(d.add(1), b);
                    _mm_stream_si128(d.add(2), c);
                    _mm_stream_si128(d.add(3), e);
                    i += 64;
                }
                _mm_sfence();
                std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
            }
            return;
        }
        Stores::Demoted => {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
            let mut line = dst as usize & !63;
            while line < dst as usize + len {
                // SAFETY: a hint on a line holding bytes we own; it changes no memory.
                unsafe {
                    std::arch::asm!("cldemote [{0}]", in(reg) line, options(nostack, preserves_flags))
                };
                line += 64;
            }
            return;
        }
        Stores::Regular => {}
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_store_copies_the_bytes() {
        let src: Vec<u8> = (0..100_003u32).map(|i| (i * 31 + i / 255) as u8).collect();
        for stores in [Stores::Regular, Stores::NonTemporal, Stores::Demoted] {
            // 16-byte aligned destination, lengths with and without a partial last line.
            let mut dst = vec![0u128; 100_003 / 16 + 2];
            for len in [0, 1, 63, 64, 65, 4096, 100_003] {
                for prefetch in [0, 2048] {
                    dst.fill(0);
                    let d = dst.as_mut_ptr() as *mut u8;
                    // SAFETY: `src` has at least `len` bytes and `dst` (16-byte aligned, as
                    // non-temporal stores need) has room for `len` bytes; they do not overlap.
                    unsafe { copy_to_staging(src.as_ptr(), d, len, stores, prefetch) };
                    // SAFETY: `d` points at `len` bytes of `dst`, just written, not otherwise borrowed.
                    let got = unsafe { std::slice::from_raw_parts(d, len) };
                    assert!(
                        got == &src[..len],
                        "{stores:?}, {len} bytes, prefetch {prefetch}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_head_of_an_upload_is_non_temporal_only_where_the_rest_is_demoted() {
        assert_eq!(stores_at(Stores::Demoted, 16 << 20, 0), Stores::NonTemporal);
        assert_eq!(
            stores_at(Stores::Demoted, 16 << 20, (16 << 20) - 1),
            Stores::NonTemporal
        );
        assert_eq!(
            stores_at(Stores::Demoted, 16 << 20, 16 << 20),
            Stores::Demoted
        );
        assert_eq!(stores_at(Stores::Demoted, 0, 0), Stores::Demoted);
        assert_eq!(
            stores_at(Stores::Regular, 16 << 20, 0),
            Stores::Regular,
            "measuring ordinary stores"
        );
        assert_eq!(
            stores_at(Stores::NonTemporal, 16 << 20, 32 << 20),
            Stores::NonTemporal
        );
    }

    #[test]
    fn demote_is_chosen_only_where_the_cpu_has_it() {
        assert_eq!(Stores::parse("nt"), Some(Stores::NonTemporal));
        assert_eq!(Stores::parse("regular"), Some(Stores::Regular));
        assert_eq!(Stores::parse("bogus"), None);
        let has = cpu_has_cldemote();
        assert_eq!(Stores::parse("demote").is_some(), has);
        assert_eq!(
            Stores::best(),
            if has {
                Stores::Demoted
            } else {
                Stores::NonTemporal
            }
        );
    }
}
