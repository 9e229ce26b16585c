//! The framing of a trace file: its 16-byte file header and the header of every chunk, made by
//! the writer ([`ChunkHeader::frame`]) and parsed in one place for every reader
//! ([`ChunkHeader::parse`]: the streaming reader, and the symbols scan that seeks over payloads).
//!
//! ```text
//! file header   "ACCPROF\0"  u16 LE format version  u16 LE flags (0)  u32 LE reserved (0)
//! chunk         "CK"  u8 kind  u8 header check (version 2; 0 in version 1)  u32 LE payload length  u32 LE CRC-32
//!               u32 LE sequence number (version 2: 0 for the header chunk, then +1 per chunk)
//!               payload
//! ```
//!
//! In version 2 the CRC covers the sequence number and the payload, so a reader can tell a
//! duplicated or missing chunk from a corrupt one; version 1 chunks have no sequence number
//! and their CRC covers the payload only.

/// The kinds of chunk. Readers skip kinds they do not know.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum ChunkKind {
    Header = 1,
    Strings = 2,
    Modules = 3,
    Events = 4,
    Drops = 5,
    Footer = 6,
    /// Events that were not recorded, by reason (version 2).
    Lost = 7,
    /// The events chunks that follow hold a live-file slot's contents: slot, generation and
    /// event count (crate::live), so that a reader recovering a killed run counts them once.
    SlotWritten = 8,
    /// What the binaries said about the addresses the trace uses ([`crate::symbols`]).
    Symbols = 9,
}

impl ChunkKind {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Header,
            2 => Self::Strings,
            3 => Self::Modules,
            4 => Self::Events,
            5 => Self::Drops,
            6 => Self::Footer,
            7 => Self::Lost,
            8 => Self::SlotWritten,
            9 => Self::Symbols,
            _ => return None,
        })
    }
}

pub const CHUNK_MAGIC: [u8; 2] = *b"CK";
pub const FILE_HEADER_LEN: usize = 16;
/// The chunk header of version 1 files.
pub const CHUNK_HEADER_LEN_V1: usize = 12;
/// The chunk header of the version written now: version 1's and a sequence number.
pub const CHUNK_HEADER_LEN: usize = 16;
/// Chunks larger than this are refused by the reader as corrupt; the writer splits event batches
/// well below it.
pub const MAX_CHUNK_PAYLOAD: usize = 64 << 20;

/// The length of a chunk header in a file of format `version`.
pub fn header_len(version: u16) -> usize {
    if version >= 2 {
        CHUNK_HEADER_LEN
    } else {
        CHUNK_HEADER_LEN_V1
    }
}

/// The check byte of a version 2 chunk header (its byte 3): the low byte of the CRC-32 of the
/// other 15 bytes, never 0 (a 0 there is read as "not checked", as in version 1). It tells a
/// damaged length from a chunk cut short by the end of the file before the payload is read.
pub fn header_check(header: &[u8]) -> u8 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header[..3]);
    crc.update(&header[4..CHUNK_HEADER_LEN]);
    (crc.finalize() as u8).max(1)
}

/// One chunk header, parsed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkHeader {
    /// The kind byte (a kind this reader does not know is skipped, not refused).
    pub kind: u8,
    pub payload_len: usize,
    pub crc: u32,
    /// The sequence number (version 2).
    pub sequence: Option<u32>,
}

/// Why a chunk header is refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BadHeader {
    /// It does not start with [`CHUNK_MAGIC`].
    Marker,
    /// Its check byte does not match (version 2).
    Check,
    /// It claims more than [`MAX_CHUNK_PAYLOAD`].
    Length,
}

impl BadHeader {
    /// What is wrong, for a reader's one-line message.
    pub fn what(self) -> &'static str {
        match self {
            BadHeader::Marker => "a chunk does not start with its marker",
            BadHeader::Check => "a chunk header fails its check",
            BadHeader::Length => "a chunk claims an impossible length",
        }
    }
}

impl ChunkHeader {
    /// Parses the [`header_len`] bytes of `h` (a chunk header of a file of that version).
    pub fn parse(h: &[u8]) -> Result<ChunkHeader, BadHeader> {
        if h.len() < CHUNK_HEADER_LEN_V1 || h[..2] != CHUNK_MAGIC {
            return Err(BadHeader::Marker);
        }
        let sequence =
            (h.len() >= CHUNK_HEADER_LEN).then(|| u32::from_le_bytes([h[12], h[13], h[14], h[15]]));
        if sequence.is_some() && h[3] != 0 && h[3] != header_check(h) {
            return Err(BadHeader::Check);
        }
        let payload_len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        if payload_len > MAX_CHUNK_PAYLOAD {
            return Err(BadHeader::Length);
        }
        Ok(ChunkHeader {
            kind: h[2],
            payload_len,
            crc: u32::from_le_bytes([h[8], h[9], h[10], h[11]]),
            sequence,
        })
    }

    /// Whether `payload` is the one this header's CRC was computed over.
    pub fn checks(&self, payload: &[u8]) -> bool {
        let mut hasher = crc32fast::Hasher::new();
        if let Some(seq) = self.sequence {
            hasher.update(&seq.to_le_bytes());
        }
        hasher.update(payload);
        hasher.finalize() == self.crc
    }

    /// A version 2 chunk of `kind` with sequence number `sequence`, header and payload, into
    /// `out` (cleared first).
    pub fn frame(out: &mut Vec<u8>, kind: ChunkKind, sequence: u32, payload: &[u8]) {
        out.clear();
        out.extend_from_slice(&Self::header_bytes(kind, sequence, payload));
        out.extend_from_slice(payload);
    }

    /// The header [`frame`](Self::frame) puts before `payload`, for a caller that built the
    /// payload after room for it.
    pub fn header_bytes(kind: ChunkKind, sequence: u32, payload: &[u8]) -> [u8; CHUNK_HEADER_LEN] {
        debug_assert!(payload.len() <= MAX_CHUNK_PAYLOAD);
        let seq = sequence.to_le_bytes();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&seq);
        crc.update(payload);
        let mut h = [0; CHUNK_HEADER_LEN];
        h[..2].copy_from_slice(&CHUNK_MAGIC);
        h[2] = kind as u8;
        h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[8..12].copy_from_slice(&crc.finalize().to_le_bytes());
        h[12..16].copy_from_slice(&seq);
        h[3] = header_check(&h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_chunk_parses_back_and_its_damage_is_named() {
        let mut chunk = Vec::new();
        ChunkHeader::frame(&mut chunk, ChunkKind::Strings, 7, b"payload");
        let h = ChunkHeader::parse(&chunk[..CHUNK_HEADER_LEN]).unwrap();
        assert_eq!(h.kind, ChunkKind::Strings as u8);
        assert_eq!((h.payload_len, h.sequence), (7, Some(7)));
        assert!(h.checks(&chunk[CHUNK_HEADER_LEN..]));
        assert!(!h.checks(b"payloaD"));
        let mut bad = chunk.clone();
        bad[5] ^= 1;
        assert_eq!(
            ChunkHeader::parse(&bad[..CHUNK_HEADER_LEN]),
            Err(BadHeader::Check)
        );
        bad[0] = b'X';
        assert_eq!(
            ChunkHeader::parse(&bad[..CHUNK_HEADER_LEN]),
            Err(BadHeader::Marker)
        );
        // Version 1: no sequence number, no check byte.
        let v1 = ChunkHeader::parse(&chunk[..CHUNK_HEADER_LEN_V1]).unwrap();
        assert_eq!(v1.sequence, None);
    }
}
