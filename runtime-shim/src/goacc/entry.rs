//! The entry points GCC 12's `-fopenacc` code calls (libgomp's GOACC_* ABI), exported with
//! libgomp's names: preloaded, the shim's definitions win over libgomp's, which stays loaded for
//! OpenMP. Each variadic one is a naked trampoline that hands its arguments to a Rust function
//! ([`super::varargs`]); each Rust body runs inside `crate::ffi::guard`. The safety contract
//! of each is that of libgomp's function of the same name, as GCC 12 calls it.
#![allow(clippy::missing_safety_doc)]

use super::varargs::VaArgs;
use super::{compute, images, mapping};
use crate::ffi::guard;
use std::ffi::{c_int, c_uint, c_void};

/// A trampoline for an entry point (variadic or not): saves the six argument registers (16-byte
/// aligned frame), calls `$imp(regs, stack_args, return_address)` and returns. The CFI lets an
/// unwinder (a tool finding the application's call site) step through it; the return address is
/// where the program called from, for the runtime's own warning lines.
macro_rules! variadic_entry {
    ($(#[$doc:meta])* $name:ident => $imp:path) => {
        $(#[$doc])*
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                ".cfi_startproc",
                "sub rsp, 56",
                ".cfi_adjust_cfa_offset 56",
                "mov [rsp], rdi",
                "mov [rsp + 8], rsi",
                "mov [rsp + 16], rdx",
                "mov [rsp + 24], rcx",
                "mov [rsp + 32], r8",
                "mov [rsp + 40], r9",
                "mov rdi, rsp",
                "lea rsi, [rsp + 64]",
                "mov rdx, [rsp + 56]",
                "call {imp}",
                "add rsp, 56",
                ".cfi_adjust_cfa_offset -56",
                "ret",
                ".cfi_endproc",
                imp = sym $imp,
            )
        }
    };
}

variadic_entry!(
    /// `GOACC_parallel_keyed(int flags_m, void (*fn)(void *), size_t mapnum, void **hostaddrs,
    /// size_t *sizes, unsigned short *kinds, ...)`: parallel, kernels and serial constructs; the
    /// launch tags follow, ended by 0.
    GOACC_parallel_keyed => parallel_keyed
);
variadic_entry!(
    /// `GOACC_enter_data(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
    /// unsigned short *kinds, int async, int num_waits, ...)` (GCC 12).
    GOACC_enter_data => enter_data
);
variadic_entry!(
    /// `GOACC_exit_data(...)`, the same arguments (GCC 12).
    GOACC_exit_data => exit_data
);
variadic_entry!(
    /// `GOACC_enter_exit_data(...)`, the same arguments: GCC 11 and earlier, one entry point
    /// for both directives, told apart by the map kinds.
    GOACC_enter_exit_data => enter_exit_data
);
variadic_entry!(
    /// `GOACC_update(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
    /// unsigned short *kinds, int async, int num_waits, ...)`.
    GOACC_update => update
);
variadic_entry!(
    /// `GOACC_wait(int async, int num_waits, ...)`: the wait directive.
    GOACC_wait => wait
);

/// The fixed arguments of the data directives' entry points, and their wait list.
struct DataCall {
    flags: i32,
    vars: mapping::Vars,
    async_: i32,
    waits: Vec<i32>,
}

/// # Safety
/// `regs` and `stack` come from the trampoline of an entry point with the data directives'
/// signature.
unsafe fn data_call(regs: *const u64, stack: *const u64) -> DataCall {
    // SAFETY: the caller's contract: the arguments are there, in this order.
    unsafe {
        let mut va = VaArgs::new(regs, stack);
        let flags = !va.int();
        let mapnum = va.word() as usize;
        let hostaddrs = va.word() as usize as *mut *mut c_void;
        let sizes = va.word() as usize as *const usize;
        let kinds = va.word() as usize as *const u16;
        let async_ = va.int();
        let num_waits = va.int();
        let waits = (0..num_waits.max(0)).map(|_| va.int()).collect();
        DataCall {
            flags,
            vars: mapping::Vars::new(mapnum, hostaddrs, sizes, kinds),
            async_,
            waits,
        }
    }
}

extern "C" fn parallel_keyed(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    guard("GOACC_parallel_keyed", || {
        // SAFETY: the trampoline's arguments, in GOACC_parallel_keyed's order.
        unsafe {
            let mut va = VaArgs::new(regs, stack);
            let flags = !va.int();
            let f = va.word() as usize;
            let mapnum = va.word() as usize;
            let hostaddrs = va.word() as usize as *mut *mut c_void;
            let sizes = va.word() as usize as *const usize;
            let kinds = va.word() as usize as *const u16;
            let tags = super::varargs::launch_tags(&mut va);
            compute::parallel(
                flags,
                f,
                mapping::Vars::new(mapnum, hostaddrs, sizes, kinds),
                tags,
            )
        }
    })
}

