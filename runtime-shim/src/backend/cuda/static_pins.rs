//! The program's static arrays, page-locked once they are copied again, so that later copies
//! of them go straight between the device and the program's memory.
//!
//! A staged copy moves every byte through host memory three times (the CPU reads the source
//! and writes a pinned buffer, the DMA reads that buffer), and host memory is what limits it
//! (a staged copy runs below a pinned one's speed: docs/performance/shim.md). A
//! program that copies the same arrays again and again (GCC's implicit `copy` of a naive loop:
//! 1 GiB per Laplace iteration) pays that every time. Registering a range with the driver
//! (cuMemHostRegister) makes it pinned in place; it costs more than two staged copies of the
//! range (docs/performance/shim.md), so a range is registered only on
//! its third staged copy: a data region's one copy in and one copy out stay staged.
//!
//! Only ranges inside the main program's writable static data (its `.data` and `.bss`, read
//! from the program headers) are registered: those pages live as long as the process, so a
//! registration can never outlive its memory. A heap array may be freed and its addresses
//! reused by another mapping, which a stale registration would silently copy from; heap arrays
//! stay staged. Ranges are registered page-rounded. The driver refuses overlapping
//! registrations, and two arrays side by side share a page (GCC's A and Anew), so a range that
//! overlaps registered ones replaces them with one registration of their hull, after the
//! device is idle (a copy in flight may be using the old ones).

use std::sync::Mutex;

const PAGE: usize = 4096;
/// A page-rounded host range: start, end.
type Range = (usize, usize);
/// Ranges seen once, remembered to recognise their second copy (oldest dropped first).
const SEEN_MAX: usize = 64;

/// Staged copies of a range before it is registered.
const REGISTER_AT: u32 = 3;

/// What the pins need from the driver.
pub trait Driver {
    /// Registers `[start, start + len)` (page-aligned); false if the driver refuses.
    fn register(&self, start: usize, len: usize) -> bool;
    /// Unregisters the range registered at `start`.
    fn unregister(&self, start: usize);
    /// Waits until no copy is in flight on any queue.
    fn quiesce(&self);
}

#[derive(Default)]
pub struct StaticPins {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Page-rounded ranges registered with the driver; they never overlap.
    registered: Vec<(usize, usize)>,
    /// Page-rounded ranges of static data staged so far, with their count of staged copies.
    seen: Vec<((usize, usize), u32)>,
    /// Ranges the driver refused (already registered by the program, say): never tried again.
    refused: Vec<(usize, usize)>,
}

fn page_round(host: usize, bytes: usize) -> (usize, usize) {
    (host & !(PAGE - 1), (host + bytes).div_ceil(PAGE) * PAGE)
}

fn contains(outer: (usize, usize), inner: (usize, usize)) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl StaticPins {
    /// Whether a copy of `[host, host + bytes)` may go directly to or from the program's memory:
    /// true if the range lies in a registered range, or if this is its third copy, it lies in
    /// the program's writable static data, and the driver registers it (page-rounded, merged
    /// with the registered ranges it overlaps).
    pub fn direct(&self, host: usize, bytes: usize, drv: &impl Driver) -> bool {
        if bytes == 0 {
            return false;
        }
        let r = page_round(host, bytes);
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if p.registered.iter().any(|&g| contains(g, r)) {
            return true;
        }
        if p.refused.iter().any(|&g| overlaps(g, r)) {
            return false;
        }
        let count = match p.seen.iter().position(|&(s, _)| s == r) {
            Some(i) => {
                p.seen[i].1 += 1;
                p.seen[i].1
            }
            None => {
                if !static_data_holds(r) {
                    return false;
                }
                if p.seen.len() == SEEN_MAX {
                    p.seen.remove(0);
                }
                p.seen.push((r, 1));
                1
            }
        };
        if count < REGISTER_AT {
            return false;
        }
        p.seen.retain(|&(s, _)| s != r);
        let (old, kept): (Vec<Range>, Vec<Range>) =
            p.registered.iter().partition(|&&g| overlaps(g, r));
        let hull = old.iter().fold(r, |h, g| (h.0.min(g.0), h.1.max(g.1)));
        if !old.is_empty() {
            drv.quiesce();
            for g in &old {
                drv.unregister(g.0);
            }
            p.registered = kept;
        }
        if drv.register(hull.0, hull.1 - hull.0) {
            p.registered.push(hull);
            true
        } else {
            p.refused.push(hull);
            false
        }
    }

    /// Unregisters every registered range (at shutdown, the context current).
    pub fn release_all(&self, drv: &impl Driver) {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (start, _) in p.registered.drain(..) {
            drv.unregister(start);
        }
        p.seen.clear();
    }
}

