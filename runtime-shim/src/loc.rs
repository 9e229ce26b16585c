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

/// Where the program called the runtime from (GCC gives no source location), for as long as
/// the GCC entry point runs: [`call_site`] answers it until the value is dropped, so that a
/// runtime routine called later (acc_copyin, with no location of its own) is not given the
/// line of the last directive.
#[must_use]
pub struct CallSite(usize);

impl CallSite {
    pub fn enter(ret: usize) -> CallSite {
        CallSite(CALL_SITE.with(|c| c.replace(ret)))
    }
}

impl Drop for CallSite {
    fn drop(&mut self) {
        CALL_SITE.with(|c| c.set(self.0));
    }
}

/// The call site of the GCC entry point this thread is in ([`CallSite`]), 0 if none.
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

/// The module a code address lies in: its file and its load bias (what to subtract from a
/// run-time address to get the address its debug information uses).
fn module_of(addr: usize) -> Option<(String, usize)> {
    struct Search {
        addr: usize,
        found: Option<(String, usize)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes its own info and our `Search`, both valid for the call.
        let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
        let bias = info.dlpi_addr as usize;
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: the module's program headers, dlpi_phnum of them.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = bias.wrapping_add(ph.p_vaddr as usize);
            if ph.p_type == libc::PT_LOAD
                && search.addr >= start
                && search.addr < start + ph.p_memsz as usize
            {
                // SAFETY: the loader's NUL-terminated module name ("" for the executable).
                let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
                let path = if name.is_empty() {
                    std::fs::read_link("/proc/self/exe")
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default()
                } else {
                    name.into_owned()
                };
                search.found = Some((path, bias));
                return 1;
            }
        }
        0
    }
    let mut search = Search { addr, found: None };
    // SAFETY: `visit` matches the callback type and only reads what it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut libc::c_void) };
    search.found.filter(|(path, _)| !path.is_empty())
}

/// A source line of the program: its file as the debug information names it, and its number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for SourceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// The source line of the call whose return address is `ret`, from its module's DWARF (a
/// program built with `-g`): for a call GCC made for a directive, the directive's line. Each
/// module's debug information is read once, on first use, and kept; each answer is kept too,
/// so only the first lookup of a call site costs more than a map access.
pub fn source_line(ret: usize) -> Option<SourceLine> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    struct Cache {
        sites: HashMap<usize, Option<SourceLine>>,
        modules: HashMap<String, Option<addr2line::Loader>>,
    }
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    if ret == 0 {
        return None;
    }
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(|| Cache {
        sites: HashMap::new(),
        modules: HashMap::new(),
    });
    if let Some(hit) = cache.sites.get(&ret) {
        return hit.clone();
    }
    let found = module_of(ret).and_then(|(path, bias)| {
        let loader = cache
            .modules
            .entry(path)
            .or_insert_with_key(|p| addr2line::Loader::new(p).ok())
            .as_ref()?;
        // The call instruction is just before the return address.
        let probe = ret.checked_sub(1)?.checked_sub(bias)? as u64;
        let l = loader.find_location(probe).ok()??;
        Some(SourceLine {
            file: l.file?.to_string(),
            line: l.line.filter(|&n| n > 0)?,
        })
    });
    cache.sites.insert(ret, found.clone());
    found
}

/// Where the program called the runtime from, for a line that tells the user: the source line
/// (with `-g`), else `<module>+0x<offset>` (for `addr2line -e <module>`), else "".
pub fn describe_call(ret: usize) -> String {
    match source_line(ret) {
        Some(l) => format!(" at {l}"),
        None => describe_site(ret),
    }
}
