//! The live file beside the trace (`T.live`, layout in accprof_trace::live): the threads'
//! event buffers and the strings they intern live in a shared mapping of it, which the kernel
//! keeps when the process is killed, so a reader recovers every event that was complete.
//!
//! The file is created new (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600) and its header and
//! strings are given disk space at once; each slot is given its space (`posix_fallocate`)
//! before its first use, so a full disk means a slot on the heap, never a SIGBUS. The file is
//! locked while the process lives, which tells a reader that the writer is still at work, and
//! removed after a clean end.

use accprof_trace::live::{self as layout, word, SlotHeader};
use accprof_trace::PackedEvents;
use std::io;
use std::os::unix::io::IntoRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;

static LIVE: OnceLock<LiveFile> = OnceLock::new();

#[derive(Debug)]
pub struct LiveFile {
    base: NonNull<u8>,
    fd: AtomicI32,
    path: PathBuf,
    slot_count: usize,
    slot_words: usize,
    slots_offset: usize,
    removed: AtomicBool,
}

// SAFETY: the mapping lives for the rest of the process; everything shared in it is written
// through atomics, and each slot's words by the one owner the pool hands it to.
unsafe impl Sync for LiveFile {}
// SAFETY: as above.
unsafe impl Send for LiveFile {}

/// The live file, once created.
pub fn get() -> Option<&'static LiveFile> {
    LIVE.get()
}

/// Creates and maps the live file of `trace` for `slot_count` buffers of `slot_words` words.
/// The error is one line for the user.
pub fn create(trace: &Path, slot_count: usize, slot_words: usize) -> Result<(), String> {
    let path = layout::live_path(trace);
    let say = |e: io::Error| {
        format!(
            "cannot create {} ({e}); events still buffered when the program is killed (SIGKILL) will be lost",
            path.display()
        )
    };
    let file = match create_new(&path) {
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists
                || e.raw_os_error() == Some(libc::ELOOP) =>
        {
            // Left by a killed run whose trace this one replaced, or planted: removing a
            // name never touches what a link points at.
            if layout::in_use(&path) {
                return Err(say(e));
            }
            let _ = std::fs::remove_file(&path);
            create_new(&path).map_err(say)?
        }
        r => r.map_err(say)?,
    };
    let slots_offset = layout::HEADER_BYTES + layout::STRINGS_BYTES;
    let len = slots_offset + slot_count * layout::slot_stride(slot_words);
    let fd = file.into_raw_fd();
    // SAFETY: system calls on the descriptor we just created; the mapping is checked.
    let base = unsafe {
        let p = match size_file(fd, len, slots_offset) {
            Ok(()) => libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            ),
            Err(e) => {
                libc::close(fd);
                let _ = std::fs::remove_file(&path);
                return Err(say(e));
            }
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            libc::close(fd);
            let _ = std::fs::remove_file(&path);
            return Err(say(e));
        }
        // Held while the process lives: a reader leaves the file alone until then.
        libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB);
        NonNull::new_unchecked(p as *mut u8)
    };
    let live = LiveFile {
        base,
        fd: AtomicI32::new(fd),
        path,
        slot_count,
        slot_words,
        slots_offset,
        removed: AtomicBool::new(false),
    };
    let ticks = crate::clock::uses_ticks();
    for (i, v) in [
        (word::VERSION, layout::LIVE_VERSION),
        (word::PID, u64::from(std::process::id())),
        (word::FILE_LEN, len as u64),
        (word::SLOT_COUNT, slot_count as u64),
        (word::SLOT_WORDS, slot_words as u64),
        (word::SLOTS_OFFSET, slots_offset as u64),
        (word::STRINGS_OFFSET, layout::HEADER_BYTES as u64),
        (word::STRINGS_CAPACITY, layout::STRINGS_BYTES as u64),
        (word::CLOCK, u64::from(ticks)),
    ] {
        live.header(i).store(v, Ordering::Relaxed);
    }
    let (t0, n0) = anchor();
    live.header(word::FIRST_TICKS).store(t0, Ordering::Relaxed);
    live.header(word::FIRST_NS).store(n0, Ordering::Relaxed);
    // The second anchor comes from the writer thread when it starts, and a fresh one with
    // every sweep: nothing waits here for the clocks to move apart.
    live.header(word::MAGIC)
        .store(u64::from_le_bytes(layout::LIVE_MAGIC), Ordering::Release);
    let _ = LIVE.set(live);
    Ok(())
}

