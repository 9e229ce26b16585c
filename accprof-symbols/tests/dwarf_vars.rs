//! What accprof reads from a program's DWARF to name host memory: globals and function statics
//! by their source names with their element sizes, Fortran allocatables' descriptors told apart
//! from arrays, local arrays by size, and pointers' element sizes.

use accprof_symbols::dwarf_vars;
use std::path::Path;
use std::process::Command;

fn build(dir: &Path, compiler: &str, file: &str, src: &str) -> Vec<u8> {
    let path = dir.join(file);
    std::fs::write(&path, src).unwrap();
    let exe = dir.join("prog");
    let out = Command::new(compiler)
        .args(["-g", "-O2", "-o"])
        .arg(&exe)
        .arg(&path)
        .output()
        .expect("the compiler runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(exe).unwrap()
}

fn by_name<'a>(v: &'a dwarf_vars::DwarfVars, name: &str) -> &'a dwarf_vars::StaticVar {
    v.statics
        .values()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no static {name}: {:?}", v.statics))
}

#[test]
fn c_globals_statics_locals_and_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(
        dir.path(),
        "gcc",
        "v.c",
        "#include <stdlib.h>\ndouble A[1024];\nstatic float B[16][8];\n\
         static double relax(int n) {\n    double z[8192];\n    static double z1[4096];\n\
         double *p = malloc(n * sizeof *p);\n\
         for (int i = 0; i < n; i++) p[i] = z[i % 8192] = z1[i % 4096] = B[i % 16][i % 8] = i;\n\
         double s = 0; for (int i = 0; i < n; i++) s += p[i] + z[(i * 7) % 8192] + z1[(i * 3) % 4096];\n\
         free(p);\n    return s + B[1][1];\n}\n\
         int main(int argc, char **argv) { (void)argv; return (int)relax(argc * 100); }\n",
    );
    let v = dwarf_vars::read(&exe);
    let a = by_name(&v, "A");
    assert_eq!(
        (a.size, a.element_bytes, a.descriptor),
        (Some(8192), Some(8), false)
    );
    let b = by_name(&v, "B");
    assert_eq!((b.size, b.element_bytes), (Some(512), Some(4)));
    // GCC's symbol is `z1.0` or so; DWARF has the source's name.
    assert_eq!(by_name(&v, "z1").size, Some(32768));
    assert_eq!(v.locals_of_size(65536), ["z"]);
    assert_eq!(v.element_bytes_of("p"), Some(8));
    assert_eq!(v.element_bytes_of("g->p"), Some(8));
}

#[test]
fn fortran_allocatables_are_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(
        dir.path(),
        "gfortran",
        "f.f90",
        "module fields\n  implicit none\n  real(8), allocatable :: t(:,:), tnew(:,:)\n  real(4) :: w(100)\nend module fields\n\
         program p\n  use fields\n  allocate(t(10,10), tnew(10,10))\n  t = 1; tnew = 2; w = 3\n\
         print *, sum(t) + sum(tnew) + sum(w)\nend program p\n",
    );
    let v = dwarf_vars::read(&exe);
    let t = by_name(&v, "t");
    assert!(t.descriptor, "{t:?}");
    assert_eq!(t.element_bytes, Some(8));
    let w = by_name(&v, "w");
    assert_eq!(
        (w.size, w.element_bytes, w.descriptor),
        (Some(400), Some(4), false)
    );
}
