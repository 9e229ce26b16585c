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

/// The entry point of an NVTX tool: nvtx3 calls it in each module that uses NVTX, when
/// NVTX_INJECTION64_PATH names this library (crate::nvtx).
///
/// # Safety
/// Called by nvtx3 with the module's nvtxGetExportTable.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<unsafe extern "C" fn(u32) -> *const std::ffi::c_void>,
) -> std::ffi::c_int {
    // SAFETY: forwarded from nvtx3.
    std::panic::catch_unwind(|| unsafe { crate::nvtx::attach(get_export_table) }).unwrap_or(0)
}

/// exec and `_exit` end the process without atexit: the final flush runs first (see
/// `lifecycle::death`), async-signal-safely, so these may be called from signal
/// handlers and vfork children as the C library's may. The variadic `execl*` functions are not
/// interposed (stable Rust cannot define them).
pub mod replacing {
    // Each is the C library function of the same name and has its contract.
    #![allow(clippy::missing_safety_doc)]

    use crate::lifecycle::death::{self, real};
    use std::ffi::{c_char, c_int, c_void};

    extern "C" {
        static environ: *const *const c_char;
    }

    type ExecvpeFn =
        unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
    type ExecvpFn = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;
    type FexecveFn =
        unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;

    fn missing() -> c_int {
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        -1
    }

    #[no_mangle]
    pub unsafe extern "C" fn execve(
        path: *const c_char,
        argv: *const *const c_char,
        envp: *const *const c_char,
    ) -> c_int {
        death::before_replaced(false);
        // SAFETY: the system call glibc's execve makes, same contract.
        unsafe { libc::syscall(libc::SYS_execve, path, argv, envp) as c_int }
    }

    #[no_mangle]
    pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
        // SAFETY: execv is execve with the current environment.
        unsafe { execve(path, argv, environ) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
        let f: *mut c_void = real::get(&real::EXECVP, c"execvp");
        if f.is_null() {
            return missing();
        }
        death::before_replaced(false);
        // SAFETY: the C library's execvp, same contract.
        unsafe { std::mem::transmute::<*mut c_void, ExecvpFn>(f)(file, argv) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn execvpe(
        file: *const c_char,
        argv: *const *const c_char,
        envp: *const *const c_char,
    ) -> c_int {
        let f: *mut c_void = real::get(&real::EXECVPE, c"execvpe");
        if f.is_null() {
            return missing();
        }
        death::before_replaced(false);
        // SAFETY: the C library's execvpe, same contract.
        unsafe { std::mem::transmute::<*mut c_void, ExecvpeFn>(f)(file, argv, envp) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn fexecve(
        fd: c_int,
        argv: *const *const c_char,
        envp: *const *const c_char,
    ) -> c_int {
        let f: *mut c_void = real::get(&real::FEXECVE, c"fexecve");
        if f.is_null() {
            return missing();
        }
        death::before_replaced(false);
        // SAFETY: the C library's fexecve, same contract.
        unsafe { std::mem::transmute::<*mut c_void, FexecveFn>(f)(fd, argv, envp) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn _exit(status: c_int) -> ! {
        death::before_replaced(true);
        // SAFETY: the system call glibc's _exit makes; it does not return.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
        #[allow(clippy::empty_loop)]
        loop {}
    }

    #[no_mangle]
    pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
        // SAFETY: _Exit is _exit.
        unsafe { _exit(status) }
    }
}

/// The exported allocation functions. With libaccprof LD_PRELOADed they are the program's
/// malloc, calloc, realloc, free, ...; each passes through to glibc's exported `__libc_*`
/// entry points and, for blocks of at least the threshold, tells `heap` (which records
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
