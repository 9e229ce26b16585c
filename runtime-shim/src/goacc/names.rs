//! Names of GCC's construct functions (`main._omp_fn.0`) for launch events. They are local
//! symbols, which dladdr does not see, so the module's own `.symtab` is read once (ELF64) and
//! each function's name interned on first use.

use crate::loc::intern;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

static NAMES: Mutex<Option<HashMap<usize, &'static CStr>>> = Mutex::new(None);

/// The symbol name of the function at `f`, or `<module>+0x<offset>` where there is none.
pub fn kernel_name(f: usize) -> &'static CStr {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let map = names.get_or_insert_with(HashMap::new);
    if let Some(n) = map.get(&f) {
        return n;
    }
    let n = intern(&lookup(f).unwrap_or_else(|| format!("omp_fn@{f:#x}")));
    map.insert(f, n);
    n
}

fn lookup(f: usize) -> Option<String> {
    // SAFETY: `Dl_info` is a C struct of pointers and integers; all-zero bytes are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills the local out struct.
    if unsafe { libc::dladdr(f as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null()
    {
        return None;
    }
    if !info.dli_sname.is_null() && info.dli_saddr as usize == f {
        // SAFETY: dladdr's strings are NUL-terminated.
        return Some(
            unsafe { CStr::from_ptr(info.dli_sname) }
                .to_string_lossy()
                .into_owned(),
        );
    }
    let base = info.dli_fbase as usize;
    // SAFETY: as above.
    let mut path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    if path.is_empty() {
        path = "/proc/self/exe".into();
    }
    let image = std::fs::read(&path).ok()?;
    let bias = if elf_type(&image)? == 2 { 0 } else { base };
    symtab_name(&image, (f - bias) as u64).or_else(|| {
        let module = path.rsplit('/').next().unwrap_or(&path).to_string();
        Some(format!("{module}+{:#x}", f - base))
    })
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// e_type of an ELF64 little-endian image (2: executable at fixed addresses, 3: PIE or library).
fn elf_type(b: &[u8]) -> Option<u16> {
    (b.get(0..4)? == b"\x7fELF" && b.get(4) == Some(&2) && b.get(5) == Some(&1)).then_some(())?;
    u16_at(b, 16)
}

/// The name of the function symbol at address `addr` in the image's `.symtab`.
fn symtab_name(b: &[u8], addr: u64) -> Option<String> {
    let shoff = u64_at(b, 0x28)? as usize;
    let shentsize = u16_at(b, 0x3a)? as usize;
    let shnum = u16_at(b, 0x3c)? as usize;
    for s in 0..shnum {
        let sh = shoff + s * shentsize;
        if u32_at(b, sh + 4)? != 2 {
            continue; // not SHT_SYMTAB
        }
        let (off, size, link, entsize) = (
            u64_at(b, sh + 0x18)? as usize,
            u64_at(b, sh + 0x20)? as usize,
            u32_at(b, sh + 0x28)? as usize,
            u64_at(b, sh + 0x38)? as usize,
        );
        let strsh = shoff + link * shentsize;
        let stroff = u64_at(b, strsh + 0x18)? as usize;
        for e in (off..off + size).step_by(entsize.max(24)) {
            let info = *b.get(e + 4)?;
            if info & 0xf == 2 && u64_at(b, e + 8)? == addr {
                let name = stroff + u32_at(b, e)? as usize;
                let end = name + b.get(name..)?.iter().position(|&c| c == 0)?;
                return CString::new(b.get(name..end)?)
                    .ok()
                    .map(|c| c.to_string_lossy().into_owned());
            }
        }
    }
    None
}
