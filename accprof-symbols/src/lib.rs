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

mod data_label;
pub mod dwarf_vars;
mod embed;
mod reader;
pub mod source_names;
mod stack_frames;

pub use data_label::{base_name, is_source_text, pointer_for, DataKind, DataSymbol};
pub use embed::{resolve_trace, symbolize_file, Symbolized};
pub use reader::{ChunkIndex, ChunkReader, Resolve, ResolvingReader};

use accprof_trace::symbols::AllocName;
use accprof_trace::{Event, EventFlags, Field, Module, StringTable, SymbolTable, Trace};
use source_names::Syntax;
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
    /// Modules' variables as DWARF describes them, by path, read on first use.
    vars: HashMap<String, dwarf_vars::DwarfVars>,
    /// Source files by path, read on first use (`None`: not found).
    sources: HashMap<String, Option<Vec<String>>>,
    /// Where relative source paths may start: the program's working directory when it ran.
    source_dirs: Vec<std::path::PathBuf>,
    /// The main thread's stack as the tool library saw it at start (header key `stack`).
    stack: Option<(u64, u64)>,
    /// The application's frames on that stack when the trace was created (header key
    /// `stack_frames`): (return address, CFA).
    stack_frames: Vec<(u64, u64)>,
    /// Stack ranges placed one at a time ([`Symbolizer::resolve_stack`] without a symbols
    /// chunk's answer).
    placed_alone: HashMap<(u64, u64), Option<DataSymbol>>,
    /// Per thread, the data regions entered and not yet exited: (file, function, line).
    open_regions: HashMap<i64, Vec<(u64, u64, i64)>>,
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
            vars: HashMap::new(),
            sources: HashMap::new(),
            source_dirs: Vec::new(),
            stack: None,
            stack_frames: Vec::new(),
            placed_alone: HashMap::new(),
            open_regions: HashMap::new(),
        }
    }

    /// Reads what a trace's header says that naming needs: the working directory relative
    /// source paths start from, and the main thread's stack.
    pub fn with_header(mut self, h: &accprof_trace::Header) -> Self {
        for (k, v) in &h.extra {
            match k.as_str() {
                "cwd" => self.source_dirs.push(v.into()),
                STACK_KEY => self.stack = parse_range(v),
                STACK_FRAMES_KEY => self.stack_frames = parse_frames(v),
                _ => {}
            }
        }
        if let Some(dir) = std::path::Path::new(&h.exe).parent() {
            self.source_dirs.push(dir.to_path_buf());
        }
        self
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
        if let Some(f) = program_frame(&loaded.loader, probe) {
            (loc.file, loc.line, loc.function) = (f.file, f.line, f.function);
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
    /// the module it lies in: its debug information (source names, element sizes, Fortran
    /// descriptors), else its symbol table. Heap and stack addresses have none.
    pub fn resolve_data(&mut self, addr: u64) -> Option<DataSymbol> {
        let index = self.modules.iter().rposition(|m| m.contains(addr))?;
        let module = self.modules[index].clone();
        let probe = addr.checked_sub(module.bias)?;
        if let Some(recorded) = self.recorded.module(index) {
            // The trace's table was made from these same events: an address it lacks lies
            // in no variable.
            let (a, size, name) = recorded.data_at(probe)?;
            let mut sym = DataSymbol::variable(name, probe - a, size);
            if let Some(k) = recorded.kinds.get(&a) {
                sym.element_bytes = (k.element_bytes > 0).then_some(k.element_bytes);
                if k.descriptor {
                    sym.kind = DataKind::Descriptor;
                }
            }
            sym.syntax = self.module_syntax(index);
            return Some(sym);
        }
        self.data_in_binary(&module, probe)
    }

    /// The variable at file address `probe` of `module`: from its DWARF, else its symbol table.
    pub(crate) fn data_in_binary(&mut self, module: &Module, probe: u64) -> Option<DataSymbol> {
        let fortran = self.module_is_fortran(module);
        let loaded = self.load(module)?;
        let from_symtab = (|| {
            let i = loaded
                .data
                .partition_point(|(a, _, _)| *a <= probe)
                .checked_sub(1)?;
            let (a, size, name) = &loaded.data[i];
            (probe < a + size).then(|| DataSymbol::variable(source_name(name), probe - a, *size))
        })();
        let vars = self.dwarf_vars(module)?;
        let syntax = if fortran { Syntax::Fortran } else { Syntax::C };
        if let Some((a, v)) = vars.static_at(probe) {
            let size = v
                .size
                .or_else(|| from_symtab.as_ref().map(|s| s.size))
                .unwrap_or(1);
            return Some(DataSymbol {
                kind: if v.descriptor {
                    DataKind::Descriptor
                } else {
                    DataKind::Variable
                },
                element_bytes: v.element_bytes,
                syntax,
                ..DataSymbol::variable(&v.name, probe - a, size)
            });
        }
        from_symtab.map(|s| DataSymbol { syntax, ..s })
    }

    /// The heap block an event's host pointer lay in (`Field::AllocSite`, recorded by
    /// libaccprof's allocation hooks), named after the pointer its allocation was stored in
    /// (the allocation's statement in the source, or the trace's record of it); where none is
    /// found, `heap@file.c:LINE` (or `heap@module+0xoff` without debug information) and why.
    pub fn resolve_heap(&mut self, ev: &Event) -> Option<DataSymbol> {
        let site = ev.get(Field::AllocSite)?;
        let base = ev.get(Field::AllocBase)?;
        let size = ev.get(Field::AllocBytes)?;
        let offset = ev.get(Field::HostPtr)?.checked_sub(base)?;
        let (hint, named) = self.allocation(site);
        Some(match named {
            AllocName::Named {
                name,
                extent,
                element_bytes,
                fortran,
            } => DataSymbol {
                name,
                offset,
                size,
                kind: DataKind::Heap,
                element_bytes,
                extent,
                syntax: if fortran { Syntax::Fortran } else { Syntax::C },
            },
            AllocName::Unnamed(why) => DataSymbol {
                kind: DataKind::Unnamed(why),
                ..DataSymbol::variable(&format!("heap@{hint}"), offset, size)
            },
        })
    }

    /// The allocation at call site `site`: its place (`file.c:LINE`, `#k` for the k-th on a
    /// line, or `module+0xoff`) and the variable it was stored in, or why there is none.
    pub fn allocation(&mut self, site: u64) -> (String, AllocName) {
        let index = self.modules.iter().rposition(|m| m.contains(site));
        let loc = self.resolve_return_address(site);
        let Some((file, line)) = loc.as_ref().and_then(|l| Some((l.file.clone()?, l.line?))) else {
            // No line: the module and the offset in it, which `addr2line -e` resolves on an
            // unstripped copy.
            let hint = match index.map(|i| &self.modules[i]) {
                Some(m) => format!("{}+{:#x}", file_name(&m.path), site - m.bias),
                None => format!("{site:#x}"),
            };
            return (hint, AllocName::Unnamed("no line".into()));
        };
        let ordinal = self.ordinal_on_line(site);
        let short = std::path::Path::new(&file)
            .file_name()
            .map_or_else(|| file.clone(), |f| f.to_string_lossy().into_owned());
        let hint = match ordinal {
            Some(k) => format!("{short}:{line}#{k}"),
            None => format!("{short}:{line}"),
        };
        // What the trace recorded when the program ended, then the source as it is now.
        let recorded = index.and_then(|i| {
            let offset = site - self.modules[i].bias;
            self.recorded.module(i)?.allocations.get(&offset).cloned()
        });
        let named = match recorded {
            Some(r) => r,
            None => match self.vector_constructed_at(site) {
                // The vector the program's code constructed or grew at that column: a member
                // in a constructor's initializer list, one declarator of several.
                Some(column) => self
                    .source_lines(&file)
                    .and_then(|lines| {
                        source_names::vector_at(lines.get(line as usize - 1)?, column)
                    })
                    .map(|t| AllocName::Named {
                        name: t.name,
                        extent: t.extent,
                        element_bytes: t.element_bytes,
                        fortran: false,
                    })
                    .unwrap_or_else(|| self.name_allocation(index, &file, line, ordinal)),
                None => self.name_allocation(index, &file, line, ordinal),
            },
        };
        (hint, named)
    }

    /// Where in the program's line an allocation through std::vector's code was made: the
    /// column (from 1) of the call the debug information says that code was inlined at. `None`
    /// when the allocation did not come from a vector's inlined code.
    fn vector_constructed_at(&mut self, site: u64) -> Option<u32> {
        let index = self.modules.iter().rposition(|m| m.contains(site))?;
        let module = self.modules[index].clone();
        let probe = site.checked_sub(1)?.checked_sub(module.bias)?;
        let f = program_frame(&self.load(&module)?.loader, probe)?;
        if f.in_system_header {
            return None;
        }
        f.inlined
            .iter()
            .any(|callee| callee.starts_with("std::vector<"))
            .then_some(f.column?)
    }

    /// The variable the allocation on `line` of `file` was stored in, from the source.
    fn name_allocation(
        &mut self,
        module: Option<usize>,
        file: &str,
        line: u32,
        ordinal: Option<usize>,
    ) -> AllocName {
        let syntax = Syntax::of(file);
        let Some(lines) = self.source_lines(file) else {
            return AllocName::Unnamed("no source".into());
        };
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let t = match source_names::allocation_target(&refs, line as usize, syntax, ordinal) {
            Ok(t) => t,
            Err(u) => return AllocName::Unnamed(u.word().into()),
        };
        let element_bytes = t.element_bytes.or_else(|| {
            let m = self.modules.get(module?)?.clone();
            self.dwarf_vars(&m)?.element_bytes_of(&t.name)
        });
        AllocName::Named {
            name: t.name,
            extent: t.extent,
            element_bytes,
            fortran: syntax == Syntax::Fortran,
        }
    }

    /// A stack array of the main thread (inside the stack range the trace's header gives) that
    /// a transfer of `bytes` moved: as the symbols chunk names it, else placed in main's frame
    /// or another function's ([`Symbolizer::place_stack`], this range alone), else the
    /// program's one local array of that size.
    pub fn resolve_stack(&mut self, addr: u64, bytes: Option<u64>) -> Option<DataSymbol> {
        let (lo, hi) = self.stack?;
        if addr < lo || addr >= hi {
            return None;
        }
        // Unnamed stack memory keeps its address (`host 0x...`): readers know it as such.
        let b = bytes.filter(|&b| b > 0)?;
        let name = match self.recorded.stack.get(&addr) {
            Some(name) => name.clone(),
            None => {
                // Read without the whole run's ranges (a trace whose symbols were not kept):
                // this range alone, with main's frame where the header gives it.
                let key = (addr, b);
                if !self.placed_alone.contains_key(&key) {
                    let placed = self.place_stack(&[key].into_iter().collect());
                    self.placed_alone.insert(key, placed.get(&key).cloned());
                }
                if let Some(Some(d)) = self.placed_alone.get(&key) {
                    return Some(d.clone());
                }
                self.stack_name(b)
            }
        }?;
        Some(DataSymbol {
            kind: DataKind::Stack,
            syntax: self.module_syntax(0),
            ..DataSymbol::variable(&name, 0, b)
        })
    }

    /// Names the main thread's stack ranges (address, bytes) a run moved, all at once, by
    /// where the frames of the program's functions must have been (crate::stack_frames): two
    /// local arrays of one size are told apart when both were moved. A range inside an array
    /// is named as its section.
    pub fn place_stack(
        &mut self,
        ranges: &std::collections::BTreeSet<(u64, u64)>,
    ) -> HashMap<(u64, u64), DataSymbol> {
        let Some(stack) = self.stack else {
            return HashMap::new();
        };
        let syntax = self.module_syntax(0);
        let Some(m) = self.modules.first().cloned() else {
            return HashMap::new();
        };
        let frames_at_start = self.stack_frames.clone();
        let Some(vars) = self.dwarf_vars(&m) else {
            return HashMap::new();
        };
        // The main program's frame, where the trace saw it: live for the whole run.
        let known: Vec<(usize, u64)> = frames_at_start
            .iter()
            .filter(|&&(ip, _)| m.contains(ip))
            .filter_map(|&(ip, cfa)| {
                // A return address is the instruction after the call: the call is before it.
                let pc = ip.checked_sub(m.bias)?.checked_sub(1)?;
                let fi = vars.frames.iter().position(|f| f.contains(pc))?;
                vars.frames[fi].main_program.then_some((fi, cfa))
            })
            .collect();
        stack_frames::place(&vars.frames, stack, &known, ranges)
            .into_iter()
            .map(|(range, at)| {
                let l = &vars.frames[at.frame].locals[at.local];
                let sym = DataSymbol {
                    kind: DataKind::Stack,
                    syntax,
                    element_bytes: l.element_bytes,
                    ..DataSymbol::variable(&l.name, at.offset, l.size)
                };
                (range, sym)
            })
            .collect()
    }

    /// The one local array of `bytes` bytes in the program (its first module).
    pub(crate) fn stack_name(&mut self, bytes: u64) -> Option<String> {
        let m = self.modules.first()?.clone();
        match self.dwarf_vars(&m)?.locals_of_size(bytes).as_slice() {
            [one] => Some(one.to_string()),
            _ => None,
        }
    }

    /// What the DWARF of `module` says of its variables, when it is the build that ran.
    fn dwarf_vars(&mut self, module: &Module) -> Option<&dwarf_vars::DwarfVars> {
        self.load(module)?;
        Some(
            self.vars
                .entry(module.path.clone())
                .or_insert_with(|| read_dwarf_vars(&module.path)),
        )
    }

    /// The lines of source file `file`, found as [`Symbolizer::with_header`] says.
    fn source_lines(&mut self, file: &str) -> Option<&Vec<String>> {
        if !self.sources.contains_key(file) {
            let path = std::path::Path::new(file);
            let candidates: Vec<std::path::PathBuf> = if path.is_absolute() {
                vec![path.to_path_buf()]
            } else {
                std::iter::once(path.to_path_buf())
                    .chain(self.source_dirs.iter().map(|d| d.join(path)))
                    .collect()
            };
            let text = candidates
                .iter()
                .find_map(|c| std::fs::read_to_string(c).ok())
                .map(|t| t.lines().map(str::to_string).collect());
            self.sources.insert(file.to_string(), text);
        }
        self.sources.get(file).and_then(Option::as_ref)
    }

    fn module_syntax(&self, index: usize) -> Syntax {
        match self.modules.get(index) {
            Some(m) if self.module_is_fortran_cached(m) => Syntax::Fortran,
            _ => Syntax::C,
        }
    }

    /// Whether a module's code is Fortran, judged by the source files of its call sites the
    /// trace resolved.
    fn module_is_fortran(&mut self, module: &Module) -> bool {
        self.module_is_fortran_cached(module)
    }

    fn module_is_fortran_cached(&self, module: &Module) -> bool {
        let index = self.modules.iter().position(|m| m.path == module.path);
        let from_cache = self
            .cache
            .values()
            .flatten()
            .filter(|l| l.module == module.path)
            .filter_map(|l| l.file.as_deref())
            .chain(
                index
                    .and_then(|i| self.recorded.module(i))
                    .into_iter()
                    .flat_map(|m| m.sites.values().filter_map(|s| s.file.as_deref())),
            )
            .map(Syntax::of)
            .collect::<Vec<_>>();
        !from_cache.is_empty() && from_cache.iter().all(|s| *s == Syntax::Fortran)
    }

    /// For a call site that shares its source line with other call sites of its function that
    /// the trace used (one Fortran `allocate(a(n), b(n))` calls malloc once per array), its
    /// place among them in code order, from 1; `None` when it is alone on its line. Known only from the trace's
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
                // One function's sites: a template's instantiations repeat the line's calls.
                .filter(|(_, s)| {
                    s.file == me.file && s.line == me.line && s.function == me.function
                })
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
        let Some(sym) = self
            .resolve_heap(ev)
            .or_else(|| self.resolve_data(p))
            .or_else(|| self.resolve_stack(p, ev.bytes()))
        else {
            return false;
        };
        let label = sym.label(ev.bytes());
        ev.set(Field::VarName, u64::from(strings.intern(&label).0));
        ev.add_flags(EventFlags::ATTRIBUTED_NAME);
        true
    }

    /// Names a device block the program allocated itself (`acc_malloc`, an `acc_ev_alloc` of
    /// the runtime API with the call's return address) after the pointer the statement stores
    /// it in (`double *tmp = acc_malloc(...)`), and its `acc_free(tmp)`. Sets `var_name` and
    /// flags [`EventFlags::ATTRIBUTED_NAME`]. Returns whether it did.
    pub fn annotate_device_block(&mut self, ev: &mut Event, strings: &mut StringTable) -> bool {
        if !unnamed_device_block(ev) {
            return false;
        }
        let Some(ra) = ev.get(Field::ReturnAddress) else {
            return false;
        };
        let name = if ev.kind == accprof_abi::acc_event_t::ALLOC {
            match self.allocation(ra).1 {
                AllocName::Named { name, .. } => Some(name),
                AllocName::Unnamed(_) => None,
            }
        } else {
            self.resolve_return_address(ra)
                .and_then(|l| Some((l.file?, l.line?)))
                .and_then(|(file, line)| {
                    let lines = self.source_lines(&file)?;
                    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                    source_names::freed_pointer(&refs, line as usize, Syntax::of(&file))
                })
        };
        let Some(name) = name else {
            return false;
        };
        ev.set(Field::VarName, u64::from(strings.intern(&name).0));
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

impl Symbolizer {
    /// Puts the exit of a data region where the program closes it. GCC gives the runtime call
    /// that ends a region no line of its own: the exit lands on the statement before, or, when
    /// the region's end is its function's last statement and the call is a tail call, in the
    /// caller. An exit whose resolved location is in another function than its entry's takes
    /// the entry's file and function and, from the source, the region's closing line (else the
    /// entry's line). Call for every event, in order, after [`Symbolizer::annotate`].
    pub fn place_data_exit(&mut self, ev: &mut Event, strings: &mut StringTable) {
        use accprof_abi::{acc_construct_t, acc_event_t};
        let region = ev.get_i64(Field::ParentConstruct) == Some(i64::from(acc_construct_t::DATA.0));
        if !region || ev.implicit() {
            return;
        }
        let thread = ev.get_i64(Field::Thread).unwrap_or(-1);
        let here = (
            ev.get(Field::SrcFile),
            ev.get(Field::FuncName),
            ev.line_no(),
        );
        if ev.kind == acc_event_t::ENTER_DATA_START {
            if let (Some(f), Some(func), Some(line)) = here {
                self.open_regions
                    .entry(thread)
                    .or_default()
                    .push((f, func, line));
            }
            return;
        }
        if ev.kind != acc_event_t::EXIT_DATA_START {
            return;
        }
        let Some((file, func, line)) = self.open_regions.get_mut(&thread).and_then(Vec::pop) else {
            return;
        };
        let attributed = ev.flags().contains(EventFlags::ATTRIBUTED_LOCATION);
        if !attributed || here.1 == Some(func) {
            return;
        }
        let end = strings
            .resolve(Some(accprof_trace::StrId(file as u32)))
            .map(str::to_string)
            .and_then(|path| {
                let syntax = Syntax::of(&path);
                let lines = self.source_lines(&path)?;
                let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                source_names::data_region_end(&refs, usize::try_from(line).ok()?, syntax)
            });
        ev.set(Field::SrcFile, file);
        ev.set(Field::FuncName, func);
        ev.set_i64(Field::LineNo, end.map_or(line, |e| e as i64));
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

/// Where the program's own code is at a code address, from the debug information's frames
/// there (innermost first).
struct ProgramFrame {
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    function: Option<String>,
    /// The functions of system headers inlined there, outermost last (`std::vector<...>::
    /// vector` reaching operator new).
    inlined: Vec<String>,
    /// Every frame there is a system header's: this is the innermost one.
    in_system_header: bool,
}

/// The innermost frame at file address `probe`, or, when it is code inlined from a system
/// header, the program's frame that called into it (the program's line, where a vector's
/// allocation through the allocator's header happened).
fn program_frame(loader: &addr2line::Loader, probe: u64) -> Option<ProgramFrame> {
    let mut frames = loader.find_frames(probe).ok()?;
    let mut innermost: Option<ProgramFrame> = None;
    let mut inlined = Vec::new();
    while let Ok(Some(frame)) = frames.next() {
        let location = frame.location.as_ref();
        let file = location.and_then(|l| l.file).map(str::to_owned);
        let function = frame
            .function
            .as_ref()
            .and_then(|f| f.demangle().ok())
            .map(|s| s.into_owned());
        // The innermost frame without a file is taken as it is; an outer one is passed over.
        let system = match &file {
            Some(f) => is_system_header(f),
            None => innermost.is_some(),
        };
        let here = ProgramFrame {
            line: location.and_then(|l| l.line),
            column: location.and_then(|l| l.column),
            file,
            function: function.clone(),
            inlined: Vec::new(),
            in_system_header: system,
        };
        if !system {
            return Some(ProgramFrame { inlined, ..here });
        }
        inlined.extend(function);
        innermost.get_or_insert(here);
    }
    innermost
}

/// Whether `path` is a header of the system or the compiler (`/usr/include/c++/12/bits/...`),
/// not of the program.
fn is_system_header(path: &str) -> bool {
    [
        "/usr/include/",
        "/usr/lib/gcc/",
        "/usr/local/include/c++/",
        "/opt/nvidia/",
    ]
    .iter()
    .any(|p| path.starts_with(p))
        || path.contains("/include/c++/")
}

/// The header key libaccprof writes with the main thread's stack range (`0xLO-0xHI`).
pub const STACK_KEY: &str = "stack";

/// The header key libaccprof writes with the application's frames on the main thread's stack
/// when the trace was created, innermost first: `0xRETURN_ADDRESS@0xCFA`, space-separated.
pub const STACK_FRAMES_KEY: &str = "stack_frames";

/// The frames of a [`STACK_FRAMES_KEY`] value; a malformed item is left out.
fn parse_frames(v: &str) -> Vec<(u64, u64)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    v.split_whitespace()
        .filter_map(|item| {
            let (ip, cfa) = item.split_once('@')?;
            Some((hex(ip)?, hex(cfa)?))
        })
        .collect()
}

fn parse_range(v: &str) -> Option<(u64, u64)> {
    let (lo, hi) = v.split_once('-')?;
    let num = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    Some((num(lo)?, num(hi)?))
}

/// A variable's name in the symbol table as its source writes it: a Fortran module's
/// variable without gfortran's decoration, a C function's static without GCC's `.N` suffix.
fn source_name(symbol: &str) -> &str {
    let name = fortran_source_name(symbol);
    match name.rsplit_once('.') {
        Some((base, n)) if !base.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

fn read_dwarf_vars(path: &str) -> dwarf_vars::DwarfVars {
    std::fs::File::open(path)
        .ok()
        // SAFETY: as in read_build_id.
        .and_then(|f| unsafe { memmap2::Mmap::map(&f) }.ok())
        .map(|map| dwarf_vars::read(&map))
        .unwrap_or_default()
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
    let mut sym = Symbolizer::new(&trace.modules)
        .with_symbols(&trace.symbols)
        .with_header(&trace.header);
    for ev in &mut trace.events {
        sym.annotate(ev, &mut trace.strings);
        sym.place_data_exit(ev, &mut trace.strings);
        if unnamed_host_data(ev) {
            sym.annotate_data(ev, &mut trace.strings);
        }
        sym.annotate_device_block(ev, &mut trace.strings);
    }
    sym.warnings
}

/// A device allocation or free of the runtime API (`acc_malloc`, `acc_free`) with the call's
/// return address and no name: the pointer it is stored in names it.
pub fn unnamed_device_block(e: &Event) -> bool {
    use accprof_abi::{acc_construct_t, acc_event_t as K};
    matches!(e.kind, K::ALLOC | K::FREE)
        && e.get(Field::VarName).is_none()
        && e.get(Field::ReturnAddress).is_some()
        && e.get_i64(Field::ParentConstruct) == Some(i64::from(acc_construct_t::RUNTIME_API.0))
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
    use super::*;

    /// A data region's entry or exit at `line` of `function` in `file`, located by accprof.
    fn region_event(
        kind: accprof_abi::acc_event_t,
        strings: &mut StringTable,
        file: &str,
        function: &str,
        line: i64,
    ) -> Event {
        let mut e = Event::new(kind, 1);
        e.set_i64(
            Field::ParentConstruct,
            i64::from(accprof_abi::acc_construct_t::DATA.0),
        );
        e.set_i64(Field::Thread, 0);
        e.set(Field::SrcFile, u64::from(strings.intern(file).0));
        e.set(Field::FuncName, u64::from(strings.intern(function).0));
        e.set_i64(Field::LineNo, line);
        e.add_flags(EventFlags::ATTRIBUTED_LOCATION);
        e
    }

    #[test]
    fn a_data_region_exit_a_tail_call_put_in_the_caller_goes_back_to_its_end_data() {
        use accprof_abi::acc_event_t as K;
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("run.f90");
        std::fs::write(
            &src,
            "subroutine run(n)\n  !$acc data copy(a)\n  call work(n)\n  !$acc end data\nend subroutine run\n",
        )
        .unwrap();
        let file = src.display().to_string();
        let mut strings = StringTable::default();
        let mut sym = Symbolizer::new(&[]);
        let mut enter = region_event(K::ENTER_DATA_START, &mut strings, &file, "run", 2);
        sym.place_data_exit(&mut enter, &mut strings);
        // The tail call's return address is the caller's.
        let mut exit = region_event(K::EXIT_DATA_START, &mut strings, "main.f90", "p", 40);
        sym.place_data_exit(&mut exit, &mut strings);
        assert_eq!(strings.resolve(exit.src_file()), Some(&file[..]));
        assert_eq!(strings.resolve(exit.func_name()), Some("run"));
        assert_eq!(exit.line_no(), Some(4), "the END DATA line");
        // An exit in its own function keeps its place.
        let mut enter = region_event(K::ENTER_DATA_START, &mut strings, &file, "run", 2);
        sym.place_data_exit(&mut enter, &mut strings);
        let mut exit = region_event(K::EXIT_DATA_START, &mut strings, &file, "run", 3);
        sym.place_data_exit(&mut exit, &mut strings);
        assert_eq!(exit.line_no(), Some(3));
    }

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
