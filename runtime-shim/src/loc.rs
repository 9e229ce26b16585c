//! Source locations of constructs and API calls, as the profiling interface reports them.

use std::ffi::{c_char, CStr};

/// Where a construct is in the user's source: what `acc_prof_info` calls src_file, func_name,
/// line_no, end_line_no, func_line_no and func_end_line_no. -1 means unknown (as GCC reports).
/// `#[repr(C)]`: it is also the C header's `accshim_loc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Loc {
    pub file: *const c_char,
    pub func: *const c_char,
    pub line: i32,
    pub end_line: i32,
    pub func_line: i32,
    pub func_end_line: i32,
}

// SAFETY: the pointers are to NUL-terminated strings that live for the whole program (string
// literals from the C macros, `concat!` literals or interned strings from Rust).
unsafe impl Send for Loc {}
// SAFETY: as for Send: the strings are immutable, so shared access from any thread is sound.
unsafe impl Sync for Loc {}

impl Loc {
    /// Nothing known: what an API call made without location information reports.
    pub const UNKNOWN: Loc = Loc {
        file: std::ptr::null(),
        func: std::ptr::null(),
        line: -1,
        end_line: -1,
        func_line: -1,
        func_end_line: -1,
    };

    pub const fn new(file: &'static CStr, func: &'static CStr, line: i32, end_line: i32) -> Loc {
        Loc {
            file: file.as_ptr(),
            func: func.as_ptr(),
            line,
            end_line,
            func_line: -1,
            func_end_line: -1,
        }
    }

    /// The same location with a different end line (the construct's closing line).
    pub fn ending_at(mut self, end_line: u32) -> Loc {
        self.end_line = end_line as i32;
        self
    }

    /// The same location with the enclosing function's line range.
    pub fn in_function(mut self, func_line: u32, func_end_line: u32) -> Loc {
        self.func_line = func_line as i32;
        self.func_end_line = func_end_line as i32;
        self
    }
}

/// Interns a string as a NUL-terminated C string that lives until the process exits. Used for
/// names computed at run time (Rust function names from `type_name`). Each distinct string is
/// stored once.
pub fn intern(s: &str) -> &'static CStr {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static TABLE: Mutex<Option<HashSet<&'static CStr>>> = Mutex::new(None);
    let owned = std::ffi::CString::new(s.replace('\0', "")).unwrap_or_default();
    let mut guard = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(found) = set.get(owned.as_c_str()) {
        return found;
    }
    let leaked: &'static CStr = Box::leak(owned.into_boxed_c_str());
    set.insert(leaked);
    leaked
}

/// The name of the function this macro is expanded in, without its module path
/// (`laplace::main` gives `main`), as a `&'static CStr`.
#[macro_export]
macro_rules! function_name {
    () => {{
        fn __accshim_f() {}
        fn __accshim_type_name_of<T>(_: T) -> &'static str {
            ::std::any::type_name::<T>()
        }
        let full = __accshim_type_name_of(__accshim_f);
        let full = full.strip_suffix("::__accshim_f").unwrap_or(full);
        let full = full.trim_end_matches("::{{closure}}");
        let short = full.rsplit("::").next().unwrap_or(full);
        $crate::loc::intern(short)
    }};
}

/// The [`Loc`] of the line this macro is written on, in the enclosing function. The result is
/// computed once per call site and cached, so it costs one atomic load afterwards.
/// `here!()` has end line = line; `here!(end = N)` sets the construct's end line.
#[macro_export]
macro_rules! here {
    () => {{
        static __ACCSHIM_LOC: ::std::sync::OnceLock<$crate::Loc> = ::std::sync::OnceLock::new();
        *__ACCSHIM_LOC.get_or_init(|| {
            let file: &'static ::std::ffi::CStr =
                match ::std::ffi::CStr::from_bytes_with_nul(concat!(file!(), "\0").as_bytes()) {
                    Ok(c) => c,
                    Err(_) => c"?",
                };
            $crate::Loc::new(
                file,
                $crate::function_name!(),
                line!() as i32,
                line!() as i32,
            )
        })
    }};
    (end = $end:expr) => {
        $crate::here!().ending_at($end)
    };
}

thread_local! {
    /// The return address of the GCC entry point this thread is in (src/goacc), 0 elsewhere.
    static CALL_SITE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Records where the program called the runtime from (GCC gives no source location).
pub fn set_call_site(ret: usize) {
    CALL_SITE.with(|c| c.set(ret));
}

/// The call site [`set_call_site`] recorded on this thread (0 if none).
pub fn call_site() -> usize {
    CALL_SITE.with(|c| c.get())
}

fn dl_info(addr: usize) -> Option<libc::Dl_info> {
    // SAFETY: `Dl_info` is a C struct of pointers and integers; all-zero bytes are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills the local out struct.
    (addr != 0
        && unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } != 0
        && !info.dli_fname.is_null())
    .then_some(info)
}

/// ` at <module>+0x<offset>` for a return address (what `addr2line -e <module>` takes), or "".
pub fn describe_site(ret: usize) -> String {
    let Some(info) = dl_info(ret) else {
        return String::new();
    };
    // SAFETY: dladdr's file name is NUL-terminated.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let module = path.rsplit('/').next().unwrap_or(&path).to_string();
    let module = if module.is_empty() {
        "the program".to_string()
    } else {
        module
    };
    // The call instruction is just before the return address.
    format!(
        " at {module}+{:#x}",
        ret.wrapping_sub(1).wrapping_sub(info.dli_fbase as usize)
    )
}

/// The exported symbol whose object starts at `addr` (a global array), if dladdr knows one.
pub fn symbol_of(addr: usize) -> Option<String> {
    let info = dl_info(addr)?;
    (!info.dli_sname.is_null() && info.dli_saddr as usize == addr).then(|| {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(info.dli_sname) }
            .to_string_lossy()
            .into_owned()
    })
}
