//! Where a program's `acc declare` globals are: GCC's variable tables, pairs of (address, size)
//! of every global under `declare create/copyin/device_resident/link` (a `link` variable's
//! size has its top bit set), and what each held when the program was loaded.
//!
//! A table is found in the host table of each offload image the program registers
//! (GOMP_offload_register_ver), and, since a program built without an offload compiler
//! registers none, in the `.gnu.offload_vars` section that every object linked with `-fopenacc`
//! has (read from the object's file: section headers survive `strip`). The initial contents are
//! the object's file bytes (the initializer a GPU's image starts with too), zeros past them.

use super::images;
use std::ffi::{c_int, c_void, CStr};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// A global under `acc declare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredVar {
    pub host: usize,
    pub bytes: usize,
    /// `declare link`: mapped by data clauses like any data, never present on its own.
    pub link: bool,
    /// Its table's start (which image's variables it belongs to) and its index there.
    pub table: usize,
    pub index: usize,
}

const LINK_BIT: usize = 1 << (usize::BITS - 1);

/// The variables of one table at `[start, end)`.
fn read_table(start: usize, end: usize) -> Vec<DeclaredVar> {
    let pairs = end.saturating_sub(start) / (2 * std::mem::size_of::<usize>());
    (0..pairs)
        .map(|i| {
            let p = (start + i * 2 * std::mem::size_of::<usize>()) as *const usize;
            // SAFETY: GCC's variable table: `pairs` pairs of words in the program's loaded
            // image, which stays mapped for the program's life.
            let (host, size) = unsafe { (*p, *p.add(1)) };
            DeclaredVar {
                host,
                bytes: size & !LINK_BIT,
                link: size & LINK_BIT != 0,
                table: start,
                index: i,
            }
        })
        .collect()
}

/// Every declared global of the objects loaded now.
pub fn declared() -> Vec<DeclaredVar> {
    let mut tables: Vec<(usize, usize)> = images::registered()
        .filter(|i| i.host_table != 0)
        .map(|i| {
            let t = i.host_table as *const usize;
            // SAFETY: GCC's host table is four words: function table start and end, variable
            // table start and end; it lives in the program's image while registered.
            unsafe { (*t.add(2), *t.add(3)) }
        })
        .collect();
    for object in loaded_objects() {
        if let Some(section) = offload_vars_section(&object) {
            tables.push(section);
        }
    }
    tables.sort_unstable();
    tables.dedup_by_key(|t| t.0);
    tables
        .into_iter()
        .flat_map(|(start, end)| read_table(start, end))
        .filter(|v| v.host != 0 && v.bytes != 0)
        .collect()
}

/// A loaded object: its file, load bias and program headers.
struct Object {
    path: std::path::PathBuf,
    base: usize,
    phdrs: Vec<libc::Elf64_Phdr>,
}

fn loaded_objects() -> Vec<Object> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the callback's duration, and `data`
        // is the Vec below.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Object>)) };
        let name = if info.dlpi_name.is_null() {
            ""
        } else {
            // SAFETY: a NUL-terminated name owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_str()
                .unwrap_or("")
        };
        let path = match name {
            "" if out.is_empty() => "/proc/self/exe".into(),
            "" => return 0, // the vDSO
            n => std::path::PathBuf::from(n),
        };
        let phdrs = if info.dlpi_phdr.is_null() {
            Vec::new()
        } else {
            // SAFETY: dlpi_phnum program headers at dlpi_phdr.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }.to_vec()
        };
        out.push(Object {
            path,
            base: info.dlpi_addr as usize,
            phdrs,
        });
        0
    }
    let mut out: Vec<Object> = Vec::new();
    // SAFETY: the callback only reads what the loader passes and appends to `out`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<Object>).cast()) };
    out
}

fn read_at(f: &File, at: u64, len: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, at).ok()?;
    Some(b)
}

fn word(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn half(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn quarter(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The loaded address range of the object's `.gnu.offload_vars` section, from the section
/// headers of its file (only the headers and their names are read).
fn offload_vars_section(o: &Object) -> Option<(usize, usize)> {
    let f = File::open(&o.path).ok()?;
    let eh = read_at(&f, 0, 64)?;
    if eh.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum, shstrndx) = (
        word(&eh, 0x28)?,
        half(&eh, 0x3a)? as usize,
        half(&eh, 0x3c)? as usize,
        half(&eh, 0x3e)? as usize,
    );
    if shentsize < 64 || shnum == 0 || shnum > 1 << 16 {
        return None;
    }
    let sh = read_at(&f, shoff, shentsize * shnum)?;
    let header = |i: usize| sh.get(i * shentsize..(i + 1) * shentsize);
    let names = header(shstrndx)?;
    let (names_off, names_size) = (word(names, 0x18)?, word(names, 0x20)? as usize);
    let names = read_at(&f, names_off, names_size.min(1 << 20))?;
    (0..shnum).find_map(|i| {
        let h = header(i)?;
        let name = quarter(h, 0)? as usize;
        let name = CStr::from_bytes_until_nul(names.get(name..)?).ok()?;
        if name.to_bytes() != b".gnu.offload_vars" {
            return None;
        }
        let (addr, size) = (word(h, 0x10)? as usize, word(h, 0x20)? as usize);
        let start = o.base.checked_add(addr)?;
        Some((start, start.checked_add(size)?))
    })
}

/// The bytes `[host, host+bytes)` held when their object was loaded (its file's bytes, zeros
/// past the file's part of the segment), or None if no loaded object's file holds them.
pub fn initial_contents(host: usize, bytes: usize) -> Option<Vec<u8>> {
    let objects = loaded_objects();
    let (o, ph) = objects.iter().find_map(|o| {
        let rel = host.checked_sub(o.base)? as u64;
        o.phdrs
            .iter()
            .find(|p| {
                p.p_type == libc::PT_LOAD
                    && rel >= p.p_vaddr
                    && rel + bytes as u64 <= p.p_vaddr + p.p_memsz
            })
            .map(|p| (o, *p))
    })?;
    let f = File::open(&o.path).ok()?;
    let rel = (host - o.base) as u64 - ph.p_vaddr;
    let mut out = vec![0u8; bytes];
    let in_file = ph.p_filesz.saturating_sub(rel).min(bytes as u64) as usize;
    if in_file > 0 {
        f.read_exact_at(&mut out[..in_file], ph.p_offset + rel)
            .ok()?;
    }
    Some(out)
}

/// The names GCC gave an nvptx image's variables (its target data: the name array at offset
/// 16, their count at 24), in the order of its host table's variables.
pub fn nvptx_var_names(target_data: usize) -> Vec<&'static CStr> {
    let data = target_data as *const u8;
    // SAFETY: GCC 12's nvptx target data (mkoffload's layout), alive while registered; the
    // name array has the count it states, each name NUL-terminated.
    unsafe {
        let names = *(data.add(16) as *const *const *const std::ffi::c_char);
        let n = *(data.add(24) as *const u32) as usize;
        if names.is_null() {
            return Vec::new();
        }
        (0..n)
            .filter_map(|i| {
                let p = *names.add(i);
                (!p.is_null()).then(|| CStr::from_ptr(p))
            })
            .collect()
    }
}
