//! The CUDA driver functions that CUDA-event timing calls, behind a trait so that everything
//! above it is tested without a GPU.
//!
//! libcuda is opened with dlopen (`libcuda.so.1`, or `ACCPROF_CUDA_LIB`), never linked: on a
//! machine without CUDA the program runs as before. Only the functions listed in [`Cuda`] are
//! looked up; every one must be there.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// A CUevent, CUstream or CUcontext, as an address.
pub type Handle = usize;

/// A driver error code (`CUresult`).
pub type CuResult = c_int;
pub const CUDA_SUCCESS: CuResult = 0;
pub const CUDA_ERROR_NOT_READY: CuResult = 600;

/// Where an event stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Query {
    /// The device has passed it: its time can be read.
    Done,
    /// Work before it is still running.
    NotReady,
    /// The event or its context is unusable (the context was destroyed, the driver shut down).
    Failed(CuResult),
}

/// What CUDA-event timing needs from the driver. Errors are the driver's codes.
pub trait Driver: Send + Sync {
    fn event_create(&self) -> Result<Handle, CuResult>;
    fn event_record(&self, event: Handle, stream: Handle) -> Result<(), CuResult>;
    fn event_query(&self, event: Handle) -> Query;
    /// Milliseconds from `from` to `to` (negative when `to` came first), both done.
    fn elapsed_ms(&self, from: Handle, to: Handle) -> Result<f32, CuResult>;
    fn event_destroy(&self, event: Handle);
    fn stream_create(&self) -> Result<Handle, CuResult>;
    fn stream_destroy(&self, stream: Handle);
    /// The context current on the calling thread.
    fn ctx_current(&self) -> Option<Handle>;
    fn ctx_push(&self, ctx: Handle) -> Result<(), CuResult>;
    fn ctx_pop(&self);
    /// The test driver behind this one, in tests.
    #[cfg(test)]
    fn as_fake(&self) -> Option<&super::fake::Fake> {
        None
    }
}

/// Runs `f` with `ctx` current on the calling thread, restoring what was current before.
pub fn with_context<R>(d: &dyn Driver, ctx: Handle, f: impl FnOnce() -> R) -> Result<R, CuResult> {
    if d.ctx_current() == Some(ctx) {
        return Ok(f());
    }
    d.ctx_push(ctx)?;
    let r = f();
    d.ctx_pop();
    Ok(r)
}

type Ev = *mut c_void;

/// libcuda's entry points (signatures from cuda.h).
pub struct Cuda {
    pub path: String,
    event_create: unsafe extern "C" fn(*mut Ev, c_uint) -> CuResult,
    event_record: unsafe extern "C" fn(Ev, *mut c_void) -> CuResult,
    event_query: unsafe extern "C" fn(Ev) -> CuResult,
    event_elapsed_time: unsafe extern "C" fn(*mut f32, Ev, Ev) -> CuResult,
    event_destroy: unsafe extern "C" fn(Ev) -> CuResult,
    stream_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CuResult,
    stream_destroy: unsafe extern "C" fn(*mut c_void) -> CuResult,
    ctx_get_current: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
    ctx_push_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    ctx_pop_current: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
}

// SAFETY: `Cuda` holds only plain function pointers into libcuda, which is never unloaded once
// opened; moving them to another thread moves no state.
unsafe impl Send for Cuda {}
// SAFETY: the fields are immutable after loading, and the CUDA driver API is thread-safe, so
// calling through shared references from several threads at once is allowed.
unsafe impl Sync for Cuda {}

/// `CU_STREAM_NON_BLOCKING`: the anchor stream must not wait for (or hold up) the legacy
/// default stream.
const STREAM_NON_BLOCKING: c_uint = 1;
/// `CU_EVENT_DEFAULT`: timing enabled, no blocking sync.
const EVENT_DEFAULT: c_uint = 0;

