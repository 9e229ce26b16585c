//! Globals under `acc declare` (create, copyin, device_resident): present on the device for the
//! program's life, from the device's initialisation on, as libgomp maps them when it loads an
//! image. GCC leaves them out of every directive's map (its compute code names them directly),
//! so no data clause ever moves them: the device starts with their initializers, and only
//! kernels and the acc_update_* / acc_memcpy_* routines change either copy.
//!
//! - On CUDA the device copy is the nvptx image's own variable (cuModuleGetGlobal on the linked
//!   image), which GCC's kernels use.
//! - On the emulated device GCC's host-fallback code, which runs as the kernel, addresses the
//!   host's variable: the device copy lives in device memory, and is put in the host variable's
//!   place for the duration of each kernel (the host's bytes set aside and put back after). So
//!   that no host code sees the swap, kernels then run one at a time, and a compute construct
//!   waits for its kernel even when it is asynchronous; a program without declared globals is
//!   not affected. Host code of another thread touching such a global while a kernel runs would
//!   see the device's bytes.
//!
//! `declare link` globals are data like any other: GCC maps them in each directive's clauses.
//! On CUDA the image's pointer for one is set when its data is mapped (kernels of `acc routine`
//! functions reach the data through it).

use super::var_tables::{self, DeclaredVar};
use crate::backend::{Backend, QueueId, ACC_DEVICE_EMULATED, SYNC};
use crate::error::Result;
use crate::present::{Entry, PresentTable};
use accprof_abi::acc_device_t;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// An emulated device copy of a declared global.
#[derive(Clone, Copy, Debug)]
struct Swap {
    host: usize,
    dev: usize,
    bytes: usize,
}

/// What the device in use holds for the declared globals.
#[derive(Default)]
struct Loaded {
    /// Emulated device: the copies swapped in around each kernel.
    swaps: Vec<Swap>,
    /// CUDA: each `declare link` global's host range and its image pointer's device address.
    links: Vec<(usize, usize, u64)>,
}

/// Published by [`load`] when the device is initialised; never freed (a kernel may still read
/// the previous one while a new device loads).
static LOADED: AtomicPtr<Loaded> = AtomicPtr::new(std::ptr::null_mut());
/// Held while a kernel runs with the device copies in the host variables' place.
static SWAPPED: Mutex<()> = Mutex::new(());

fn loaded() -> Option<&'static Loaded> {
    // SAFETY: published values are leaked and never freed.
    unsafe { LOADED.load(Ordering::Acquire).as_ref() }
}

/// Maps the program's declared globals on a device of `device_type` being initialised (not
/// yet published): an entry in its present `table` for each, never released by a data exit.
pub fn load(
    backend: &dyn Backend,
    device_type: acc_device_t,
    table: &mut PresentTable,
) -> Result<()> {
    let vars = var_tables::declared();
    let mut loaded = Loaded::default();
    if !vars.is_empty() {
        if device_type == acc_device_t::NVIDIA {
            load_image_variables(backend, table, &vars, &mut loaded)?;
        } else if device_type == ACC_DEVICE_EMULATED {
            load_emulated_copies(backend, table, &vars, &mut loaded)?;
        }
    }
    let empty = loaded.swaps.is_empty() && loaded.links.is_empty();
    let p = if empty {
        std::ptr::null_mut()
    } else {
        Box::into_raw(Box::new(loaded))
    };
    LOADED.store(p, Ordering::Release);
    Ok(())
}

fn declared_entry(v: &DeclaredVar, dev: u64, image_owned: bool) -> Entry {
    let mut e = Entry::new(v.host, v.bytes, dev, std::ptr::null());
    e.dynamic = 1;
    e.declared = true;
    // The image's variable is not ours to free.
    e.mapped = image_owned;
    e
}