extern "C" fn enter_data(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    // SAFETY: the trampoline's arguments, in the data directives' order.
    guard("GOACC_enter_data", || unsafe {
        let c = data_call(regs, stack);
        mapping::enter_exit(
            "GOACC_enter_data",
            false,
            c.flags,
            &c.vars,
            c.async_,
            &c.waits,
        )
    })
}

extern "C" fn exit_data(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    // SAFETY: as enter_data.
    guard("GOACC_exit_data", || unsafe {
        let c = data_call(regs, stack);
        mapping::enter_exit(
            "GOACC_exit_data",
            true,
            c.flags,
            &c.vars,
            c.async_,
            &c.waits,
        )
    })
}

extern "C" fn enter_exit_data(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    // SAFETY: as enter_data.
    guard("GOACC_enter_exit_data", || unsafe {
        let c = data_call(regs, stack);
        let exit = c.vars.is_exit_data();
        mapping::enter_exit(
            "GOACC_enter_exit_data",
            exit,
            c.flags,
            &c.vars,
            c.async_,
            &c.waits,
        )
    })
}

extern "C" fn update(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    // SAFETY: as enter_data.
    guard("GOACC_update", || unsafe {
        let c = data_call(regs, stack);
        mapping::update(c.flags, &c.vars, c.async_, &c.waits)
    })
}

extern "C" fn wait(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    guard("GOACC_wait", || {
        // SAFETY: the trampoline's arguments: int async, int num_waits, then the queues.
        let (async_, waits) = unsafe {
            let mut va = VaArgs::new(regs, stack);
            let async_ = va.int();
            let n = va.int();
            (async_, (0..n.max(0)).map(|_| va.int()).collect::<Vec<_>>())
        };
        mapping::wait(async_, &waits)
    })
}

variadic_entry!(
    /// `GOACC_data_start(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
    /// unsigned short *kinds)`: a data construct's entry (also host_data's, with use_device
    /// kinds). Not variadic; the trampoline gives its call site.
    GOACC_data_start => data_start
);
variadic_entry!(
    /// `GOACC_data_end(void)`: the exit of this thread's innermost data construct.
    GOACC_data_end => data_end
);

extern "C" fn data_start(regs: *const u64, stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    guard("GOACC_data_start", || {
        // SAFETY: the trampoline's arguments, GOACC_data_start's five.
        let vars = unsafe {
            let mut va = VaArgs::new(regs, stack);
            let flags = !va.int();
            let mapnum = va.word() as usize;
            let hostaddrs = va.word() as usize as *mut *mut c_void;
            let sizes = va.word() as usize as *const usize;
            let kinds = va.word() as usize as *const u16;
            (flags, mapping::Vars::new(mapnum, hostaddrs, sizes, kinds))
        };
        mapping::data_start(vars.0, vars.1)
    })
}

extern "C" fn data_end(_regs: *const u64, _stack: *const u64, ret: usize) {
    let _site = crate::loc::CallSite::enter(ret);
    guard("GOACC_data_end", mapping::data_end)
}

/// `GOACC_declare(int flags_m, size_t mapnum, void **hostaddrs, size_t *sizes,
/// unsigned short *kinds)`: a function's `acc declare` (see [`super::declare`]).
#[no_mangle]
pub unsafe extern "C" fn GOACC_declare(
    flags_m: c_int,
    mapnum: usize,
    hostaddrs: *mut *mut c_void,
    sizes: *const usize,
    kinds: *const u16,
) {
    guard("GOACC_declare", || {
        super::declare::declare(
            !flags_m,
            &mapping::Vars::new(mapnum, hostaddrs, sizes, kinds),
        )
    })
}

/// Host-fallback code asks these for its position in the gang; it runs alone.
#[no_mangle]
pub extern "C" fn GOACC_get_num_threads() -> c_int {
    1
}

#[no_mangle]
pub extern "C" fn GOACC_get_thread_num() -> c_int {
    0
}

/// `GOMP_offload_register_ver(unsigned version, const void *host_table, int target_type,
/// const void *target_data)`: a program's constructor hands over its offload images.
#[no_mangle]
pub extern "C" fn GOMP_offload_register_ver(
    version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    guard("GOMP_offload_register_ver", || {
        images::register(version, host_table, target_type, target_data)
    })
}

#[no_mangle]
pub extern "C" fn GOMP_offload_unregister_ver(
    version: c_uint,
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    guard("GOMP_offload_unregister_ver", || {
        images::unregister(version, host_table, target_type, target_data)
    })
}

/// The version-less registration of older GCCs.
#[no_mangle]
pub extern "C" fn GOMP_offload_register(
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    guard("GOMP_offload_register", || {
        images::register(0, host_table, target_type, target_data)
    })
}

#[no_mangle]
pub extern "C" fn GOMP_offload_unregister(
    host_table: *const c_void,
    target_type: c_int,
    target_data: *const c_void,
) {
    guard("GOMP_offload_unregister", || {
        images::unregister(0, host_table, target_type, target_data)
    })
}
