//! How the tool gets its callback registered with the runtime.
//!
//! Two paths, because runtimes differ (../shared/reference/runtimes.md):
//! - The specification's: the runtime calls our exported `acc_register_library` (NVHPC and our
//!   shim do, for ACC_PROFLIB libraries and for one already in the process via LD_PRELOAD).
//! - GCC's libgomp never looks for `acc_register_library` in the process, so a preloaded tool
//!   would record nothing. Our constructor therefore finds libgomp's `acc_prof_register` with
//!   `dlsym(RTLD_DEFAULT)` and registers through it directly. libgomp does not hold its
//!   profiling lock while loading ACC_PROFLIB libraries, so this is also safe when libgomp
//!   itself dlopens us.
//!
//! Both can happen in one process (LD_PRELOAD and ACC_PROFLIB naming this library, or a
//! runtime that calls `acc_register_library` after our constructor registered): registration is
//! keyed by the runtime's `acc_prof_register` function, so each runtime gets our callback once
//! and every event is recorded exactly once.

use accprof_abi::{acc_event_t, acc_prof_reg, acc_register_t};
use std::ffi::{c_void, CStr};
use std::sync::Mutex;

/// The `acc_prof_register` functions we have registered with.
static REGISTERED_WITH: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Registers our callback for every event through `reg`, once per runtime.
pub fn register_with(reg: acc_prof_reg, how: &str) {
    // Every path: the spec's (a runtime calling acc_register_library) as well as our
    // constructor's.
    crate::config::say_disable_problem();
    if crate::config::disabled() {
        return;
    }
    let Some(reg_fn) = reg else { return };
    {
        let Ok(mut seen) = REGISTERED_WITH.lock() else {
            return;
        };
        if seen.contains(&(reg_fn as usize)) {
            return;
        }
        seen.push(reg_fn as usize);
    }
    crate::unwind::set_skip_ranges(reg_fn as *const c_void);
    if is_libgomp(reg_fn as *mut c_void) {
        remember_libgomp_unregister();
    }
    crate::bench_stage::read_env();
    crate::lifecycle::on_registered(how);
    for ev in acc_event_t::ALL {
        // SAFETY: `reg_fn` is the runtime's acc_prof_register; our callback has the
        // specification's signature.
        unsafe {
            reg_fn(
                ev,
                Some(crate::record::callback::on_event),
                acc_register_t::REG,
            )
        };
    }
}

fn remember_libgomp_unregister() {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"acc_prof_unregister".as_ptr()) };
    if !sym.is_null() && is_libgomp(sym) {
        crate::lifecycle::forked_child::remember_libgomp_unregister(sym);
    }
}

/// Runs when the library is loaded (LD_PRELOAD, or dlopen from ACC_PROFLIB).
extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| {
        if loaded_into_executable() {
            return;
        }
        // Before the program runs: nvtx3 looks for its tool at the first NVTX call. Disabled,
        // the program's NVTX calls stay the no-ops they are without a tool.
        if !crate::config::disabled() {
            crate::nvtx::offer_to_program();
        }
        // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the global scope.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"acc_prof_register".as_ptr()) };
        if sym.is_null() || !is_libgomp(sym) {
            // No runtime, or one that will call acc_register_library itself.
            return;
        }
        // SAFETY: libgomp's acc_prof_register has the acc_prof_reg signature.
        let reg: acc_prof_reg = Some(unsafe {
            std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(acc_event_t, accprof_abi::acc_prof_callback, acc_register_t),
            >(sym)
        });
        register_with(reg, "constructor (libgomp acc_prof_register)");
    });
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// The rlib is also linked into benchmarks and tests; the constructor is only for the shared
/// library loaded into a program.
fn loaded_into_executable() -> bool {
    match crate::modules::loaded_modules().first() {
        Some(exe) => exe.contains(on_load as *const () as usize as u64),
        None => true,
    }
}

/// Whether `sym` lives in GCC's libgomp: the one runtime that needs the constructor path.
fn is_libgomp(sym: *mut c_void) -> bool {
    // SAFETY: `Dl_info` is a C struct of pointers and integers, for which all-zero bytes (NULL
    // pointers) are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    if unsafe { libc::dladdr(sym, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    name.contains("libgomp")
}
