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

/// How many other names are tried when the chosen one exists.
const OTHER_NAMES: u32 = 100;

/// The trace file, created new, and the name it got.
pub struct Created {
    pub writer: TraceWriter<File>,
    pub path: PathBuf,
    /// Said once when the chosen name was taken and another one is used.
    pub note: Option<String>,
}

/// Whether ACCPROF_OUT names the trace file itself (not a directory to put it in): then a
/// FIFO or a device at that name is the user's way to stream the trace, and is opened.
pub fn named_by_user(cfg: &Config) -> bool {
    cfg.out
        .as_deref()
        .is_some_and(|out| !out.ends_with('/') && !Path::new(out).is_dir())
}

/// Creates the trace file (and a missing directory when ACCPROF_OUT ended with '/').
///
/// The file is never written through a name that exists: a new name is created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` (mode 0644 under the umask), and the writer holds an
/// exclusive `flock` on it for the life of the process. What is already at the name decides:
/// - nothing: created there;
/// - an earlier accprof trace that no live process holds locked: replaced, by creating a new
///   file beside it and renaming it into place (the old file is not written to, so a hard
///   link to it changes nothing; a sticky directory refuses another user's file);
/// - a FIFO or a device that ACCPROF_OUT itself names (`stream_ok`): opened, to stream;
/// - anything else (a symbolic link, a trace another process is writing, a file that is not
///   a trace, an empty file being created): the trace takes the first free name of
///   `NAME.1.trace`, `NAME.2.trace`, ..., and the note says which.
pub fn create(path: &Path, header: &Header, stream_ok: bool) -> io::Result<Created> {
    if stream_ok && is_stream(path) {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        return Ok(Created {
            writer: TraceWriter::new(f, header)?,
            path: path.to_path_buf(),
            note: None,
        });
    }
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
        let created = match create_new(&candidate) {
            Ok(f) => Some(f),
            // ELOOP: O_NOFOLLOW met a symbolic link at the name.
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    || e.raw_os_error() == Some(libc::ELOOP) =>
            {
                replace_finished_trace(&candidate)
            }
            Err(e) => return Err(e),
        };
        if let Some(f) = created {
            let note = (n > 0).then(|| {
                format!(
                    "{} exists and is not a finished accprof trace (a link, another file, or a trace being written); this trace is {}",
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
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} and {OTHER_NAMES} numbered names beside it already exist",
            path.display()
        ),
    ))
}

/// A new file renamed over `path` when `path` is a regular, non-empty accprof trace that no
/// process holds locked; `None` otherwise (the caller tries another name).
fn replace_finished_trace(path: &Path) -> Option<File> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() || meta.len() == 0 {
        return None;
    }
    let mut old = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut magic = [0u8; 8];
    if old.read_exact(&mut magic).is_err() || magic != accprof_trace::FILE_MAGIC {
        return None;
    }
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(old.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return None;
    }
    let name = path.file_name()?.to_string_lossy().into_owned();
    let temp = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
    let f = create_new(&temp).ok()?;
    if std::fs::rename(&temp, path).is_err() {
        let _ = std::fs::remove_file(&temp);
        return None;
    }
    Some(f)
}

/// A FIFO or a character device (not followed through a link): nothing to overwrite.
pub fn is_stream(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_char_device())
}

/// Creates `path` new and takes the writer's lock on it (held until the process ends).
fn create_new(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // SAFETY: flock on a descriptor we own. A new file cannot be locked by anyone else yet.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    Ok(f)
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
        let c = create(&link, &Header::default(), true).unwrap();
        assert_eq!(c.path, dir.path().join("t.1.trace"));
        assert!(c.note.unwrap().contains("t.trace exists"));
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let again = create(&link, &Header::default(), true).unwrap();
        assert_eq!(
            again.path,
            dir.path().join("t.2.trace"),
            "a trace being written is not replaced"
        );
        let not_a_trace = dir.path().join("notes.txt");
        std::fs::write(&not_a_trace, b"my notes").unwrap();
        assert_eq!(
            create(&not_a_trace, &Header::default(), true).unwrap().path,
            dir.path().join("notes.1.txt")
        );
        assert_eq!(std::fs::read(&not_a_trace).unwrap(), b"my notes");
        // Once its writer is gone, a finished trace is replaced in place.
        drop(again);
        let hard_link = dir.path().join("hard");
        std::fs::hard_link(dir.path().join("t.2.trace"), &hard_link).unwrap();
        let before = std::fs::read(&hard_link).unwrap();
        let replaced = create(&dir.path().join("t.2.trace"), &Header::default(), true).unwrap();
        assert_eq!(replaced.path, dir.path().join("t.2.trace"));
        assert!(replaced.note.is_none());
        assert_eq!(
            std::fs::read(&hard_link).unwrap(),
            before,
            "the old file is not written to"
        );
    }
}
