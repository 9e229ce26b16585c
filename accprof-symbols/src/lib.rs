//! Turning a return address recorded in a trace into a source location.
//!
//! GCC's runtime reports no source file, function or line through acc_prof. The tool library
//! records instead, at each construct's start, the address in the application that called into
//! the runtime (`Field::ReturnAddress`) and the process's module map. This crate resolves those
//! addresses after the run, never inside the profiled process:
//!
//! - with DWARF (`-g`): file, line and function of the innermost inlined frame, which for a
//!   construct is the line of its `#pragma acc`;
//! - without it (stripped): `function+0xoffset` from the symbol table, and the module path;
//! - when the file on disk is not the one that ran (its build id differs) or is gone: no line,
//!   because a wrong line is worse than none, but `module+0xoffset` as the function, so that
//!   call sites stay apart from each other and from another build's.
//!
//! A trace can carry the answers itself: the tool library resolves the addresses it used when
//! the program exits, and `accprof run` (or [`symbolize_file`]) after a killed run, into the
//! trace's symbols chunk ([`accprof_trace::symbols`]). The resolver prefers it; it reads the
//! binary only for addresses the chunk lacks, and only while the binary is the one that ran.
//!
//! Resolved events are flagged [`EventFlags::ATTRIBUTED_LOCATION`]: attributed by accprof, not
//! reported by the runtime.
//!
//! Views read traces through [`ResolvingReader`], which wraps the trace reader and resolves as
//! it streams (on a second thread with [`ResolvingReader::for_each_batch`]); it notes where each
//! events chunk starts ([`ChunkIndex`]) so that a view can read any part again
//! ([`ChunkReader::open_at`]) instead of keeping every event. [`Symbolizer`] is the resolver
//! itself, for a reader of your own.

#![warn(clippy::undocumented_unsafe_blocks)]

mod embed;
mod reader;

pub use embed::{resolve_trace, symbolize_file, Symbolized};
pub use reader::{ChunkIndex, ChunkReader, Resolve, ResolvingReader};

use accprof_trace::{Event, EventFlags, Field, Module, StringTable, SymbolTable, Trace};
use std::collections::HashMap;
use std::path::Path;

/// Where a code address is, as far as the debug information tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The function, demangled; for a stripped binary `symbol+0xoffset`.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// The executable or library the address lies in.
    pub module: String,
}

/// One module's debug information, loaded on first use.
struct LoadedModule {
    loader: addr2line::Loader,
    /// Data objects (global and static variables) by file address: (address, size, name).
    data: Vec<(u64, u64, String)>,
}

/// A global or static variable holding an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSymbol {
    pub name: String,
    /// Where the address lies inside the variable.
    pub offset: u64,
    pub size: u64,
}

impl DataSymbol {
    /// The variable's name, with the byte range when a transfer of `bytes` covers only part of
    /// it (`A[+0x8000, 64 KiB]`): never more than the symbol table says.
    pub fn label(&self, bytes: Option<u64>) -> String {
        let name = fortran_source_name(&self.name);
        match bytes {
            Some(b) if self.offset == 0 && b == self.size => name.to_string(),
            Some(b) => format!("{name}[+{:#x}, {b} bytes]", self.offset),
            None if self.offset == 0 => name.to_string(),
            None => format!("{name}[+{:#x}]", self.offset),
        }
    }
}

/// Resolves addresses against a trace's module map, caching both modules and answers.
pub struct Symbolizer {
    modules: Vec<Module>,
    loaded: HashMap<String, Option<LoadedModule>>,
    cache: HashMap<u64, Option<Location>>,
    /// The trace's own answers (its symbols chunks), preferred to the binaries.
    recorded: SymbolTable,
    /// [`Symbolizer::ordinal_on_line`] by call site.
    ordinals: HashMap<u64, Option<usize>>,
    /// Problems worth one line to the user (a module that could not be read, a build id
    /// mismatch), each said once.
    warnings: Vec<String>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("modules", &self.modules.len())
            .finish_non_exhaustive()
    }
}

