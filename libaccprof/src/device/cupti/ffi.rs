//! Finding and loading CUPTI, and the few entry points accprof calls.
//!
//! CUPTI is opened with dlopen, never linked: a program on a machine without CUDA must run
//! exactly as before. The library is looked for where the loader looks (LD_LIBRARY_PATH,
//! ldconfig), then where CUDA installs keep it but the loader often does not look
//! (`$CUDA_HOME/extras/CUPTI/lib64`, `/usr/local/cuda/...`). Every function is looked up by
//! name and checked; a missing one makes the whole library unusable, said in one line.
//!
//! The constants and record layouts are those of CUPTI's headers (cupti_activity.h,
//! cupti_callbacks.h, cupti_driver_cbid.h), whose numbering CUPTI keeps stable across versions;
//! records only ever grow at their end, so the prefixes read here are the same in CUDA 11 to 13.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;

pub type CuptiResult = c_int;
pub const CUPTI_SUCCESS: CuptiResult = 0;

/// `CUpti_ActivityKind` values accprof enables.
pub const KIND_MEMCPY: u32 = 1;
pub const KIND_MEMSET: u32 = 2;
pub const KIND_KERNEL: u32 = 3;
pub const KIND_CONCURRENT_KERNEL: u32 = 10;

pub const CB_DOMAIN_DRIVER_API: u32 = 1;
pub const CB_DOMAIN_RESOURCE: u32 = 3;
pub const CBID_RESOURCE_CONTEXT_CREATED: u32 = 1;
pub const API_ENTER: u32 = 0;

pub type BufferRequested =
    unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize);
pub type BufferCompleted =
    unsafe extern "C" fn(ctx: *mut c_void, stream: u32, buffer: *mut u8, size: usize, valid: usize);
pub type DriverCallback =
    unsafe extern "C" fn(userdata: *mut c_void, domain: u32, cbid: u32, cbdata: *const c_void);
pub type TimestampFn = unsafe extern "C" fn() -> u64;

/// The prefix of `CUpti_CallbackData` that accprof reads (offsets checked against the header).
#[repr(C)]
pub struct CallbackData {
    pub callback_site: u32,
    pub function_name: *const c_char,
    pub function_params: *const c_void,
    pub function_return_value: *const c_void,
    pub symbol_name: *const c_char,
    pub context: *mut c_void,
    pub context_uid: u32,
    pub correlation_data: *mut u64,
    pub correlation_id: u32,
}

/// The CUPTI entry points accprof uses.
pub struct Cupti {
    pub path: String,
    pub activity_register_callbacks:
        unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult,
    pub activity_enable: unsafe extern "C" fn(u32) -> CuptiResult,
    pub activity_flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    pub activity_get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult,
    pub activity_get_num_dropped_records:
        unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult,
    pub get_timestamp: unsafe extern "C" fn(*mut u64) -> CuptiResult,
    pub subscribe:
        unsafe extern "C" fn(*mut *mut c_void, DriverCallback, *mut c_void) -> CuptiResult,
    pub enable_callback: unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> CuptiResult,
    pub get_result_string: unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult,
    /// Newer CUPTIs only.
    pub get_callback_name:
        Option<unsafe extern "C" fn(u32, u32, *mut *const c_char) -> CuptiResult>,
    pub register_timestamp_callback: Option<unsafe extern "C" fn(TimestampFn) -> CuptiResult>,
}

// SAFETY: `Cupti` holds only plain function pointers into libcupti, which is never unloaded
// once opened; moving them to another thread moves no state.
unsafe impl Send for Cupti {}
// SAFETY: the fields are immutable after loading and CUPTI's entry points may be called from any
// thread, so shared references across threads are sound.
unsafe impl Sync for Cupti {}

impl Cupti {
    /// CUPTI's words for an error code.
    pub fn error(&self, r: CuptiResult) -> String {
        let mut s: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static string.
        let ok = unsafe { (self.get_result_string)(r, &mut s) } == CUPTI_SUCCESS && !s.is_null();
        if ok {
            // SAFETY: static NUL-terminated string owned by CUPTI.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        } else {
            format!("CUPTI error {r}")
        }
    }
}

