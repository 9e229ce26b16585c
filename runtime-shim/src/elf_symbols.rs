//! Names of static data for messages: the object symbol that starts at an address, from the
//! full symbol table (`.symtab`) of the module holding it. dladdr sees only exported symbols,
//! and a program's own globals (a C array, a Fortran module variable) are not exported unless
//! it is linked with `-rdynamic`. Read from the module's file on demand: only for a warning,
//! never on a hot path.

use std::ffi::CStr;

const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const STT_OBJECT: u8 = 1;
const ET_DYN: u16 = 3;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The object symbol whose value is `value` in a little-endian ELF64 file's symbol table
/// (`.symtab`, else `.dynsym`).
pub fn object_at(elf: &[u8], value: u64) -> Option<String> {
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum) = (
        u64_at(elf, 0x28)? as usize,
        u16_at(elf, 0x3a)? as usize,
        u16_at(elf, 0x3c)? as usize,
    );
    let section = |i: usize| -> Option<(u32, usize, usize, u32, usize)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // sh_type, sh_offset, sh_size, sh_link, sh_entsize
        Some((
            u32_at(elf, h + 4)?,
            u64_at(elf, h + 0x18)? as usize,
            u64_at(elf, h + 0x20)? as usize,
            u32_at(elf, h + 0x28)?,
            u64_at(elf, h + 0x38)? as usize,
        ))
    };
    let find = |kind: u32| (0..shnum).filter_map(section).find(|s| s.0 == kind);
    let (_, off, size, link, entsize) = find(SHT_SYMTAB).or_else(|| find(SHT_DYNSYM))?;
    let (_, str_off, str_size, _, _) = section(link as usize)?;
    let strings = elf.get(str_off..str_off.checked_add(str_size)?)?;
    if entsize < 24 {
        return None;
    }
    let syms = elf.get(off..off.checked_add(size)?)?;
    syms.chunks_exact(entsize).find_map(|s| {
        let name = u32_at(s, 0)? as usize;
        let (info, shndx, sym_value) = (*s.get(4)?, u16_at(s, 6)?, u64_at(s, 8)?);
        if info & 0xf != STT_OBJECT || shndx == 0 || sym_value != value {
            return None;
        }
        let name = CStr::from_bytes_until_nul(strings.get(name..)?)
            .ok()?
            .to_string_lossy()
            .into_owned();
        (!name.is_empty()).then_some(name)
    })
}

/// The object symbol that starts at `addr` in this process, if the file of the module mapping
/// it has one (the main program's file is read through /proc/self/exe).
pub fn data_symbol(addr: usize) -> Option<String> {
    // SAFETY: `Dl_info` is a C struct of pointers and integers; all-zero bytes are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if addr == 0
        // SAFETY: dladdr only reads the address and fills the local out struct.
        || unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dladdr's file name is NUL-terminated.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let elf = std::fs::read(&path)
        .or_else(|_| std::fs::read("/proc/self/exe"))
        .ok()?;
    // A position-independent module's symbol values are offsets from its load address.
    let base = if u16_at(&elf, 0x10)? == ET_DYN {
        info.dli_fbase as usize
    } else {
        0
    };
    object_at(&elf, addr.checked_sub(base)? as u64)
}

/// gfortran's symbol of a module variable, `__<module>_MOD_<name>`, as `<name> in module
/// <module>`; other symbols as they are.
pub fn source_name(symbol: &str) -> String {
    match symbol
        .strip_prefix("__")
        .and_then(|s| s.split_once("_MOD_"))
    {
        Some((module, name)) if !module.is_empty() && !name.is_empty() => {
            format!("{name} in module {module}")
        }
        _ => symbol.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_module_variables_read_as_the_source_says() {
        assert_eq!(source_name("__heat_mod_MOD_t"), "t in module heat_mod");
        assert_eq!(source_name("grid"), "grid");
        assert_eq!(source_name("__x_MOD_"), "__x_MOD_");
    }

    #[test]
    fn a_file_that_is_not_elf64_names_nothing() {
        assert_eq!(object_at(b"#!/bin/sh\n", 0), None);
        assert_eq!(object_at(b"\x7fELF\x02\x01\0\0", 0), None);
    }
}
