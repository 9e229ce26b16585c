//! Where the trace goes, what its header says, and the report at exit.

use crate::config::{Config, ReportTarget};
use accprof_trace::Header;
use std::io;
use std::path::{Path, PathBuf};

/// The trace header for this process.
pub fn header(registration: &str) -> Header {
    let args = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    Header {
        exe: exe_path(),
        args,
        pid: std::process::id(),
        hostname: hostname(),
        start_unix_ns: crate::clock::unix_ns(),
        start_monotonic_ns: crate::clock::monotonic_ns(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mpi_rank: mpi_rank(),
        registration: registration.to_string(),
        // Where relative source paths (and relative arguments) start.
        extra: std::env::current_dir()
            .map(|d| vec![("cwd".to_string(), d.display().to_string())])
            .unwrap_or_default(),
    }
}

fn exe_path() -> String {
    std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

fn exe_name() -> String {
    Path::new(&exe_path())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "app".into())
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The rank from the launchers users have: Open MPI, MPICH/Intel MPI (PMI), Slurm.
pub fn mpi_rank() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.trim().parse().ok())
}

/// `ACCPROF_OUT` resolved: a directory gets the default name inside it; `%p`, `%r`, `%h` are
/// expanded. Under MPI, a plain file name gets the rank appended so ranks do not overwrite
/// each other.
pub fn trace_path(cfg: &Config) -> PathBuf {
    let pid = std::process::id();
    let rank = mpi_rank();
    let default_name = format!("accprof.{}.{}.trace", exe_name(), pid);
    let Some(out) = cfg.out.as_deref() else {
        return PathBuf::from(default_name);
    };
    let expanded = out
        .replace("%p", &pid.to_string())
        .replace(
            "%r",
            &rank.map(|r| r.to_string()).unwrap_or_else(|| "0".into()),
        )
        .replace("%h", &hostname());
    let p = PathBuf::from(&expanded);
    if out.ends_with('/') || p.is_dir() {
        return p.join(default_name);
    }
    match rank {
        Some(r) if !out.contains('%') => {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = p
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            p.with_file_name(format!("{stem}.rank{r}{ext}"))
        }
        _ => p,
    }
}

/// Whether ACCPROF_OUT names the trace file itself (not a directory to put it in): then a
/// FIFO or a device at that name is the user's way to stream the trace, and is opened.
pub fn named_by_user(cfg: &Config) -> bool {
    cfg.out
        .as_deref()
        .is_some_and(|out| !out.ends_with('/') && !Path::new(out).is_dir())
}

/// Runs `accprof report` on the finished trace (ACCPROF_REPORT). The program's own work is
/// done by now, so this costs it nothing but the wait.
pub fn run_report(target: &ReportTarget, trace: &Path) {
    let Some(cli) = find_cli() else {
        eprintln!("accprof: ACCPROF_REPORT is set but the accprof program was not found next to libaccprof.so or on PATH (set ACCPROF_CLI)");
        return;
    };
    let mut cmd = std::process::Command::new(&cli);
    cmd.arg("report").arg(trace);
    if let ReportTarget::File(f) = target {
        cmd.arg("-o").arg(f);
    }
    // The report must not profile itself.
    cmd.env_remove("LD_PRELOAD").env_remove("ACC_PROFLIB");
    // The report goes where the program's stderr goes, like NV_ACC_TIME's.
    cmd.stdout(std::process::Stdio::from(io::stderr()));
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("accprof: `{} report` failed ({s})", cli.display()),
        Err(e) => eprintln!("accprof: cannot run {}: {e}", cli.display()),
    }
}

/// `ACCPROF_CLI`, else `accprof` next to this library (target/release/ or an install's lib/ and
/// bin/), else on PATH.
fn find_cli() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ACCPROF_CLI") {
        return Some(PathBuf::from(p));
    }
    if let Some(lib) = own_path() {
        if let Some(dir) = lib.parent() {
            for cand in [dir.join("accprof"), dir.join("../bin/accprof")] {
                if cand.is_file() {
                    return Some(cand);
                }
            }
        }
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("accprof"))
        .find(|p| p.is_file())
}

/// The path of this shared library.
fn own_path() -> Option<PathBuf> {
    // SAFETY: `Dl_info` is a C struct of pointers and integers, for which all-zero bytes (NULL
    // pointers) are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    let ok = unsafe { libc::dladdr(own_path as *const libc::c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let p = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(p.to_string_lossy().into_owned()))
}
