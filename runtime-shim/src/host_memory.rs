//! Whether host memory a copy would read or write can be.
//!
//! A runtime routine's host pointer comes straight from the program: garbage there (an
//! uninitialised pointer, a freed mapping) must be a runtime error, not a fault inside the
//! runtime's copy ([`accessible`]).
//!
//! A constant the program passes by reference lives in read-only memory: a Fortran `PARAMETER`
//! or literal given to a scalar dummy argument, or a C string literal. A compute construct may
//! still copy it back: in a `kernels` construct a scalar is implicitly `copy`, and GCC maps such
//! a dummy argument `force_tofrom`, so the copy back at the construct's end would write the
//! constant and fault (CloverLeaf's `generate_chunk_kernel` passes `g_rect`, a `PARAMETER`, that
//! way). The data layer asks here before a small download and copies into read-only memory only
//! when the device changed the value (see `data::download`).

use std::sync::Mutex;

/// One mapping of the process: `[start, end)` and whether it can be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    readable: bool,
    writable: bool,
}

/// The mappings as last read from `/proc/self/maps`, sorted by start. Read again when an
/// address falls in none of them (a library loaded since, a stack that grew).
static MAPPINGS: Mutex<Vec<Mapping>> = Mutex::new(Vec::new());

/// Whether the memory at `addr` belongs to a mapping that cannot be written. Memory in no
/// mapping, or when the maps cannot be read, counts as writable: the copy then goes ahead as it
/// would have.
pub fn is_read_only(addr: usize) -> bool {
    if crate::check::guard::guarded(addr) {
        // The checker's guard, not the program's: the memory is writable.
        return false;
    }
    let mut maps = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
    // A writable mapping stays so; one read as read-only may have been a heap page under a
    // guard of the checker's at the time the maps were read (the kernel splits a mapping by
    // protection), so that answer is read again.
    if find(&maps, addr).is_some_and(|m| m.writable) {
        return false;
    }
    *maps = std::fs::read_to_string("/proc/self/maps")
        .map(|text| parse(&text))
        .unwrap_or_default();
    find(&maps, addr).is_some_and(|m| !m.writable)
}

/// Whether all of `[addr, addr+bytes)` lies in mappings that the program can read, and when
/// `write`, also write. The mappings are read again once when the range is not covered (a
/// library loaded, a heap grown since).
pub fn accessible(addr: usize, bytes: usize, write: bool) -> bool {
    let Some(end) = addr.checked_add(bytes.max(1)) else {
        return false;
    };
    let mut maps = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
    if covers(&maps, addr, end, write) {
        return true;
    }
    *maps = std::fs::read_to_string("/proc/self/maps")
        .map(|text| parse(&text))
        .unwrap_or_default();
    // Without the maps (no /proc), nothing can be said: the copy goes ahead as it would have.
    maps.is_empty() || covers(&maps, addr, end, write)
}

/// Whether consecutive mappings with the access asked for cover `[addr, end)`.
fn covers(maps: &[Mapping], addr: usize, end: usize, write: bool) -> bool {
    let mut at = addr;
    while at < end {
        match find(maps, at) {
            Some(m) if m.readable && (m.writable || !write) => at = m.end,
            // Protected by the checker's guard (src/check), not by the program.
            Some(m) if crate::check::guard::guarded(at) => at = m.end.min(at + 4096),
            _ => return false,
        }
    }
    true
}

fn find(maps: &[Mapping], addr: usize) -> Option<Mapping> {
    let i = maps.partition_point(|m| m.start <= addr);
    let m = *maps.get(i.checked_sub(1)?)?;
    (addr < m.end).then_some(m)
}

/// The mappings of a `/proc/PID/maps` text ("start-end perms offset dev inode path" per line).
fn parse(text: &str) -> Vec<Mapping> {
    let mut maps: Vec<Mapping> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            Some(Mapping {
                start: usize::from_str_radix(start, 16).ok()?,
                end: usize::from_str_radix(end, 16).ok()?,
                readable: perms.as_bytes().first() == Some(&b'r'),
                writable: perms.as_bytes().get(1) == Some(&b'w'),
            })
        })
        .collect();
    maps.sort_by_key(|m| m.start);
    maps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_literal_is_read_only_and_the_stack_and_heap_are_not() {
        static CONSTANT: &str = "a constant in .rodata";
        let on_stack = 7u64;
        let on_heap = Box::new(7u64);
        assert!(is_read_only(CONSTANT.as_ptr() as usize));
        assert!(!is_read_only(&on_stack as *const u64 as usize));
        assert!(!is_read_only(&*on_heap as *const u64 as usize));
        assert!(!is_read_only(0), "memory in no mapping counts as writable");
    }

    #[test]
    fn maps_lines_are_read_by_their_permissions() {
        let maps = parse(
            "7f00-7f10 r--p 00000000 08:01 12 /bin/app\n\
             5000-6000 rw-p 00000000 00:00 0 [heap]\n\
             garbage\n",
        );
        assert_eq!(find(&maps, 0x5800).map(|m| m.writable), Some(true));
        assert_eq!(find(&maps, 0x7f08).map(|m| m.writable), Some(false));
        assert_eq!(find(&maps, 0x7f10), None);
        assert_eq!(find(&maps, 0x10), None);
        assert!(covers(&maps, 0x5000, 0x6000, true));
        assert!(covers(&maps, 0x7f00, 0x7f10, false) && !covers(&maps, 0x7f00, 0x7f10, true));
        assert!(!covers(&maps, 0x5f00, 0x6100, false), "runs past the heap");
    }

    #[test]
    fn live_memory_is_accessible_and_an_unmapped_address_is_not() {
        let on_heap = vec![7u8; 100_000];
        assert!(accessible(on_heap.as_ptr() as usize, on_heap.len(), true));
        assert!(!accessible(0x10, 8, false));
        assert!(!accessible(usize::MAX - 4, 8, false), "wraps around");
    }
}
