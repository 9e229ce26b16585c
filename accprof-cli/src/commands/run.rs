//! `accprof run`: start a program with the tool loaded, then say what it recorded.
//!
//! The program is started with libaccprof both preloaded (LD_PRELOAD: GCC's libgomp and
//! runtimes that look for the tool in the process) and named in ACC_PROFLIB (runtimes that
//! load tools themselves); the library records each event once either way. Its standard
//! streams, exit status and signals are the program's: `accprof run -- ./app` can stand in for
//! `./app` in a batch script.

use crate::error::CliError;
use clap::Parser;
use std::io::IsTerminal;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

/// Run a program with the profiler loaded and write its trace.
///
/// Everything after `--` is the program and its arguments. Its stdin, stdout, stderr and exit
/// code pass through unchanged; SIGTERM, SIGHUP and SIGQUIT sent to accprof are forwarded to
/// it (Ctrl-C reaches it directly). When it ends, accprof prints where the trace is and a short
/// summary, or the full report and advice with --report and --advise.
///
/// The trace goes to -o, else to accprof.<program>.<pid>.trace in the current directory.
/// Programs it starts itself (an MPI launcher's ranks, say) inherit the tool and write one
/// trace each (use -o 'run.%p.trace' or a directory ending in '/').
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  accprof run -- ./laplace 4096\n  accprof run --report --advise -o laplace.trace -- ./laplace 4096\n  mpirun -np 4 accprof run -o traces/ -- ./app"
)]
pub struct Args {
    /// Where to write the trace: a file, or a directory (ending in '/') for one trace per
    /// process. `%p` is replaced by the process id, `%r` by the MPI rank.
    #[arg(short, long, value_name = "TRACE")]
    pub output: Option<PathBuf>,
    /// Print the full report (as `accprof report`) on standard error when the program ends
    /// (never on its standard output, which stays the program's own).
    #[arg(long)]
    pub report: bool,
    /// Print the advice (as `accprof advise`) on standard error when the program ends.
    #[arg(long)]
    pub advise: bool,
    /// Write what --report and --advise print to FILE instead of standard error.
    #[arg(long, value_name = "FILE")]
    pub report_file: Option<PathBuf>,
    /// Print nothing of accprof's own but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// The OpenACC runtime to run the program on: its own (`default`: GCC's libgomp, NVHPC's),
    /// or `shim`, accprof's bundled runtime (libaccshim.so, preloaded before the tool: a
    /// `gcc -fopenacc` program runs on it unmodified, on a GPU or on its emulated device).
    /// libaccshim.so is looked for in ACCPROF_SHIM_LIB, else next to this binary.
    #[arg(long, value_enum, default_value = "default", value_name = "RUNTIME")]
    pub runtime: Runtime,
    /// Hash the bytes of every transfer (ACCPROF_CONTENT=on), so that the advice proves which
    /// copies carried bytes the device already held and chooses copyin, copyout, copy or create
    /// per array from what the program needed. It reads each transfer's bytes once more: about
    /// what the copy costs (docs/performance/content-hash.md).
    #[arg(long)]
    pub content: bool,
    /// The program to run and its arguments.
    #[arg(
        trailing_var_arg = true,
        required = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub command: Vec<String>,
}

/// `--runtime`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    Default,
    Shim,
}

