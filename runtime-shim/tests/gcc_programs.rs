//! Unmodified GCC-compiled OpenACC programs (C, C++ and Fortran, `-fopenacc`, no accshim
//! header) run on the shim by preloading libaccshim.so (the GOACC_* entry points, src/goacc).
//! Each program's output is compared with the same binary on libgomp (its host fallback: no GPU
//! needed), and its transfers, as a tool compiled against GCC's acc_prof.h records them, with
//! what the directives imply. The programs are in tests/gcc/.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compiles a test program with the compiler for its language, `-fopenacc`.
fn build(dir: &Path, src: &str) -> PathBuf {
    let path = crate_dir().join("tests/gcc").join(src);
    let compiler = match path.extension().and_then(|e| e.to_str()) {
        Some("cpp") => "g++",
        Some("f90") => "gfortran",
        _ => "gcc",
    };
    let out = dir.join(src.replace('.', "_"));
    // In the temporary directory: gfortran writes a module's .mod file where it runs.
    let o = Command::new(compiler)
        .current_dir(dir)
        .args(["-fopenacc", "-O2", "-g", "-pthread", "-o"])
        .arg(&out)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} runs: {e} (.ci/run installs it)"));
    assert!(
        o.status.success(),
        "{compiler} failed on {src}:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The program on libgomp, as built.
fn on_libgomp(prog: &Path) -> Output {
    let o = Command::new(prog)
        .env_remove("LD_PRELOAD")
        .env_remove("ACC_PROFLIB")
        .output()
        .expect("runs");
    assert!(
        o.status.success(),
        "{} on libgomp: {}",
        prog.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The same binary with libaccshim.so preloaded, on the emulated device.
fn shim_cmd(prog: &Path) -> Command {
    let mut c = Command::new(prog);
    c.env("LD_PRELOAD", shim_so())
        .env("ACC_DEVICE_TYPE", "emulated")
        .env("ACCSHIM_QUIET", "1")
        .env_remove("ACC_PROFLIB");
    c
}

fn on_shim(prog: &Path) -> Output {
    let o = shim_cmd(prog).output().expect("runs");
    assert!(
        o.status.success(),
        "{} on the shim: {}",
        prog.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A correct program on the shim: no warning either.
fn on_shim_quietly(prog: &Path) -> Output {
    let o = on_shim(prog);
    assert!(
        o.stderr.is_empty(),
        "{}: {}",
        prog.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The program on the shim with the results-dropped check asked for (ACCSHIM_DROP_CHECK=1).
fn with_drop_check(prog: &Path) -> Output {
    let o = shim_cmd(prog)
        .env("ACCSHIM_DROP_CHECK", "1")
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn c_directives_give_libgomps_results() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "directives.c");
    let (gomp, shim) = (text(&on_libgomp(&prog)), text(&on_shim_quietly(&prog)));
    assert_eq!(gomp.lines().count(), 8, "every part ran on libgomp: {gomp}");
    assert_eq!(shim, gomp);
}

#[test]
fn struct_members_give_libgomps_results() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "struct_members.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp, "v[10]=30 s=1.4985e+06 sum=1.4985e+06\n");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

/// The program's events with the C event logger loaded as a tool (ACC_PROFLIB).
fn logged_events(dir: &Path, prog: &Path) -> (Output, Vec<Event>) {
    let logger = event_logger(dir);
    let log = dir.join(format!(
        "{}.log",
        prog.file_name().unwrap().to_string_lossy()
    ));
    let o = shim_cmd(prog)
        .env("ACC_PROFLIB", &logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let evs = parse_log(&std::fs::read_to_string(&log).unwrap());
    (o, evs)
}

/// How many transfers of `event` carry `bytes` bytes.
fn transfers(evs: &[Event], event: &str, bytes: usize) -> usize {
    let bytes = bytes.to_string();
    evs.iter()
        .filter(|e| e["ev"] == event && e.get("bytes") == Some(&bytes))
        .count()
}

#[test]
fn c_struct_members_map_as_libgomp_maps_them() {
    // Enter/exit data of a grid struct's arrays (GOMP_MAP_STRUCT groups with attachments), a
    // section that starts after where its pointer points (a bias), and the whole struct
    // mapped after its members.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "grid_struct.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "relaxed: 12527.151385\nbiased: 1 16 488\nmembers then struct: 2 30\n"
    );
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
    let (o, evs) = logged_events(dir.path(), &prog);
    assert_eq!(text(&o), gomp);
    let (up, down) = ("enqueue_upload_start", "enqueue_download_start");
    // g.u in and out once (g.unew is created), whatever 100 kernels did between.
    assert_eq!(
        (transfers(&evs, up, 16384), transfers(&evs, down, 16384)),
        (1, 1)
    );
    // h.u[2:60] in and out once; k.a and k.b in once each, k.b out once.
    assert_eq!(
        (transfers(&evs, up, 480), transfers(&evs, down, 480)),
        (1, 1)
    );
    assert_eq!(
        (transfers(&evs, up, 128), transfers(&evs, down, 128)),
        (2, 1)
    );
    // The structs: g in at its own enter data, k (whole) only as its members' pointers.
    assert_eq!(transfers(&evs, up, 32), 1);
    assert_eq!(
        count(&evs, "alloc"),
        count(&evs, "free"),
        "all device memory freed"
    );
}

#[test]
fn a_cpp_class_with_its_data_on_the_device_gives_libgomps_results() {
    // The best-practices guide's class: enter data of this[0:1] and its array in the
    // constructor, update self/device in member functions (GOMP_MAP_ALWAYS_POINTER), a copy
    // constructor copying on the device, exit data in the destructor.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "class_data.cpp");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "a 249750.0 b 749250.0\na after update device 2000.0\n"
    );
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
    let (_, evs) = logged_events(dir.path(), &prog);
    let (up, down) = ("enqueue_upload_start", "enqueue_download_start");
    // The arrays move only by the updates: two objects' update self of a, one of b; one
    // update device. The objects go in once each.
    assert_eq!(
        (transfers(&evs, up, 8000), transfers(&evs, down, 8000)),
        (1, 3)
    );
    assert_eq!(transfers(&evs, up, 16), 2);
    assert_eq!(
        count(&evs, "alloc"),
        count(&evs, "free"),
        "all device memory freed"
    );
}

#[test]
fn a_fortran_derived_type_with_allocatable_components_gives_libgomps_results() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "derived_type.f90");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "after 3 steps:    187875.00\nafter update device:    188125.00\n"
    );
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
    let (_, evs) = logged_events(dir.path(), &prog);
    let (up, down) = ("enqueue_upload_start", "enqueue_download_start");
    // u in at enter data and by the update device; v back by the update self and at exit
    // data; the object in once (its descriptors with it), never its components' descriptors
    // again.
    assert_eq!(
        (transfers(&evs, up, 4000), transfers(&evs, down, 4000)),
        (2, 2)
    );
    assert_eq!(transfers(&evs, up, 144), 1);
    assert_eq!(transfers(&evs, up, 64), 0);
    assert_eq!(
        count(&evs, "alloc"),
        count(&evs, "free"),
        "all device memory freed"
    );
}

#[test]
fn async_constructs_see_their_scalars_as_enqueued() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "async_scalars.c");
    assert_eq!(text(&on_shim_quietly(&prog)), text(&on_libgomp(&prog)));
}

