//! Creating the trace at the name chosen for it, without ever writing through what someone
//! else put there.
//!
//! A regular trace is created new with `O_CREAT | O_EXCL | O_NOFOLLOW` (mode 0644 under the
//! umask), and the writer holds an exclusive `flock` on it for the life of the process. What
//! is already at the name decides:
//! - nothing: created there;
//! - an earlier run's finished accprof trace that no live process holds locked: replaced, by
//!   creating a new file beside it and renaming it into place, while holding the old file's
//!   lock and after checking that the name still leads to that file (two processes starting
//!   together over one old trace: the second finds the first one's new trace there, and takes
//!   another name). The old file is never written to (a hard link to it changes nothing; a
//!   sticky directory refuses another user's file);
//! - a trace this same process wrote before it ran exec (same pid, begun since the process
//!   started): kept, the new image takes another name;
//! - a FIFO or a device that ACCPROF_OUT itself names, owned by this user or by root: streamed
//!   to ([`open_stream`], by the writer thread);
//! - anything else (a link, a trace another process is writing, a file that is not a trace,
//!   an empty file being created, a FIFO of another user's): the trace takes the first free
//!   name of `NAME.1.trace`, `NAME.2.trace`, ..., and the note says which and why.
//!
//! Nothing is ever created under /dev or /proc (ACCPROF_OUT=/dev/stdout with standard output
//! on a file would otherwise make `/dev/stdout.1` as root).

use crate::sink::TraceFile;
use accprof_trace::{Header, TraceWriter};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// How many other names are tried when the chosen one is taken.
const OTHER_NAMES: u32 = 100;

/// The trace file, created or opened, and the name it got.
pub struct Created {
    pub writer: TraceWriter<TraceFile>,
    pub path: PathBuf,
    /// Said once when the chosen name was taken and another one is used.
    pub note: Option<String>,
    /// The modules loaded when the file was made, written right after the header: a run
    /// killed before its first events chunk still resolves the call sites of the events read
    /// back from its live file.
    pub modules: Vec<accprof_trace::Module>,
}

impl Created {
    /// The header and the module map written to `file`.
    fn new(
        file: TraceFile,
        path: PathBuf,
        note: Option<String>,
        header: &Header,
    ) -> io::Result<Self> {
        let mut writer = TraceWriter::new(file, header)?;
        let modules = crate::modules::loaded_modules();
        writer.write_modules(&modules)?;
        Ok(Created {
            writer,
            path,
            note,
            modules,
        })
    }
}

/// What a name holds, for someone who wants to stream a trace to it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stream {
    /// Not a FIFO, device or socket (or nothing at all).
    No,
    /// A FIFO, device or socket of this user's or root's, reached through links if need be
    /// (/dev/stdout is a link to /proc/self/fd/1).
    Ours,
    /// One owned by another user: never written to.
    Foreign(u32),
}

/// Whether `path` is something to stream to, and whose.
pub fn stream_at(path: &Path) -> Stream {
    let Ok(m) = std::fs::metadata(path) else {
        return Stream::No;
    };
    let t = m.file_type();
    if !(t.is_fifo() || t.is_char_device() || t.is_socket()) {
        return Stream::No;
    }
    owner_check(m.uid())
}

fn owner_check(uid: u32) -> Stream {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid == me || uid == 0 {
        Stream::Ours
    } else {
        Stream::Foreign(uid)
    }
}

/// How long the end of the program waits for a FIFO's reader that has not come yet (a reader
/// started beside a short program may open the FIFO just after the program ends).
const READER_GRACE: Duration = Duration::from_secs(2);

/// Opens the FIFO or device at `path` to stream the trace to, without ever blocking: a FIFO
/// nobody reads yet is tried again every few milliseconds while the program runs, and for
/// [`READER_GRACE`] once `ending` says it is ending. What is opened is checked again (type
/// and owner) before the first byte is written.
pub fn open_stream(path: &Path, header: &Header, ending: impl Fn() -> bool) -> io::Result<Created> {
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let mut ending_since = None;
    let f = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        {
            Ok(f) => break f,
            // ENXIO: a FIFO without a reader.
            Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) => {
                if ending() {
                    let since = *ending_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= READER_GRACE {
                        return Err(io::Error::new(
                            io::ErrorKind::NotConnected,
                            "no process opened the FIFO for reading while the program ran",
                        ));
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    };
    let m = f.metadata()?;
    let t = m.file_type();
    if !(t.is_fifo() || t.is_char_device() || t.is_socket()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is no longer a FIFO or device",
        ));
    }
    if let Stream::Foreign(uid) = owner_check(m.uid()) {
        return Err(foreign(uid));
    }
    Created::new(
        TraceFile::stream(f, path.to_path_buf()),
        path.to_path_buf(),
        None,
        header,
    )
}

fn foreign(uid: u32) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("it belongs to another user (uid {uid}); a trace is never written to another user's FIFO or device"),
    )
}