/// The child's pid, for the signal forwarder.
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    let program = &args.command[0];
    let exe = resolve_program(program)?;
    let lib = find_library()?;
    let exe_name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "app".into());
    let out = match &args.output {
        Some(p) => p.display().to_string(),
        None => format!("accprof.{exe_name}.%p.trace"),
    };
    check_writable(&out)?;

    let mut cmd = Command::new(&exe);
    cmd.args(&args.command[1..]);
    let mut preload = prepend(&lib, std::env::var("LD_PRELOAD").ok(), ':');
    if args.runtime == Runtime::Shim {
        // The runtime first, so that its GOACC_* and acc_* win over libgomp's; the tool's
        // constructor then finds the shim, which registers it once (libaccprof keys its
        // registrations by the runtime).
        preload = prepend(&find_shim()?, Some(preload), ':');
    }
    cmd.env("LD_PRELOAD", preload);
    cmd.env(
        "ACC_PROFLIB",
        prepend(&lib, std::env::var("ACC_PROFLIB").ok(), ';'),
    );
    cmd.env("ACCPROF_OUT", &out);
    // accprof prints the summary itself, after the program's last line.
    cmd.env("ACCPROF_QUIET", "1");
    cmd.env_remove("ACCPROF_REPORT");
    if args.quiet && args.runtime == Runtime::Shim {
        // The bundled runtime's banner ("accshim: using emulated device ...") is accprof's too.
        cmd.env("ACCSHIM_QUIET", "1");
    }
    if args.content {
        cmd.env("ACCPROF_CONTENT", "on");
    }

    // Ctrl-C goes to the whole foreground group, the program included: accprof waits for it
    // to end and then reports. Signals aimed at accprof alone are passed on.
    // SAFETY: installing handlers that only call kill, before any thread is started.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(
                sig,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
    let started = Instant::now();
    let started_unix_ns = unix_ns();
    let mut child = cmd
        .spawn()
        .map_err(|e| CliError::new(format!("cannot start {}: {e}", exe.display())))?;
    let pid = child.id();
    CHILD.store(pid as i32, Ordering::Relaxed);
    let tty = std::io::stderr().is_terminal();
    if tty {
        // The elapsed time in the terminal's title: it never mixes with the program's output.
        let title = format!("accprof: {exe_name} running");
        eprint!("\x1b]0;{title}\x07");
    }
    let status = child
        .wait()
        .map_err(|e| CliError::new(format!("waiting for {}: {e}", exe.display())))?;
    let elapsed = started.elapsed();
    if tty {
        eprint!(
            "\x1b]0;accprof: {exe_name} done in {:.1} s\x07",
            elapsed.as_secs_f64()
        );
    }
    let traces = expected_traces(&out, pid, started_unix_ns);

    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    };
    let how = match status.signal() {
        Some(s) => format!("was killed by signal {s}"),
        None => format!("exited with status {code}"),
    };
    let streamed = PathBuf::from(out.replace("%p", &pid.to_string()));
    if traces.is_empty()
        && streamed
            .metadata()
            .is_ok_and(|m| !m.is_file() && !m.is_dir())
    {
        // A FIFO or device: the trace went to its reader, and cannot be read back here.
        if !args.quiet {
            eprintln!(
                "accprof: {} {how} after {:.2} s; the trace was streamed to {}",
                exe_name,
                elapsed.as_secs_f64(),
                streamed.display()
            );
        }
        return exit_like(code);
    }
    if traces.is_empty() {
        if !args.quiet {
            eprintln!(
                "accprof: {} {how} after {:.2} s; no trace was written (the program made no OpenACC calls, or was killed before the first events were saved)",
                exe_name,
                elapsed.as_secs_f64()
            );
        }
        return exit_like(code);
    }
    for trace in &traces {
        keep_source_lines(trace, args.quiet);
    }
    let names = traces
        .iter()
        .map(|t| t.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    if !args.quiet {
        let what = if traces.len() == 1 {
            "trace".to_string()
        } else if one_process(&traces) {
            format!(
                "{} traces (one per program image: it ran exec)",
                traces.len()
            )
        } else {
            format!("{} traces (one per MPI rank)", traces.len())
        };
        eprintln!(
            "accprof: {exe_name} {how} after {:.2} s; {what}: {names}",
            elapsed.as_secs_f64()
        );
    }
    let mut text = String::new();
    if args.report {
        text += &reuse::<crate::commands::report::Args>("report", &traces, |a| {
            crate::commands::report::render(&a)
        })?;
    }
    if args.advise {
        if !text.is_empty() {
            text.push('\n');
        }
        text += &reuse::<crate::commands::advise::Args>("advise", &traces, |a| {
            crate::commands::advise::render(&a)
        })?;
    }
    if args.report || args.advise {
        write_outside_stdout(args.report_file.as_deref(), &text)?;
    }
    if !args.report && !args.advise && !args.quiet {
        match traces.as_slice() {
            [trace] => print_summary(trace)?,
            _ => eprintln!(
                "accprof: next: accprof report {names}   accprof advise {names}   accprof tui {names}"
            ),
        }
    }
    exit_like(code)
}