impl Symbolizer {
    pub fn new(modules: &[Module]) -> Self {
        Self {
            modules: modules.to_vec(),
            loaded: HashMap::new(),
            cache: HashMap::new(),
            recorded: SymbolTable::default(),
            ordinals: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Answers from the trace's symbols chunks ([`accprof_trace::TraceReader::symbols`]), taken
    /// before the binaries on disk.
    pub fn with_symbols(mut self, recorded: &SymbolTable) -> Self {
        self.recorded = recorded.clone();
        self.cache.clear();
        self.ordinals.clear();
        self
    }

    /// Adds modules that a streaming reader has seen since.
    pub fn update_modules(&mut self, modules: &[Module]) {
        if modules.len() > self.modules.len() {
            self.modules = modules.to_vec();
            // Addresses that missed before may hit now.
            self.cache.retain(|_, v| v.is_some());
        }
    }

    /// Warnings collected so far (unreadable modules, changed binaries).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The location of the call whose return address is `ra`.
    pub fn resolve_return_address(&mut self, ra: u64) -> Option<Location> {
        if let Some(hit) = self.cache.get(&ra) {
            return hit.clone();
        }
        let loc = self.lookup(ra);
        self.cache.insert(ra, loc.clone());
        loc
    }

    fn lookup(&mut self, ra: u64) -> Option<Location> {
        // The module that was loaded at this address when it ran; the newest mapping wins
        // (a library unloaded and another loaded in its place).
        let index = self.modules.iter().rposition(|m| m.contains(ra))?;
        let module = self.modules[index].clone();
        let offset = ra.checked_sub(module.bias)?;
        if let Some(site) = self
            .recorded
            .module(index)
            .and_then(|m| m.sites.get(&offset))
        {
            return Some(Location {
                function: site.function.clone(),
                file: site.file.clone(),
                line: site.line,
                module: module.path.clone(),
            });
        }
        Some(
            self.location_in_binary(&module, ra)
                .unwrap_or_else(|| Location {
                    // Neither the trace nor the binary knows: the module and offset keep this call
                    // site apart from others (and from another build's), and `addr2line -e` on the
                    // build that ran still finds it.
                    function: Some(format!("{}+{offset:#x}", file_name(&module.path))),
                    module: module.path.clone(),
                    ..Location::default()
                }),
        )
    }

    /// The location of return address `ra` in `module` from the binary on disk; `None` when it
    /// cannot be read or is not the build that ran.
    pub(crate) fn location_in_binary(&mut self, module: &Module, ra: u64) -> Option<Location> {
        // A return address points after the call; the call itself is one byte earlier.
        let probe = ra.checked_sub(1)?.checked_sub(module.bias)?;
        let loaded = self.load(module)?;
        let mut loc = Location {
            module: module.path.clone(),
            ..Location::default()
        };
        if let Ok(mut frames) = loaded.loader.find_frames(probe) {
            // The innermost frame (first) holds the call's own line, also when inlined.
            if let Ok(Some(frame)) = frames.next() {
                if let Some(l) = frame.location {
                    loc.file = l.file.map(str::to_owned);
                    loc.line = l.line;
                }
                if let Some(f) = frame.function {
                    loc.function = f.demangle().ok().map(|s| s.into_owned());
                }
            }
        }
        if loc.function.is_none() {
            loc.function = Some(match loaded.loader.find_symbol_info(probe) {
                Some(sym) => {
                    let name = addr2line::demangle_auto(sym.name().into(), None);
                    format!("{name}+{:#x}", probe + 1 - sym.address())
                }
                // Fully stripped: no symbol either. The module and offset still let a user
                // find the spot with `addr2line -e` on an unstripped copy.
                None => format!("{}+{:#x}", file_name(&module.path), probe + 1),
            });
        }
        Some(loc)
    }

    fn load(&mut self, module: &Module) -> Option<&LoadedModule> {
        if !self.loaded.contains_key(&module.path) {
            let loaded = match open_module(module) {
                Ok(l) => Some(l),
                Err(why) => {
                    self.warnings.push(format!(
                        "cannot resolve source lines in {}: {why}",
                        module.path
                    ));
                    None
                }
            };
            self.loaded.insert(module.path.clone(), loaded);
        }
        self.loaded.get(&module.path).and_then(Option::as_ref)
    }

    /// The global or static variable that holds address `addr` in the profiled process, from
    /// the symbol table of the module it lies in. Heap and stack addresses have none.
    pub fn resolve_data(&mut self, addr: u64) -> Option<DataSymbol> {
        let index = self.modules.iter().rposition(|m| m.contains(addr))?;
        let module = self.modules[index].clone();
        let probe = addr.checked_sub(module.bias)?;
        if let Some(recorded) = self.recorded.module(index) {
            // The trace's table was made from these same events: an address it lacks lies
            // in no variable.
            let (a, size, name) = recorded.data_at(probe)?;
            return Some(DataSymbol {
                name: name.to_string(),
                offset: probe - a,
                size,
            });
        }
        self.data_in_binary(&module, probe)
    }

    /// The variable at file address `probe` of `module`, from its symbol table on disk.
    pub(crate) fn data_in_binary(&mut self, module: &Module, probe: u64) -> Option<DataSymbol> {
        let loaded = self.load(module)?;
        let i = loaded
            .data
            .partition_point(|(a, _, _)| *a <= probe)
            .checked_sub(1)?;
        let (a, size, name) = &loaded.data[i];
        (probe < a + size).then(|| DataSymbol {
            name: name.clone(),
            offset: probe - a,
            size: *size,
        })
    }

    /// The heap block an event's host pointer lay in, named after its allocation site
    /// (`Field::AllocSite`, recorded by libaccprof's allocation hooks): `heap@file.c:LINE`, or
    /// `heap@module+0xoff` without debug information; `offset` and `size` as for a variable.
    pub fn resolve_heap(&mut self, ev: &Event) -> Option<DataSymbol> {
        let site = ev.get(Field::AllocSite)?;
        let base = ev.get(Field::AllocBase)?;
        let size = ev.get(Field::AllocBytes)?;
        let offset = ev.get(Field::HostPtr)?.checked_sub(base)?;
        let loc = self.resolve_return_address(site);
        let place = match loc
            .as_ref()
            .and_then(|l| Some((l.file.as_deref()?, l.line?)))
        {
            Some((file, line)) => {
                let ordinal = self.ordinal_on_line(site);
                let file = std::path::Path::new(file)
                    .file_name()
                    .map_or_else(|| file.to_string(), |f| f.to_string_lossy().into_owned());
                match ordinal {
                    Some(k) => format!("{file}:{line}#{k}"),
                    None => format!("{file}:{line}"),
                }
            }
            None => {
                // No line: the module and the offset in it, which `addr2line -e` resolves on an
                // unstripped copy.
                let module = self.modules.iter().rev().find(|m| m.contains(site));
                match module {
                    Some(m) => format!("{}+{:#x}", file_name(&m.path), site - m.bias),
                    None => format!("{site:#x}"),
                }
            }
        };
        Some(DataSymbol {
            name: format!("heap@{place}"),
            offset,
            size,
        })
    }

    /// For a call site that shares its source line with other call sites the trace used (one
    /// Fortran `allocate(a(n), b(n))` calls malloc once per array), its place among them in
    /// code order, from 1; `None` when it is alone on its line. Known only from the trace's
    /// symbols chunk, which lists every site the trace used.
    fn ordinal_on_line(&mut self, site: u64) -> Option<usize> {
        if let Some(&k) = self.ordinals.get(&site) {
            return k;
        }
        let k = (|| {
            let index = self.modules.iter().rposition(|m| m.contains(site))?;
            let offset = site - self.modules[index].bias;
            let table = self.recorded.module(index)?;
            let me = table.sites.get(&offset)?;
            me.line?;
            let same: Vec<u64> = table
                .sites
                .iter()
                .filter(|(_, s)| s.file == me.file && s.line == me.line)
                .map(|(&o, _)| o)
                .collect();
            (same.len() > 1).then(|| same.iter().position(|&o| o == offset).map(|i| i + 1))?
        })();
        self.ordinals.insert(site, k);
        k
    }

    /// Names the host side of a transfer that the runtime left unnamed: from the heap block it
    /// lay in (when the trace recorded one), else from the symbol table. Sets `var_name` and
    /// flags [`EventFlags::ATTRIBUTED_NAME`]. Returns whether it did.
    pub fn annotate_data(&mut self, ev: &mut Event, strings: &mut StringTable) -> bool {
        if ev.get(Field::VarName).is_some() {
            return false;
        }
        let Some(p) = ev.get(Field::HostPtr) else {
            return false;
        };
        let Some(sym) = self.resolve_heap(ev).or_else(|| self.resolve_data(p)) else {
            return false;
        };
        let label = sym.label(ev.bytes());
        ev.set(Field::VarName, u64::from(strings.intern(&label).0));
        ev.add_flags(EventFlags::ATTRIBUTED_NAME);
        true
    }

    /// Fills `src_file`, `line_no` and `func_name` of `ev` from its return address, when the
    /// runtime gave no source file. Returns whether it did.
    pub fn annotate(&mut self, ev: &mut Event, strings: &mut StringTable) -> bool {
        if ev.get(Field::SrcFile).is_some() {
            return false;
        }
        let Some(ra) = ev.get(Field::ReturnAddress) else {
            return false;
        };
        let Some(loc) = self.resolve_return_address(ra) else {
            return false;
        };
        let file = loc.file.as_deref().unwrap_or(&loc.module);
        ev.set(Field::SrcFile, u64::from(strings.intern(file).0));
        match loc.line {
            Some(line) => ev.set_i64(Field::LineNo, i64::from(line)),
            None => ev.clear(Field::LineNo),
        }
        if ev.get(Field::FuncName).is_none() {
            if let Some(f) = &loc.function {
                let f = fortran_source_name(f);
                ev.set(Field::FuncName, u64::from(strings.intern(f).0));
            }
        }
        ev.add_flags(EventFlags::ATTRIBUTED_LOCATION);
        true
    }
}

/// A Fortran module's procedure or variable by the name its source gives it: gfortran's symbol
/// (and DWARF linkage name) for `advec_mom_kernel` in module `advec_mom_kernel_mod` is
/// `__advec_mom_kernel_mod_MOD_advec_mom_kernel`, which filled the report's columns. Any other
/// name is returned as it is.
pub fn fortran_source_name(name: &str) -> &str {
    match name
        .strip_prefix("__")
        .and_then(|rest| rest.split_once("_MOD_"))
    {
        Some((module, procedure))
            if !module.is_empty()
                && !procedure.is_empty()
                && procedure
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            procedure
        }
        _ => name,
    }
}

/// The last component of a module's path.
fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn open_module(module: &Module) -> Result<LoadedModule, String> {
    if module.path.is_empty() {
        return Err("the module has no path".into());
    }
    // The path comes from the trace: a FIFO there would hang every reader, a /proc file or a
    // device would be read without end. A binary is a regular file with something in it.
    let size = accprof_trace::files::open_regular(Path::new(&module.path))
        .and_then(|f| f.metadata())
        .map_err(|e| e.to_string())?
        .len();
    if size == 0 {
        return Err("it is empty (a /proc or /sys file?), not a binary".into());
    }
    if !module.build_id.is_empty() {
        let on_disk = read_build_id(&module.path)?;
        if on_disk.as_deref() != Some(&module.build_id[..]) {
            return Err("the file on disk is not the one that ran (its build id differs)".into());
        }
    }
    let loader = addr2line::Loader::new(&module.path).map_err(|e| e.to_string())?;
    Ok(LoadedModule {
        loader,
        data: data_symbols(&module.path).unwrap_or_default(),
    })
}

/// The sized data objects of an object file's symbol table, sorted by address.
fn data_symbols(path: &str) -> Result<Vec<(u64, u64, String)>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // SAFETY: as in read_build_id.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
    let obj = object::File::parse(&*map).map_err(|e| e.to_string())?;
    let mut out: Vec<(u64, u64, String)> = obj
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0 && s.is_definition())
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    out.sort();
    out.dedup_by_key(|(a, _, _)| *a);
    Ok(out)
}

