//! The live file: what a recording process has not written into its trace yet, kept where a
//! SIGKILL cannot take it.
//!
//! Beside a trace `T`, the tool library creates `T.live` and maps it shared. Its threads'
//! event buffers are slots of that mapping, and the strings they intern are appended to it:
//! the kernel keeps a shared file mapping's pages when the process dies, however it dies. On
//! a clean end (footer written) the file is removed. A reader of a trace without a footer
//! whose live file is left, and no longer locked by its writer, appends what the live file
//! holds that the trace does not ([`crate::recover`]). Layout (little-endian u64 words; offsets in
//! bytes):
//!
//! ```text
//! 0     header: magic "ACCLIVE\0", version, pid, file length, slot count, slot words,
//!       slots offset, strings offset, strings capacity, strings reserved, clock kind,
//!       first anchor (ticks, ns), current anchor index, anchor pairs [(ticks, ns); 2]
//! 4096  strings: records of [len + 1] [id | 1 << 63 once committed] [bytes, padded to 8]
//! ...   slots: each a 64-byte header (generation, thread, committed words, reserved) and
//!       `slot words` words of events (raw records, crate::raw; packed events, crate::packed,
//!       in version 1), of which `committed words` are complete
//! ```
//!
//! This module is the layout, shared by the tool library that maps the file and by the reader;
//! reading a killed run's file back is [`crate::recover`]'s.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

pub const LIVE_MAGIC: [u8; 8] = *b"ACCLIVE\0";
/// Version 2: slots hold raw records (crate::raw); version 1 files (packed events) still read.
pub const LIVE_VERSION: u64 = 2;
/// Bytes of the file header; the strings start here.
pub const HEADER_BYTES: usize = 4096;
/// Bytes of a slot's header.
pub const SLOT_HEADER_BYTES: usize = 64;
/// The strings area's capacity, in bytes.
pub const STRINGS_BYTES: usize = 1 << 20;

/// Word indices in the file header.
pub mod word {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 1;
    pub const PID: usize = 2;
    pub const FILE_LEN: usize = 3;
    pub const SLOT_COUNT: usize = 4;
    pub const SLOT_WORDS: usize = 5;
    pub const SLOTS_OFFSET: usize = 6;
    pub const STRINGS_OFFSET: usize = 7;
    pub const STRINGS_CAPACITY: usize = 8;
    pub const STRINGS_RESERVED: usize = 9;
    /// 0: timestamps are CLOCK_MONOTONIC ns; 1: TSC ticks, converted with the anchors.
    pub const CLOCK: usize = 10;
    pub const FIRST_TICKS: usize = 11;
    pub const FIRST_NS: usize = 12;
    /// Which of the two anchor pairs is complete (0 or 1): a pair is written, then this.
    pub const ANCHOR_INDEX: usize = 13;
    pub const ANCHORS: usize = 14;
    /// Words of the header in use.
    pub const COUNT: usize = 18;
}

/// The bit of a string record's id word that says its bytes are complete.
pub const STRING_COMMITTED: u64 = 1 << 63;
/// Slots a live file may have (the tool's buffer pool is far smaller).
pub(crate) const MAX_SLOTS: u64 = 1 << 20;
/// Words a slot may have (ACCPROF_BUFFER_EVENTS' largest value, 16 words an event).
pub(crate) const MAX_SLOT_WORDS: u64 = 1 << 26;

/// A slot's header, as mapped. Written by the tool library; read back from the file.
#[repr(C)]
#[derive(Debug)]
pub struct SlotHeader {
    /// Bumped every time the slot is emptied for reuse; 0 for a slot never used.
    pub generation: AtomicU64,
    /// The thread filling it (for people reading the file).
    pub thread: AtomicU64,
    /// Words of complete events, published after each event.
    pub committed_words: AtomicU64,
    /// The first: how many committed words the recording process's writer thread has taken
    /// into the trace (its own bookkeeping; a reader goes by the slot-written records).
    pub reserved: [AtomicU64; 5],
}

impl SlotHeader {
    /// A header of nothing: generation 0, nothing committed.
    pub const fn empty() -> SlotHeader {
        SlotHeader {
            generation: AtomicU64::new(0),
            thread: AtomicU64::new(0),
            committed_words: AtomicU64::new(0),
            reserved: [const { AtomicU64::new(0) }; 5],
        }
    }
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == SLOT_HEADER_BYTES);

/// Bytes one slot takes, its header included.
pub fn slot_stride(slot_words: usize) -> usize {
    SLOT_HEADER_BYTES + slot_words * 8
}

/// The live file of a trace: `T.live` beside `T`.
pub fn live_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".live");
    PathBuf::from(s)
}

/// Whether the program writing the trace at `trace` is still running: it holds the trace or
/// its live file locked (the tool library keeps both locked while the process lives).
pub fn being_written(trace: &Path) -> bool {
    in_use(&live_path(trace)) || in_use(trace)
}

/// Whether a live process still holds the live file (its writer is running: what the file
/// holds is still on its way into the trace).
pub fn in_use(path: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let Ok(f) = crate::files::open_regular(path) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; the shared lock goes when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
}

/// Whether `path` is a live file (it starts with the live file's magic), not a trace.
pub fn is_live_file(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    // Never anything but a regular file: a FIFO given to be streamed from must not be read.
    crate::files::open_regular(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == LIVE_MAGIC)
}

/// The traces among `paths` as a command was given them (a `dir/*` glob takes a killed or
/// still running program's `T.live` beside its `T`): live files are set aside, each with one
/// line saying so. A live file beside a trace that was given is read with it (its reader takes
/// what the trace lacks from it); one whose trace was not given is left out.
pub fn traces_given(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut traces = Vec::with_capacity(paths.len());
    let mut notes = Vec::new();
    for p in paths {
        if !is_live_file(p) {
            traces.push(p.clone());
            continue;
        }
        let name = p.to_string_lossy();
        let trace = name
            .strip_suffix(".live")
            .map(PathBuf::from)
            .filter(|t| paths.contains(t));
        notes.push(match trace {
            Some(t) => format!(
                "{name}: the live file of {}, read with it (not a trace of its own)",
                t.display()
            ),
            None => format!(
                "{name}: a live file, not a trace: left out (give its trace, which reads it)"
            ),
        });
    }
    (traces, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_files_among_the_traces_are_set_aside_with_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let (trace, live, orphan) = (
            dir.path().join("a.trace"),
            dir.path().join("a.trace.live"),
            dir.path().join("b.trace.live"),
        );
        std::fs::write(&trace, b"ACCPROF\0").unwrap();
        let mut image = LIVE_MAGIC.to_vec();
        image.resize(64, 0);
        std::fs::write(&live, &image).unwrap();
        std::fs::write(&orphan, &image).unwrap();
        let (traces, notes) = traces_given(&[live.clone(), trace.clone(), orphan]);
        assert_eq!(traces, [trace]);
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("read with it"), "{notes:?}");
        assert!(notes[1].contains("left out"), "{notes:?}");
        // A file named like one that is no live file stays a trace.
        let named = dir.path().join("c.live");
        std::fs::write(&named, b"ACCPROF\0").unwrap();
        assert_eq!(traces_given(std::slice::from_ref(&named)).0, [named]);
    }
}