/// Refuses, before the program starts, a trace name whose directory cannot take a new file
/// (read-only, not a directory, no permission): the program would run to its end unrecorded.
/// A name that already leads to something other than a directory (a FIFO, a device, an
/// earlier trace) is the tool library's to judge; a directory still to be made is judged by
/// the nearest one that exists, and a `%` pattern by the part before it.
fn check_writable(out: &str) -> Result<(), CliError> {
    let path = Path::new(out);
    if path.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
        return Ok(());
    }
    let dir = if out.ends_with('/') {
        path
    } else {
        path.parent().unwrap_or(Path::new(""))
    };
    // The components before the first one that holds a pattern.
    let fixed: PathBuf = dir
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains('%'))
        .collect();
    let mut existing = if fixed.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        fixed
    };
    while !existing.exists() {
        match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => existing = p.to_path_buf(),
            // The working directory: gone only if removed under us, which creating tells.
            _ => return Ok(()),
        }
    }
    let refuse = |why: String| {
        Err(CliError::new(format!(
            "cannot write the trace {out}: {why}; give -o a path in a directory you can write"
        )))
    };
    if !existing.is_dir() {
        return refuse(format!("{} is not a directory", existing.display()));
    }
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes())
        .map_err(|_| CliError::new(format!("{out}: the name holds a NUL byte")))?;
    // SAFETY: access reads the NUL-terminated path only.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return refuse(format!("{}: {e}", existing.display()));
    }
    Ok(())
}

/// The trace at `path` opened to read back, when it is a regular file: opening a FIFO whose
/// writer has gone waits for the next one forever.
fn read_back(path: &Path) -> Option<accprof_trace::TraceReader<std::io::BufReader<std::fs::File>>> {
    if !path.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    accprof_trace::TraceReader::open(path).ok()
}

/// Whether all `traces` are one process's (its images, when it ran exec).
fn one_process(traces: &[PathBuf]) -> bool {
    let pids: std::collections::BTreeSet<Option<u32>> = traces
        .iter()
        .map(|t| read_back(t).map(|r| r.header().pid))
        .collect();
    pids.len() == 1
}

/// A program that was killed (or exec'd) ended without the tool's exit-time symbols chunk: add
/// it now, while the binary is the one that ran, after folding its live file into the trace. A
/// trace that has one is left alone.
pub(crate) fn keep_source_lines(trace: &Path, quiet: bool) {
    if std::env::var("ACCPROF_SYMBOLS").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "no" | "false"
        )
    }) {
        // The killed run's events still go into the trace, lines or not.
        if let Err(e) = accprof_trace::fold::fold_into_trace(trace) {
            if !quiet {
                eprintln!("accprof: {e}");
            }
        }
        return;
    }
    match crate::commands::symbolize::symbolize(trace) {
        Ok(_) => {}
        // Not fatal: readers still try the binary.
        Err(e) if !quiet => eprintln!("accprof: source lines not kept in the trace: {e}"),
        Err(_) => {}
    }
}

/// The report and advice go to `file`, else to standard error: the program's standard output
/// stays byte for byte its own (a pipeline reading it must not see accprof's tables).
fn write_outside_stdout(file: Option<&Path>, text: &str) -> Result<(), CliError> {
    use std::io::Write;
    match file {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| CliError::new(format!("{}: cannot write: {e}", p.display()))),
        None => {
            let mut err = std::io::stderr().lock();
            err.write_all(text.as_bytes())
                .and_then(|_| err.flush())
                .map_err(|e| CliError::new(format!("cannot write the report: {e}")))
        }
    }
}

/// Runs another subcommand's rendering on the trace with its default options, parsed by its own
/// parser so `run` stays in step with it.
fn reuse<A: clap::Args>(
    name: &str,
    traces: &[PathBuf],
    f: fn(A) -> Result<String, CliError>,
) -> Result<String, CliError> {
    #[derive(Parser)]
    struct Wrap<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    let parsed = Wrap::<A>::try_parse_from(
        [std::ffi::OsStr::new(name), std::ffi::OsStr::new("--quiet")]
            .into_iter()
            .chain(traces.iter().map(|t| t.as_os_str())),
    )
    .map_err(|e| CliError::new(format!("internal: {name} arguments: {e}")))?;
    f(parsed.args)
}

