//! The process's loaded modules (executable and shared libraries), read with dl_iterate_phdr.
//!
//! Recorded in the trace so that return addresses can be resolved after the run. Read by the
//! collector thread, never in a callback (dl_iterate_phdr takes the loader's lock).

use accprof_trace::Module;
use std::ffi::{c_int, c_void, CStr};

/// Every loaded module.
pub fn loaded_modules() -> Vec<Module> {
    let mut out: Vec<Module> = Vec::new();
    // SAFETY: the callback only reads the phdr info the loader hands it and pushes to `out`.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut out as *mut Vec<Module> as *mut c_void) };
    out
}

/// The runtime address range of the module that contains `addr`.
pub fn module_range_of(addr: *const c_void) -> Option<(u64, u64)> {
    let a = addr as u64;
    loaded_modules()
        .into_iter()
        .find(|m| m.contains(a))
        .map(|m| (m.start, m.end))
}

/// The address ranges of every loaded module's read-only segments (a program's string
/// literals lie there), and the loader's counts of modules loaded and unloaded so far (from
/// `size`-checked dl_phdr_info fields).
pub fn read_only_segments() -> (Vec<(u64, u64)>, (u64, u64)) {
    let mut out = (Vec::new(), (0, 0));
    // SAFETY: the callback only reads the phdr info the loader hands it and pushes to `out`.
    unsafe { libc::dl_iterate_phdr(Some(collect_read_only), &mut out as *mut _ as *mut c_void) };
    out
}

/// The loader's counts of modules loaded and unloaded so far: when the second moves, a
/// module's read-only memory may have been replaced.
pub fn load_counts() -> (u64, u64) {
    read_only_segments().1
}

type ReadOnly = (Vec<(u64, u64)>, (u64, u64));

unsafe extern "C" fn collect_read_only(
    info: *mut libc::dl_phdr_info,
    size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the loader passes a valid info of `size` bytes for the duration of the call,
    // and `data` is ours.
    let (info, out) = unsafe { (&*info, &mut *(data as *mut ReadOnly)) };
    if size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_tls_modid) {
        out.1 = (info.dlpi_adds, info.dlpi_subs);
    }
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W == 0 && ph.p_memsz > 0 {
            let start = info.dlpi_addr + ph.p_vaddr;
            out.0.push((start, start + ph.p_memsz));
        }
    }
    0
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the loader passes a valid info for the duration of the call, and `data` is ours.
    let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Module>)) };
    let bias = info.dlpi_addr;
    let mut start = u64::MAX;
    let mut end = 0u64;
    let mut build_id = Vec::new();
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        match ph.p_type {
            libc::PT_LOAD => {
                start = start.min(bias + ph.p_vaddr);
                end = end.max(bias + ph.p_vaddr + ph.p_memsz);
            }
            libc::PT_NOTE if build_id.is_empty() => {
                // SAFETY: a loaded PT_NOTE segment is mapped and p_memsz long.
                let notes = unsafe {
                    std::slice::from_raw_parts(
                        (bias + ph.p_vaddr) as *const u8,
                        ph.p_memsz as usize,
                    )
                };
                build_id = find_build_id(notes).unwrap_or_default();
            }
            _ => {}
        }
    }
    if start >= end {
        return 0;
    }
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    // The executable has an empty name; the vDSO has a name that is no file.
    let path = if name.is_empty() && out.is_empty() {
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    } else {
        name
    };
    out.push(Module {
        path,
        bias,
        start,
        end,
        build_id,
    });
    0
}

/// The NT_GNU_BUILD_ID note in a PT_NOTE segment.
fn find_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let align4 = |n: usize| (n + 3) & !3;
    while notes.len() >= 12 {
        let word = |i: usize| {
            u32::from_ne_bytes([notes[i], notes[i + 1], notes[i + 2], notes[i + 3]]) as usize
        };
        let (namesz, descsz, kind) = (word(0), word(4), word(8));
        let name_end = 12 + align4(namesz);
        let desc_end = name_end.checked_add(align4(descsz))?;
        if desc_end > notes.len() {
            return None;
        }
        if kind == 3 && namesz == 4 && &notes[12..16] == b"GNU\0" {
            return Some(notes[name_end..name_end + descsz].to_vec());
        }
        notes = &notes[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_test_binary_and_libc() {
        let mods = loaded_modules();
        assert!(mods[0].path.ends_with(
            std::env::current_exe()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
        ));
        let here = finds_this_test_binary_and_libc as *const c_void;
        assert!(module_range_of(here).is_some());
        assert!(mods.iter().any(|m| m.path.contains("libc.so")));
        // Debian's toolchain gives every binary a build id.
        assert!(!mods[0].build_id.is_empty());
    }
}
