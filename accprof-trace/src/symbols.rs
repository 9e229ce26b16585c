//! The symbols chunk (kind 9): what the binaries said about the addresses a trace uses, kept in
//! the trace so that its source lines and names outlive the binary (a rebuild in place, a
//! deleted file, a copy of the trace to another machine).
//!
//! It is written once the events are (at the program's normal exit by the tool library, or
//! afterwards by `accprof run` or `accprof symbolize`), so it comes after the events it
//! describes. A reader that streams events needs it first: [`scan`] walks the chunk headers of
//! a file, seeking over every payload but the symbols chunks', which is cheap next to decoding
//! the events.
//!
//! Payload (all varints; strings are the chunk's own, so the chunk decodes alone and can be
//! appended without knowing the trace's string ids):
//!
//! ```text
//! varint n_strings, blob string * n_strings
//! per module, repeated:
//!     varint module      index of the module in the trace's modules chunks, in file order
//!     blob   build_id    the module's build id, as in its modules entry
//!     varint n_sites, per site (ascending offset):
//!         varint offset delta   code address in the file (runtime address - bias)
//!         varint file + 1       0: unknown
//!         varint line           0: unknown
//!         varint function + 1   0: unknown
//!     varint n_data, per variable (ascending address):
//!         varint address delta  in the file
//!         varint size
//!         varint name
//! ```

use crate::chunk::{self, ChunkHeader, ChunkKind, CHUNK_HEADER_LEN, FILE_HEADER_LEN};
use crate::error::TraceError;
use crate::varint::{put_blob, put_u64, Cursor, Malformed};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// What the debug information said about one code address (a call site).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Site {
    pub file: Option<String>,
    pub line: Option<u32>,
    /// As the resolver names it: demangled, or `symbol+0xoff` without debug information.
    pub function: Option<String>,
}

/// One module's resolved addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleSymbols {
    pub build_id: Vec<u8>,
    /// By code address in the file.
    pub sites: BTreeMap<u64, Site>,
    /// Global and static variables that held addresses the trace names: by address in the
    /// file, (size, name).
    pub data: BTreeMap<u64, (u64, String)>,
    /// What the debug information says of those variables, by the same addresses.
    pub kinds: BTreeMap<u64, VarKind>,
    /// The variables heap blocks were stored in, by allocation call site (code address in the
    /// file), as the allocation's statement wrote it when the program ended.
    pub allocations: BTreeMap<u64, AllocName>,
}

/// A variable's element size and whether it is a Fortran allocatable's descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VarKind {
    /// 0: unknown.
    pub element_bytes: u64,
    pub descriptor: bool,
}

/// The variable a heap block was stored in, read from its allocation's statement, or why the
/// statement names none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocName {
    Named {
        /// As the source writes it (`T`, `g->a`, `t`).
        name: String,
        /// The element count (`nx*ny`), or a Fortran array's shape.
        extent: Option<String>,
        element_bytes: Option<u64>,
        fortran: bool,
    },
    /// Why not, in a word or two.
    Unnamed(String),
}

impl ModuleSymbols {
    /// The variable that holds file address `addr`: (its address, size, name).
    pub fn data_at(&self, addr: u64) -> Option<(u64, u64, &str)> {
        let (&a, (size, name)) = self.data.range(..=addr).next_back()?;
        (addr < a + size).then_some((a, *size, name.as_str()))
    }
}

/// Every symbols chunk of a trace, merged: per module index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolTable {
    modules: BTreeMap<u32, ModuleSymbols>,
    /// Stack addresses the trace's transfers moved, with the local array each was, as a
    /// section when inside one (`None`: not known).
    pub stack: BTreeMap<u64, Option<String>>,
}

/// The module index under which a symbols chunk keeps what later versions added (variable
/// kinds, allocation names, stack arrays): a module entry whose build id is their encoding and
/// which has no sites or variables, so that a reader that does not know it reads a module
/// that no trace has.
const NAMES_ENTRY: u32 = u32::MAX;