/// A few lines: where the time went, and the next commands to try.
fn print_summary(trace: &Path) -> Result<(), CliError> {
    let profile = accprof_analysis::Profile::from_path(trace)?;
    // A trace cut short (a full disk stops recording) holds only part of the run: said
    // before its figures.
    for w in &profile.warnings {
        eprintln!("accprof: warning: {w}");
    }
    let s = &profile.summary;
    let f = accprof_analysis::format::duration;
    eprintln!(
        "accprof: {} in compute constructs, {} in data transfers ({}), {} waiting",
        f(s.compute.total_ns),
        f(s.transfers_ns()),
        accprof_analysis::format::bytes(s.transfer_bytes()),
        f(s.waits.total_ns),
    );
    if accprof_analysis::host_fallback::ran_on_host(&profile) {
        eprintln!(
            "accprof: host fallback: {}",
            accprof_analysis::host_fallback::EXPLANATION
        );
    }
    let findings = accprof_analysis::advise(&profile);
    if let Some(top) = findings.first() {
        eprintln!("accprof: top advice: {}", top.title);
    }
    eprintln!(
        "accprof: next: accprof report {0}   accprof advise {0}   accprof tui {0}",
        trace.display()
    );
    Ok(())
}

fn exit_like(code: i32) -> Result<(), CliError> {
    if code == 0 {
        Ok(())
    } else {
        // The program's own status, with nothing added: it already said what went wrong.
        std::process::exit(code)
    }
}

