//! What a module's DWARF says about its variables, for naming the host side of transfers:
//! variables at fixed addresses (globals, function statics under their source names, not
//! GCC's `z1.38`; Fortran module variables, and whether one is an allocatable's descriptor),
//! the element size of arrays and pointers, the local arrays by size (a stack array that a
//! transfer moved whole is the one local array of its size), and each function's local arrays
//! at fixed offsets from its frame (crate::stack_frames places them).

use addr2line::gimli;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A variable at a fixed address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticVar {
    pub name: String,
    pub size: Option<u64>,
    /// The size of one element for an array (of the array it describes, for a descriptor).
    pub element_bytes: Option<u64>,
    /// A Fortran allocatable or pointer array: the variable holds its descriptor, the data is
    /// on the heap.
    pub descriptor: bool,
}

/// The variables of one module.
#[derive(Clone, Debug, Default)]
pub struct DwarfVars {
    /// By file address.
    pub statics: BTreeMap<u64, StaticVar>,
    /// Names of local arrays (not at a fixed address) by their size in bytes.
    pub locals_by_size: HashMap<u64, BTreeSet<String>>,
    /// The element size of pointers and arrays by variable name, where every variable of that
    /// name agrees (`None` where they differ).
    pub element_bytes: HashMap<String, Option<u64>>,
    /// The functions with local arrays at fixed offsets from their canonical frame address.
    pub frames: Vec<FrameLayout>,
}

/// A function's local arrays that live at fixed offsets from its canonical frame address (GCC's
/// frame base is `DW_OP_call_frame_cfa`, and an array in memory is `DW_OP_fbreg`): the layout
/// of its stack frame, the same on every call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameLayout {
    pub function: String,
    /// The function's code, as file addresses [start, end).
    pub ranges: Vec<(u64, u64)>,
    /// C's `main` or a Fortran main program: its frame is live for the whole run.
    pub main_program: bool,
    pub locals: Vec<FrameLocal>,
}

impl FrameLayout {
    /// Whether the file address `pc` is in the function's code.
    pub fn contains(&self, pc: u64) -> bool {
        self.ranges.iter().any(|&(s, e)| s <= pc && pc < e)
    }
}

/// One local array of a [`FrameLayout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameLocal {
    pub name: String,
    /// Its address minus the frame's CFA (negative: the frame lies below the CFA).
    pub cfa_offset: i64,
    pub size: u64,
    pub element_bytes: Option<u64>,
}

impl DwarfVars {
    /// The variable at file address `addr`: (its address, the variable).
    pub fn static_at(&self, addr: u64) -> Option<(u64, &StaticVar)> {
        let (&a, v) = self.statics.range(..=addr).next_back()?;
        (addr < a + v.size.unwrap_or(1)).then_some((a, v))
    }

    /// The one local array of `bytes` bytes, or every name when several have that size.
    pub fn locals_of_size(&self, bytes: u64) -> Vec<&str> {
        // A function's static shows up again without its address where an outlined offload
        // function receives it (GCC's `_omp_fn`): it is no stack array.
        let is_static = |n: &str| {
            self.statics
                .values()
                .any(|v| v.name == n && v.size == Some(bytes))
        };
        self.locals_by_size
            .get(&bytes)
            .map(|s| {
                s.iter()
                    .map(String::as_str)
                    .filter(|n| !is_static(n))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The element size of the pointer or array variable `name`, if its type says it and every
    /// variable of that name agrees.
    pub fn element_bytes_of(&self, name: &str) -> Option<u64> {
        // `g->a`, `s.v`: the member's name.
        let member = name
            .rsplit(['>', '.', '%', ':'])
            .next()
            .unwrap_or(name)
            .trim();
        self.element_bytes.get(member).copied().flatten()
    }
}

/// What a type is, as far as naming needs.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A scalar, structure or anything else of this size.
    Plain(Option<u64>),
    Pointer(Option<u64>),
    Array {
        element: Option<u64>,
        total: Option<u64>,
        descriptor: bool,
    },
}

type R<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// Reads the variables of the object file `data`. An unreadable DWARF gives what was read.
pub fn read(data: &[u8]) -> DwarfVars {
    use object::{Object, ObjectSection};
    let Ok(obj) = object::File::parse(data) else {
        return DwarfVars::default();
    };
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<R<'_>, gimli::Error> {
        let bytes = obj
            .section_by_name(id.name())
            .and_then(|s| s.data().ok())
            .unwrap_or(&[]);
        Ok(gimli::EndianSlice::new(bytes, endian))
    };
    let Ok(dwarf) = gimli::Dwarf::load(load) else {
        return DwarfVars::default();
    };
    let mut out = DwarfVars::default();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        if let Ok(unit) = dwarf.unit(header) {
            let _ = read_unit(&dwarf, &unit, &mut out);
        }
    }
    out
}