impl SymbolTable {
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty() && self.stack.is_empty()
    }

    /// The resolved addresses of the trace's module number `index` (in modules-chunk order).
    pub fn module(&self, index: usize) -> Option<&ModuleSymbols> {
        self.modules.get(&u32::try_from(index).ok()?)
    }

    /// The entry of module `index`, made empty (with `build_id`) if there is none.
    pub fn module_mut(&mut self, index: u32, build_id: &[u8]) -> &mut ModuleSymbols {
        let m = self.modules.entry(index).or_default();
        if m.build_id.is_empty() {
            m.build_id = build_id.to_vec();
        }
        m
    }

    /// Sites and variables over all modules.
    pub fn len(&self) -> usize {
        self.modules
            .values()
            .map(|m| m.sites.len() + m.data.len() + m.allocations.len())
            .sum::<usize>()
            + self.stack.len()
    }

    /// The chunk payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut ids: HashMap<&str, u64> = HashMap::new();
        let mut order: Vec<&str> = Vec::new();
        for m in self.modules.values() {
            let texts = m
                .sites
                .values()
                .flat_map(|s| [s.file.as_deref(), s.function.as_deref()])
                .flatten()
                .chain(m.data.values().map(|(_, n)| n.as_str()))
                .chain(
                    m.allocations
                        .values()
                        .flat_map(|a| match a {
                            AllocName::Named { name, extent, .. } => {
                                [Some(name.as_str()), extent.as_deref()]
                            }
                            AllocName::Unnamed(why) => [Some(why.as_str()), None],
                        })
                        .flatten(),
                )
                .chain(self.stack.values().flatten().map(String::as_str));
            for t in texts {
                if !ids.contains_key(t) {
                    ids.insert(t, order.len() as u64);
                    order.push(t);
                }
            }
        }
        let mut out = Vec::new();
        put_u64(&mut out, order.len() as u64);
        for s in &order {
            put_blob(&mut out, s.as_bytes());
        }
        let id = |s: &str| ids[s];
        let opt = |s: &Option<String>| s.as_deref().map_or(0, |s| id(s) + 1);
        for (&index, m) in &self.modules {
            put_u64(&mut out, u64::from(index));
            put_blob(&mut out, &m.build_id);
            put_u64(&mut out, m.sites.len() as u64);
            let mut prev = 0;
            for (&offset, site) in &m.sites {
                put_u64(&mut out, offset - prev);
                prev = offset;
                put_u64(&mut out, opt(&site.file));
                put_u64(&mut out, site.line.map_or(0, u64::from));
                put_u64(&mut out, opt(&site.function));
            }
            put_u64(&mut out, m.data.len() as u64);
            let mut prev = 0;
            for (&addr, (size, name)) in &m.data {
                put_u64(&mut out, addr - prev);
                prev = addr;
                put_u64(&mut out, *size);
                put_u64(&mut out, id(name));
            }
        }
        let names = self.encode_names(&id);
        if !names.is_empty() {
            put_u64(&mut out, u64::from(NAMES_ENTRY));
            put_blob(&mut out, &names);
            put_u64(&mut out, 0);
            put_u64(&mut out, 0);
        }
        out
    }

    /// The [`NAMES_ENTRY`] payload:
    ///
    /// ```text
    /// per module with any, repeated:
    ///     varint module
    ///     varint n_kinds, per variable (ascending address):
    ///         varint address delta, varint element_bytes, varint flags (1: descriptor)
    ///     varint n_allocations, per call site (ascending offset):
    ///         varint offset delta
    ///         varint tag   0: unnamed, then varint reason
    ///                      1: C, 2: Fortran, then varint name, varint extent + 1,
    ///                         varint element_bytes (0: unknown)
    /// varint 0xffffffff, then varint n_stack, per address (ascending):
    ///     varint address delta, varint name + 1
    /// ```
    fn encode_names(&self, id: &dyn Fn(&str) -> u64) -> Vec<u8> {
        let mut out = Vec::new();
        for (&index, m) in &self.modules {
            if m.kinds.is_empty() && m.allocations.is_empty() {
                continue;
            }
            put_u64(&mut out, u64::from(index));
            put_u64(&mut out, m.kinds.len() as u64);
            let mut prev = 0;
            for (&addr, k) in &m.kinds {
                put_u64(&mut out, addr - prev);
                prev = addr;
                put_u64(&mut out, k.element_bytes);
                put_u64(&mut out, u64::from(k.descriptor));
            }
            put_u64(&mut out, m.allocations.len() as u64);
            let mut prev = 0;
            for (&offset, a) in &m.allocations {
                put_u64(&mut out, offset - prev);
                prev = offset;
                match a {
                    AllocName::Unnamed(why) => {
                        put_u64(&mut out, 0);
                        put_u64(&mut out, id(why));
                    }
                    AllocName::Named {
                        name,
                        extent,
                        element_bytes,
                        fortran,
                    } => {
                        put_u64(&mut out, if *fortran { 2 } else { 1 });
                        put_u64(&mut out, id(name));
                        put_u64(&mut out, extent.as_deref().map_or(0, |e| id(e) + 1));
                        put_u64(&mut out, element_bytes.unwrap_or(0));
                    }
                }
            }
        }
        if !self.stack.is_empty() {
            put_u64(&mut out, u64::from(NAMES_ENTRY));
            put_u64(&mut out, self.stack.len() as u64);
            let mut prev = 0;
            for (&addr, name) in &self.stack {
                put_u64(&mut out, addr - prev);
                prev = addr;
                put_u64(&mut out, name.as_deref().map_or(0, |n| id(n) + 1));
            }
        }
        out
    }

    fn absorb_names(
        &mut self,
        payload: &[u8],
        text: &dyn Fn(u64) -> Result<String, Malformed>,
    ) -> Result<(), Malformed> {
        let mut cur = Cursor::new(payload);
        while !cur.is_empty() {
            let index = cur.u32()?;
            if index == NAMES_ENTRY {
                let n = cur.u64()?;
                let mut addr = 0u64;
                for _ in 0..n {
                    addr = addr.checked_add(cur.u64()?).ok_or(Malformed)?;
                    let name = match cur.u64()? {
                        0 => None,
                        i => Some(text(i - 1)?),
                    };
                    self.stack.insert(addr, name);
                }
                continue;
            }
            let m = self.modules.entry(index).or_default();
            let kinds = cur.u64()?;
            let mut addr = 0u64;
            for _ in 0..kinds {
                addr = addr.checked_add(cur.u64()?).ok_or(Malformed)?;
                let element_bytes = cur.u64()?;
                let descriptor = cur.u64()? & 1 == 1;
                m.kinds.insert(
                    addr,
                    VarKind {
                        element_bytes,
                        descriptor,
                    },
                );
            }
            let allocations = cur.u64()?;
            let mut offset = 0u64;
            for _ in 0..allocations {
                offset = offset.checked_add(cur.u64()?).ok_or(Malformed)?;
                let a = match cur.u64()? {
                    0 => AllocName::Unnamed(text(cur.u64()?)?),
                    tag @ (1 | 2) => {
                        let name = text(cur.u64()?)?;
                        let extent = match cur.u64()? {
                            0 => None,
                            i => Some(text(i - 1)?),
                        };
                        let element_bytes = match cur.u64()? {
                            0 => None,
                            b => Some(b),
                        };
                        AllocName::Named {
                            name,
                            extent,
                            element_bytes,
                            fortran: tag == 2,
                        }
                    }
                    _ => return Err(Malformed),
                };
                m.allocations.insert(offset, a);
            }
        }
        Ok(())
    }

    /// Adds a chunk's payload (a later chunk's answer for an address wins).
    pub fn absorb(&mut self, payload: &[u8]) -> Result<(), Malformed> {
        let mut cur = Cursor::new(payload);
        let n = cur.u64()?;
        // Every string takes at least one byte: a count beyond the payload is corrupt.
        if n > payload.len() as u64 {
            return Err(Malformed);
        }
        let mut strings = Vec::with_capacity(n as usize);
        for _ in 0..n {
            strings.push(String::from_utf8_lossy(cur.blob()?).into_owned());
        }
        let text = |i: u64| strings.get(i as usize).cloned().ok_or(Malformed);
        let opt = |i: u64| {
            if i == 0 {
                Ok(None)
            } else {
                text(i - 1).map(Some)
            }
        };
        while !cur.is_empty() {
            let index = cur.u32()?;
            let build_id = cur.blob()?.to_vec();
            if index == NAMES_ENTRY {
                self.absorb_names(&build_id, &text)?;
                // Its (empty) sites and variables.
                if cur.u64()? != 0 || cur.u64()? != 0 {
                    return Err(Malformed);
                }
                continue;
            }
            let m = self.module_mut(index, &build_id);
            let sites = cur.u64()?;
            let mut offset = 0u64;
            for _ in 0..sites {
                offset = offset.checked_add(cur.u64()?).ok_or(Malformed)?;
                let file = opt(cur.u64()?)?;
                let line = u32::try_from(cur.u64()?).map_err(|_| Malformed)?;
                let function = opt(cur.u64()?)?;
                let line = (line != 0).then_some(line);
                m.sites.insert(
                    offset,
                    Site {
                        file,
                        line,
                        function,
                    },
                );
            }
            let data = cur.u64()?;
            let mut addr = 0u64;
            for _ in 0..data {
                addr = addr.checked_add(cur.u64()?).ok_or(Malformed)?;
                let size = cur.u64()?;
                let name = text(cur.u64()?)?;
                m.data.insert(addr, (size, name));
            }
        }
        Ok(())
    }
}