#[test]
fn firstprivate_scalars_go_with_the_kernels_arguments() {
    // Each scalar used to get device data of its own per construct: alloc, create, upload,
    // delete and free, six callbacks, for every loop bound and coefficient of every construct.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "firstprivate_scalars.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp, "firstprivate scalars: 1003.00 526227.25\n");
    let (o, evs) = logged_events(dir.path(), &prog);
    assert_eq!(text(&o), gomp);
    let up = "enqueue_upload_start";
    for bytes in [1, 2, 4] {
        assert_eq!(transfers(&evs, up, bytes), 0, "{bytes}-byte scalars");
    }
    // present_scale at its enter data, and the 8-byte struct (copy); the 12-byte one too.
    assert_eq!(transfers(&evs, up, 8), 2);
    assert_eq!(transfers(&evs, up, 12), 1);
    // x, present_scale and the two structs: nothing else gets device memory.
    assert_eq!(count(&evs, "alloc"), 4);
    assert_eq!(count(&evs, "alloc"), count(&evs, "free"));
}

#[test]
fn cpp_and_fortran_programs_give_libgomps_results() {
    let dir = tempfile::tempdir().unwrap();
    for src in ["vector.cpp", "saxpy.f90"] {
        let prog = build(dir.path(), src);
        let (gomp, shim) = (text(&on_libgomp(&prog)), text(&on_shim_quietly(&prog)));
        assert!(!gomp.is_empty(), "{src}");
        assert_eq!(shim, gomp, "{src}");
    }
}