/// Gives the new file its length (sparse) and the disk space of its header and strings.
/// A length past the process's file size limit (`ulimit -f`) is refused here: growing the
/// file there would raise SIGXFSZ on the program's thread, which ends the process.
fn size_file(fd: libc::c_int, len: usize, allocated: usize) -> io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes our struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
        && len as u64 > limit.rlim_cur
    {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    }
    // SAFETY: ftruncate on our descriptor.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // posix_fallocate returns its error; it does not set errno.
    // SAFETY: fallocate on our descriptor, within its length.
    match unsafe { libc::posix_fallocate(fd, 0, allocated as libc::off_t) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

fn create_new(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A (ticks, ns) pair read back to back, the closest of three.
fn anchor() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..3 {
        let t0 = crate::clock::now();
        let ns = crate::clock::monotonic_ns();
        let t1 = crate::clock::now();
        if t1.wrapping_sub(t0) < best.0 {
            best = (t1.wrapping_sub(t0), t0 / 2 + t1 / 2, ns);
        }
    }
    (best.1, best.2)
}

impl LiveFile {
    fn header(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the header's words lie in the mapping, 8-byte aligned (page-aligned base).
        unsafe { &*(self.base.as_ptr().add(i * 8) as *const AtomicU64) }
    }

    /// Slot `i` as an empty buffer, given its disk space first; `None` when there is no such
    /// slot or the disk refuses (the caller then takes a heap buffer).
    pub fn slot(&self, i: usize) -> Option<PackedEvents> {
        if i >= self.slot_count {
            return None;
        }
        let stride = layout::slot_stride(self.slot_words);
        let offset = self.slots_offset + i * stride;
        let fd = self.fd.load(Ordering::Relaxed);
        if fd < 0 {
            return None;
        }
        // SAFETY: fallocate on our descriptor, within the file's length.
        let rc = unsafe { libc::posix_fallocate(fd, offset as libc::off_t, stride as libc::off_t) };
        if rc != 0 {
            return None;
        }
        // SAFETY: the slot lies in the mapping (offset + stride <= its length), 8-byte
        // aligned; the pool hands each index out once, so the buffer is its only writer.
        unsafe {
            let at = self.base.as_ptr().add(offset);
            let header = NonNull::new_unchecked(at as *mut SlotHeader);
            let _ = header.as_ref().generation.compare_exchange(
                0,
                1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
            let data = NonNull::new_unchecked(at.add(layout::SLOT_HEADER_BYTES) as *mut u64);
            Some(PackedEvents::in_slot(
                data,
                self.slot_words,
                header,
                i as u32,
            ))
        }
    }

    /// The index of the slot whose header is at `header`, if it is one of this file's.
    pub fn slot_index_of(&self, header: *const SlotHeader) -> Option<u32> {
        let off = (header as usize).checked_sub(self.base.as_ptr() as usize + self.slots_offset)?;
        let stride = layout::slot_stride(self.slot_words);
        let i = off / stride;
        (off % stride == 0 && i < self.slot_count).then_some(i as u32)
    }

    /// Appends a string definition (at warm-up: a string's first use). Lock-free: the space
    /// is reserved with one atomic add; the id word, written last, commits it.
    pub fn add_string(&self, id: u32, bytes: &[u8]) {
        let record = (16 + bytes.len()).next_multiple_of(8);
        let pos = self
            .header(word::STRINGS_RESERVED)
            .fetch_add(record as u64, Ordering::AcqRel) as usize;
        if pos + record > layout::STRINGS_BYTES {
            return;
        }
        // SAFETY: `pos..pos + record` is ours alone (reserved above) and inside the strings
        // area of the mapping; the two words are 8-byte aligned.
        unsafe {
            let at = self.base.as_ptr().add(layout::HEADER_BYTES + pos);
            (*(at as *const AtomicU64)).store(bytes.len() as u64 + 1, Ordering::Relaxed);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), at.add(16), bytes.len());
            (*(at.add(8) as *const AtomicU64))
                .store(u64::from(id) | layout::STRING_COMMITTED, Ordering::Release);
        }
    }

    /// Publishes a fresh clock anchor for the reader's tick conversion. Writer thread only.
    pub fn publish_anchor(&self) {
        let next = 1 - (self.header(word::ANCHOR_INDEX).load(Ordering::Relaxed) & 1);
        let (t, n) = anchor();
        let at = word::ANCHORS + 2 * next as usize;
        self.header(at).store(t, Ordering::Relaxed);
        self.header(at + 1).store(n, Ordering::Relaxed);
        self.header(word::ANCHOR_INDEX)
            .store(next, Ordering::Release);
    }

    /// After a clean end: everything is in the trace.
    pub fn remove(&self) {
        if !self.removed.swap(true, Ordering::AcqRel) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// In a forked child: the parent's file is not the child's (it records nothing), and the
/// child must not keep the parent's lock alive after the parent dies. Async-signal-safe.
pub fn forget_in_child() {
    if let Some(l) = LIVE.get() {
        let fd = l.fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: closes the child's copy of our descriptor.
            unsafe { libc::close(fd) };
        }
    }
}