/// Whether the page-rounded range `r` lies inside one writable loadable segment of the main
/// program (the first object dl_iterate_phdr reports), page-rounded too.
fn static_data_holds(r: (usize, usize)) -> bool {
    struct Query {
        range: (usize, usize),
        inside: bool,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and `data`
        // is the Query below.
        let (info, q) = unsafe { (&*info, &mut *(data as *mut Query)) };
        let phdrs: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: not NULL; the loader's program header table of `dlpi_phnum` entries,
            // valid for the duration of the callback.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        for ph in phdrs {
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
                let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                let seg = page_round(start, ph.p_memsz as usize);
                if contains(seg, q.range) {
                    q.inside = true;
                }
            }
        }
        1 // the main program only: it comes first
    }
    let mut q = Query {
        range: r,
        inside: false,
    };
    // SAFETY: `visit` only reads the headers and writes the Query it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut q as *mut Query).cast()) };
    q.inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    static mut STATIC_ARRAYS: [u8; 8 * PAGE] = [0; 8 * PAGE];

    fn static_arrays() -> usize {
        std::ptr::addr_of!(STATIC_ARRAYS) as usize
    }

    /// A driver that records what it is asked and refuses while `refuse` is set.
    #[derive(Default)]
    struct Log {
        calls: RefCell<Vec<String>>,
        refuse: bool,
    }

    impl Driver for Log {
        fn register(&self, start: usize, len: usize) -> bool {
            self.calls
                .borrow_mut()
                .push(format!("register {start:#x}+{len:#x}"));
            !self.refuse
        }
        fn unregister(&self, start: usize) {
            self.calls
                .borrow_mut()
                .push(format!("unregister {start:#x}"));
        }
        fn quiesce(&self) {
            self.calls.borrow_mut().push("quiesce".into());
        }
    }

    #[test]
    fn a_static_array_is_registered_on_its_third_copy_and_used_after() {
        let (pins, drv) = (StaticPins::default(), Log::default());
        let (a, n) = (static_arrays() + 100, 3 * PAGE);
        assert!(!pins.direct(a, n, &drv));
        assert!(!pins.direct(a, n, &drv));
        assert!(
            drv.calls.borrow().is_empty(),
            "the first two copies register nothing"
        );
        assert!(pins.direct(a, n, &drv));
        let (s, e) = page_round(a, n);
        assert_eq!(
            *drv.calls.borrow(),
            [format!("register {s:#x}+{:#x}", e - s)]
        );
        // Inside the registered range: no more driver calls.
        assert!(pins.direct(a + 8, 64, &drv));
        assert_eq!(drv.calls.borrow().len(), 1);
        pins.release_all(&drv);
        assert_eq!(drv.calls.borrow()[1], format!("unregister {s:#x}"));
    }

    #[test]
    fn arrays_sharing_a_page_end_in_one_registration_of_both() {
        let (pins, drv) = (StaticPins::default(), Log::default());
        // Two arrays side by side, the boundary inside a page.
        let (a, n) = (static_arrays() + 100, 3 * PAGE);
        let b = a + n;
        for _ in 0..3 {
            pins.direct(a, n, &drv);
        }
        for _ in 0..2 {
            assert!(!pins.direct(b, n, &drv));
        }
        assert!(
            pins.direct(b, n, &drv),
            "the second array's third copy merges the registrations"
        );
        let (s, _) = page_round(a, n);
        let (_, e) = page_round(b, n);
        let calls = drv.calls.borrow().clone();
        assert_eq!(
            calls[1..],
            [
                String::from("quiesce"),
                format!("unregister {s:#x}"),
                format!("register {s:#x}+{:#x}", e - s)
            ]
        );
        assert!(pins.direct(a, n, &drv) && pins.direct(b, n, &drv));
        assert_eq!(drv.calls.borrow().len(), 4);
    }

    #[test]
    fn heap_and_stack_memory_are_never_registered() {
        let (pins, drv) = (StaticPins::default(), Log::default());
        let heap = vec![0u8; 3 * PAGE];
        let stack = [0u8; 2 * PAGE];
        for (p, n) in [
            (heap.as_ptr() as usize, heap.len()),
            (stack.as_ptr() as usize, stack.len()),
        ] {
            for _ in 0..5 {
                assert!(!pins.direct(p, n, &drv));
            }
        }
        assert!(
            drv.calls.borrow().is_empty(),
            "registered memory outside static data"
        );
    }

    #[test]
    fn a_refused_registration_is_not_tried_again() {
        let (pins, drv) = (
            StaticPins::default(),
            Log {
                refuse: true,
                ..Log::default()
            },
        );
        let a = static_arrays();
        for _ in 0..3 {
            assert!(!pins.direct(a, PAGE, &drv));
        }
        assert_eq!(drv.calls.borrow().len(), 1);
        for _ in 0..5 {
            assert!(!pins.direct(a, PAGE, &drv));
            assert!(
                !pins.direct(a, 2 * PAGE, &drv),
                "overlaps the refused range"
            );
        }
        assert_eq!(drv.calls.borrow().len(), 1, "tried again");
    }
}