fn read_unit(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    out: &mut DwarfVars,
) -> gimli::Result<()> {
    let mut shapes: HashMap<gimli::UnitOffset, Shape> = HashMap::new();
    let fortran = {
        let mut e = unit.entries();
        match e.next_dfs()? {
            Some((_, root)) => matches!(
                root.attr_value(gimli::DW_AT_language)?,
                Some(gimli::AttributeValue::Language(l)) if is_fortran(l)
            ),
            None => false,
        }
    };
    let mut entries = unit.entries();
    // Whether the entries being read are inside a subprogram (locals, not globals): the depth
    // of each enclosing subprogram, and its frame layout's index in `frames` when its frame
    // base is the CFA.
    let mut depth = 0isize;
    let mut subprogram_depth: Vec<(isize, Option<usize>)> = Vec::new();
    let mut frames: Vec<(gimli::UnitOffset, FrameLayout)> = Vec::new();
    while let Some((delta, entry)) = entries.next_dfs()? {
        depth += delta;
        while subprogram_depth.last().is_some_and(|&(d, _)| d >= depth) {
            subprogram_depth.pop();
        }
        let tag = entry.tag();
        if tag == gimli::DW_TAG_subprogram {
            let frame = if frame_base_is_cfa(entry, unit.encoding())? {
                // Its code ranges are read at the end, for the functions with local arrays.
                frames.push((entry.offset(), FrameLayout::default()));
                Some(frames.len() - 1)
            } else {
                None
            };
            subprogram_depth.push((depth, frame));
            continue;
        }
        if tag != gimli::DW_TAG_variable && tag != gimli::DW_TAG_formal_parameter {
            continue;
        }
        // A concrete instance of an inlined function's variable names its abstract origin,
        // which holds the name and the type.
        let origin = match entry.attr_value(gimli::DW_AT_abstract_origin)? {
            Some(gimli::AttributeValue::UnitRef(o)) => unit.entry(o).ok(),
            _ => None,
        };
        let Some(name) = own_or_origin_name(dwarf, unit, entry) else {
            continue;
        };
        let ty = match entry.attr_value(gimli::DW_AT_type)? {
            Some(t) => Some(t),
            None => match &origin {
                Some(o) => o.attr_value(gimli::DW_AT_type)?,
                None => None,
            },
        };
        let shape = match ty {
            Some(gimli::AttributeValue::UnitRef(t)) => shape_of(unit, fortran, t, &mut shapes, 0),
            _ => Shape::Plain(None),
        };
        let element = match shape {
            Shape::Pointer(e) => e,
            Shape::Array { element, .. } => element,
            Shape::Plain(_) => None,
        };
        if matches!(shape, Shape::Pointer(_) | Shape::Array { .. }) {
            out.element_bytes
                .entry(name.clone())
                .and_modify(|e| {
                    if *e != element {
                        *e = None;
                    }
                })
                .or_insert(element);
        }
        let location = match entry.attr_value(gimli::DW_AT_location)? {
            Some(gimli::AttributeValue::Exprloc(expr)) => Some(expr),
            _ => None,
        };
        let address = location.and_then(|e| static_address(e, unit.encoding()));
        if let (
            Some(&(_, Some(frame))),
            Some(cfa_offset),
            Shape::Array {
                total: Some(size),
                descriptor: false,
                element,
            },
        ) = (
            subprogram_depth.last(),
            location.and_then(|e| frame_offset(e, unit.encoding())),
            shape,
        ) {
            if tag == gimli::DW_TAG_variable && size > 0 {
                frames[frame].1.locals.push(FrameLocal {
                    name: name.clone(),
                    cfa_offset,
                    size,
                    element_bytes: element,
                });
            }
        }
        match (address, shape) {
            (Some(a), _) if tag == gimli::DW_TAG_variable => {
                let (size, descriptor) = match shape {
                    Shape::Plain(s) => (s, false),
                    Shape::Pointer(_) => (Some(u64::from(unit.encoding().address_size)), false),
                    Shape::Array {
                        total, descriptor, ..
                    } => (total, descriptor),
                };
                out.statics.entry(a).or_insert(StaticVar {
                    name,
                    size,
                    element_bytes: element,
                    descriptor,
                });
            }
            (
                None,
                Shape::Array {
                    total: Some(total),
                    descriptor: false,
                    ..
                },
            ) if tag == gimli::DW_TAG_variable && !subprogram_depth.is_empty() => {
                out.locals_by_size.entry(total).or_default().insert(name);
            }
            _ => {}
        }
    }
    // A function whose entry or ranges cannot be read is left out, not the rest.
    out.frames.extend(
        frames
            .into_iter()
            .filter(|(_, f)| !f.locals.is_empty())
            .filter_map(|(offset, f)| frame_code(dwarf, unit, offset, f).ok()),
    );
    Ok(())
}

