//! What can go wrong reading a trace, worded for the person who has to act on it.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum TraceError {
    /// The file could not be opened or read.
    Io { path: String, source: io::Error },
    /// The file is empty: the program was probably killed before the tool wrote anything.
    Empty { path: String },
    /// The file does not start with the accprof magic.
    Foreign { path: String },
    /// Written by a newer accprof.
    UnsupportedVersion { path: String, version: u16 },
    /// The program that writes the trace is still running (it holds the trace or its live
    /// file locked): a change to the file now would be overwritten.
    StillRunning { path: String },
    /// A chunk failed its checksum or did not decode.
    Corrupt {
        path: String,
        offset: u64,
        what: String,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, source } => write!(f, "{path}: cannot read: {source}"),
            TraceError::Empty { path } => write!(
                f,
                "{path}: the file is empty, not a trace (was the program killed before accprof wrote anything?)"
            ),
            TraceError::Foreign { path } => {
                write!(f, "{path}: not an accprof trace (it does not start with the accprof signature)")
            }
            TraceError::UnsupportedVersion { path, version } => write!(
                f,
                "{path}: trace format version {version} is newer than this accprof reads (version {}); upgrade accprof",
                crate::FORMAT_VERSION
            ),
            TraceError::StillRunning { path } => write!(
                f,
                "{path}: its program is still running (it holds the trace and its live file); try again once it has ended"
            ),
            TraceError::Corrupt { path, offset, what } => {
                write!(f, "{path}: corrupt trace at byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
