//! Opening the files a trace names (its modules, its source files) or that sit beside it (its
//! live file). A trace can come from anyone, so such a name is opened only as a regular file,
//! never blocking: a FIFO there would hang the reader in `open`, a device or a /proc file
//! (`/proc/self/pagemap`, which reads as gigabytes) would feed it without end.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `path` opened for reading when it is a regular file (links followed); an error that says
/// what it is otherwise. Never blocks: opened with O_NONBLOCK, checked on the descriptor.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(f)
}

/// The bytes of the regular file at `path`: at most its size as the file system gives it
/// (nothing of a /proc or /sys file, whose size is 0) and at most `max` (else an error).
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let f = open_regular(path)?;
    let size = f.metadata()?.len();
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    let mut out = Vec::with_capacity(size as usize);
    f.take(size).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_opened_and_never_past_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(
            open_regular(&fifo).is_err(),
            "a FIFO: refused, not waited on"
        );
        assert!(open_regular(Path::new("/dev/zero")).is_err());
        assert!(open_regular(dir.path()).is_err(), "a directory");
        assert_eq!(
            read_regular(Path::new("/proc/self/pagemap"), 1 << 20).unwrap(),
            b"",
            "a /proc file reads as its size, 0"
        );
        let f = dir.path().join("f.c");
        std::fs::write(&f, b"int x;\n").unwrap();
        assert_eq!(read_regular(&f, 100).unwrap(), b"int x;\n");
        assert!(read_regular(&f, 3).is_err(), "larger than asked for");
    }
}
