//! Every C symbol libaccprof exports, in one place: what a runtime or the program's loader can
//! call. Each one catches panics or cannot panic, and hands over to the module that does the work.

use accprof_abi::{acc_prof_lookup_func, acc_prof_reg};

/// The entry point every OpenACC tool library exports.
///
/// # Safety
/// Called by an OpenACC runtime with its registration functions.
#[no_mangle]
pub unsafe extern "C" fn acc_register_library(
    reg: acc_prof_reg,
    _unreg: acc_prof_reg,
    _lookup: acc_prof_lookup_func,
) {
    let _ = std::panic::catch_unwind(|| {
        crate::registration::register_with(reg, "acc_register_library")
    });
}

/// The exported allocation functions. With libaccprof LD_PRELOADed they are the program's
/// malloc, calloc, realloc, free, ...; each passes through to glibc's exported `__libc_*`
/// entry points and, for blocks of at least the threshold, tells [`crate::heap`] (which records
/// them only once enabled). Loaded with dlopen (ACC_PROFLIB) they interpose nothing.
///
/// What a call below the threshold costs on top of glibc: one relaxed load and a compare
/// (malloc), one load of a counter when recorded blocks are live (free). Nothing here can
/// panic: no indexing, no unwrap, arithmetic checked.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod allocation {
    // Each is the C library function of the same name and has its contract; a `# Safety` section
    // per function would repeat "as the C standard says".
    #![allow(clippy::missing_safety_doc)]

    use std::ffi::{c_int, c_void};

    extern "C" {
        fn __libc_malloc(size: usize) -> *mut c_void;
        fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
        fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
        fn __libc_free(p: *mut c_void);
        fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    }

    #[no_mangle]
    pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
        // SAFETY: glibc's malloc, same contract.
        let p = unsafe { __libc_malloc(size) };
        if crate::heap::wants(size) {
            crate::heap::on_alloc(p, size);
        }
        p
    }

    #[no_mangle]
    pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: glibc's calloc, same contract (it checks the overflow itself).
        let p = unsafe { __libc_calloc(n, size) };
        if let Some(total) = n.checked_mul(size) {
            if crate::heap::wants(total) {
                crate::heap::on_alloc(p, total);
            }
        }
        p
    }

    #[no_mangle]
    pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // realloc = free + alloc. The free is queued before glibc can hand the address to another
        // thread. If glibc then fails, the old block stays valid but unnamed: a missing name,
        // never a wrong one.
        if !p.is_null() {
            crate::heap::on_free(p);
        }
        // SAFETY: glibc's realloc, same contract.
        let q = unsafe { __libc_realloc(p, size) };
        if crate::heap::wants(size) {
            crate::heap::on_alloc(q, size);
        }
        q
    }

    #[no_mangle]
    pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
        // Interposed too: glibc's own reallocarray would free a recorded block behind our back.
        match n.checked_mul(size) {
            // SAFETY: forwarded to our realloc, same contract.
            Some(total) => unsafe { realloc(p, total) },
            None => {
                set_errno(libc::ENOMEM);
                std::ptr::null_mut()
            }
        }
    }

    #[no_mangle]
    pub unsafe extern "C" fn free(p: *mut c_void) {
        if !p.is_null() {
            crate::heap::on_free(p);
        }
        // SAFETY: glibc's free, same contract.
        unsafe { __libc_free(p) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: glibc's memalign, same contract.
        let p = unsafe { __libc_memalign(align, size) };
        if crate::heap::wants(size) {
            crate::heap::on_alloc(p, size);
        }
        p
    }

    #[no_mangle]
    pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        // C17 and glibc 2.38+: the alignment must be a power of two (EINVAL otherwise).
        if !align.is_power_of_two() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded to our memalign with a valid alignment.
        unsafe { memalign(align, size) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn posix_memalign(
        out: *mut *mut c_void,
        align: usize,
        size: usize,
    ) -> c_int {
        // POSIX: a power of two multiple of sizeof(void *); errors are returned, errno untouched.
        let word = std::mem::size_of::<*mut c_void>();
        if !align.is_power_of_two() || !align.is_multiple_of(word) {
            return libc::EINVAL;
        }
        let saved = errno();
        // SAFETY: forwarded to our memalign with a valid alignment.
        let p = unsafe { memalign(align, size) };
        if p.is_null() {
            set_errno(saved);
            return libc::ENOMEM;
        }
        // SAFETY: the caller passes a pointer to write the result to.
        unsafe { *out = p };
        0
    }

    fn errno() -> c_int {
        // SAFETY: __errno_location returns this thread's errno.
        unsafe { *libc::__errno_location() }
    }

    fn set_errno(v: c_int) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = v };
    }
}