/// Where libcupti is looked for, in order: names the loader resolves, then install directories.
pub fn candidates() -> Vec<String> {
    let names = [
        "libcupti.so",
        "libcupti.so.13",
        "libcupti.so.12",
        "libcupti.so.11",
    ];
    let mut out: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(h) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let h = PathBuf::from(h);
            dirs.push(h.join("extras/CUPTI/lib64"));
            dirs.push(h.join("targets/x86_64-linux/lib"));
            dirs.push(h.join("lib64"));
        }
    }
    for h in ["/usr/local/cuda", "/opt/cuda"] {
        let h = PathBuf::from(h);
        dirs.push(h.join("extras/CUPTI/lib64"));
        dirs.push(h.join("targets/x86_64-linux/lib"));
        dirs.push(h.join("lib64"));
    }
    for d in dirs {
        for n in names {
            let p = d.join(n);
            if p.exists() {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

/// Opens the first CUPTI that loads and has every entry point. `Err` says, in one line, what
/// was tried.
pub fn load() -> Result<Cupti, String> {
    if let Some(p) = std::env::var_os("ACCPROF_CUPTI_LIB").filter(|v| !v.is_empty()) {
        return open(&p.to_string_lossy());
    }
    let mut last = String::new();
    for c in candidates() {
        match open(&c) {
            Ok(lib) => return Ok(lib),
            Err(e) => last = e,
        }
    }
    Err(if last.is_empty() {
        "libcupti was not found on the loader path, in $CUDA_HOME/extras/CUPTI/lib64 or under /usr/local/cuda (set ACCPROF_CUPTI_LIB to its path)".into()
    } else {
        last
    })
}

fn open(name: &str) -> Result<Cupti, String> {
    let cname = CString::new(name).map_err(|_| format!("bad library name {name:?}"))?;
    // SAFETY: dlopen with a valid C string; the handle is never closed (CUPTI cannot be unloaded).
    let h = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!("cannot load {name}"));
    }
    let sym = |s: &str| -> Option<*mut c_void> {
        let cs = CString::new(s).ok()?;
        // SAFETY: dlsym on a live handle.
        let p = unsafe { libc::dlsym(h, cs.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let need = |s: &str| sym(s).ok_or_else(|| format!("{name} has no {s}: too old a CUPTI"));
    let path = loaded_path(h).unwrap_or_else(|| name.to_string());
    // SAFETY: each symbol is CUPTI's function of that name, with the C signature declared in
    // its header, which the field types above repeat.
    unsafe {
        Ok(Cupti {
            path,
            activity_register_callbacks: as_fn(need("cuptiActivityRegisterCallbacks")?),
            activity_enable: as_fn(need("cuptiActivityEnable")?),
            activity_flush_all: as_fn(need("cuptiActivityFlushAll")?),
            activity_get_next_record: as_fn(need("cuptiActivityGetNextRecord")?),
            activity_get_num_dropped_records: as_fn(need("cuptiActivityGetNumDroppedRecords")?),
            get_timestamp: as_fn(need("cuptiGetTimestamp")?),
            subscribe: as_fn(need("cuptiSubscribe")?),
            enable_callback: as_fn(need("cuptiEnableCallback")?),
            get_result_string: as_fn(need("cuptiGetResultString")?),
            get_callback_name: sym("cuptiGetCallbackName").map(|p| as_fn(p)),
            register_timestamp_callback: sym("cuptiActivityRegisterTimestampCallback")
                .map(|p| as_fn(p)),
        })
    }
}

/// A symbol's address as the function pointer type of the field it fills. The type is the
/// field's, inferred at each use; the size check keeps this from turning a pointer into
/// anything wider.
///
/// # Safety
/// `p` is the address of a function whose C signature is `F`.
unsafe fn as_fn<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(
        std::mem::size_of::<F>(),
        std::mem::size_of::<*mut c_void>(),
        "not a function pointer type"
    );
    // SAFETY: same size, and the caller vouches for the signature.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

/// The file a dlopen handle came from, for the trace header.
fn loaded_path(h: *mut c_void) -> Option<String> {
    let cs = CString::new("cuptiGetTimestamp").ok()?;
    // SAFETY: dlsym and dladdr on a live handle; dladdr fills `info`.
    unsafe {
        let p = libc::dlsym(h, cs.as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        if p.is_null() || libc::dladdr(p, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let f = CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned();
        Some(
            std::fs::canonicalize(&f)
                .map(|p| p.display().to_string())
                .unwrap_or(f),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_data_prefix_matches_cupti_header_offsets() {
        // Offsets from cupti_callbacks.h (x86-64): correlationId at 64, the struct 72 bytes.
        assert_eq!(std::mem::offset_of!(CallbackData, function_params), 16);
        assert_eq!(std::mem::offset_of!(CallbackData, context), 40);
        assert_eq!(std::mem::offset_of!(CallbackData, correlation_id), 64);
        assert_eq!(std::mem::size_of::<CallbackData>(), 72);
    }

    #[test]
    fn a_bogus_library_path_is_one_line_not_a_crash() {
        let e = open("/nonexistent/libcupti.so.99").err().unwrap();
        assert!(e.contains("cannot load"), "{e}");
        assert!(!e.contains('\n'));
    }
}
