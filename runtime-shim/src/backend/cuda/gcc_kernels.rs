//! Running GCC's nvptx kernels: the image's PTX objects linked by the driver's JIT linker into
//! one module (once per image, cached), and each launch given GCC's argument convention: one
//! parameter, the device address of the array of the construct's device addresses. The arrays
//! are written into a ring of device memory per stream: a slot is rewritten only by a copy
//! enqueued on the same stream after the kernel that read it, so stream order keeps it safe.

use super::{check, P};
use crate::backend::GccKernel;
use crate::error::{AccError, Result};
use cudarc::driver::sys::{self, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUstream};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

/// Bytes of each stream's argument ring.
const RING: usize = 1 << 20;

struct Ring {
    base: CUdeviceptr,
    next: usize,
}

#[derive(Default)]
pub struct GccKernels {
    modules: Mutex<HashMap<usize, P>>,
    /// (image, entry name address) -> (function, its most threads per block).
    functions: Mutex<HashMap<(usize, usize), (P, i32)>>,
    rings: Mutex<HashMap<usize, Ring>>,
}

impl GccKernels {
    fn module(&self, k: &GccKernel) -> Result<CUmodule> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(&k.image) {
            return Ok(m.0 as CUmodule);
        }
        // SAFETY: the PTX objects are the program's (address, length) pairs, alive while its
        // image is registered; the link state is destroyed after the module is loaded.
        let module = unsafe {
            let mut state: sys::CUlinkState = std::ptr::null_mut();
            check(
                sys::cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut state),
                "cuLinkCreate",
            )?;
            let linked = (|| -> Result<CUmodule> {
                for (i, &(code, len)) in k.ptx.iter().enumerate() {
                    // GCC's PTX objects end with their NUL, which the length includes or not.
                    let bytes = std::slice::from_raw_parts(code as *const u8, len);
                    let len = bytes.iter().position(|&b| b == 0).unwrap_or(len);
                    let name = std::ffi::CString::new(format!("gcc-ptx-{i}")).unwrap_or_default();
                    check(
                        sys::cuLinkAddData_v2(
                            state,
                            sys::CUjitInputType::CU_JIT_INPUT_PTX,
                            code as *mut c_void,
                            len,
                            name.as_ptr(),
                            0,
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                        ),
                        "cuLinkAddData (GCC's PTX)",
                    )?;
                }
                let (mut cubin, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
                check(
                    sys::cuLinkComplete(state, &mut cubin, &mut size),
                    "cuLinkComplete (GCC's PTX)",
                )?;
                let mut module: CUmodule = std::ptr::null_mut();
                check(
                    sys::cuModuleLoadData(&mut module, cubin),
                    "cuModuleLoadData (GCC's image)",
                )?;
                Ok(module)
            })();
            sys::cuLinkDestroy(state);
            linked?
        };
        modules.insert(k.image, P(module as usize));
        Ok(module)
    }

    fn function(&self, k: &GccKernel) -> Result<(CUfunction, i32)> {
        let key = (k.image, k.entry.as_ptr() as usize);
        if let Some(&(f, t)) = self
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok((f.0 as CUfunction, t));
        }
        let module = self.module(k)?;
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module and a NUL-terminated name.
        unsafe {
            sys::cuModuleGetFunction(&mut f, module, k.entry.as_ptr());
        }
        if f.is_null() {
            return Err(AccError::Device(format!(
                "kernel {} not in GCC's image",
                k.entry.to_string_lossy()
            )));
        }
        let mut threads = 0;
        // SAFETY: a function of the loaded module.
        unsafe {
            sys::cuFuncGetAttribute(
                &mut threads,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                f,
            )
        };
        self.functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (P(f as usize), threads));
        Ok((f, threads))
    }

    /// The device address and size of the global `name` of `k`'s image (an `acc declare`
    /// variable), as libgomp's plugin finds it when it loads the image.
    pub fn variable(&self, k: &GccKernel, name: &std::ffi::CStr) -> Result<(u64, usize)> {
        let module = self.module(k)?;
        let (mut dev, mut bytes): (CUdeviceptr, usize) = (0, 0);
        check(
            // SAFETY: a loaded module, a NUL-terminated name and two out values.
            unsafe { sys::cuModuleGetGlobal_v2(&mut dev, &mut bytes, module, name.as_ptr()) },
            "cuModuleGetGlobal (an acc declare variable of GCC's image)",
        )?;
        Ok((dev, bytes))
    }

    /// Copies `args` into `s`'s ring (in stream order), followed by the `inline` values (each
    /// `args[i]` of theirs then holds its value's device address), and returns the device
    /// address of the block.
    fn args(&self, s: CUstream, args: &[u64], inline: &[(usize, u64)]) -> Result<CUdeviceptr> {
        let bytes = ((args.len() + inline.len()) * 8).max(8);
        if bytes > RING {
            return Err(AccError::InvalidArgument(format!(
                "a construct with {} mapped variables",
                args.len()
            )));
        }
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        let ring = match rings.get_mut(&(s as usize)) {
            Some(r) => r,
            None => {
                let mut base: CUdeviceptr = 0;
                check(
                    // SAFETY: an allocation in the current context.
                    unsafe { sys::cuMemAlloc_v2(&mut base, RING) },
                    "cuMemAlloc (kernel arguments)",
                )?;
                rings.entry(s as usize).or_insert(Ring { base, next: 0 })
            }
        };
        if ring.next + bytes > RING {
            ring.next = 0;
        }
        let at = ring.base + ring.next as u64;
        ring.next += bytes.next_multiple_of(256);
        // Most constructs pass no value inline: their array goes as it is, with no copy made.
        let with_values;
        let block = if inline.is_empty() {
            args
        } else {
            with_values = crate::backend::args_with_inline(args, inline, at);
            &with_values
        };
        if !block.is_empty() {
            // From pageable memory the driver takes a copy of the bytes before it returns.
            check(
                // SAFETY: `block` is valid for its length; `at` is inside the ring.
                unsafe { sys::cuMemcpyHtoDAsync_v2(at, block.as_ptr().cast(), block.len() * 8, s) },
                "cuMemcpyHtoDAsync (kernel arguments)",
            )?;
        }
        Ok(at)
    }

    /// Launches `k` on `s` with the device addresses `args` and GCC's dimensions (gang, worker,
    /// vector; 0 where the device decides, as libgomp's plugin does: a vector of 32, the most
    /// workers the kernel's registers allow, and enough gangs to fill every multiprocessor).
    pub fn launch(
        &self,
        dev: CUdevice,
        s: CUstream,
        k: &GccKernel,
        args: &[u64],
        inline: &[(usize, u64)],
        dims: [u32; 3],
    ) -> Result<[u32; 3]> {
        let (f, threads) = self.function(k)?;
        let vector = if dims[2] == 0 { 32 } else { dims[2] };
        let workers = if dims[1] == 0 {
            ((threads.max(32) as u32) / vector).clamp(1, 32)
        } else {
            dims[1]
        };
        let gangs = if dims[0] == 0 {
            let mut sms = 0;
            // SAFETY: an attribute query of the device in use.
            unsafe {
                sys::cuDeviceGetAttribute(
                    &mut sms,
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    dev,
                )
            };
            (sms.max(1) as u32) * (2048 / (workers * vector)).max(1) * 2
        } else {
            dims[0]
        };
        let mut block = self.args(s, args, inline)?;
        let mut params = [&mut block as *mut CUdeviceptr as *mut c_void];
        check(
            // SAFETY: GCC's kernels take one 8-byte parameter (the device address of the argument
            // block), which `params` points at and which outlives the call; `f` and `s` are live.
            unsafe {
                sys::cuLaunchKernel(
                    f,
                    gangs,
                    1,
                    1,
                    vector,
                    workers,
                    1,
                    0,
                    s,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            "cuLaunchKernel (GCC's kernel)",
        )?;
        Ok([gangs, workers, vector])
    }
}