#[test]
fn constants_passed_to_a_kernels_construct_are_not_written_back() {
    // A PARAMETER and literals given to scalar dummy arguments that a kernels construct copies
    // implicitly: copying them back into read-only memory faulted (CloverLeaf's
    // generate_chunk_kernel does this). A copyin of such an argument in a parallel construct
    // was refused as "not present" (the pointer was mapped before its target).
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "constant_arguments.f90");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp.trim(), "sum    167.00");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn fortran_allocatable_updates_keep_the_device_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "alloc_update.f90");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "after first: 125750.0 after update device: 131750.0 end: 263500.0 fixed: 126750.0\n"
    );
    // Quietly too: the descriptors GCC maps beside the data are not results left on the device.
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn async_updates_of_fortran_allocatables_give_libgomps_results() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "halo_async.f90");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp, "halo checksum 1799947.286365\n");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn an_async_update_host_after_an_async_kernel_fetches_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "async_update_host.c");
    let gomp = text(&on_libgomp(&prog));
    assert!(gomp.starts_with("wrong 0 sum "), "{gomp}");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn children_forked_while_threads_run_constructs_finish() {
    // Each child maps, launches on an async queue and waits; it hung on a lock another thread
    // held at the fork (the image registry's, the present table's) or on a queue worker the
    // child does not have.
    // (libgomp's own children hang in its GOACC_wait here, most runs: no comparison with it.)
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "fork_children.c");
    assert_eq!(
        text(&on_shim_quietly(&prog)),
        "children: 0 hung, 0 failed\n"
    );
}

#[test]
fn pointers_passed_by_value_reach_the_device_copies_and_update_host_async_brings_them_back() {
    // miniWeather's shape: kernels reach present arrays through global pointers and pointer
    // parameters, which GCC passes by value. The emulated device gave them the host's copies,
    // and each output's `update host ... async` + `wait` put stale device data over the
    // host's results: a wrong answer with no word said.
    let dir = tempfile::tempdir().unwrap();
    let src = "pointers_by_value.cpp";
    let prog = build(dir.path(), src);
    let gomp = text(&on_libgomp(&prog));
    assert!(gomp.contains("output 20: "), "{gomp}");
    // The right answer, and nothing on stderr: a plain run is quiet.
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
    // Asked for notes, one line says what the shim did that libgomp on a GPU would not, at the
    // first construct.
    let shim = shim_cmd(&prog).env("ACCSHIM_NOTES", "1").output().unwrap();
    assert_eq!(text(&shim), gomp);
    let first = std::fs::read_to_string(crate_dir().join("tests/gcc").join(src))
        .unwrap()
        .lines()
        .position(|l| l.contains("default(present) async"))
        .unwrap()
        + 1;
    let stderr = String::from_utf8_lossy(&shim.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("note: the compute construct at ")
            && stderr.contains(&format!("{src}:{first} gets a C/C++ pointer by value")),
        "{stderr}"
    );
}