/// What [`scan`] found in a trace file.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Every symbols chunk, merged.
    pub symbols: SymbolTable,
    /// Symbols chunks found.
    pub symbols_chunks: usize,
    /// The sequence number a chunk appended now must carry (version 2: one more than the
    /// largest found).
    pub next_seq: u32,
    /// The end of the last complete chunk: where an appended chunk goes (bytes after it are a
    /// chunk cut short by a kill).
    pub complete_end: u64,
    /// The file's format version.
    pub version: u16,
}

/// Walks the chunk headers of the trace at `path`, reading only symbols chunks' payloads.
/// Stops quietly where the file stops making sense (the streaming reader reports damage).
pub fn scan(path: &Path) -> Result<Scan, TraceError> {
    let label = path.display().to_string();
    let io = |source| TraceError::Io {
        path: label.clone(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut fh = [0u8; FILE_HEADER_LEN];
    if file.read_exact(&mut fh).is_err() || fh[..8] != crate::FILE_MAGIC {
        return Err(TraceError::Foreign { path: label });
    }
    let version = u16::from_le_bytes([fh[8], fh[9]]);
    let header_len = chunk::header_len(version);
    let mut out = Scan {
        version,
        complete_end: FILE_HEADER_LEN as u64,
        ..Scan::default()
    };
    let mut pos = FILE_HEADER_LEN as u64;
    let mut h = [0u8; CHUNK_HEADER_LEN];
    loop {
        if pos + header_len as u64 > size || file.read_exact(&mut h[..header_len]).is_err() {
            break;
        }
        let Ok(header) = ChunkHeader::parse(&h[..header_len]) else {
            break;
        };
        let len = header.payload_len as u64;
        if pos + header_len as u64 + len > size {
            break;
        }
        if let Some(seq) = header.sequence {
            out.next_seq = out.next_seq.max(seq.wrapping_add(1));
        }
        if header.kind == ChunkKind::Symbols as u8 {
            let mut payload = vec![0u8; header.payload_len];
            file.read_exact(&mut payload).map_err(io)?;
            // A damaged symbols chunk is left out, not fatal: the binary may still answer.
            if header.checks(&payload) && out.symbols.absorb(&payload).is_ok() {
                out.symbols_chunks += 1;
            }
        } else {
            file.seek(SeekFrom::Current(len as i64)).map_err(io)?;
        }
        pos += header_len as u64 + len;
        out.complete_end = pos;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_round_trips_through_its_payload() {
        let mut t = SymbolTable::default();
        let m = t.module_mut(2, b"\x01\x02");
        m.sites.insert(
            0x1234,
            Site {
                file: Some("/src/laplace.c".into()),
                line: Some(41),
                function: Some("main".into()),
            },
        );
        m.sites.insert(
            0x1300,
            Site {
                file: None,
                line: None,
                function: Some("main+0x40".into()),
            },
        );
        m.data.insert(0x4000, (800, "A".into()));
        m.kinds.insert(
            0x4000,
            VarKind {
                element_bytes: 8,
                descriptor: false,
            },
        );
        m.allocations.insert(
            0x1234,
            AllocName::Named {
                name: "T".into(),
                extent: Some("nx*ny".into()),
                element_bytes: Some(8),
                fortran: false,
            },
        );
        m.allocations
            .insert(0x1300, AllocName::Unnamed("returned".into()));
        t.stack.insert(0x7ffd_0000, Some("z".into()));
        t.stack.insert(0x7ffd_8000, None);
        let mut back = SymbolTable::default();
        back.absorb(&t.encode()).unwrap();
        assert_eq!(back, t);
        let m = back.module(2).unwrap();
        assert_eq!(m.data_at(0x4010), Some((0x4000, 800, "A")));
        assert_eq!(m.data_at(0x4000 + 800), None);
        assert!(back.module(0).is_none());
    }

    #[test]
    fn a_damaged_payload_is_malformed_not_a_panic() {
        let mut t = SymbolTable::default();
        t.module_mut(0, b"").sites.insert(
            8,
            Site {
                file: Some("a.c".into()),
                line: Some(3),
                function: None,
            },
        );
        let payload = t.encode();
        for cut in 0..payload.len() {
            let _ = SymbolTable::default().absorb(&payload[..cut]);
        }
        assert!(SymbolTable::default()
            .absorb(&[200, 200, 200, 200])
            .is_err());
    }
}
