//! The limits of a device kernels ran on (multiprocessors, threads, registers, shared memory),
//! for `accprof report` to set each kernel's launch geometry against.
//!
//! Queried once per process, for every device, when CUPTI reports the first CUDA context
//! created (its resource callback, on the thread creating it: once, off the hot path, never
//! inside an OpenACC callback), and kept here until a device's first kernel record is
//! delivered. Asking when a buffer arrives would be too late for the buffers flushed at exit,
//! when CUDA has already shut down (`CUDA_ERROR_DEINITIALIZED`). The driver is the one the
//! program already loaded (dlopen with `RTLD_NOLOAD`: libaccprof never loads CUDA into a
//! program that did not); `cuDeviceGetAttribute` and `cuDeviceGetName` need no context.

use accprof_trace::device::PROPERTY_KEYS;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

type CuResult = c_int;
const CUDA_SUCCESS: CuResult = 0;

/// `CUdevice_attribute` values (cuda.h) for the keys of [`PROPERTY_KEYS`], in its order, less
/// `compute_capability` (two attributes) and `name`.
const ATTRIBUTES: [(&str, c_int); 11] = [
    ("multiprocessors", 16),
    ("warp_size", 10),
    ("max_threads_per_block", 1),
    ("max_threads_per_multiprocessor", 39),
    ("max_blocks_per_multiprocessor", 106),
    ("registers_per_block", 12),
    ("registers_per_multiprocessor", 82),
    ("shared_memory_per_block", 8),
    ("shared_memory_per_block_optin", 97),
    ("shared_memory_per_multiprocessor", 81),
    ("reserved_shared_memory_per_block", 111),
];
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// The driver entry points read here (signatures from cuda.h).
struct Driver {
    device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult,
    get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult,
}

/// The program's libcuda, if it has one loaded; looked up once.
fn driver() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER.get_or_init(open).as_ref()
}

fn open() -> Option<Driver> {
    let name = std::env::var("ACCPROF_CUDA_LIB")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "libcuda.so.1".into());
    let cname = CString::new(name).ok()?;
    // SAFETY: dlopen with a valid C string; RTLD_NOLOAD only returns a library already loaded,
    // whose handle is never closed.
    let h = unsafe {
        libc::dlopen(
            cname.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NOLOAD,
        )
    };
    if h.is_null() {
        return None;
    }
    let sym = |s: &str| -> Option<*mut c_void> {
        let cs = CString::new(s).ok()?;
        // SAFETY: dlsym on a live handle.
        let p = unsafe { libc::dlsym(h, cs.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    let (n, a, b, c) = (
        sym("cuDeviceGetCount")?,
        sym("cuDeviceGet")?,
        sym("cuDeviceGetAttribute")?,
        sym("cuDeviceGetName")?,
    );
    // SAFETY: each symbol is the driver function of that name, with the signature of cuda.h
    // that the field types repeat; all are pointer-sized function pointers.
    unsafe {
        Some(Driver {
            device_get_count: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_int) -> CuResult,
            >(n),
            device_get: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
            >(a),
            get_attribute: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult,
            >(b),
            get_name: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult,
            >(c),
        })
    }
}

/// Devices queried, at most (kernel records name devices by ordinal; a bit mask tracks them).
pub const MAX_DEVICES: u32 = 64;

/// Every device's limits, by ordinal, once queried.
static LIMITS: OnceLock<Vec<Option<String>>> = OnceLock::new();

/// A CUDA context was created: queries every device's limits, the first time.
pub fn on_context_created() {
    LIMITS.get_or_init(|| {
        let Some(d) = driver() else {
            return Vec::new();
        };
        let mut n: c_int = 0;
        // SAFETY: the driver writes one int.
        if unsafe { (d.device_get_count)(&mut n) } != CUDA_SUCCESS {
            return Vec::new();
        }
        (0..(n.max(0) as u32).min(MAX_DEVICES)).map(query).collect()
    });
}

/// Device `ordinal`'s limits as the text of a [`accprof_trace::device::PROPERTIES`] event, if
/// they were queried.
pub fn text(ordinal: u32) -> Option<&'static str> {
    LIMITS.get()?.get(ordinal as usize)?.as_deref()
}

/// The limits of CUDA device `ordinal`; `None` when the program has no CUDA driver loaded or
/// the device is unknown to it.
fn query(ordinal: u32) -> Option<String> {
    let d = driver()?;
    let mut dev: c_int = 0;
    // SAFETY: the driver writes one CUdevice.
    if unsafe { (d.device_get)(&mut dev, ordinal as c_int) } != CUDA_SUCCESS {
        return None;
    }
    let attr = |a: c_int| {
        let mut v: c_int = 0;
        // SAFETY: the driver writes one int.
        (unsafe { (d.get_attribute)(&mut v, a, dev) } == CUDA_SUCCESS).then_some(i64::from(v))
    };
    let mut buf = [0 as c_char; 256];
    // SAFETY: the driver writes a NUL-terminated name of at most `len` bytes.
    let name = (unsafe { (d.get_name)(buf.as_mut_ptr(), buf.len() as c_int - 1, dev) }
        == CUDA_SUCCESS)
        .then(|| {
            let bytes: Vec<u8> = buf
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        });
    Some(format_properties(attr, name))
}

/// The `key=value` lines of a device's limits, from an attribute reader: attributes the driver
/// does not know are left out.
fn format_properties(attr: impl Fn(c_int) -> Option<i64>, name: Option<String>) -> String {
    let mut lines = Vec::with_capacity(PROPERTY_KEYS.len());
    if let (Some(major), Some(minor)) = (
        attr(COMPUTE_CAPABILITY_MAJOR),
        attr(COMPUTE_CAPABILITY_MINOR),
    ) {
        lines.push(format!("compute_capability={major}.{minor}"));
    }
    for (key, a) in ATTRIBUTES {
        if let Some(v) = attr(a) {
            lines.push(format!("{key}={v}"));
        }
    }
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        lines.push(format!("name={}", n.replace('\n', " ")));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_written_is_one_the_format_documents_in_its_order() {
        let text = format_properties(|a| Some(i64::from(a) * 10), Some("GPU X".into()));
        let keys: Vec<&str> = text.lines().map(|l| l.split_once('=').unwrap().0).collect();
        assert_eq!(keys, PROPERTY_KEYS);
        assert!(text.contains("multiprocessors=160\n"), "{text}");
        assert!(text.contains("compute_capability=750.760\n"), "{text}");
        assert!(text.ends_with("name=GPU X"), "{text}");
    }

    #[test]
    fn attributes_the_driver_lacks_are_left_out() {
        // An older driver without the blocks-per-multiprocessor attribute.
        let text = format_properties(|a| (a != 106).then_some(1), None);
        assert!(!text.contains("max_blocks_per_multiprocessor"), "{text}");
        assert!(!text.contains("name="), "{text}");
        assert!(text.contains("warp_size=1"), "{text}");
    }

    #[test]
    fn without_a_loaded_driver_nothing_is_queried() {
        // The test process never loads libcuda: RTLD_NOLOAD finds none, and no device has limits.
        if driver().is_none() {
            on_context_created();
            assert_eq!(text(0), None);
        }
    }
}
