//! What GCC's entry points do not say about a directive, read from the program itself.
//!
//! GCC 12 lowers `parallel`, `kernels` and `serial` to the same GOACC_parallel_keyed call: the
//! construct's kind lives only in the compiler (a function attribute, not in the binary; the
//! nvptx image's launch dimensions do not tell it either, and a host-only build has none).
//! The directive's source line does: the call's return address gives it from the program's
//! debug information (`-g`), and the line starts with `#pragma acc kernels` or `!$acc
//! kernels`. Without debug information or the source file, the construct is reported as
//! `parallel`, as libgomp reports every one.

use accprof_abi::acc_construct_t;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;

/// Call sites a thread has asked about lately, direct-mapped: a program's compute constructs
/// run over and over while a tool listens, and a hit takes no lock and no hashing of the map.
const RECENT: usize = 64;

thread_local! {
    static RECENT_KINDS: Cell<[(usize, acc_construct_t); RECENT]> =
        const { Cell::new([(0, acc_construct_t::PARALLEL); RECENT]) };
}

/// The compute construct that the GCC entry point called from `ret` runs. Each call site is
/// looked up once (its module's debug information, then its source file) and remembered.
pub fn compute_kind(ret: usize) -> acc_construct_t {
    let at = (ret >> 2) % RECENT;
    let hit = RECENT_KINDS
        .try_with(|r| {
            // SAFETY: the cell is this thread's and nothing else borrows it meanwhile.
            let e = unsafe { (*r.as_ptr())[at] };
            (e.0 == ret && ret != 0).then_some(e.1)
        })
        .ok()
        .flatten();
    if let Some(k) = hit {
        return k;
    }
    let k = looked_up_kind(ret);
    let _ = RECENT_KINDS.try_with(|r| {
        // SAFETY: as above.
        unsafe { (*r.as_ptr())[at] = (ret, k) }
    });
    k
}

/// [`compute_kind`] from the process's map, filled from the program on a first call.
fn looked_up_kind(ret: usize) -> acc_construct_t {
    static KINDS: Mutex<Option<HashMap<usize, acc_construct_t>>> = Mutex::new(None);
    if let Some(&k) = KINDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(&ret)
    {
        return k;
    }
    // Looked up without the lock: reading a binary's DWARF and a source file takes a while,
    // and another thread doing the same meanwhile finds the same answer.
    let kind = crate::loc::source_line(ret)
        .and_then(|l| line_of(&l.file, l.line))
        .and_then(|text| compute_construct(&text))
        .unwrap_or(acc_construct_t::PARALLEL);
    KINDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(ret, kind);
    kind
}

/// Line `n` (from 1) of the file at `path`.
fn line_of(path: &str, n: u32) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(file)
        .lines()
        .nth(n.checked_sub(1)? as usize)?
        .ok()
}

/// The compute construct a source line's OpenACC directive names: C and C++ `#pragma acc
/// kernels ...`, Fortran `!$acc kernels ...` (free form, any case) or `c$acc`/`*$acc` in
/// column 1 (fixed form). None for a line that is no such directive.
pub fn compute_construct(line: &str) -> Option<acc_construct_t> {
    let lower = line.to_ascii_lowercase();
    let rest = if let Some(fixed) = lower
        .strip_prefix("c$acc")
        .or_else(|| lower.strip_prefix("*$acc"))
    {
        fixed
    } else {
        let t = lower.trim_start();
        if let Some(f) = t.strip_prefix("!$acc") {
            f
        } else {
            let p = t.strip_prefix('#')?.trim_start().strip_prefix("pragma")?;
            p.trim_start().strip_prefix("acc")?
        }
    };
    // The directive's name is the next word, after at least one blank.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match word.as_str() {
        "parallel" => Some(acc_construct_t::PARALLEL),
        "kernels" => Some(acc_construct_t::KERNELS),
        "serial" => Some(acc_construct_t::SERIAL),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_read_in_c_and_both_fortran_forms() {
        let k = |s| compute_construct(s);
        assert_eq!(
            k("#pragma acc kernels copy(a)"),
            Some(acc_construct_t::KERNELS)
        );
        assert_eq!(k("  #  pragma  acc serial"), Some(acc_construct_t::SERIAL));
        assert_eq!(
            k("#pragma acc parallel loop"),
            Some(acc_construct_t::PARALLEL)
        );
        assert_eq!(k("    !$ACC Kernels Loop"), Some(acc_construct_t::KERNELS));
        assert_eq!(k("c$acc serial"), Some(acc_construct_t::SERIAL));
        assert_eq!(k("*$acc kernels"), Some(acc_construct_t::KERNELS));
        assert_eq!(k("#pragma acc data copy(a)"), None);
        assert_eq!(k("#pragma acckernels"), None);
        assert_eq!(k("  x = kernels(1)"), None);
        assert_eq!(k(""), None);
    }
}