#[test]
fn pointer_variables_a_kernels_construct_maps_whole_reach_the_device_copies() {
    // GCC 12 maps a kernels construct's pointer variables themselves (force_tofrom, 8 bytes):
    // the kernel wrote through the host's address, and exit data copied the stale device copy
    // back over its results. The host's pointers keep their values.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "kernels_by_value.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "kernels local pointers: sum 500500.0, kept 1 1\nparameter pointer kept: 1\nkernels parameter pointers: sum 999000.0\n"
    );
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn memory_released_under_an_async_kernel_is_not_handed_out_again_before_it_is_done() {
    // A region's end and an exit data release an array that a kernel on queue 1 still writes;
    // the next array mapped got the same block and the kernel's values (on the emulated
    // device, whose memory is the host's, smaller arrays corrupted the program's heap).
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "release_under_async.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp, "region end: 0 wrong\nexit data: 0 wrong\n");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn synchronous_directives_wait_for_the_async_queues_as_on_a_gpu() {
    // Copies back, a synchronous kernel and acc_copyout right after async kernels, with no
    // wait: libgomp on a GPU gets the kernels' results (its synchronous work runs on CUDA's
    // legacy default stream), the emulated device copied stale data. And a store into memory
    // that an async update self targets stays, as CUDA copies into pageable memory at once.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "sync_after_async.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(
        gomp,
        "data region end: 0 0 wrong\nexit data copyout: 0 wrong\nacc_copyout: 0 wrong\nupdate self: 0 wrong\nsynchronous kernel: 0 wrong\nstore after update self async: kept\n"
    );
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
}

#[test]
fn results_dropped_under_a_kernel_on_another_queue_are_reported() {
    // The check ran in the releasing queue's order, before the kernel on queue 2 wrote: no
    // word, and with a tool loaded the outcome changed with the timing.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "dropped_async.c");
    for run in 0..3 {
        let o = with_drop_check(&prog);
        // A GPU's answer: the kernel's results stay on the device.
        assert_eq!(text(&o), "a[1] = 1 on the host\n");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            stderr.matches("results dropped").count(),
            1,
            "run {run}: {stderr}"
        );
        assert!(stderr.contains("+131072]"), "run {run}: {stderr}");
    }
}