/// Why a name could not be used.
#[derive(Clone, Copy, Debug)]
enum Taken {
    /// A link, a file that is not a trace, a trace another process is writing, ...
    Other,
    /// A trace this process wrote before it ran exec.
    EarlierImage,
    /// Another user's FIFO or device.
    Foreign(u32),
}

/// Creates the trace at `path` (and a missing directory when ACCPROF_OUT ended with '/'),
/// or at the first free name beside it.
pub fn create(path: &Path, header: &Header) -> io::Result<Created> {
    if under_system_directory(path) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a FIFO or device, and no file is ever created under /dev or /proc",
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let mut first_reason = None;
    let mut candidate = path.to_path_buf();
    for n in 0..=OTHER_NAMES {
        if n > 0 {
            candidate = numbered(path, n);
        }
        let created = match create_new(&candidate) {
            Ok(f) => Ok(f),
            // ELOOP: O_NOFOLLOW met a symbolic link at the name.
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    || e.raw_os_error() == Some(libc::ELOOP) =>
            {
                replace_finished_trace(&candidate)
            }
            Err(e) => return Err(e),
        };
        match created {
            Ok(f) => {
                let note = first_reason.map(|why| {
                    let why = match why {
                        Taken::Other => "exists and is not a finished accprof trace (a link, another file, or a trace being written)".to_string(),
                        Taken::EarlierImage => "is the trace of this process before it ran exec".to_string(),
                        Taken::Foreign(uid) => format!("is a FIFO or device of another user's (uid {uid}), never written to"),
                    };
                    format!(
                        "{} {why}; this trace is {}",
                        path.display(),
                        candidate.display()
                    )
                });
                return Created::new(TraceFile::regular(f), candidate, note, header);
            }
            Err(why) => {
                first_reason.get_or_insert(why);
            }
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

/// /dev and /proc (but /dev/shm, where users keep files): nothing is created there.
fn under_system_directory(path: &Path) -> bool {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    (abs.starts_with("/dev") && !abs.starts_with("/dev/shm")) || abs.starts_with("/proc")
}

/// A new file renamed over `path` when `path` is a regular, non-empty accprof trace of an
/// earlier process that no process holds locked; else why not (the caller tries another name).
fn replace_finished_trace(path: &Path) -> Result<File, Taken> {
    Previous::open(path)?.replace(path)
}

/// The finished trace at a name, opened to be replaced.
struct Previous {
    file: File,
    meta: std::fs::Metadata,
}

impl Previous {
    /// The regular, non-empty accprof trace at `path`, of another process than this one (or
    /// of this process before it ran exec: kept).
    fn open(path: &Path) -> Result<Self, Taken> {
        let meta = std::fs::symlink_metadata(path).map_err(|_| Taken::Other)?;
        if let Stream::Foreign(uid) = stream_at(path) {
            return Err(Taken::Foreign(uid));
        }
        if !meta.file_type().is_file() || meta.len() == 0 {
            return Err(Taken::Other);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path)
            .map_err(|_| Taken::Other)?;
        let meta = file.metadata().map_err(|_| Taken::Other)?;
        if !meta.file_type().is_file() {
            return Err(Taken::Other);
        }
        let previous = accprof_trace::TraceReader::new(path.display().to_string(), &file)
            .map_err(|_| Taken::Other)?;
        if written_by_this_process(previous.header()) {
            return Err(Taken::EarlierImage);
        }
        Ok(Previous { file, meta })
    }

    /// Renames a new file over `path`, if nobody holds this trace and it is still the file at
    /// `path`.
    fn replace(self, path: &Path) -> Result<File, Taken> {
        // SAFETY: flock on a descriptor we own; held until `self.file` closes, after the
        // rename.
        if unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Taken::Other);
        }
        // The lock is on the file opened; another process may have renamed its new trace over
        // the name since (and let go of this one's lock). Only the file still at the name may
        // be replaced, and while its lock is held nobody else replaces it.
        let now = std::fs::symlink_metadata(path).map_err(|_| Taken::Other)?;
        if (now.dev(), now.ino()) != (self.meta.dev(), self.meta.ino()) {
            return Err(Taken::Other);
        }
        let name = path
            .file_name()
            .ok_or(Taken::Other)?
            .to_string_lossy()
            .into_owned();
        let temp = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
        let f = create_new(&temp).map_err(|_| Taken::Other)?;
        if std::fs::rename(&temp, path).is_err() {
            let _ = std::fs::remove_file(&temp);
            return Err(Taken::Other);
        }
        drop(self.file);
        Ok(f)
    }
}

/// Whether a trace's header is this process's own, from before it ran exec: same pid, begun
/// since the process started (a pid used by a process long gone is not ours).
fn written_by_this_process(h: &Header) -> bool {
    h.pid == std::process::id()
        && process_start_unix_ns().is_some_and(|started| {
            // The start time is known to the clock tick (10 ms): a little slack.
            h.start_unix_ns + 50_000_000 >= started
        })
}

/// When this process started, in Unix time (ns): its start in ticks since boot
/// (/proc/self/stat), placed by CLOCK_BOOTTIME, which counts from the same boot.
fn process_start_unix_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name is in parentheses and may hold anything: fields count after its end.
    let after = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&h| h > 0)?;
    let started_since_boot = ticks.checked_mul(1_000_000_000)? / hz;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes our struct.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    let since_boot = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    let age = since_boot.saturating_sub(started_since_boot);
    Some(crate::clock::unix_ns().saturating_sub(age))
}