/// `f` with its function's name, whether it is the main program, and its code ranges.
fn frame_code(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    offset: gimli::UnitOffset,
    mut f: FrameLayout,
) -> gimli::Result<FrameLayout> {
    let entry = unit.entry(offset)?;
    f.function = own_or_origin_name(dwarf, unit, &entry).unwrap_or_default();
    f.main_program =
        f.function == "main" || entry.attr_value(gimli::DW_AT_main_subprogram)?.is_some();
    let mut ranges = dwarf.die_ranges(unit, &entry)?;
    while let Some(r) = ranges.next()? {
        f.ranges.push((r.begin, r.end));
    }
    Ok(f)
}

/// An entry's name, or its abstract origin's (a concrete instance of an inlined function, or
/// of its variables).
fn own_or_origin_name(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
) -> Option<String> {
    let name_of = |e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>| {
        e.attr_value(gimli::DW_AT_name)
            .ok()
            .flatten()
            .and_then(|v| dwarf.attr_string(unit, v).ok())
            .map(|s| s.to_string_lossy().into_owned())
    };
    name_of(entry).or_else(|| {
        [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .into_iter()
            .find_map(|at| match entry.attr_value(at).ok().flatten() {
                Some(gimli::AttributeValue::UnitRef(o)) => {
                    unit.entry(o).ok().and_then(|e| name_of(&e))
                }
                _ => None,
            })
    })
}

/// Whether a subprogram's frame base is its canonical frame address (`DW_OP_call_frame_cfa`,
/// what GCC writes), so that its `DW_OP_fbreg` locals sit at fixed offsets from the CFA.
fn frame_base_is_cfa(
    entry: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
    encoding: gimli::Encoding,
) -> gimli::Result<bool> {
    Ok(match entry.attr_value(gimli::DW_AT_frame_base)? {
        Some(gimli::AttributeValue::Exprloc(expr)) => {
            let mut ops = expr.operations(encoding);
            matches!(ops.next(), Ok(Some(gimli::Operation::CallFrameCFA)))
                && matches!(ops.next(), Ok(None))
        }
        _ => false,
    })
}

/// The offset of a location expression that is one `DW_OP_fbreg`.
fn frame_offset(expr: gimli::Expression<R<'_>>, encoding: gimli::Encoding) -> Option<i64> {
    let mut ops = expr.operations(encoding);
    match ops.next().ok()?? {
        gimli::Operation::FrameOffset { offset } if ops.next().ok()?.is_none() => Some(offset),
        _ => None,
    }
}

/// The address of a location expression that is one `DW_OP_addr`.
fn static_address(expr: gimli::Expression<R<'_>>, encoding: gimli::Encoding) -> Option<u64> {
    let mut ops = expr.operations(encoding);
    match ops.next().ok()?? {
        gimli::Operation::Address { address } if ops.next().ok()?.is_none() => Some(address),
        _ => None,
    }
}

/// The shape of the type at `offset`, following typedefs and qualifiers.
fn shape_of(
    unit: &gimli::Unit<R<'_>>,
    fortran: bool,
    offset: gimli::UnitOffset,
    cache: &mut HashMap<gimli::UnitOffset, Shape>,
    depth: u32,
) -> Shape {
    if let Some(&s) = cache.get(&offset) {
        return s;
    }
    if depth > 16 {
        return Shape::Plain(None);
    }
    let s = shape_uncached(unit, fortran, offset, cache, depth).unwrap_or(Shape::Plain(None));
    cache.insert(offset, s);
    s
}

fn shape_uncached(
    unit: &gimli::Unit<R<'_>>,
    fortran: bool,
    offset: gimli::UnitOffset,
    cache: &mut HashMap<gimli::UnitOffset, Shape>,
    depth: u32,
) -> gimli::Result<Shape> {
    let entry = unit.entry(offset)?;
    let byte_size = entry
        .attr_value(gimli::DW_AT_byte_size)?
        .and_then(|v| v.udata_value());
    let target = match entry.attr_value(gimli::DW_AT_type)? {
        Some(gimli::AttributeValue::UnitRef(t)) => Some(t),
        _ => None,
    };
    let size_of = |cache: &mut HashMap<_, _>, t: Option<gimli::UnitOffset>| match t
        .map(|t| shape_of(unit, fortran, t, cache, depth + 1))
    {
        Some(Shape::Plain(s)) => s,
        Some(Shape::Pointer(_)) => Some(u64::from(unit.encoding().address_size)),
        Some(Shape::Array { total, .. }) => total,
        None => None,
    };
    Ok(match entry.tag() {
        gimli::DW_TAG_typedef
        | gimli::DW_TAG_const_type
        | gimli::DW_TAG_volatile_type
        | gimli::DW_TAG_restrict_type
        | gimli::DW_TAG_atomic_type => match target {
            Some(t) => shape_of(unit, fortran, t, cache, depth + 1),
            None => Shape::Plain(None),
        },
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
            Shape::Pointer(size_of(cache, target))
        }
        gimli::DW_TAG_array_type => {
            let element = size_of(cache, target);
            // gfortran's allocatable and pointer arrays: the data's place is in a descriptor.
            let descriptor = entry.attr_value(gimli::DW_AT_data_location)?.is_some();
            let mut count: Option<u64> = Some(1);
            let mut tree = unit.entries_tree(Some(offset))?;
            let root = tree.root()?;
            let mut dims = root.children();
            while let Some(dim) = dims.next()? {
                let sub = dim.entry();
                if sub.tag() != gimli::DW_TAG_subrange_type {
                    continue;
                }
                let n = match (
                    sub.attr_value(gimli::DW_AT_count)?
                        .and_then(|v| v.udata_value()),
                    sub.attr_value(gimli::DW_AT_upper_bound)?
                        .and_then(|v| v.sdata_value()),
                    sub.attr_value(gimli::DW_AT_lower_bound)?
                        .and_then(|v| v.sdata_value()),
                ) {
                    (Some(c), _, _) => Some(c),
                    // A missing lower bound is the language's default: 0 in C, 1 in Fortran.
                    (None, Some(u), l) => {
                        u64::try_from(u - l.unwrap_or(i64::from(fortran)) + 1).ok()
                    }
                    _ => None,
                };
                count = count.zip(n).map(|(a, b)| a.saturating_mul(b));
            }
            Shape::Array {
                element,
                total: if descriptor {
                    None
                } else {
                    count.zip(element).map(|(c, e)| c.saturating_mul(e))
                },
                descriptor,
            }
        }
        _ => Shape::Plain(byte_size),
    })
}

fn is_fortran(l: gimli::DwLang) -> bool {
    matches!(
        l,
        gimli::DW_LANG_Fortran77
            | gimli::DW_LANG_Fortran90
            | gimli::DW_LANG_Fortran95
            | gimli::DW_LANG_Fortran03
            | gimli::DW_LANG_Fortran08
    )
}
