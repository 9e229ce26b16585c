//! The user's loop on the realistic programs of tests/apps: run with a report, edit, rebuild,
//! compare, take the advice. Each test builds the sources it needs with gcc/g++/gfortran
//! -fopenacc -g, as tests/apps/build.sh does.

use accprof_integration_tests::{accprof_cli, scratch, stderr, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn app_source(name: &str) -> PathBuf {
    workspace_root().join("tests/apps").join(name)
}

/// Whether GCC builds nvptx images here (Debian's gcc-12-offload-nvptx): kernels calling libm
/// then need `-foffload=-lm`, as tests/apps/build.sh passes.
fn offload_compiler() -> bool {
    let out = Command::new("gcc")
        .arg("-print-prog-name=accel/nvptx-none/mkoffload")
        .output()
        .expect("gcc runs");
    Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_file()
}

/// Builds `sources` (in `dir`, under the names given) into `dir/exe` with `compiler`.
fn build(compiler: &str, dir: &Path, sources: &[&str], exe: &str, extra: &[&str]) -> PathBuf {
    let out_exe = dir.join(exe);
    let mut cmd = Command::new(compiler);
    cmd.current_dir(dir)
        .args(["-fopenacc", "-g", "-O2"])
        .args(sources)
        .arg("-o")
        .arg(&out_exe)
        .args(extra);
    if offload_compiler() {
        cmd.arg("-foffload=-lm");
    }
    let out = cmd.output().expect("compiler runs");
    assert!(
        out.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out_exe
}

/// Copies tests/apps/`from` to `dir/to` (the user's file, edited in place).
fn place(from: &str, dir: &Path, to: &str) {
    std::fs::copy(app_source(from), dir.join(to)).expect("copy the source");
}

fn accprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(accprof_cli())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("accprof runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn run_report_and_advise_leave_the_programs_stdout_byte_for_byte_its_own() {
    let dir = scratch("ul-stdout");
    place("laplace_naive.c", &dir, "laplace.c");
    let exe = build("gcc", &dir, &["laplace.c"], "laplace", &["-lm"]);
    let alone = Command::new(&exe).current_dir(&dir).output().unwrap();
    assert!(alone.status.success());
    let profiled = accprof(
        &dir,
        &[
            "run",
            "--report",
            "--advise",
            "-o",
            "r.trace",
            "--",
            "./laplace",
        ],
    );
    assert!(profiled.status.success(), "{}", stderr(&profiled));
    assert_eq!(
        profiled.stdout, alone.stdout,
        "the program's stdout is its own"
    );
    let err = stderr(&profiled);
    assert!(
        err.contains("compute region reached"),
        "the report is on stderr: {err}"
    );
    // And to a file: nothing of the report on either stream.
    let to_file = accprof(
        &dir,
        &[
            "run",
            "--report",
            "--advise",
            "--report-file",
            "rep.txt",
            "-o",
            "f.trace",
            "--",
            "./laplace",
        ],
    );
    assert!(to_file.status.success(), "{}", stderr(&to_file));
    assert_eq!(to_file.stdout, alone.stdout);
    assert!(
        !stderr(&to_file).contains("compute region reached"),
        "{}",
        stderr(&to_file)
    );
    let rep = std::fs::read_to_string(dir.join("rep.txt")).unwrap();
    assert!(
        rep.contains("compute region reached") && rep.contains("laplace.c"),
        "{rep}"
    );
}

/// `accprof run` of `exe` in `dir` on `runtime`, its trace written to `trace`.
fn profile(dir: &Path, runtime: &str, trace: &str, exe: &str) {
    let o = accprof(
        dir,
        &["run", "-q", "--runtime", runtime, "-o", trace, "--", exe],
    );
    assert!(o.status.success(), "{exe}: {}", stderr(&o));
    assert!(
        dir.join(trace).is_file(),
        "{exe} wrote no trace: {}",
        stderr(&o)
    );
}

/// The user's loop: laplace.c profiled, edited in place (one line inserted above the loop),
/// rebuilt and profiled again; `accprof diff` pairs the constructs that moved down one line.
#[test]
fn diff_pairs_constructs_moved_by_an_inserted_line() {
    let dir = scratch("ul-diff-edit");
    place("laplace_naive.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace_before", &["-lm"]);
    place("laplace_edit.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace_after", &["-lm"]);
    for runtime in ["default", "shim"] {
        profile(&dir, runtime, "before.trace", "./laplace_before");
        profile(&dir, runtime, "after.trace", "./laplace_after");
        let o = accprof(&dir, &["diff", "-q", "before.trace", "after.trace"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for moved in ["laplace.c:41 -> 42 main", "laplace.c:50 -> 51 main"] {
            assert!(
                text.lines().any(|l| l.contains(moved)
                    && l.contains("compute region")
                    && l.contains("60 -> 60")),
                "{runtime}: {moved}:\n{text}"
            );
        }
        assert!(
            !text.contains("Added (only after)") && !text.contains("Removed (only before)"),
            "{runtime}: nothing unpaired:\n{text}"
        );
    }
}

/// The headline: what the data region bought. The compute constructs pair across the inserted
/// `#pragma acc data` line; the data region is the one addition; on the shim's emulated device
/// the arrays' transfers fall from every iteration to once.
#[test]
fn diff_of_naive_and_data_region_pairs_the_loop_and_lists_the_region_as_added() {
    let dir = scratch("ul-diff-data");
    place("laplace_naive.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace_before", &["-lm"]);
    place("laplace_data.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace_after", &["-lm"]);
    profile(&dir, "shim", "before.trace", "./laplace_before");
    profile(&dir, "shim", "after.trace", "./laplace_after");
    let o = accprof(&dir, &["diff", "-q", "before.trace", "after.trace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let row = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle) && l.contains("compute region"))
            .unwrap_or_else(|| panic!("{needle}:\n{text}"))
            .to_string()
    };
    let first = row("laplace.c:41 -> 42 main");
    assert!(first.contains("60 -> 60"), "{first}");
    // 120 MiB of A and Anew each iteration before; only the reduction cell after.
    assert!(first.contains("120.00 MiB -> 960 B"), "{first}");
    assert!(
        row("laplace.c:50 -> 51 main").contains("120 MiB -> 0 B"),
        "{text}"
    );
    let added = text
        .lines()
        .find(|l| l.starts_with("Added (only after)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(added.contains("laplace.c:38 main (data region)"), "{added}");
    assert!(!added.contains("compute region"), "{added}");
    // GCC reports the region's exit at another line: that row is the exit, counted once.
    let exit = text
        .lines()
        .find(|l| l.contains("data region exit") && l.contains("->"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(exit.contains("- -> 1 "), "{exit}");
    assert!(added.contains("main (data region exit)"), "{added}");
    assert!(!text.contains("Removed (only before)"), "{text}");
    // The reduction cell (8 bytes at a stack address that differs between the runs) is one
    // "runtime internal" row per direction that pairs, not one row per address.
    assert!(!text.contains("host 0x"), "{text}");
    let internal: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("runtime internal"))
        .collect();
    assert_eq!(internal.len(), 2, "{text}");
    assert!(
        internal
            .iter()
            .all(|l| l.contains("60 -> 60") && l.contains("480 B -> 480 B")),
        "{text}"
    );
    // laplace.c now holds the edited program: advice on the old trace must not read its lines
    // against it (the constructs' lines hold no directive there), and falls back to the trace's.
    let advice = stdout(&accprof(&dir, &["advise", "-q", "before.trace"]));
    assert!(
        advice.contains("wrap lines 41-50 in `#pragma acc data copy(A, Anew)`"),
        "{advice}"
    );
    assert!(!advice.contains("39-59"), "{advice}");
}

/// Advice read against the source: the data region wraps the whole convergence loop (not just
/// the two constructs inside it), in the program's language.
#[test]
fn advice_names_the_enclosing_loop_in_the_programs_language() {
    let dir = scratch("ul-advice");
    place("laplace_naive.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace", &["-lm"]);
    place("jacobi_naive.f90", &dir, "jacobi_naive.f90");
    build("gfortran", &dir, &["jacobi_naive.f90"], "jacobi", &[]);
    profile(&dir, "shim", "c.trace", "./laplace");
    profile(&dir, "shim", "f.trace", "./jacobi");
    let c = stdout(&accprof(&dir, &["advise", "-q", "c.trace"]));
    // laplace.c: the while loop is lines 38-58; the constructs inside are at 41 and 50.
    assert!(
        c.contains("wrap the loop at laplace.c:38-58 (main) in `#pragma acc data copy(A, Anew)`"),
        "{c}"
    );
    assert!(!c.contains("!$acc"), "{c}");
    let f = stdout(&accprof(&dir, &["advise", "-q", "f.trace"]));
    // jacobi_naive.f90: the do while loop is lines 24-41; `allocate(a(n, m), anew(n, m))` at
    // line 14 makes two arrays, named by their order on the line, both to keep on the device.
    assert!(
        f.contains("[data_region]")
            && f.contains("put `!$acc data copy(a, anew)` before the loop at jacobi_naive.f90:24-41 (jacobi_naive)")
            && f.contains("`!$acc end data`"),
        "{f}"
    );
    assert!(
        !f.contains("#pragma"),
        "Fortran advice in Fortran syntax:\n{f}"
    );
}

/// A C++ class whose arrays leave the device at the end of one method's data region and come
/// back for the next method (tests/apps/stencil.hpp: `smooth` then `total`): the advice keeps
/// them on the device with enter/exit data (or a region in the caller), never a region over
/// lines of two functions. The Fortran module program, which already keeps its arrays in a data
/// region, gets no data-region advice and nothing in C syntax.
#[test]
fn advice_on_a_cpp_class_and_a_fortran_module_fits_their_structure() {
    let dir = scratch("ul-structure");
    for f in ["stencil.hpp", "stencil_main.cpp", "stencil_float.cpp"] {
        place(f, &dir, f);
    }
    build(
        "g++",
        &dir,
        &["stencil_main.cpp", "stencil_float.cpp"],
        "stencil",
        &[],
    );
    for f in ["heat_mod.f90", "heat_main.f90"] {
        place(f, &dir, f);
    }
    build(
        "gfortran",
        &dir,
        &["heat_mod.f90", "heat_main.f90"],
        "heat",
        &[],
    );
    profile(&dir, "shim", "s.trace", "./stencil");
    profile(&dir, "shim", "h.trace", "./heat");

    let s = stdout(&accprof(&dir, &["advise", "-q", "s.trace"]));
    // `u_` of Grid<double> is allocated at stencil.hpp:13 (`u_(new T[n])`); copied out where
    // smooth's region closes (line 45) and in again by total's `kernels` (line 54). Grid<float>'s
    // `u_` is another array, with a finding of its own.
    assert!(
        s.contains("[create_instead_of_copy]")
            && s.contains("`#pragma acc enter data copyin(u_[0:n])`")
            && s.contains("Grid<float>::smooth(int, float)")
            && s.contains("Grid<double>::smooth(int, double) and Grid<double>::total() const"),
        "{s}"
    );
    assert!(
        !s.contains("wrap lines 45-54"),
        "a region across two methods:\n{s}"
    );

    let h = stdout(&accprof(&dir, &["advise", "-q", "h.trace"]));
    assert!(!h.contains("[data_region]"), "{h}");
    assert!(
        !h.contains("#pragma"),
        "Fortran advice in Fortran syntax:\n{h}"
    );
    // Module procedures and variables by their source names, not gfortran's
    // `__heat_mod_MOD_...` symbols (kernel names stay the runtime's: `__heat_mod_MOD_heat_step._omp_fn.0`).
    let r = stdout(&accprof(&dir, &["report", "-q", "h.trace"]));
    let symbols = |t: &str| {
        t.lines()
            .filter(|l| l.contains("_MOD_") && !l.contains("._omp_fn."))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(symbols(&r).is_empty() && symbols(&h).is_empty(), "{r}\n{h}");
}

/// tests/apps' relax_args (CloverLeaf's shape): the kernels constructs of module procedures
/// copy their scalar arguments back after every launch; the advice names the kernels directives
/// and the Fortran fix, and the PARAMETER it passes is not written back on the shim.
#[test]
fn kernels_constructs_copying_scalar_arguments_back_are_advised() {
    let dir = scratch("ul-kernels-args");
    place("relax_args.f90", &dir, "relax_args.f90");
    build("gfortran", &dir, &["relax_args.f90"], "relax_args", &[]);
    profile(&dir, "shim", "r.trace", "./relax_args");
    let o = accprof(&dir, &["advise", "-q", "r.trace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "2 kernels constructs copy the scalars they use back to the host after every launch"
        ) && text.contains("[kernels_scalars]"),
        "{text}"
    );
    // smooth's `!$acc kernels` is line 19, copy_back's line 37; smooth copies 9 cells back (its 6 scalar arguments and what GCC adds).
    assert!(
        text.contains("relax_args.f90:19: 9 scalars back after each of 30 launches"),
        "{text}"
    );
    assert!(text.contains("relax_args.f90:37: 8 scalars back"), "{text}");
    assert!(
        text.contains("`copyin(...)`") && text.contains("`!$acc parallel loop`"),
        "{text}"
    );
}

/// A run on libgomp's host fallback (no GPU here, no offload compiler on CI) says so in one
/// line, with why no transfer shows and how to see them; the shim's emulated device does not.
#[test]
fn host_fallback_is_said_in_one_line() {
    let dir = scratch("ul-fallback");
    place("laplace_naive.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace", &["-lm"]);
    profile(&dir, "default", "host.trace", "./laplace");
    profile(&dir, "shim", "shim.trace", "./laplace");
    let host = stdout(&accprof(&dir, &["report", "-q", "host.trace"]));
    let said: Vec<&str> = host
        .lines()
        .filter(|l| l.contains("Host fallback:"))
        .collect();
    assert_eq!(said.len(), 1, "{host}");
    assert!(
        said[0].contains("no data transfer") && said[0].contains("--runtime shim"),
        "{}",
        said[0]
    );
    let shim = stdout(&accprof(&dir, &["report", "-q", "shim.trace"]));
    assert!(!shim.contains("Host fallback"), "{shim}");
    let internal: Vec<&str> = shim
        .lines()
        .filter(|l| l.trim_start().starts_with("runtime internal"))
        .collect();
    assert_eq!(internal.len(), 2, "one row each way:\n{shim}");
    assert!(!shim.contains("host 0x7f"), "{shim}");
    let advice = stdout(&accprof(&dir, &["advise", "-q", "host.trace"]));
    assert!(
        advice.contains("Host fallback:") && !advice.contains("async_queues"),
        "{advice}"
    );
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// tests/apps' MPI halo exchange on 2 ranks: the merged section names every trace, sums wall
/// time like every other time (so no share exceeds the job), and gives each construct's
/// total, max, mean and imbalance across the ranks.
#[test]
fn mpi_ranks_merge_into_totals_that_add_up() {
    let dir = scratch("ul-mpi");
    if !build_mpi_halo(&dir) {
        return;
    }
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    let ran = Command::new("mpirun")
        .current_dir(&dir)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(accprof_cli())
        .args(["run", "-q", "-o", "traces/", "--", "./mpi_halo"])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", stderr(&ran));
    assert!(
        stdout(&ran).contains("mpi_halo ranks 2"),
        "{}",
        stdout(&ran)
    );
    let mut traces: Vec<String> = std::fs::read_dir(dir.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    traces.sort();
    assert_eq!(traces.len(), 2, "{traces:?}");
    let mut args = vec!["report", "-q"];
    args.extend(traces.iter().map(String::as_str));
    let o = accprof(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let merged = &text[text
        .find("==== all 2 traces merged ====")
        .unwrap_or_else(|| panic!("{text}"))..];
    let header: String = merged.lines().take(4).collect::<Vec<_>>().join("\n");
    for t in &traces {
        assert!(header.contains(t.as_str()), "every trace named:\n{header}");
    }
    assert!(header.contains("wall time too"), "{header}");
    // Every share in every summary is of its own wall time: none above 100%.
    for l in text.lines().filter(|l| {
        l.trim_start().starts_with("compute constructs [host]")
            || l.trim_start().starts_with("untracked host time")
    }) {
        let pct: f64 = l
            .split_whitespace()
            .find(|w| w.ends_with('%'))
            .and_then(|w| w.trim_end_matches('%').parse().ok())
            .unwrap_or_else(|| panic!("{l}"));
        assert!(pct <= 100.0, "{l}");
    }
    let table = &merged[merged
        .find("Constructs across the 2 traces")
        .unwrap_or_else(|| panic!("{merged}"))..];
    let row = table
        .lines()
        .find(|l| l.contains("mpi_halo.c:") && l.contains("compute region"))
        .unwrap_or_else(|| panic!("{table}"));
    let imbalance: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!(
        (1.0..=2.0).contains(&imbalance),
        "max/mean of 2 ranks lies in [1, 2]: {row}"
    );
}

/// `accprof run -o run.trace -- mpirun -np 2 ./app`: the ranks inherit the tool and write
/// run.rank0.trace and run.rank1.trace, which `run` finds, names and reports merged.
#[test]
fn accprof_run_of_a_launcher_reports_every_rank() {
    let dir = scratch("ul-mpi-run");
    if !build_mpi_halo(&dir) {
        return;
    }
    let o = accprof(
        &dir,
        &[
            "run",
            "--report",
            "-o",
            "run.trace",
            "--",
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "2",
            "./mpi_halo",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("2 traces (one per MPI rank): run.rank0.trace run.rank1.trace"),
        "{err}"
    );
    assert!(err.contains("==== all 2 traces merged ===="), "{err}");
    assert!(!err.contains("no trace was written"), "{err}");
}

/// Builds tests/apps' MPI halo exchange in `dir`; false (the test is skipped) where Open MPI
/// is missing, which CI never allows.
fn build_mpi_halo(dir: &Path) -> bool {
    if !on_path("mpirun") || !on_path("mpicc") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have Open MPI (.ci/run installs libopenmpi-dev openmpi-bin)"
        );
        eprintln!("note: mpirun/mpicc not found (apt-get install libopenmpi-dev openmpi-bin): MPI test skipped");
        return false;
    }
    place("mpi_halo.c", dir, "mpi_halo.c");
    let mut cc = Command::new("mpicc");
    cc.current_dir(dir).env("OMPI_CC", "gcc").args([
        "-fopenacc",
        "-g",
        "-O2",
        "mpi_halo.c",
        "-o",
        "mpi_halo",
        "-lm",
    ]);
    if offload_compiler() {
        cc.arg("-foffload=-lm");
    }
    let built = cc.output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    true
}

/// GCC places a data region's exit on the statement after its pragma (the loop header); with the
/// source at hand the exit row is the region's closing brace.
#[test]
fn data_region_exit_is_the_regions_closing_line() {
    let dir = scratch("ul-exit");
    place("laplace_data.c", &dir, "laplace.c");
    build("gcc", &dir, &["laplace.c"], "laplace", &["-lm"]);
    profile(&dir, "default", "t.trace", "./laplace");
    let text = stdout(&accprof(&dir, &["report", "-q", "t.trace"]));
    // laplace_data.c: `#pragma acc data` at 38, its block the while loop at 39-59.
    assert!(
        text.contains("    38: data region reached 1 time"),
        "{text}"
    );
    assert!(text.contains("    59: data region exit"), "{text}");
    assert!(!text.contains("    39: data region"), "{text}");
}
