//! Advice a user can paste and trust, on tests/apps programs of the shapes real codes have:
//! heap arrays in locals and a struct behind a function that the time loop calls, a stack array
//! and a function static, local arrays of one size, std::vectors, a C++ class member, Fortran module allocatables allocated on one line
//! with a data region ending its subroutine, acc_malloc scratch and neighbouring globals. Each
//! runs on the bundled runtime with its transfers hashed (`accprof run --content`); the names in
//! the report and advice are the source's; the advised data region is pasted where the advice
//! says, the program rebuilt and run again: same output, the transfers gone.

use accprof_integration_tests::{accprof_cli, scratch, stderr, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn app(name: &str) -> PathBuf {
    workspace_root().join("tests/apps").join(name)
}

/// Whether GCC builds nvptx images here: kernels calling libm then need `-foffload=-lm`.
fn offload_compiler() -> bool {
    let out = Command::new("gcc")
        .arg("-print-prog-name=accel/nvptx-none/mkoffload")
        .output()
        .expect("gcc runs");
    Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_file()
}

fn build(compiler: &str, dir: &Path, source: &str, exe: &str) {
    let mut cmd = Command::new(compiler);
    cmd.current_dir(dir)
        .args(["-fopenacc", "-g", "-O2", source, "-o", exe, "-lm"]);
    if offload_compiler() {
        cmd.arg("-foffload=-lm");
    }
    let out = cmd.output().expect("the compiler runs");
    assert!(
        out.status.success(),
        "{compiler} {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn accprof(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(accprof_cli())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "accprof {args:?}: {}", stderr(&out));
    out
}

/// Runs `exe` on the bundled runtime with its transfers hashed; returns its output.
fn profile(dir: &Path, exe: &str, trace: &str) -> String {
    let out = accprof(
        dir,
        &[
            "run",
            "-q",
            "--content",
            "--runtime",
            "shim",
            "-o",
            trace,
            "--",
            &format!("./{exe}"),
        ],
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_slice(&accprof(dir, args).stdout).expect("JSON")
}

fn findings(dir: &Path, trace: &str) -> Vec<Value> {
    json(dir, &["advise", "--format", "json", trace])["findings"]
        .as_array()
        .unwrap()
        .clone()
}

fn variables(dir: &Path, trace: &str) -> Vec<String> {
    let r = json(dir, &["report", "--format", "json", trace]);
    r["traces"][0]["profile"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect()
}

fn transfer_bytes(dir: &Path, trace: &str) -> u64 {
    let r = json(dir, &["report", "--format", "json", trace]);
    let s = &r["traces"][0]["profile"]["summary"];
    s["upload_bytes"].as_u64().unwrap() + s["download_bytes"].as_u64().unwrap()
}

/// `source` (tests/apps) built with `compiler` as `exe` in a scratch folder named `name`, and
/// profiled there into `t.trace`; returns the folder.
fn profiled(name: &str, compiler: &str, source: &str, exe: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::copy(app(source), dir.join(source)).unwrap();
    build(compiler, &dir, source, exe);
    profile(&dir, exe, "t.trace");
    dir
}

/// The data_region finding's directive (the first backticked `#pragma acc data` or `!$acc
/// data` of its change) and the loop it goes around.
fn region(f: &Value) -> (String, usize, usize) {
    let change = f["change"].as_str().unwrap();
    let directive = change
        .split('`')
        .find(|s| s.starts_with("#pragma acc data ") || s.starts_with("!$acc data "))
        .unwrap_or_else(|| panic!("no data directive in: {change}"))
        .to_string();
    let loc = &f["location"];
    (
        directive,
        loc["line"].as_u64().unwrap() as usize,
        loc["end_line"].as_u64().unwrap() as usize,
    )
}

/// Pastes the region around lines `first..=last` of `file`: a C pragma before the loop (the
/// loop is its block), or Fortran's directive before it and `!$acc end data` after it.
fn paste(file: &Path, directive: &str, first: usize, last: usize) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if i + 1 == first {
            out.push(directive.to_string());
        }
        out.push(l.to_string());
        if i + 1 == last && directive.starts_with("!$acc") {
            out.push("!$acc end data".to_string());
        }
    }
    std::fs::write(file, out.join("\n") + "\n").unwrap();
}

/// The whole loop: profile, take the data-region advice, paste it, rebuild, profile again.
/// Returns the advice's directive.
fn paste_and_rerun(compiler: &str, source: &str, exe: &str, want_directive: &str) -> String {
    let dir = scratch(&format!("paste-{exe}"));
    std::fs::copy(app(source), dir.join(source)).unwrap();
    build(compiler, &dir, source, exe);
    let before = profile(&dir, exe, "before.trace");
    let fs = findings(&dir, "before.trace");
    let f = fs
        .iter()
        .find(|f| f["rule"] == "data_region")
        .unwrap_or_else(|| panic!("no data_region finding: {fs:#?}"));
    let (directive, first, last) = region(f);
    assert_eq!(directive, want_directive, "{f:#}");
    let change = f["change"].as_str().unwrap();
    assert!(!change.contains("heap@"), "{f:#}");
    // Pointers the clauses take for std::vectors' data, declared just before the directive.
    let declarations: Vec<&str> = change
        .split('`')
        .filter(|s| s.starts_with("auto *"))
        .collect();
    let pasted = declarations
        .iter()
        .copied()
        .chain([directive.as_str()])
        .collect::<Vec<_>>()
        .join("\n");
    paste(&dir.join(source), &pasted, first, last);
    build(compiler, &dir, source, exe);
    let after = profile(&dir, exe, "after.trace");
    assert_eq!(
        after, before,
        "the pasted region changed what {exe} computes"
    );
    let (b, a) = (
        transfer_bytes(&dir, "before.trace"),
        transfer_bytes(&dir, "after.trace"),
    );
    assert!(a * 10 < b, "{exe}: transfers {b} -> {a} bytes");
    assert!(
        !findings(&dir, "after.trace")
            .iter()
            .any(|f| f["rule"] == "data_region"),
        "{exe}: the region was advised again"
    );
    directive
}

/// The seeds' Laplace: `copy(A) create(Anew)`, chosen from the bytes the copies carried.
#[test]
fn laplace_gets_the_seeds_region_and_it_works_when_pasted() {
    paste_and_rerun(
        "gcc",
        "laplace_naive.c",
        "laplace",
        "#pragma acc data copy(A) create(Anew)",
    );
}

/// Kernels in `sweep`, which main's time loop calls: the region goes around main's loop, with
/// main's pointers and the sections their mallocs give (a struct member's too); T is read
/// first (copy), the scratch Tnew is rewritten by its first use (create), the weights are only
/// read (copyin).
#[test]
fn the_region_goes_around_the_callers_loop_with_the_callers_pointers() {
    let dir = profiled("names-heat-calls", "gcc", "heat_calls.c", "heat_calls");
    let vars = variables(&dir, "t.trace");
    for name in ["T[0:nx*ny]", "Tnew[0:nx*ny]", "g.w[0:g.n]"] {
        assert!(vars.iter().any(|v| v == name), "{name} in {vars:?}");
    }
    let src = std::fs::read_to_string(app("heat_calls.c")).unwrap();
    let line = |marker: &str| src.lines().position(|l| l.contains(marker)).unwrap() + 1;
    let f = findings(&dir, "t.trace");
    let f = f.iter().find(|f| f["rule"] == "data_region").unwrap();
    assert_eq!(
        f["location"]["line"].as_u64(),
        Some(line("for (int s = 0; s < steps; s++)") as u64)
    );
    assert!(
        f["change"].as_str().unwrap().contains(&format!(
            "(main; it calls sweep at line {})",
            line("sweep(T, Tnew")
        )),
        "{f:#}"
    );
    paste_and_rerun(
        "gcc",
        "heat_calls.c",
        "heat_calls",
        "#pragma acc data copy(T[0:nx*ny]) copyin(g.w[0:g.n]) create(Tnew[0:nx*ny])",
    );
}

/// A stack array by its DWARF name and a function static by its source name (GCC's symbol is
/// `z1.N`), kept by a region around the function's own loop.
#[test]
fn stack_arrays_and_statics_go_by_their_source_names() {
    let d = paste_and_rerun(
        "gcc",
        "stack_arrays.c",
        "stack_arrays",
        "#pragma acc data copy(z) create(z1)",
    );
    assert!(!d.contains("0x"));
}

/// Two local arrays of one size, both moved (one by a kernel in a function the loop calls): told
/// apart by where main's frame must have been, not by their sizes.
#[test]
fn stack_arrays_of_one_size_go_by_their_own_names() {
    paste_and_rerun(
        "gcc",
        "stack_pair.c",
        "stack_pair",
        "#pragma acc data copy(u) create(v)",
    );
}

/// std::vectors, named by their data where their declaration allocated it (not in the
/// allocator's header), go into the region through pointers the advice declares.
#[test]
fn std_vectors_go_in_through_pointers_to_their_data() {
    paste_and_rerun(
        "g++",
        "vector_axpy.cpp",
        "vector_axpy",
        "#pragma acc data copy(y_data[0:n]) copyin(x_data[0:n])",
    );
}

/// std::vector members sized in a constructor's initializer list are named by their data, each
/// by the column its vector code was inlined at.
#[test]
fn vector_members_go_by_their_names() {
    let dir = profiled(
        "names-vector-members",
        "g++",
        "vector_members.cpp",
        "vector_members",
    );
    let mut vars = variables(&dir, "t.trace");
    vars.sort();
    vars.dedup();
    assert_eq!(vars, ["u.data()[0:size]", "v.data()[0:size]"]);
}

/// Only one of two local arrays of one size moved: main's frame, as the trace's header gives
/// it, says which.
#[test]
fn a_stack_array_moved_alone_is_named_by_mains_frame() {
    let dir = profiled("names-stack-one", "gcc", "stack_one.c", "stack_one");
    assert_eq!(variables(&dir, "t.trace"), ["a", "a"], "copied in and out");
}

/// Fortran: module allocatables allocated on one line are `t` and `tnew` (their descriptors
/// labelled as such), the region goes into the main program's loop that calls the module
/// procedure, and the exit of the region that ends its subroutine is on its END DATA line.
#[test]
fn fortran_module_arrays_get_a_region_in_the_main_programs_loop() {
    let dir = profiled(
        "names-fields-mod",
        "gfortran",
        "fields_mod.f90",
        "fields_mod",
    );
    let vars = variables(&dir, "t.trace");
    for name in ["t", "tnew", "t (descriptor)"] {
        assert!(vars.iter().any(|v| v == name), "{name} in {vars:?}");
    }
    assert!(!vars.iter().any(|v| v.contains("heap@")), "{vars:?}");
    let src = std::fs::read_to_string(app("fields_mod.f90")).unwrap();
    let end_data = src
        .lines()
        .position(|l| l.trim() == "!$acc end data")
        .unwrap()
        + 1;
    let r = json(&dir, &["report", "--format", "json", "t.trace"]);
    let exits: Vec<&Value> = r["traces"][0]["profile"]["constructs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "data" && c["reached"] == 0)
        .collect();
    assert_eq!(exits.len(), 1, "{exits:#?}");
    assert_eq!(exits[0]["location"]["line"].as_u64(), Some(end_data as u64));
    assert_eq!(exits[0]["location"]["function"], "smooth_once");
    paste_and_rerun(
        "gfortran",
        "fields_mod.f90",
        "fields_mod",
        "!$acc data copy(t) create(tnew)",
    );
}

/// A C++ member allocated by its constructor goes by the member's name; the caller's loop
/// reaches it only through the object, which the advice says.
#[test]
fn a_class_member_goes_by_its_name_and_its_scope_is_said() {
    let dir = profiled("names-field-class", "g++", "field_class.cpp", "field_class");
    assert!(variables(&dir, "t.trace").iter().any(|v| v == "arr[0:n]"));
    let f = findings(&dir, "t.trace");
    let f = f.iter().find(|f| f["rule"] == "data_region").unwrap();
    let change = f["change"].as_str().unwrap();
    assert!(
        change.contains("copy(arr[0:n])")
            && change.contains("the names are Field's")
            && change.contains("`enter data` at the end of its constructor"),
        "{change}"
    );
}

/// acc_malloc scratch allocated in the loop: named by its pointer, to be allocated once before
/// the loop (no data clause applies to it). The neighbouring globals updated every step are
/// separate variables, not an array moved in slices.
#[test]
fn acc_malloc_scratch_is_allocated_once_and_neighbouring_globals_are_no_slices() {
    let dir = profiled("names-scratch", "gcc", "scratch_malloc.c", "scratch_malloc");
    let fs = findings(&dir, "t.trace");
    assert!(!fs.iter().any(|f| f["rule"] == "whole_array"), "{fs:#?}");
    let churn: Vec<&Value> = fs.iter().filter(|f| f["rule"] == "alloc_churn").collect();
    assert_eq!(churn.len(), 1, "{fs:#?}");
    let src = std::fs::read_to_string(app("scratch_malloc.c")).unwrap();
    let line = |marker: &str| src.lines().position(|l| l.contains(marker)).unwrap() + 1;
    let title = churn[0]["title"].as_str().unwrap();
    assert!(
        title.starts_with(&format!(
            "tmp (2 MiB) allocated with acc_malloc and freed 10 times at scratch_malloc.c:{}",
            line("acc_malloc(N")
        )),
        "{title}"
    );
    assert_eq!(
        churn[0]["location"]["line"].as_u64(),
        Some(line("for (int step") as u64)
    );
    let change = churn[0]["change"].as_str().unwrap();
    assert!(
        change.contains("deviceptr(tmp)") && !change.contains("enter data"),
        "{change}"
    );
}
