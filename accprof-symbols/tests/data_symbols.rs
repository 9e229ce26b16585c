//! Naming the host side of a transfer from the symbol table: a global array's address resolves
//! to the array, an address outside every variable (heap, stack) to nothing.

use accprof_symbols::{DataSymbol, Symbolizer};
use accprof_trace::{device, Event, EventFlags, Field, Module, StringTable};
use std::process::Command;

/// Builds a program with two global arrays and returns (exe, address of A, address of Anew).
fn program(dir: &std::path::Path) -> (String, u64, u64) {
    let src = dir.join("globals.c");
    std::fs::write(&src, "double A[4096];\ndouble Anew[4096];\nint main(void) { A[1] = 1; Anew[2] = A[1]; return (int)Anew[3]; }\n").unwrap();
    let exe = dir.join("globals");
    let out = Command::new("gcc")
        .args(["-O0", "-no-pie", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nm = Command::new("nm").arg(&exe).output().expect("nm runs");
    let text = String::from_utf8_lossy(&nm.stdout);
    let addr = |name: &str| {
        text.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
    };
    (
        exe.display().to_string(),
        addr("A").expect("A in nm"),
        addr("Anew").expect("Anew in nm"),
    )
}

#[test]
fn addresses_inside_globals_resolve_to_them_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let (exe, a, anew) = program(dir.path());
    // A non-PIE executable runs at its file addresses: bias 0.
    let module = Module {
        path: exe,
        bias: 0,
        start: 0x400000,
        end: anew + 4096 * 8 + 4096,
        build_id: Vec::new(),
    };
    let mut sym = Symbolizer::new(&[module]);
    assert_eq!(
        sym.resolve_data(a),
        Some(DataSymbol::variable("A", 0, 32768))
    );
    assert_eq!(
        sym.resolve_data(anew + 8).map(|d| (d.name, d.offset)),
        Some(("Anew".into(), 8))
    );
    assert_eq!(sym.resolve_data(0x10), None, "outside every module");
    assert_eq!(
        sym.resolve_data(anew + 32768 + 64),
        None,
        "past the last variable"
    );

    let mut strings = StringTable::default();
    let mut e = Event::new(device::MEMCPY, 1);
    e.set(Field::HostPtr, a);
    e.set(Field::Bytes, 32768);
    assert!(sym.annotate_data(&mut e, &mut strings));
    assert_eq!(strings.resolve(e.var_name()), Some("A"));
    assert!(e.flags().contains(EventFlags::ATTRIBUTED_NAME));
    // A part of the array is named as such, not as the whole array (in bytes: without debug
    // information the elements are not known).
    let mut part = Event::new(device::MEMCPY, 1);
    part.set(Field::HostPtr, a + 0x100);
    part.set(Field::Bytes, 64);
    assert!(sym.annotate_data(&mut part, &mut strings));
    assert_eq!(
        strings.resolve(part.var_name()),
        Some("A[+0x100, 64 bytes]")
    );
    // A heap address stays unnamed.
    let mut heap = Event::new(device::MEMCPY, 1);
    heap.set(Field::HostPtr, 0x7f00_0000_0000);
    assert!(!sym.annotate_data(&mut heap, &mut strings));
    assert_eq!(heap.var_name(), None);
}

#[test]
fn with_debug_information_parts_are_sections_and_statics_go_by_their_source_names() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("statics.c");
    std::fs::write(
        &src,
        "double A[4096];\nstatic double *f(int i) { static double z1[512]; z1[i] = i; return z1; }\n\
         int main(int c, char **v) { (void)v; A[c] = *f(c); return (int)A[1]; }\n",
    )
    .unwrap();
    let exe = dir.path().join("statics");
    let out = Command::new("gcc")
        .args(["-g", "-O0", "-no-pie", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nm = String::from_utf8_lossy(&Command::new("nm").arg(&exe).output().unwrap().stdout)
        .into_owned();
    let addr = |prefix: &str| {
        nm.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 3 && f[2].starts_with(prefix))
                    .then(|| u64::from_str_radix(f[0], 16).unwrap())
            })
            .unwrap_or_else(|| panic!("{prefix} in nm:\n{nm}"))
    };
    let module = Module {
        path: exe.display().to_string(),
        bias: 0,
        start: 0x400000,
        end: 0x500000,
        build_id: Vec::new(),
    };
    let mut sym = Symbolizer::new(&[module]);
    let mut strings = StringTable::default();
    let mut name = |addr: u64, bytes: u64| {
        let mut e = Event::new(device::MEMCPY, 1);
        e.set(Field::HostPtr, addr);
        e.set(Field::Bytes, bytes);
        assert!(sym.annotate_data(&mut e, &mut strings));
        strings.resolve(e.var_name()).unwrap().to_string()
    };
    assert_eq!(name(addr("A") + 0x100, 64), "A[32:8]");
    // GCC's symbol for the static is `z1.0` (or another number).
    assert!(addr("z1.") > 0);
    assert_eq!(name(addr("z1."), 4096), "z1");
}
