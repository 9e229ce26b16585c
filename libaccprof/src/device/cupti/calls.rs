//! The driver calls that issue device work, seen from the issuing thread.
//!
//! CUPTI's activity records say what the device did, not who asked. A callback on the driver
//! calls that launch kernels, copy and set memory (and only those) notes, under the call's
//! correlation id, the host thread (as the OpenACC events of that thread name it), the time of
//! the call, and for plain copies the host pointer. The record, delivered later on CUPTI's
//! thread, is matched by correlation id. The callback does a table lookup, two clock reads'
//! worth of work and one insert under an uncontended lock.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::Mutex;

/// What the issuing thread was doing when it made the call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Call {
    /// The thread id the thread's OpenACC events carry (the runtime's, else the OS thread id).
    pub thread: i64,
    /// CLOCK_MONOTONIC at the call.
    pub host_ns: u64,
    /// Source and destination of a 1-D copy, as the call named them.
    pub src: Option<u64>,
    pub dst: Option<u64>,
    /// The program's innermost NVTX push/pop range open on the thread (0: none).
    pub nvtx_range: u32,
}

/// What a driver function is, for the callback.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    Ignore,
    /// Sets memory, or copies with a descriptor (2-D/3-D, arrays, peers).
    Issue,
    /// Launches a kernel. Noted only until the runtime reports its launches through acc_prof
    /// ([`super::runtime_reports_launches`]).
    Launch,
    /// A 1-D copy whose parameters start `dst, src, ByteCount`: cuMemcpy(Async),
    /// cuMemcpyHtoD(Async), cuMemcpyDtoH(Async), cuMemcpyDtoD(Async), and their _v2/_ptds forms.
    Copy1D,
}

/// Classifies a driver function by its name.
pub fn classify(name: &str) -> Class {
    let base = name
        .trim_end_matches("_ptds")
        .trim_end_matches("_ptsz")
        .trim_end_matches("_v2");
    match base {
        "cuMemcpy" | "cuMemcpyAsync" | "cuMemcpyHtoD" | "cuMemcpyHtoDAsync" | "cuMemcpyDtoH"
        | "cuMemcpyDtoHAsync" | "cuMemcpyDtoD" | "cuMemcpyDtoDAsync" => Class::Copy1D,
        _ if base.starts_with("cuLaunch") => Class::Launch,
        _ if base.starts_with("cuMemset") || base.starts_with("cuMemcpy") => Class::Issue,
        _ => Class::Ignore,
    }
}

/// Callback ids (cupti_driver_cbid.h) of the functions above, for CUPTIs that cannot name
/// their callbacks. CUPTI never renumbers them.
pub const KNOWN_CBIDS: &[(u32, &str)] = &[
    (43, "cuMemcpyHtoD"),
    (45, "cuMemcpyDtoH"),
    (47, "cuMemcpyDtoD"),
    (56, "cuMemcpy2D"),
    (58, "cuMemcpy3D"),
    (60, "cuMemcpyHtoDAsync"),
    (62, "cuMemcpyDtoHAsync"),
    (64, "cuMemcpyDtoDAsync"),
    (68, "cuMemcpy2DAsync"),
    (69, "cuMemcpy3DAsync"),
    (71, "cuMemsetD8"),
    (73, "cuMemsetD16"),
    (75, "cuMemsetD32"),
    (115, "cuLaunch"),
    (116, "cuLaunchGrid"),
    (117, "cuLaunchGridAsync"),
    (216, "cuMemsetD8Async"),
    (218, "cuMemsetD16Async"),
    (220, "cuMemsetD32Async"),
    (248, "cuMemcpy_v2"),
    (249, "cuMemsetD8_v2"),
    (250, "cuMemsetD16_v2"),
    (251, "cuMemsetD32_v2"),
    (276, "cuMemcpyHtoD_v2"),
    (277, "cuMemcpyHtoDAsync_v2"),
    (278, "cuMemcpyDtoH_v2"),
    (279, "cuMemcpyDtoHAsync_v2"),
    (280, "cuMemcpyDtoD_v2"),
    (281, "cuMemcpyDtoDAsync_v2"),
    (287, "cuMemcpy2D_v2"),
    (289, "cuMemcpy2DAsync_v2"),
    (290, "cuMemcpy3D_v2"),
    (291, "cuMemcpy3DAsync_v2"),
    (305, "cuMemcpy"),
    (306, "cuMemcpyAsync"),
    (307, "cuLaunchKernel"),
    (397, "cuMemcpyHtoD_v2_ptds"),
    (398, "cuMemcpyDtoH_v2_ptds"),
    (399, "cuMemcpyDtoD_v2_ptds"),
    (408, "cuMemcpy_ptds"),
];

/// Callback ids are below this in every CUPTI so far (about 800 in CUDA 13).
pub const MAX_CBID: u32 = 2048;

pub struct CallTable {
    class: Vec<Class>,
    pending: Mutex<HashMap<u32, Call>>,
}

impl CallTable {
    /// A table from `(cbid, name)` pairs.
    pub fn new(names: impl IntoIterator<Item = (u32, String)>) -> Self {
        let mut class = vec![Class::Ignore; MAX_CBID as usize];
        for (id, n) in names {
            if let Some(c) = class.get_mut(id as usize) {
                *c = classify(&n);
            }
        }
        Self {
            class,
            pending: Mutex::new(HashMap::with_capacity(4096)),
        }
    }