fn load_emulated_copies(
    backend: &dyn Backend,
    table: &mut PresentTable,
    vars: &[DeclaredVar],
    out: &mut Loaded,
) -> Result<()> {
    for v in vars.iter().filter(|v| !v.link) {
        let dev = backend.alloc(v.bytes)?;
        let init = var_tables::initial_contents(v.host, v.bytes).unwrap_or_else(|| {
            // SAFETY: a declared global of `bytes` bytes in a loaded object.
            unsafe { std::slice::from_raw_parts(v.host as *const u8, v.bytes) }.to_vec()
        });
        backend.upload(SYNC, dev, init.as_ptr(), v.bytes)?;
        table.insert(declared_entry(v, dev, false));
        out.swaps.push(Swap {
            host: v.host,
            dev: dev as usize,
            bytes: v.bytes,
        });
    }
    Ok(())
}

fn load_image_variables(
    backend: &dyn Backend,
    table: &mut PresentTable,
    vars: &[DeclaredVar],
    out: &mut Loaded,
) -> Result<()> {
    for img in super::images::registered()
        .filter(|i| i.target_type == super::images::GOMP_DEVICE_NVIDIA_PTX && i.host_table != 0)
    {
        // SAFETY: GCC's host table (see var_tables): its variable table's start.
        let table_start = unsafe { *(img.host_table as *const usize).add(2) };
        let names = var_tables::nvptx_var_names(img.target_data);
        let Some(image) = super::images::nvptx_image(img) else {
            continue;
        };
        for v in vars.iter().filter(|v| v.table == table_start) {
            let Some(name) = names.get(v.index) else {
                continue;
            };
            let Some((dev, bytes)) = backend.image_variable(&image, name)? else {
                continue;
            };
            if v.link {
                out.links.push((v.host, v.bytes, dev));
            } else if bytes == v.bytes {
                table.insert(declared_entry(v, dev, true));
            } else {
                return Err(crate::error::AccError::Device(format!(
                    "the image's variable {} has {bytes} bytes, the host's {} (an image built for another program?)",
                    name.to_string_lossy(),
                    v.bytes
                )));
            }
        }
    }
    Ok(())
}

/// Whether kernels run with declared globals swapped in (the emulated device, with some).
pub fn swapping() -> bool {
    loaded().is_some_and(|l| !l.swaps.is_empty())
}

/// Runs a kernel's host code with the emulated device copies of the declared globals in the
/// host variables' place.
pub fn with_device_copies<R>(kernel: impl FnOnce() -> R) -> R {
    let Some(l) = loaded().filter(|l| !l.swaps.is_empty()) else {
        return kernel();
    };
    let _one_at_a_time = SWAPPED.lock().unwrap_or_else(|e| e.into_inner());
    let host_bytes: Vec<Vec<u8>> = l
        .swaps
        .iter()
        .map(|s| {
            // SAFETY: a declared global and its device copy of `bytes` bytes each, both
            // writable, distinct, and touched by no one else while SWAPPED is held.
            unsafe {
                let saved = std::slice::from_raw_parts(s.host as *const u8, s.bytes).to_vec();
                std::ptr::copy_nonoverlapping(s.dev as *const u8, s.host as *mut u8, s.bytes);
                saved
            }
        })
        .collect();
    struct Back<'a>(&'a [Swap], Vec<Vec<u8>>);
    impl Drop for Back<'_> {
        fn drop(&mut self) {
            for (s, saved) in self.0.iter().zip(&self.1) {
                // SAFETY: as above; also when the kernel unwinds.
                unsafe {
                    std::ptr::copy_nonoverlapping(s.host as *const u8, s.dev as *mut u8, s.bytes);
                    std::ptr::copy_nonoverlapping(saved.as_ptr(), s.host as *mut u8, s.bytes);
                }
            }
        }
    }
    let _back = Back(&l.swaps, host_bytes);
    kernel()
}

/// A range just mapped at `dev`: if it is a `declare link` global's (CUDA), the image's
/// pointer for it is set, in the order of queue `q`.
pub fn mapped(
    backend: &dyn Backend,
    q: QueueId,
    host: usize,
    bytes: usize,
    dev: u64,
) -> Result<()> {
    let Some(l) = loaded() else {
        return Ok(());
    };
    for &(h, b, ptr) in &l.links {
        if h == host && b == bytes {
            backend.write_u64(q, ptr, dev)?;
        }
    }
    Ok(())
}
