//! Finding and registering tool libraries, as the specification's "Loading the Library" says:
//! an `acc_register_library` already in the process (linked in or LD_PRELOAD), then each library
//! named in `ACC_PROFLIB`. Each distinct `acc_register_library` is called at most once per process,
//! however often the runtime is initialised.

use accprof_abi::{acc_prof_lookup_func, acc_prof_reg, acc_register_library_fn};
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

static CALLED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// What each tool's `acc_register_library` is given: the registration routines and the lookup
/// of runtime-specific queries. The runtime hands them over (the loader knows no runtime).
#[derive(Clone, Copy)]
pub struct ToolApi {
    pub register: acc_prof_reg,
    pub unregister: acc_prof_reg,
    pub lookup: acc_prof_lookup_func,
}

/// Loads and registers every tool. Called once per runtime initialisation, before the first event.
pub fn load_tools(api: ToolApi) {
    // (1) A tool already in the process. RTLD_DEFAULT searches the executable and every library
    // loaded with global visibility (LD_PRELOAD'ed ones included).
    // SAFETY: dlsym with a NUL-terminated name.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"acc_register_library".as_ptr()) };
    if !sym.is_null() && !in_libgomp(sym) {
        register_once(sym as usize, api);
    }
    // (2) ACC_PROFLIB: ';'- or ':'-separated paths.
    if let Ok(list) = std::env::var("ACC_PROFLIB") {
        for path in list
            .split([';', ':'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            load_one(path, api);
        }
    }
}

/// Whether `sym` is defined by GCC's libgomp, which exports an `acc_register_library` of its own
/// that only ends the program ("libgomp: TODO"): in a GCC-compiled program run on the shim it
/// is always loaded, and is no tool.
fn in_libgomp(sym: *mut libc::c_void) -> bool {
    // SAFETY: dladdr with an address and an out struct; its strings are NUL-terminated.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        libc::dladdr(sym, &mut info) != 0
            && !info.dli_fname.is_null()
            && CStr::from_ptr(info.dli_fname)
                .to_bytes()
                .split(|&c| c == b'/')
                .next_back()
                .is_some_and(|f| f.starts_with(b"libgomp"))
    }
}

fn load_one(path: &str, api: ToolApi) {
    let Ok(cpath) = CString::new(path) else {
        return;
    };
    // SAFETY: dlopen/dlsym/dlerror with valid C strings; the handle is kept open for the process.
    unsafe {
        let handle = libc::dlopen(cpath.as_ptr(), libc::RTLD_LAZY);
        if handle.is_null() {
            let err = libc::dlerror();
            let why = if err.is_null() {
                "unknown error".into()
            } else {
                CStr::from_ptr(err).to_string_lossy()
            };
            eprintln!("accshim: ACC_PROFLIB: cannot load {path}: {why}");
            return;
        }
        let sym = libc::dlsym(handle, c"acc_register_library".as_ptr());
        if sym.is_null() {
            eprintln!("accshim: ACC_PROFLIB: {path} has no acc_register_library");
            return;
        }
        register_once(sym as usize, api);
    }
}

fn register_once(addr: usize, api: ToolApi) {
    {
        let mut guard = CALLED.lock().unwrap_or_else(|e| e.into_inner());
        if !guard.get_or_insert_with(HashSet::new).insert(addr) {
            return;
        }
    }
    // SAFETY: the symbol is a tool's acc_register_library, which has this C signature.
    let f: acc_register_library_fn =
        unsafe { std::mem::transmute::<usize, acc_register_library_fn>(addr) };
    // The lock is released: the tool may call acc_prof_register (which takes the registry lock)
    // or even the runtime API from here.
    // SAFETY: `f` is the tool's acc_register_library, which the specification requires to have
    // this C signature; the three arguments are the runtime's extern "C" functions with the
    // signatures the specification gives acc_prof_register, acc_prof_unregister and
    // acc_prof_lookup.
    unsafe { f(api.register, api.unregister, api.lookup) };
}