/// The events of `three_ways WAY PART` (tests/gcc/three_ways.c), each as its name and the
/// fields every way in fills alike (not the location, which GCC does not pass, nor names and
/// addresses); with `construct`, the parent construct too.
fn three_ways_events(
    dir: &Path,
    prog: &Path,
    way: &str,
    part: &str,
    construct: bool,
) -> Vec<String> {
    let logger = event_logger(dir);
    let log = dir.join(format!("{way}-{part}.log"));
    let o = shim_cmd(prog)
        .args([way, part])
        .env("ACC_PROFLIB", &logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{way} {part}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut fields = vec!["devtype", "thread", "async", "queue", "implicit", "bytes"];
    if construct {
        fields.push("construct");
    }
    parse_log(&std::fs::read_to_string(&log).unwrap())
        .iter()
        .map(|e| {
            let mut line = e["ev"].clone();
            for f in &fields {
                if let Some(v) = e.get(*f) {
                    line += &format!(" {f}={v}");
                }
            }
            line
        })
        .collect()
}

#[test]
fn the_three_ways_in_give_each_directive_one_sequence_of_events() {
    // GCC's entry points, the construct API and the acc_* routines each wrote their own
    // sequence; acc_attach and acc_detach had no enter/exit data events around them.
    let dir = tempfile::tempdir().unwrap();
    let src = crate_dir().join("tests/gcc/three_ways.c");
    let prog = dir.path().join("three_ways");
    let lib = shim_so().parent().unwrap().to_path_buf();
    let o = Command::new("gcc")
        .args(["-fopenacc", "-O1", "-g", "-Wall", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg("-o")
        .arg(&prog)
        .arg(&src)
        .arg(format!("-L{}", lib.display()))
        .arg("-laccshim")
        .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", lib.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = dir.path();
    let directive = three_ways_events(d, &prog, "directive", "data", true);
    assert!(directive.len() > 40, "{directive:#?}");
    assert_eq!(
        three_ways_events(d, &prog, "construct", "data", true),
        directive
    );
    // A routine's parent construct is runtime_api, its directive's the directive.
    assert_eq!(
        three_ways_events(d, &prog, "routine", "data", false),
        three_ways_events(d, &prog, "directive", "data", false)
    );
    let directive = three_ways_events(d, &prog, "directive", "constructs", true);
    assert!(
        directive
            .iter()
            .filter(|e| e.starts_with("compute_construct_start"))
            .count()
            == 2,
        "{directive:#?}"
    );
    assert_eq!(
        three_ways_events(d, &prog, "construct", "constructs", true),
        directive
    );
}

#[test]
fn returning_from_main_while_threads_are_in_constructs_ends_quietly_with_mains_status() {
    // The exit released the device under the other threads: "not present" errors, status 134
    // or 139, and the line main printed lost with stdio's buffer.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "exit_during_constructs.c");
    assert_eq!(text(&on_libgomp(&prog)), "main returns\n");
    for run in 0..10 {
        let o = shim_cmd(&prog).output().unwrap();
        assert_eq!(
            (
                o.status.code(),
                text(&o).as_str(),
                String::from_utf8_lossy(&o.stderr).as_ref()
            ),
            (Some(0), "main returns\n", ""),
            "run {run}"
        );
    }
}

/// The compute_construct_start events of `prog` run with the C event logger: (parent
/// construct, device type) of each.
fn compute_constructs(dir: &Path, prog: &Path) -> (Vec<Event>, Output) {
    let logger = event_logger(dir);
    let log = dir.join(format!(
        "{}.log",
        prog.file_name().unwrap().to_string_lossy()
    ));
    let o = shim_cmd(prog)
        .env("ACC_PROFLIB", &logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .output()
        .unwrap();
    (parse_log(&std::fs::read_to_string(&log).unwrap()), o)
}

/// acc_construct_t: parallel, kernels, data, update, serial; acc_device_host.
const PARALLEL: &str = "0";
const KERNELS: &str = "1";
const DATA: &str = "3";
const UPDATE: &str = "12";
const SERIAL: &str = "16";
const HOST: &str = "2";

#[test]
fn kernels_parallel_and_serial_are_reported_as_what_they_are() {
    // GCC lowers all three to GOACC_parallel_keyed; every one was reported as parallel.
    let dir = tempfile::tempdir().unwrap();
    for (src, want) in [
        (
            "construct_kinds.c",
            &[KERNELS, PARALLEL, SERIAL, PARALLEL][..],
        ),
        ("construct_kinds.f90", &[KERNELS, SERIAL, PARALLEL][..]),
    ] {
        let prog = build(dir.path(), src);
        let (evs, o) = compute_constructs(dir.path(), &prog);
        assert_eq!(text(&o), text(&on_libgomp(&prog)), "{src}");
        let kinds: Vec<&str> = evs
            .iter()
            .filter(|e| e["ev"] == "compute_construct_start")
            .map(|e| e["construct"].as_str())
            .collect();
        assert_eq!(kinds, want, "{src}");
    }
}

#[test]
fn directives_with_a_false_if_clause_are_reported_on_the_host() {
    // They reported nothing: a program whose constructs all had a false if wrote no trace.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "construct_kinds.c");
    let (evs, _) = compute_constructs(dir.path(), &prog);
    let on_host: Vec<(&str, &str)> = evs
        .iter()
        .filter(|e| e["devtype"] == HOST)
        .map(|e| (e["ev"].as_str(), e["construct"].as_str()))
        .collect();
    assert_eq!(
        on_host,
        [
            ("compute_construct_start", PARALLEL),
            ("compute_construct_end", PARALLEL),
            ("enter_data_start", DATA),
            ("enter_data_end", DATA),
            ("update_start", UPDATE),
            ("update_end", UPDATE),
            ("exit_data_start", DATA),
            ("exit_data_end", DATA),
        ]
    );
    assert!(evs
        .iter()
        .all(|e| e.get("tool_info").is_none_or(|t| t == "ok")));
}

#[test]
fn a_runtime_error_names_the_directive_and_its_line_and_exits_with_status_1() {
    // It aborted (SIGABRT) without the line, and the program's buffered output was lost.
    let dir = tempfile::tempdir().unwrap();
    let src = "error_after_output.c";
    let prog = build(dir.path(), src);
    let source = std::fs::read_to_string(crate_dir().join("tests/gcc").join(src)).unwrap();
    let line_of = |directive: &str| source.lines().position(|l| l.contains(directive)).unwrap() + 1;
    for (arg, what, directive) in [
        ("kernels", "kernels construct", "acc kernels"),
        ("update", "update", "acc update"),
    ] {
        let o = shim_cmd(&prog).arg(arg).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{arg}: {err}");
        assert_eq!(text(&o), "before the error\n", "{arg}");
        assert_eq!(err.lines().count(), 1, "{arg}: {err}");
        let at = format!("[acc_error_not_present] in {what} at ");
        let line = format!("{src}:{}: data [", line_of(directive));
        assert!(err.contains(&at) && err.contains(&line), "{arg}: {err}");
    }
}

/// Builds gfortran sources of the repository's tests/apps into one program.
fn build_app(dir: &Path, name: &str, srcs: &[&str]) -> PathBuf {
    let apps = crate_dir().join("../tests/apps");
    let out = dir.join(name);
    let o = Command::new("gfortran")
        .args(["-fopenacc", "-O2", "-g", "-J"])
        .arg(dir)
        .args(srcs.iter().map(|s| apps.join(s)))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("gfortran runs: {e} (.ci/run installs it)"));
    assert!(
        o.status.success(),
        "gfortran failed on {srcs:?}:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn fortran_apps_with_allocatables_give_libgomps_results_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    for (name, srcs) in [
        ("heat", &["heat_mod.f90", "heat_main.f90"][..]),
        ("jacobi_naive", &["jacobi_naive.f90"][..]),
    ] {
        let prog = build_app(dir.path(), name, srcs);
        let gomp = text(&on_libgomp(&prog));
        assert!(gomp.contains("checksum"), "{name}: {gomp}");
        assert_eq!(text(&on_shim_quietly(&prog)), gomp, "{name}");
    }
}

#[test]
fn a_missing_copyout_loses_the_results_as_on_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "missing_copyout.c");
    // libgomp's host fallback shares the host's memory: the kernel's writes land on the host.
    assert_eq!(text(&on_libgomp(&prog)), "b[10]=30\n");
    // A device with memory of its own drops them with the device copy, as a GPU does, and the
    // shim says so when asked: which array, and where the program released it.
    let o = with_drop_check(&prog);
    assert_eq!(text(&o), "b[10]=20\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("results dropped: the device copy of [0x") && err.contains(",+8000]"),
        "{err}"
    );
    assert!(err.contains("a missing copyout?"), "{err}");
    // The call site is the program's, at the construct's line.
    let site = err
        .split(" at ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .expect("a call site");
    let offset = site.rsplit('+').next().unwrap();
    let line = Command::new("addr2line")
        .arg("-e")
        .arg(&prog)
        .arg(offset)
        .output()
        .expect("addr2line runs");
    assert!(
        String::from_utf8_lossy(&line.stdout)
            .trim()
            .ends_with("missing_copyout.c:17"),
        "{site}: {}",
        String::from_utf8_lossy(&line.stdout)
    );
    // Not asked for, a plain run says nothing.
    assert_eq!(text(&on_shim_quietly(&prog)), "b[10]=20\n");
}

#[test]
fn a_copied_in_scalar_the_kernel_writes_is_reported_when_dropped_results_are_looked_for() {
    // Scalars a construct copies in go with the kernel's arguments, except while dropped
    // results are looked for: then the lost write must show in a device copy.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "copyin_scalar_written.c");
    assert_eq!(text(&on_libgomp(&prog)), "x=5 a[0]=5\n");
    assert_eq!(text(&on_shim_quietly(&prog)), "x=0 a[0]=5\n");
    let o = with_drop_check(&prog);
    assert_eq!(text(&o), "x=0 a[0]=5\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("results dropped: the device copy of [0x") && err.contains(",+4]"),
        "{err}"
    );
    // Firstprivate scalars nobody writes: nothing to say.
    let prog = build(dir.path(), "firstprivate_scalars.c");
    let o = with_drop_check(&prog);
    assert_eq!(text(&o), "firstprivate scalars: 1003.00 526227.25\n");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn an_update_self_of_every_change_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "update_self_copyin.c");
    assert_eq!(text(&on_libgomp(&prog)), "a=500500 b=501500 c=602500\n");
    // a and b (async and synchronous update self) come back whole; c's last change is dropped,
    // as on a GPU, and is the only array warned about.
    let o = with_drop_check(&prog);
    assert_eq!(text(&o), "a=500500 b=501500 c=502500\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("results dropped: the device copy of [0x") && err.contains(",+8000]"),
        "{err}"
    );
}

#[test]
fn a_dropped_fortran_module_array_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "module_dropped.f90");
    assert_eq!(text(&on_libgomp(&prog)), "field: 2000.0 out: 2000.0\n");
    let o = with_drop_check(&prog);
    assert_eq!(text(&o), "field: 1000.0 out: 2000.0\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines().count(),
        1,
        "only field, not out nor the descriptors: {err}"
    );
    assert!(
        err.contains("results dropped: the device copy of field in module grid ([0x")
            && err.contains(",+8000])"),
        "{err}"
    );
}

