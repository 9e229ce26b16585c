//! The checker's report: each finding and each host access it saw, with its places resolved to
//! source lines (the program's debug information), written as JSON to the ACCSHIM_CHECK file
//! when the program exits. `accprof check` reads it (accprof-cli/src/commands/check).
//!
//! ```json
//! {"accshim_check": 1, "program": "/path/app", "pid": 123,
//!  "findings": [{"kind": "stale_host_read", "detail": "", "host": "0x7f..", "bytes": 800, "name": "a",
//!                "at": {"file": "a.c", "line": 12}, "construct": {...}, "other": {...},
//!                "write": false}],
//!  "host_accesses": [{"host": "0x7f..", "bytes": 800, "at": {...}, "write": false,
//!                     "time_ns": 123}]}
//! ```
//!
//! `at`, `construct` and `other` are absent where unknown. `name` is the clause's text, or the
//! symbol-table name of a global or module array, or empty.

use super::origin;
use super::state::{Place, State};
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::Mutex;

static PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

pub fn set_path(p: PathBuf) {
    *PATH.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
}

/// A range of code addresses, [start, end).
pub type CodeRange = (usize, usize);

/// The shim's own code, and the code ranges of the program's own modules (its executable and
/// the libraries that are not the system's or accprof's), from the loaded modules.
pub fn code_ranges() -> (Option<CodeRange>, Vec<CodeRange>) {
    struct Acc {
        own: Option<(usize, usize)>,
        program: Vec<(usize, usize)>,
        me: usize,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes its info and our accumulator, valid for the call.
        let (info, acc) = unsafe { (&*info, &mut *(data as *mut Acc)) };
        let bias = info.dlpi_addr as usize;
        // SAFETY: the loader's NUL-terminated module name.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
        let mut ranges = Vec::new();
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: the module's program headers, dlpi_phnum of them.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                let s = bias.wrapping_add(ph.p_vaddr as usize);
                ranges.push((s, s + ph.p_memsz as usize));
            }
        }
        if ranges.iter().any(|&(s, e)| acc.me >= s && acc.me < e) {
            acc.own = ranges.first().copied();
        } else if is_program_module(&name) {
            acc.program.extend(ranges);
        }
        0
    }
    let mut acc = Acc {
        own: None,
        program: Vec::new(),
        me: code_ranges as *const () as usize,
    };
    // SAFETY: `visit` matches the callback type and only reads what it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut acc as *mut Acc as *mut libc::c_void) };
    (acc.own, acc.program)
}

/// The executable ("") and libraries outside the system's directories, but not accprof's.
fn is_program_module(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    let file = name.rsplit('/').next().unwrap_or(name);
    let system = [
        "/lib/",
        "/lib64/",
        "/usr/lib",
        "/usr/local/lib/gcc",
        "/opt/nvidia",
    ]
    .iter()
    .any(|d| name.starts_with(d));
    let ours = file.starts_with("libaccshim") || file.starts_with("libaccprof");
    !(system || ours || file.starts_with("linux-vdso") || file.starts_with("ld-linux"))
}

/// The program call whose return address is `ra` looks like one: a call instruction ends there.
fn after_call(ra: usize) -> bool {
    // SAFETY: `ra` lies in the program's code (checked by the caller), whose pages are
    // readable; the 7 bytes before it are in the same module's code.
    let b = unsafe { std::slice::from_raw_parts((ra - 7) as *const u8, 7) };
    b[2] == 0xe8                                  // call rel32
        || (b[1] == 0xff && b[2] & 0x38 == 0x10)  // call [rip+disp32] / [reg+disp32]
        || (b[5] == 0xff && b[6] & 0xf8 == 0xd0)  // call reg
        || (b[4] == 0xff && b[5] & 0x38 == 0x10)  // call [reg+disp8]
        || (b[3] == 0xff && b[4] & 0x38 == 0x10) // call [reg+index+disp8]
}

/// The source line of a place, as (file, line).
fn resolve(p: &Place) -> Option<(String, u32)> {
    let l = match p {
        Place::Unknown => return None,
        Place::Call(ra) => crate::loc::source_line(*ra),
        Place::Access { pc, stack } => {
            if origin::is_program_code(*pc) {
                // The faulting instruction itself: source_line looks one byte before.
                crate::loc::source_line(pc + 1)
            } else {
                stack
                    .iter()
                    .find(|&&ra| after_call(ra))
                    .and_then(|&ra| crate::loc::source_line(ra))
            }
        }
    }?;
    Some((l.file, l.line))
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn place_json(key: &str, p: &Place) -> String {
    match resolve(p) {
        Some((file, line)) => format!(
            ", {}: {{\"file\": {}, \"line\": {line}}}",
            json_str(key),
            json_str(&file)
        ),
        None => String::new(),
    }
}

/// The program's name for data the clause did not name: the global array at `host`, or the
/// Fortran module array there.
fn static_name(host: usize) -> String {
    crate::loc::symbol_of(host)
        .or_else(|| crate::elf_symbols::data_symbol(host))
        .map(|s| crate::elf_symbols::source_name(&s))
        .unwrap_or_default()
}

/// Writes the report (once, at exit).
pub fn write(st: &State) {
    let Some(path) = PATH.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    let mut out = String::new();
    let program = std::fs::read_link("/proc/self/exe")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.push_str(&format!(
        "{{\"accshim_check\": 1, \"program\": {}, \"pid\": {},\n \"findings\": [",
        json_str(&program),
        std::process::id()
    ));
    for (i, f) in st.findings.iter().enumerate() {
        let name = if f.name.is_empty() {
            static_name(f.host)
        } else {
            f.name.clone()
        };
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        out.push_str(&format!(
            "{{\"kind\": {}, \"detail\": {}, \"host\": \"{:#x}\", \"bytes\": {}, \"name\": {}{}{}{}, \"write\": {}}}",
            json_str(f.kind),
            json_str(f.detail),
            f.host,
            f.bytes,
            json_str(&name),
            place_json("at", &f.at),
            place_json("construct", &f.construct),
            place_json("other", &f.other),
            f.write
        ));
    }
    out.push_str("],\n \"host_accesses\": [");
    for (i, a) in st.accesses.iter().enumerate() {
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        out.push_str(&format!(
            "{{\"host\": \"{:#x}\", \"bytes\": {}{}, \"write\": {}, \"time_ns\": {}}}",
            a.host,
            a.bytes,
            place_json("at", &a.at),
            a.write,
            a.time_ns
        ));
    }
    out.push_str("]}\n");
    if let Err(e) = std::fs::write(&path, out) {
        eprintln!(
            "accshim: cannot write the check report {}: {e}",
            path.display()
        );
    }
}
