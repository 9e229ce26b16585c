//! The trace file as the writer sees it: a regular file, or a FIFO or device streamed to.
//!
//! Writing must never end or hold up the program:
//! - SIGPIPE (a FIFO's reader went away) and SIGXFSZ (a file past `ulimit -f`) are blocked on
//!   the writing thread for the time of the write and taken back if the write raised them,
//!   so the write fails with EPIPE or EFBIG instead of killing the process. That matters on
//!   the program's own threads, which write the events that arrive after the exit flush.
//! - A stream is opened non-blocking: a full pipe is waited for with `poll`, at most
//!   [`STALL`] without progress; a reader that has gone is one error, said once by the
//!   caller.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

/// How long a stream's reader may read nothing while the writer waits on a full pipe.
pub const STALL: Duration = Duration::from_secs(10);

/// Where the chunks of a trace go.
#[derive(Debug)]
pub struct TraceFile {
    file: File,
    /// The FIFO or device streamed to (its name for messages); `None` for a regular file.
    stream: Option<PathBuf>,
}

impl TraceFile {
    pub fn regular(file: File) -> Self {
        TraceFile { file, stream: None }
    }

    /// A FIFO or device opened with O_NONBLOCK.
    pub fn stream(file: File, path: PathBuf) -> Self {
        TraceFile {
            file,
            stream: Some(path),
        }
    }

    pub fn raw_fd(&self) -> std::os::unix::io::RawFd {
        self.file.as_raw_fd()
    }

    /// Cuts a regular file back to `len` bytes (after a failed write) and writes on from there
    /// (the file is not opened for appending); nothing for a stream.
    pub fn cut_to(&self, len: u64) {
        if self.stream.is_none() && self.file.set_len(len).is_ok() {
            // SAFETY: moves the offset of our own descriptor.
            unsafe { libc::lseek(self.file.as_raw_fd(), len as libc::off_t, libc::SEEK_SET) };
        }
    }
}

/// After a write of `w` failed: a chunk the disk took only part of reads as a run killed
/// mid-write, so the file is cut back to where its last whole chunk ends.
pub fn cut_partial_chunk(w: &accprof_trace::TraceWriter<TraceFile>) {
    w.get_ref().cut_to(w.bytes_written());
}

impl TraceFile {
    fn gone(&self) -> io::Error {
        let name = self
            .stream
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string());
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            format!("the reader of {name} went away"),
        )
    }

    /// Waits until the stream takes more bytes, at most [`STALL`].
    fn wait_writable(&self) -> io::Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        loop {
            // SAFETY: polls one descriptor of ours.
            let r = unsafe { libc::poll(&mut pfd, 1, STALL.as_millis() as libc::c_int) };
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if r == 0 {
                let name = self
                    .stream
                    .as_ref()
                    .map_or_else(String::new, |p| p.display().to_string());
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the reader of {name} read nothing for {} s",
                        STALL.as_secs()
                    ),
                ));
            }
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            if pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0
                && pfd.revents & libc::POLLOUT == 0
            {
                return Err(self.gone());
            }
            return Ok(());
        }
    }
}

impl Write for TraceFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _quiet = QuietWrite::begin();
        loop {
            // SAFETY: writes from our buffer to our descriptor.
            let n = unsafe { libc::write(self.file.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
            if n >= 0 {
                crate::progress::note();
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EAGAIN) if self.stream.is_some() => self.wait_writable()?,
                Some(libc::EPIPE) => return Err(self.gone()),
                _ => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// SIGPIPE and SIGXFSZ blocked on this thread for the time of one write; those the write
/// raised are taken back (so neither ends the process later, when the mask is restored).
struct QuietWrite {
    old: Option<libc::sigset_t>,
    pending_before: libc::sigset_t,
}

const QUIET: [libc::c_int; 2] = [libc::SIGPIPE, libc::SIGXFSZ];

impl QuietWrite {
    fn begin() -> Self {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset; pthread_sigmask and
        // sigpending change or read only this thread's mask and write into our variables.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            let mut pending_before: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in QUIET {
                libc::sigaddset(&mut set, s);
            }
            let ok = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0;
            libc::sigpending(&mut pending_before);
            QuietWrite {
                old: ok.then_some(old),
                pending_before,
            }
        }
    }
}

impl Drop for QuietWrite {
    fn drop(&mut self) {
        let Some(old) = &self.old else { return };
        // SAFETY: as in `begin`; sigtimedwait with a zero timeout takes one pending signal of
        // the set without waiting.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            for s in QUIET {
                if libc::sigismember(&pending, s) == 1
                    && libc::sigismember(&self.pending_before, s) == 0
                {
                    let mut one: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut one);
                    libc::sigaddset(&mut one, s);
                    let zero = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    };
                    libc::sigtimedwait(&one, std::ptr::null_mut(), &zero);
                }
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
        }
    }
}
