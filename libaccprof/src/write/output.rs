//! Where the trace goes, what its header says, and the report at exit.

use crate::config::{Config, ReportTarget};
use accprof_trace::{Header, TraceWriter};
use std::fs::File;
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
        extra: Vec::new(),
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

/// How many other names are tried when the chosen one exists.
const OTHER_NAMES: u32 = 100;

/// The trace file, created new, and the name it got.
pub struct Created {
    pub writer: TraceWriter<File>,
    pub path: PathBuf,
    /// Said once when the chosen name was taken and another one is used.
    pub note: Option<String>,
}

/// Creates the trace file (and a missing directory when ACCPROF_OUT ended with '/').
///
/// Created, never opened: `O_CREAT | O_EXCL | O_NOFOLLOW`, so a file or a symbolic link that
/// is already at the name (another process's trace, an earlier run's, or a link planted in a
/// shared directory) is never written through or truncated. The trace then takes the first
/// free name of `NAME.1.trace`, `NAME.2.trace`, ... and the note says which. Mode 0644 under
/// the umask.
pub fn create(path: &Path, header: &Header) -> io::Result<Created> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let mut candidate = path.to_path_buf();
    for n in 0..=OTHER_NAMES {
        if n > 0 {
            candidate = numbered(path, n);
        }
        match create_new(&candidate) {
            Ok(f) => {
                let note = (n > 0).then(|| {
                    format!(
                        "{} already exists (a file or link accprof does not overwrite); this trace is {}",
                        path.display(),
                        candidate.display()
                    )
                });
                return Ok(Created {
                    writer: TraceWriter::new(f, header)?,
                    path: candidate,
                    note,
                });
            }
            // ELOOP: O_NOFOLLOW met a symbolic link at the name.
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    || e.raw_os_error() == Some(libc::ELOOP) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} and {OTHER_NAMES} numbered names beside it already exist",
            path.display()
        ),
    ))
}

fn create_new(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// `dir/name.trace` as `dir/name.N.trace` (`name.N` without an extension).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_name_for_a_taken_one_keeps_directory_and_extension() {
        assert_eq!(
            numbered(Path::new("/d/accprof.app.12.trace"), 1),
            PathBuf::from("/d/accprof.app.12.1.trace")
        );
        assert_eq!(numbered(Path::new("out"), 3), PathBuf::from("out.3"));
    }

    #[test]
    fn an_existing_file_or_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("t.trace");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let c = create(&link, &Header::default()).unwrap();
        assert_eq!(c.path, dir.path().join("t.1.trace"));
        assert!(c.note.unwrap().contains("t.trace already exists"));
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let again = create(&link, &Header::default()).unwrap();
        assert_eq!(
            again.path,
            dir.path().join("t.2.trace"),
            "two writers never share a file"
        );
    }
}