/// The array transfers (8000 bytes each) among a run's events: (uploads, downloads, queues of
/// the uploads).
fn array_transfers(evs: &[Event]) -> (usize, usize, Vec<String>) {
    let of = |name: &'static str| -> Vec<&Event> {
        evs.iter()
            .filter(|e| e["ev"] == name && e.get("bytes").map(String::as_str) == Some("8000"))
            .collect()
    };
    let ups = of("enqueue_upload_start");
    let queues = ups.iter().map(|e| e["queue"].clone()).collect();
    (ups.len(), of("enqueue_download_start").len(), queues)
}

#[test]
fn transfers_are_the_ones_the_directives_imply_and_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "transfers.c");
    let logger = event_logger(dir.path());
    let gomp = text(&on_libgomp(&prog));

    for preload_tool_too in [false, true] {
        let log = dir.path().join(format!("log{preload_tool_too}.txt"));
        let mut cmd = shim_cmd(&prog);
        cmd.env("ACC_PROFLIB", &logger)
            .env("ACCSHIM_TOOL_LOG", &log);
        if preload_tool_too {
            // The tool both preloaded and named in ACC_PROFLIB: still registered once.
            cmd.env(
                "LD_PRELOAD",
                format!("{} {}", shim_so().display(), logger.display()),
            );
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(text(&o), gomp);
        let evs = parse_log(&std::fs::read_to_string(&log).unwrap());
        let (ups, downs, queues) = array_transfers(&evs);
        // a at the data region's entry, a by the update on queue 2, c at enter data.
        assert_eq!(ups, 3, "uploads");
        assert_eq!(
            queues.iter().filter(|q| *q == "2").count(),
            1,
            "the update runs on queue 2: {queues:?}"
        );
        // b at the data region's exit, c at exit data.
        assert_eq!(downs, 2, "downloads");
        // 3 + 1 + 1 compute constructs, one launch each, named after GCC's function.
        let launches: Vec<_> = evs
            .iter()
            .filter(|e| e["ev"] == "enqueue_launch_start")
            .collect();
        assert_eq!(launches.len(), 5);
        assert!(
            launches
                .iter()
                .all(|e| e["kernel"].starts_with("main._omp_fn.")),
            "{:?}",
            launches[0]
        );
        assert_eq!(count(&evs, "compute_construct_start"), 5);
        assert_eq!(count(&evs, "wait_start"), count(&evs, "wait_end"));
        // Every upload and download carries both addresses.
        for e in evs.iter().filter(|e| {
            e["ev"].starts_with("enqueue_upload") || e["ev"].starts_with("enqueue_download")
        }) {
            assert!(e["host"] != "(nil)" && e["dev"] != "(nil)", "{e:?}");
        }
    }
}

