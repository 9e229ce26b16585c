//! The accprof trace: what one profiled process recorded, and how it sits on disk.
//!
//! - [`model`]: one recorded [`Event`] (a start and end joined, or a point event), its fields
//!   and flags.
//! - [`header`]: who made the trace ([`Header`]), the loaded modules ([`Module`]) and the clean
//!   end marker ([`Footer`]).
//! - [`packed`]: [`PackedEvents`], the buffers the tool library's recording threads fill and
//!   its writer thread empties, and events with only their set fields.
//! - [`raw`]: the records those buffers hold: events with the runtime's structures copied as
//!   they were, read into [`Event`]s here.
//! - [`writer`]: [`TraceWriter`], which appends self-contained chunks; used by the tool library.
//! - [`reader`]: [`TraceReader`], which streams events back, and [`Trace`], which loads a whole file.
//! - [`chunk`]: the file header and the chunk headers that frame every chunk.
//! - [`live`]: the layout of the live file beside a trace being written, and [`recover`]:
//!   reading back from it what a killed process had not written into its trace yet.
//! - [`fold`]: a killed run's live file folded into its trace, so that the trace alone holds it.
//! - [`symbols`]: [`SymbolTable`], the source lines and names of the trace's addresses, kept in
//!   the trace so that it outlives its binary.
//! - [`files`]: the files a trace names, opened as regular files only, never blocking.
//! - [`printable`]: a trace's strings with the characters that act on a display escaped; the
//!   reader hands out only such strings.
//!
//! The format is documented for people in docs/trace-format.md. This crate depends on nothing
//! heavy: it is linked into the preloaded tool library.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod chunk;
pub mod encode;
pub mod error;
pub mod files;
pub mod fold;
pub mod header;
pub mod integrity;
pub mod live;
pub mod model;
pub mod packed;
pub mod printable;
pub mod raw;
pub mod reader;
pub mod recover;
pub mod symbols;
pub mod varint;
pub mod writer;

pub use error::TraceError;
pub use header::{Footer, Header, Module};
pub use integrity::Integrity;
pub use model::{device, nvtx, Event, EventFlags, Field, StrId};
pub use packed::PackedEvents;
pub use reader::{StringTable, Trace, TraceReader};
pub use symbols::SymbolTable;
pub use writer::{LostReason, TraceWriter};

/// The first eight bytes of every trace file.
pub const FILE_MAGIC: [u8; 8] = *b"ACCPROF\0";
/// The format version this crate writes. Readers accept this and every older version.
/// Version 3 added the NVTX kinds and fields ([`nvtx`], [`Field::NvtxMessage`] ...); the chunks
/// are laid out as in version 2.
pub const FORMAT_VERSION: u16 = 3;