    /// The callback ids to enable.
    pub fn enabled(&self) -> impl Iterator<Item = u32> + '_ {
        self.class
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != Class::Ignore)
            .map(|(i, _)| i as u32)
    }

    /// The callback ids of kernel launches.
    pub fn launches(&self) -> impl Iterator<Item = u32> + '_ {
        self.class
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == Class::Launch)
            .map(|(i, _)| i as u32)
    }

    pub fn class(&self, cbid: u32) -> Class {
        self.class
            .get(cbid as usize)
            .copied()
            .unwrap_or(Class::Ignore)
    }

    /// Notes a call (on the issuing thread).
    pub fn note(&self, correlation: u32, call: Call) {
        if let Ok(mut p) = self.pending.lock() {
            p.insert(correlation, call);
        }
    }

    /// The call that issued a record (on CUPTI's thread); each record takes its call once.
    pub fn take(&self, correlation: u32) -> Option<Call> {
        self.pending.lock().ok()?.remove(&correlation)
    }

    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
    }
}

/// Reads `dst` and `src` of a 1-D copy's parameter struct (`dst, src, ByteCount, ...`).
///
/// # Safety
/// `params` is CUPTI's `functionParams` for a [`Class::Copy1D`] function.
pub unsafe fn copy_params(params: *const c_void) -> (Option<u64>, Option<u64>) {
    if params.is_null() {
        return (None, None);
    }
    let p = params as *const u64;
    // SAFETY: every Copy1D parameter struct starts with two pointer-sized fields.
    unsafe { (Some(p.read_unaligned()), Some(p.add(1).read_unaligned())) }
}

/// The driver functions' names as this CUPTI gives them, else the built-in list.
pub fn names(
    get: Option<unsafe extern "C" fn(u32, u32, *mut *const std::ffi::c_char) -> i32>,
) -> Vec<(u32, String)> {
    let Some(get) = get else {
        return KNOWN_CBIDS
            .iter()
            .map(|(i, n)| (*i, n.to_string()))
            .collect();
    };
    let mut out = Vec::new();
    for id in 1..MAX_CBID {
        let mut p: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static name, or fails for an unknown id.
        if unsafe { get(super::ffi::CB_DOMAIN_DRIVER_API, id, &mut p) } == 0 && !p.is_null() {
            // SAFETY: static NUL-terminated string owned by CUPTI.
            out.push((
                id,
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
            ));
        }
    }
    if out.is_empty() {
        return KNOWN_CBIDS
            .iter()
            .map(|(i, n)| (*i, n.to_string()))
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_functions_are_classified_by_name() {
        assert_eq!(classify("cuMemcpyHtoD_v2"), Class::Copy1D);
        assert_eq!(classify("cuMemcpyDtoHAsync_v2_ptsz"), Class::Copy1D);
        assert_eq!(classify("cuMemcpy_ptds"), Class::Copy1D);
        assert_eq!(classify("cuMemcpy2DAsync_v2"), Class::Issue);
        assert_eq!(classify("cuMemcpyPeerAsync"), Class::Issue);
        assert_eq!(classify("cuLaunchKernelEx"), Class::Launch);
        assert_eq!(classify("cuLaunchKernel_ptsz"), Class::Launch);
        assert_eq!(classify("cuMemsetD32Async"), Class::Issue);
        assert_eq!(classify("cuCtxSynchronize"), Class::Ignore);
        assert_eq!(classify("cuMemAlloc_v2"), Class::Ignore);
    }

    #[test]
    fn the_built_in_list_enables_copies_launches_and_memsets_only() {
        let t = CallTable::new(names(None));
        let on: Vec<u32> = t.enabled().collect();
        assert!(on.contains(&307) && on.contains(&276) && on.contains(&279) && on.contains(&71));
        assert_eq!(t.class(276), Class::Copy1D);
        assert_eq!(t.class(56), Class::Issue);
        assert_eq!(t.class(307), Class::Launch);
        let launches: Vec<u32> = t.launches().collect();
        assert_eq!(
            launches,
            vec![115, 116, 117, 307],
            "cuLaunch, cuLaunchGrid(Async), cuLaunchKernel"
        );
        assert_eq!(t.class(1), Class::Ignore);
        assert_eq!(t.class(u32::MAX), Class::Ignore);
    }

    #[test]
    fn each_record_takes_its_call_once() {
        let t = CallTable::new(names(None));
        let c = Call {
            thread: 3,
            host_ns: 10,
            src: Some(1),
            dst: Some(2),
            nvtx_range: 0,
        };
        t.note(5, c);
        assert_eq!(t.pending(), 1);
        assert_eq!(t.take(5), Some(c));
        assert_eq!(t.take(5), None);
    }

    #[test]
    fn copy_params_reads_dst_then_src() {
        // cuMemcpyHtoD_v2_params: { CUdeviceptr dstDevice; const void *srcHost; size_t ByteCount; }
        let params: [u64; 3] = [0xd000, 0x5555_0000, 4096];
        // SAFETY: `params` is laid out like a Copy1D parameter struct (two pointer-sized fields
        // first) and outlives the call.
        let (dst, src) = unsafe { copy_params(params.as_ptr() as *const c_void) };
        assert_eq!((dst, src), (Some(0xd000), Some(0x5555_0000)));
        // SAFETY: NULL is explicitly allowed; `copy_params` returns before dereferencing.
        assert_eq!(unsafe { copy_params(std::ptr::null()) }, (None, None));
    }
}