/// Whether gcc here built an offload image into `prog` (gcc-12-offload-nvptx installed).
fn registers_an_image(prog: &Path) -> bool {
    let nm = Command::new("nm")
        .arg("-D")
        .arg(prog)
        .output()
        .expect("nm runs");
    String::from_utf8_lossy(&nm.stdout).contains("GOMP_offload_register_ver")
}

#[test]
fn launch_dimensions_come_from_the_tags_and_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "launch_dims.c");
    let logger = event_logger(dir.path());
    let log = dir.path().join("log.txt");
    let o = shim_cmd(&prog)
        .env("ACC_PROFLIB", &logger)
        .env("ACCSHIM_TOOL_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(text(&o), text(&on_libgomp(&prog)));
    let evs = parse_log(&std::fs::read_to_string(&log).unwrap());
    let launches: Vec<_> = evs
        .iter()
        .filter(|e| e["ev"] == "enqueue_launch_start")
        .collect();
    assert_eq!(launches.len(), 2);
    // num_gangs(g) computed at run time reaches the shim in the launch tags.
    assert_eq!(launches[1]["gangs"], "5", "{:?}", launches[1]);
    if !registers_an_image(&prog) {
        // Workers and vector unknown: the event ends after num_gangs.
        assert_eq!(launches[1]["evb"], "40", "{:?}", launches[1]);
    }
    if registers_an_image(&prog) {
        // Constants are compiled into the nvptx image's function descriptors.
        assert_eq!(
            (
                launches[0]["gangs"].as_str(),
                launches[0]["vector"].as_str()
            ),
            ("7", "64"),
            "{:?}",
            launches[0]
        );
    } else {
        // Unknown: the event carries no dimensions (valid_bytes ends before them).
        assert_eq!(launches[0]["evb"], "32", "{:?}", launches[0]);
    }
}