/// The program as the shell would find it: a path, or a name looked up in PATH.
pub(crate) fn resolve_program(program: &str) -> Result<PathBuf, CliError> {
    let is_exec = |p: &Path| {
        p.is_file()
            && p.metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.exists() {
            return Err(CliError::with_code(format!("{program}: no such file"), 127));
        }
        if !is_exec(&p) {
            return Err(CliError::with_code(
                format!("{program}: not an executable file"),
                126,
            ));
        }
        return Ok(p);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
        .ok_or_else(|| {
            CliError::with_code(
                format!("{program}: command not found (give a path, e.g. ./{program})"),
                127,
            )
        })
}

/// libaccprof.so: ACCPROF_LIB, else next to this binary (target/release), else ../lib.
pub(crate) fn find_library() -> Result<PathBuf, CliError> {
    if let Some(p) = std::env::var_os("ACCPROF_LIB") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(absolute(&p))
        } else {
            Err(CliError::new(format!(
                "ACCPROF_LIB={}: no such file",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot locate libaccprof.so: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("libaccprof.so"), dir.join("../lib/libaccprof.so")]
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| absolute(&p))
        .ok_or_else(|| {
            CliError::new(format!(
                "cannot find libaccprof.so next to {} (build it with `cargo build --release -p libaccprof`, or set ACCPROF_LIB)",
                exe.display()
            ))
        })
}

/// libaccshim.so: ACCPROF_SHIM_LIB, else next to this binary, else ../lib.
pub(crate) fn find_shim() -> Result<PathBuf, CliError> {
    if let Some(p) = std::env::var_os("ACCPROF_SHIM_LIB") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(absolute(&p))
        } else {
            Err(CliError::new(format!(
                "ACCPROF_SHIM_LIB={}: no such file",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot locate libaccshim.so: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("libaccshim.so"), dir.join("../lib/libaccshim.so")]
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| absolute(&p))
        .ok_or_else(|| {
            CliError::new(format!(
                "cannot find libaccshim.so next to {} (build it with `cargo build --release -p runtime-shim`, or set ACCPROF_SHIM_LIB)",
                exe.display()
            ))
        })
}

/// ACC_PROFLIB must be absolute: libgomp does not load a relative path (see runtimes.md).
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

pub(crate) fn prepend(lib: &Path, existing: Option<String>, sep: char) -> String {
    match existing.filter(|e| !e.is_empty()) {
        Some(e) => format!("{}{sep}{e}", lib.display()),
        None => lib.display().to_string(),
    }
}

/// Where libaccprof put the trace of process `pid` given ACCPROF_OUT=`out` (its rules, for
/// the common cases: %p expansion, a directory). When the name it would choose was taken (a
/// file, a link, a trace another process is writing), libaccprof writes `NAME.1.trace`,
/// `NAME.2.trace`, ... instead: the trace is the candidate whose header names this process
/// and a start no earlier than the run's (a pid can have been used before).
/// The traces this run wrote: the program's own; else, when it ran under MPI (a plain `-o`
/// name gets `.rankN` from libaccprof) or started a launcher whose ranks inherited the tool,
/// every trace of the output's pattern that began after the run did and names an MPI rank, in
/// rank order.
fn expected_traces(out: &str, pid: u32, started_unix_ns: u64) -> Vec<PathBuf> {
    let own = expected_trace_paths(out, pid, started_unix_ns);
    if !own.is_empty() {
        return own;
    }
    let fresh_rank = |path: &Path| {
        read_back(path).and_then(|r| {
            let h = r.header();
            // Slack for the clocks' granularity between two processes' reads.
            (h.start_unix_ns + 1_000_000_000 >= started_unix_ns)
                .then_some(h.mpi_rank)
                .flatten()
        })
    };
    let (dir, prefix, suffix) = rank_pattern(out);
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|f| {
            f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .is_some_and(|n| {
                    n.len() >= prefix.len() + suffix.len()
                        && n.starts_with(&prefix)
                        && n.ends_with(&suffix)
                })
        })
        .filter_map(|f| Some((fresh_rank(&f)?, f)))
        .collect();
    found.sort();
    found.dedup_by_key(|(rank, _)| *rank);
    found
        .into_iter()
        // Named as the user named the output: `run.rank0.trace`, not `./run.rank0.trace`.
        .map(|(_, f)| f.strip_prefix(".").map(Path::to_path_buf).unwrap_or(f))
        .collect()
}

/// Where the ranks' traces of output `out` are and how their names begin and end: libaccprof
/// gives a plain name `NAME.rankN.EXT`, and expands `%p`, `%r` and `%h` in a pattern (the text
/// before the first `%` and after the last stays); a directory holds
/// `accprof.<exe>.<pid>.trace`.
fn rank_pattern(out: &str) -> (PathBuf, String, String) {
    let p = PathBuf::from(out);
    if out.ends_with('/') || p.is_dir() {
        return (p, "accprof.".into(), ".trace".into());
    }
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match (name.find('%'), name.rfind('%')) {
        (Some(first), Some(last)) => {
            let after = (last + 2).min(name.len());
            (dir, name[..first].to_string(), name[after..].to_string())
        }
        _ => {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = p
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            (dir, format!("{stem}.rank"), ext)
        }
    }
}

/// The traces of process `pid` (one per program image: a program that runs exec, keeping its
/// pid, writes one trace per image), in the order the images ran.
fn expected_trace_paths(out: &str, pid: u32, started_unix_ns: u64) -> Vec<PathBuf> {
    let expanded = out.replace("%p", &pid.to_string());
    let p = PathBuf::from(&expanded);
    let start_of = |path: &Path| {
        read_back(path).and_then(|r| {
            let h = r.header();
            // Slack for the clocks' granularity between two processes' reads.
            (h.pid == pid && h.start_unix_ns + 1_000_000_000 >= started_unix_ns)
                .then_some(h.start_unix_ns)
        })
    };
    let candidates: Vec<PathBuf> = if out.ends_with('/') || p.is_dir() {
        // accprof.<exe>.<pid>.trace, or accprof.<exe>.<pid>.<n>.trace when that was taken.
        std::fs::read_dir(&p)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|f| {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                name.is_some_and(|n| n.contains(&format!(".{pid}.")) && n.ends_with(".trace"))
            })
            .collect()
    } else {
        std::iter::once(p.clone())
            .chain(
                (1..=100)
                    .map(|n| numbered(&p, n))
                    .take_while(|c| c.symlink_metadata().is_ok()),
            )
            .collect()
    };
    let mut found: Vec<(u64, PathBuf)> = candidates
        .into_iter()
        .filter_map(|c| Some((start_of(&c)?, c)))
        .collect();
    found.sort();
    found.into_iter().map(|(_, c)| c).collect()
}

/// `dir/name.trace` as `dir/name.N.trace` (`name.N` without an extension): libaccprof's other
/// names for a taken one.
fn numbered(path: &Path, n: u32) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.extension() {
        Some(ext) => path.with_file_name(format!("{stem}.{n}.{}", ext.to_string_lossy())),
        None => path.with_file_name(format!("{stem}.{n}")),
    }
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