impl Driver for Cuda {
    fn event_create(&self) -> Result<Handle, CuResult> {
        let mut e: Ev = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        check(unsafe { (self.event_create)(&mut e, EVENT_DEFAULT) }).map(|_| e as Handle)
    }
    fn event_record(&self, event: Handle, stream: Handle) -> Result<(), CuResult> {
        // SAFETY: an event we created, a stream the runtime handed out (or our own).
        check(unsafe { (self.event_record)(event as Ev, stream as *mut c_void) })
    }
    fn event_query(&self, event: Handle) -> Query {
        // SAFETY: an event we created.
        match unsafe { (self.event_query)(event as Ev) } {
            CUDA_SUCCESS => Query::Done,
            CUDA_ERROR_NOT_READY => Query::NotReady,
            e => Query::Failed(e),
        }
    }
    fn elapsed_ms(&self, from: Handle, to: Handle) -> Result<f32, CuResult> {
        let mut ms = 0f32;
        // SAFETY: two completed events of one context; the driver writes one float.
        check(unsafe { (self.event_elapsed_time)(&mut ms, from as Ev, to as Ev) }).map(|_| ms)
    }
    fn event_destroy(&self, event: Handle) {
        // SAFETY: an event we created and no longer use.
        unsafe { (self.event_destroy)(event as Ev) };
    }
    fn stream_create(&self) -> Result<Handle, CuResult> {
        let mut s: *mut c_void = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        check(unsafe { (self.stream_create)(&mut s, STREAM_NON_BLOCKING) }).map(|_| s as Handle)
    }
    fn stream_destroy(&self, stream: Handle) {
        // SAFETY: a stream we created.
        unsafe { (self.stream_destroy)(stream as *mut c_void) };
    }
    fn ctx_current(&self) -> Option<Handle> {
        let mut c: *mut c_void = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        let ok = unsafe { (self.ctx_get_current)(&mut c) } == CUDA_SUCCESS;
        (ok && !c.is_null()).then_some(c as Handle)
    }
    fn ctx_push(&self, ctx: Handle) -> Result<(), CuResult> {
        // SAFETY: a context handle the runtime handed out.
        check(unsafe { (self.ctx_push_current)(ctx as *mut c_void) })
    }
    fn ctx_pop(&self) {
        let mut c: *mut c_void = std::ptr::null_mut();
        // SAFETY: pops what ctx_push pushed.
        unsafe { (self.ctx_pop_current)(&mut c) };
    }
}

fn check(r: CuResult) -> Result<(), CuResult> {
    if r == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(r)
    }
}

/// Opens libcuda (`ACCPROF_CUDA_LIB`, else `libcuda.so.1` where the loader finds it). `Err`
/// says in one line what failed.
pub fn load() -> Result<Cuda, String> {
    let name = std::env::var("ACCPROF_CUDA_LIB")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "libcuda.so.1".into());
    open(&name)
}

// The target types are the struct's field types, spelled once there.
#[allow(clippy::missing_transmute_annotations)]
fn open(name: &str) -> Result<Cuda, String> {
    let name = name.to_string();
    let cname = CString::new(name.clone()).map_err(|_| format!("bad library name {name:?}"))?;
    // SAFETY: dlopen with a valid C string; the handle is never closed.
    let h = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!(
            "cannot load {name} (the CUDA driver; set ACCPROF_CUDA_LIB to its path)"
        ));
    }
    let sym = |s: &str| -> Option<*mut c_void> {
        let cs = CString::new(s).ok()?;
        // SAFETY: dlsym on a live handle.
        let p = unsafe { libc::dlsym(h, cs.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let need = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| sym(n))
            .ok_or_else(|| format!("{name} has no {}: too old a driver", names[0]))
    };
    let path = loaded_path(sym("cuEventRecord")).unwrap_or_else(|| name.clone());
    // SAFETY: each symbol is the driver function of that name with the signature of cuda.h,
    // which the field types repeat. The _v2 forms are what cuda.h maps the plain names to.
    unsafe {
        Ok(Cuda {
            path,
            event_create: std::mem::transmute::<*mut c_void, _>(need(&["cuEventCreate"])?),
            event_record: std::mem::transmute::<*mut c_void, _>(need(&["cuEventRecord"])?),
            event_query: std::mem::transmute::<*mut c_void, _>(need(&["cuEventQuery"])?),
            event_elapsed_time: std::mem::transmute::<*mut c_void, _>(need(&[
                "cuEventElapsedTime_v2",
                "cuEventElapsedTime",
            ])?),
            event_destroy: std::mem::transmute::<*mut c_void, _>(need(&[
                "cuEventDestroy_v2",
                "cuEventDestroy",
            ])?),
            stream_create: std::mem::transmute::<*mut c_void, _>(need(&["cuStreamCreate"])?),
            stream_destroy: std::mem::transmute::<*mut c_void, _>(need(&[
                "cuStreamDestroy_v2",
                "cuStreamDestroy",
            ])?),
            ctx_get_current: std::mem::transmute::<*mut c_void, _>(need(&["cuCtxGetCurrent"])?),
            ctx_push_current: std::mem::transmute::<*mut c_void, _>(need(&[
                "cuCtxPushCurrent_v2",
                "cuCtxPushCurrent",
            ])?),
            ctx_pop_current: std::mem::transmute::<*mut c_void, _>(need(&[
                "cuCtxPopCurrent_v2",
                "cuCtxPopCurrent",
            ])?),
        })
    }
}

fn loaded_path(p: Option<*mut c_void>) -> Option<String> {
    let p = p?;
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(p, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let f = CStr::from_ptr(info.dli_fname as *const c_char)
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
    fn a_missing_driver_is_one_line_not_a_crash() {
        let e = open("/nonexistent/libcuda.so.1").err().unwrap();
        assert!(
            e.starts_with("cannot load /nonexistent/libcuda.so.1"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