#[test]
fn declared_globals_have_device_copies_of_their_own() {
    // create, copyin, device_resident and link globals; GCC leaves the first three out of
    // every directive's map, and its compute code addresses the host's variables, which the
    // emulated device swaps its copies into for each kernel.
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "declare_globals.c");
    let gomp = text(&on_libgomp(&prog));
    let o = on_shim(&prog);
    let shim = text(&o);
    // Shared memory and a discrete device agree except where the copies differ.
    let same = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.ends_with("[discrete]"))
            .map(String::from)
            .collect()
    };
    assert_eq!(same(&shim), same(&gomp), "{shim}");
    assert_eq!(same(&gomp).len(), 4, "{gomp}");
    let discrete: Vec<&str> = shim.lines().filter(|l| l.ends_with("[discrete]")).collect();
    assert_eq!(
        discrete,
        [
            "host table before acc_update_self: 0.0 [discrete]",
            "host resident: 0.0 [discrete]",
            "device coef before acc_update_device: 2500.0 [discrete]",
            "host resident after update self: 0.0 [discrete]",
        ]
    );
    // The update directive GCC emptied is said, once.
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("an update directive at") && err.contains("with no variable"),
        "{err}"
    );
    // Transfers: the routines' copies, the copyouts and link's data, and never a declared
    // global by a directive.
    let (_, evs) = logged_events(dir.path(), &prog);
    let (up, down) = ("enqueue_upload_start", "enqueue_download_start");
    assert_eq!(transfers(&evs, up, 8000), 1, "linked in");
    assert_eq!(
        transfers(&evs, down, 8000),
        5,
        "3 copyouts, table, linked out"
    );
    assert_eq!(transfers(&evs, up, 32), 1, "acc_update_device of coef");
}

#[test]
fn a_function_local_declare_copyin_gets_each_calls_values() {
    // GCC emits no release for a local declare copyin: without one before the next call's
    // declare, the device kept the first call's weights (as libgomp on a GPU does).
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "declare_local.c");
    let gomp = text(&on_libgomp(&prog));
    assert_eq!(gomp, "smoothed: 244002.441406250\n");
    assert_eq!(text(&on_shim_quietly(&prog)), gomp);
    let (_, evs) = logged_events(dir.path(), &prog);
    let up = "enqueue_upload_start";
    assert_eq!(transfers(&evs, up, 24), 3, "the weights, once per call");
    assert_eq!(
        transfers(&evs, up, 32768),
        2,
        "a and b at the data construct's entry"
    );
    assert_eq!(
        count(&evs, "alloc"),
        count(&evs, "free"),
        "all device memory freed"
    );
}
