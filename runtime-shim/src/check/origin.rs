//! Whose access a fault is: the program's host code, a kernel of the emulated device, or the
//! runtime itself; and, for an access inside a library, the program's calls that led there.
//! Everything here runs in the fault handler: no lock, no allocation.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The program's host code (directly or through a library it called).
pub const HOST: u8 = 1;
/// A kernel of the emulated device.
pub const KERNEL: u8 = 2;
/// The runtime (the checker's own comparisons, a copy, a mapping).
pub const RUNTIME: u8 = 3;

/// Who made the access at `pc` on the calling thread.
pub fn of(pc: usize) -> u8 {
    if in_kernel() {
        KERNEL
    } else if in_own_text(pc) || in_runtime() {
        RUNTIME
    } else {
        HOST
    }
}

/// The shim's own code: a fault there is the runtime reading a guarded array.
static OWN_TEXT: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Records the shim's text range.
pub fn set_own_text(start: usize, end: usize) {
    OWN_TEXT[0].store(start, Ordering::Relaxed);
    OWN_TEXT[1].store(end, Ordering::Relaxed);
}

fn in_own_text(pc: usize) -> bool {
    pc >= OWN_TEXT[0].load(Ordering::Relaxed) && pc < OWN_TEXT[1].load(Ordering::Relaxed)
}

thread_local! {
    /// The checker's own code runs on this thread (its comparisons call the C library).
    static IN_CHECKER: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as the runtime's until dropped: an access to a guarded page from
/// there (through the C library's memcmp, say) is not the program's.
pub fn runtime_scope() -> impl Drop {
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            IN_CHECKER.with(|r| r.set(r.get().saturating_sub(1)));
        }
    }
    IN_CHECKER.with(|r| r.set(r.get() + 1));
    Scope
}

/// Whether the calling thread is inside the runtime: in the checker's code, or in one of the
/// runtime's entry points (the program's own code runs there only as kernels).
fn in_runtime() -> bool {
    IN_CHECKER.with(std::cell::Cell::get) > 0 || crate::fork::inside()
}

/// Tells whether the calling thread runs a kernel of the emulated device (set by the runtime).
static KERNEL_PROBE: AtomicUsize = AtomicUsize::new(0);

pub fn set_kernel_probe(probe: fn() -> bool) {
    KERNEL_PROBE.store(probe as usize, Ordering::Release);
}

fn in_kernel() -> bool {
    let p = KERNEL_PROBE.load(Ordering::Acquire);
    // SAFETY: stored from a `fn() -> bool` by set_kernel_probe.
    p != 0 && unsafe { std::mem::transmute::<usize, fn() -> bool>(p) }()
}

const MAX_RANGES: usize = 64;
static PROGRAM_TEXT: [[AtomicUsize; 2]; MAX_RANGES] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; MAX_RANGES];
static PROGRAM_RANGES: AtomicUsize = AtomicUsize::new(0);

/// The code ranges of the program's own modules (set once, when checking starts).
pub fn set_program_text(ranges: &[(usize, usize)]) {
    for (slot, &(s, e)) in PROGRAM_TEXT.iter().zip(ranges) {
        slot[0].store(s, Ordering::Relaxed);
        slot[1].store(e, Ordering::Relaxed);
    }
    PROGRAM_RANGES.store(ranges.len().min(MAX_RANGES), Ordering::Release);
}

/// Whether `pc` lies in the program's own code (its executable or a library of its own), as
/// opposed to the C, Fortran or C++ runtime libraries.
pub fn is_program_code(pc: usize) -> bool {
    let n = PROGRAM_RANGES.load(Ordering::Acquire).min(MAX_RANGES);
    PROGRAM_TEXT[..n]
        .iter()
        .any(|r| pc >= r[0].load(Ordering::Relaxed) && pc < r[1].load(Ordering::Relaxed))
}

/// Stack words kept from a fault inside a library, to find the program's call.
pub const STACK_WORDS: usize = 48;

/// Copies the words above `sp` that point into the program's code: the return addresses of
/// the calls that led into the library where the access happened, innermost first.
pub fn save_stack(sp: usize, out: &[AtomicUsize; STACK_WORDS]) {
    let mut words = [0usize; 256];
    let local = libc::iovec {
        iov_base: words.as_mut_ptr().cast(),
        iov_len: std::mem::size_of_val(&words),
    };
    let remote = libc::iovec {
        iov_base: sp as *mut libc::c_void,
        iov_len: std::mem::size_of_val(&words),
    };
    // SAFETY: reads our own stack into a local; a range past the stack's end is cut short by
    // the kernel, never a fault.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    let got = if n > 0 { n as usize / 8 } else { 0 };
    let mut k = 0;
    for &w in &words[..got] {
        if k == STACK_WORDS {
            break;
        }
        if is_program_code(w) {
            out[k].store(w, Ordering::Relaxed);
            k += 1;
        }
    }
    if k < STACK_WORDS {
        out[k].store(0, Ordering::Relaxed);
    }
}