fn read_build_id(path: &str) -> Result<Option<Vec<u8>>, String> {
    use object::Object;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // SAFETY: the mapping is read-only and dropped before we return; a binary rewritten while
    // we read it gives wrong bytes, not undefined behaviour we act on.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
    let obj = object::File::parse(&*map).map_err(|e| e.to_string())?;
    Ok(obj
        .build_id()
        .map_err(|e| e.to_string())?
        .map(<[u8]>::to_vec))
}

/// Resolves every event of a loaded trace that carries only a return address, and names the
/// host side of unnamed transfers. Returns the warnings to show the user once each.
pub fn annotate_trace(trace: &mut Trace) -> Vec<String> {
    if !trace
        .events
        .iter()
        .any(|e| e.get(Field::ReturnAddress).is_some() || unnamed_host_data(e))
    {
        return Vec::new();
    }
    let mut sym = Symbolizer::new(&trace.modules).with_symbols(&trace.symbols);
    for ev in &mut trace.events {
        sym.annotate(ev, &mut trace.strings);
        if unnamed_host_data(ev) {
            sym.annotate_data(ev, &mut trace.strings);
        }
    }
    sym.warnings
}

/// An event whose host side has an address but no name (GCC names none; the OpenACC runtime
/// API names none): device copies, and the OpenACC data events (upload, download, create,
/// delete, alloc, free).
pub fn unnamed_host_data(e: &Event) -> bool {
    use accprof_abi::acc_event_t as K;
    let data = matches!(
        e.kind,
        accprof_trace::device::MEMCPY
            | K::ENQUEUE_UPLOAD_START
            | K::ENQUEUE_DOWNLOAD_START
            | K::CREATE
            | K::DELETE
            | K::ALLOC
            | K::FREE
    );
    data && e.get(Field::HostPtr).is_some() && e.get(Field::VarName).is_none()
}

#[cfg(test)]
mod tests {
    use super::fortran_source_name;

    #[test]
    fn fortran_module_procedures_go_by_their_source_names() {
        assert_eq!(
            fortran_source_name("__advec_mom_kernel_mod_MOD_advec_mom_kernel"),
            "advec_mom_kernel"
        );
        assert_eq!(fortran_source_name("main"), "main");
        assert_eq!(fortran_source_name("MAIN__"), "MAIN__");
        assert_eq!(fortran_source_name("__x_MOD_"), "__x_MOD_");
        assert_eq!(fortran_source_name("__m_MOD_f+0x10"), "__m_MOD_f+0x10");
        assert_eq!(fortran_source_name("Grid::smooth"), "Grid::smooth");
    }
}