/// The descriptor holding the trace's lock, for a forked child to close.
static LOCKED_FD: AtomicI32 = AtomicI32::new(-1);

/// Creates `path` new and takes the writer's lock on it (held until the process ends).
fn create_new(path: &Path) -> io::Result<File> {
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

/// The trace's descriptor is the one written to (and locked) from now on.
pub fn hold(f: &TraceFile) {
    LOCKED_FD.store(f.raw_fd(), Ordering::Release);
}

/// In a forked child: closes its copy of the trace's descriptor, so that the parent's lock
/// (which tells readers and `accprof symbolize` that the program is running) ends with the
/// parent, not with a child that lives on. Async-signal-safe.
pub fn forget_in_child() {
    let fd = LOCKED_FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: closes the child's copy of our descriptor; the child never writes the trace.
        unsafe { libc::close(fd) };
    }
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

    fn other_process() -> Header {
        Header {
            pid: std::process::id() + 1,
            ..Header::default()
        }
    }

    #[test]
    fn an_existing_file_or_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("t.trace");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let c = create(&link, &other_process()).unwrap();
        assert_eq!(c.path, dir.path().join("t.1.trace"));
        assert!(c.note.unwrap().contains("t.trace exists"));
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let again = create(&link, &other_process()).unwrap();
        assert_eq!(
            again.path,
            dir.path().join("t.2.trace"),
            "a trace being written is not replaced"
        );
        let not_a_trace = dir.path().join("notes.txt");
        std::fs::write(&not_a_trace, b"my notes").unwrap();
        assert_eq!(
            create(&not_a_trace, &other_process()).unwrap().path,
            dir.path().join("notes.1.txt")
        );
        assert_eq!(std::fs::read(&not_a_trace).unwrap(), b"my notes");
        // Once its writer is gone, a finished trace is replaced in place.
        drop(again);
        let hard_link = dir.path().join("hard");
        std::fs::hard_link(dir.path().join("t.2.trace"), &hard_link).unwrap();
        let before = std::fs::read(&hard_link).unwrap();
        let replaced = create(&dir.path().join("t.2.trace"), &other_process()).unwrap();
        assert_eq!(replaced.path, dir.path().join("t.2.trace"));
        assert!(replaced.note.is_none());
        assert_eq!(
            std::fs::read(&hard_link).unwrap(),
            before,
            "the old file is not written to"
        );
    }

    #[test]
    fn a_trace_of_this_process_from_before_exec_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("self.trace");
        let ours = Header {
            pid: std::process::id(),
            start_unix_ns: crate::clock::unix_ns(),
            ..Header::default()
        };
        drop(create(&path, &ours).unwrap());
        let second = create(&path, &ours).unwrap();
        assert_eq!(second.path, dir.path().join("self.1.trace"));
        assert!(
            second
                .note
                .as_deref()
                .unwrap()
                .contains("before it ran exec"),
            "said why"
        );
        // A trace of the same pid from before this process started is someone else's.
        drop(second);
        let old = dir.path().join("old.trace");
        let long_ago = Header {
            start_unix_ns: 1,
            ..ours.clone()
        };
        drop(create(&old, &long_ago).unwrap());
        assert_eq!(create(&old, &ours).unwrap().path, old);
    }

    #[test]
    fn a_trace_another_process_just_put_at_the_name_is_never_replaced() {
        // Two processes start over one finished trace. Both open it; the first replaces it
        // with its new trace and lets go of the old one's lock; the second then gets that lock,
        // but the name no longer leads to the file it locked.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("same.trace");
        drop(create(&path, &other_process()).unwrap());
        let second = Previous::open(&path).map_err(|_| ()).unwrap();
        let first = create(&path, &other_process()).unwrap();
        assert_eq!(
            first.path, path,
            "the first one replaced the finished trace"
        );
        assert!(
            second.replace(&path).is_err(),
            "the second one would rename over the first one's live trace"
        );
        let again = create(&path, &other_process()).unwrap();
        assert_eq!(again.path, dir.path().join("same.1.trace"));
    }

    #[test]
    fn nothing_is_created_under_dev_or_proc() {
        assert!(under_system_directory(Path::new("/dev/stdout")));
        assert!(under_system_directory(Path::new("/proc/self/fd/1")));
        assert!(!under_system_directory(Path::new("/dev/shm/run.trace")));
        assert!(!under_system_directory(Path::new("/tmp/run.trace")));
    }
}
