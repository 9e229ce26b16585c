//! How a transfer's host memory is named in every view: as the program's source writes it, so
//! that the name can go into a data clause as it is (`T[0:nx*ny]`, `A`, `t`, `g->a[0:g->n]`),
//! or, where no name is known, a label that says what the memory is and why it has no name
//! (`heap@util.c:12 (returned)`), which no clause takes.

use crate::source_names::Syntax;

/// What host memory a [`DataSymbol`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// A global, static or Fortran module variable.
    Variable,
    /// A Fortran allocatable's or pointer's descriptor: its data lies elsewhere, on the heap.
    Descriptor,
    /// A heap block, named after the pointer its allocation was stored in.
    Heap,
    /// A stack array, named by the local array of the debug information it is
    /// (crate::stack_frames), or its one local array of that size.
    Stack,
    /// Memory whose variable is not known: the name is a hint (`heap@file.c:LINE`, `stack
    /// 0x7ffd...`) and this says why, in a word or two.
    Unnamed(String),
}

/// The variable or heap block an address lies in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSymbol {
    /// The variable as the source writes it, or the hint for unnamed memory.
    pub name: String,
    /// Where the address lies inside it.
    pub offset: u64,
    pub size: u64,
    pub kind: DataKind,
    /// Bytes per element, where the debug information or the allocation says.
    pub element_bytes: Option<u64>,
    /// A heap block's element count as its allocation writes it (`nx*ny`); Fortran: its shape.
    pub extent: Option<String>,
    pub syntax: Syntax,
}

impl DataSymbol {
    /// A variable at a fixed address.
    pub fn variable(name: &str, offset: u64, size: u64) -> Self {
        DataSymbol {
            name: name.to_string(),
            offset,
            size,
            kind: DataKind::Variable,
            element_bytes: None,
            extent: None,
            syntax: Syntax::C,
        }
    }

    /// The name a transfer of `bytes` at this address goes by: the whole variable, or the
    /// section it moved in the source's syntax (`T[1024:4096]`, `t(1025:5120)`), or, where the
    /// elements are not known, the byte range (`A[+0x2000, 32768 bytes]`).
    pub fn label(&self, bytes: Option<u64>) -> String {
        let whole = self.offset == 0 && bytes.is_none_or(|b| b == self.size);
        match &self.kind {
            DataKind::Descriptor => return format!("{} (descriptor)", self.name),
            DataKind::Unnamed(why) => {
                let range = if whole {
                    String::new()
                } else {
                    byte_range(self.offset, bytes)
                };
                return format!("{}{range} ({why})", self.name);
            }
            _ => {}
        }
        if whole {
            return self.whole();
        }
        self.section(bytes)
            .unwrap_or_else(|| format!("{}{}", self.name, byte_range(self.offset, bytes)))
    }

    /// The whole variable: a C pointer with its section, since a clause needs one.
    fn whole(&self) -> String {
        match (&self.kind, self.syntax) {
            (DataKind::Heap, Syntax::C) => match (&self.extent, self.element_bytes) {
                (Some(e), _) => format!("{}[0:{e}]", self.name),
                (None, Some(b)) if b > 0 && self.size.is_multiple_of(b) => {
                    format!("{}[0:{}]", self.name, self.size / b)
                }
                _ => self.name.clone(),
            },
            _ => self.name.clone(),
        }
    }

    /// Part of the variable as a section, when its elements are known.
    fn section(&self, bytes: Option<u64>) -> Option<String> {
        let e = self.element_bytes.filter(|&e| e > 0)?;
        let b = bytes?;
        if !self.offset.is_multiple_of(e) || !b.is_multiple_of(e) {
            return None;
        }
        let (first, count) = (self.offset / e, b / e);
        match self.syntax {
            Syntax::C => Some(format!("{}[{first}:{count}]", self.name)),
            Syntax::Fortran => {
                // One dimension only: a section of a rank-2 array is not one index range.
                let lower = match self.extent.as_deref() {
                    Some(shape) if shape.contains(',') => return None,
                    Some(shape) => match shape.split_once(':') {
                        Some((lo, _)) => lo.trim().parse::<i64>().ok()?,
                        None => 1,
                    },
                    None if self.kind == DataKind::Heap => 1,
                    None => return None,
                };
                let lo = lower + first as i64;
                Some(format!("{}({lo}:{})", self.name, lo + count as i64 - 1))
            }
        }
    }
}

fn byte_range(offset: u64, bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!("[+{offset:#x}, {b} bytes]"),
        None => format!("[+{offset:#x}]"),
    }
}

/// Whether a variable label can go into a data clause as it is: a name or a section as the
/// source writes it, not a hint (`heap@...`, `host 0x...`, `t (descriptor)`) or a byte range.
pub fn is_source_text(label: &str) -> bool {
    let starts_well = label
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && !label.contains(char::is_whitespace)
        && !label.contains('@')
        && !label.contains("[+")
}

/// The array a label names, without its section: `T` for `T[0:nx*ny]`, `t` for `t(1:10)`,
/// `g->a` for `g->a[0:n]`, `x` for a std::vector's data `x.data()[0:n]`.
pub fn base_name(label: &str) -> &str {
    let label = label
        .split_once(crate::source_names::CONTAINER_DATA)
        .map_or(label, |(v, _)| v);
    let end = label.find(['[', '(', ' ']).unwrap_or(label.len());
    label[..end].trim_end()
}

/// A std::vector's data (`x.data()[0:n]`) goes into a clause through a pointer, which a
/// clause takes where it takes no call: the pointer's section (`x_data[0:n]`) and the
/// declaration the user adds before the directive (`auto *x_data = x.data();`). `None` for
/// any other label.
pub fn pointer_for(label: &str) -> Option<(String, String)> {
    let (v, section) = label.split_once(crate::source_names::CONTAINER_DATA)?;
    let pointer: String = v
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
        + "_data";
    Some((
        format!("{pointer}{section}"),
        format!(
            "auto *{pointer} = {v}{};",
            crate::source_names::CONTAINER_DATA
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(name: &str, syntax: Syntax, extent: Option<&str>, elem: Option<u64>) -> DataSymbol {
        DataSymbol {
            name: name.into(),
            offset: 0,
            size: 8192,
            kind: DataKind::Heap,
            element_bytes: elem,
            extent: extent.map(str::to_string),
            syntax,
        }
    }

    #[test]
    fn a_vectors_data_goes_into_clauses_through_a_pointer() {
        assert_eq!(base_name("x.data()[0:n]"), "x");
        assert_eq!(
            pointer_for("x.data()[0:n]"),
            Some(("x_data[0:n]".into(), "auto *x_data = x.data();".into()))
        );
        assert_eq!(
            pointer_for("g.v.data()[0:g.n]"),
            Some((
                "g_v_data[0:g.n]".into(),
                "auto *g_v_data = g.v.data();".into()
            ))
        );
        assert_eq!(pointer_for("T[0:n]"), None);
    }

    #[test]
    fn whole_blocks_and_sections_in_the_source_syntax() {
        let t = heap("T", Syntax::C, Some("nx*ny"), Some(8));
        assert_eq!(t.label(Some(8192)), "T[0:nx*ny]");
        assert_eq!(heap("T", Syntax::C, None, Some(8)).label(None), "T[0:1024]");
        assert_eq!(heap("T", Syntax::C, None, None).label(None), "T");
        let part = DataSymbol {
            offset: 0x2000,
            ..t.clone()
        };
        assert_eq!(part.label(Some(64)), "T[1024:8]");
        let f = heap("t", Syntax::Fortran, Some("n"), Some(8));
        assert_eq!(f.label(Some(8192)), "t");
        assert_eq!(
            DataSymbol {
                offset: 16,
                ..f.clone()
            }
            .label(Some(80)),
            "t(3:12)"
        );
        let f2 = heap("t", Syntax::Fortran, Some("nx,ny"), Some(8));
        assert_eq!(
            DataSymbol { offset: 16, ..f2 }.label(Some(80)),
            "t[+0x10, 80 bytes]",
            "a rank-2 section has no one index range"
        );
        let unaligned = DataSymbol { offset: 4, ..t };
        assert_eq!(unaligned.label(Some(8)), "T[+0x4, 8 bytes]");
    }

    #[test]
    fn descriptors_and_unnamed_memory_say_what_they_are() {
        let d = DataSymbol {
            kind: DataKind::Descriptor,
            ..DataSymbol::variable("t", 0, 88)
        };
        assert_eq!(d.label(Some(88)), "t (descriptor)");
        let u = DataSymbol {
            kind: DataKind::Unnamed("returned".into()),
            ..DataSymbol::variable("heap@util.c:12", 0, 4096)
        };
        assert_eq!(u.label(Some(4096)), "heap@util.c:12 (returned)");
        assert!(!is_source_text(&u.label(None)));
        assert!(!is_source_text(&d.label(None)));
        assert!(is_source_text("T[0:nx*ny]") && is_source_text("g->a[0:g->n]"));
        assert!(!is_source_text("A[+0x10, 8 bytes]") && !is_source_text("host 0x7f+8 KiB"));
        assert_eq!(base_name("T[0:nx*ny]"), "T");
        assert_eq!(base_name("t(3:12)"), "t");
        assert_eq!(base_name("t (descriptor)"), "t");
        assert_eq!(base_name("g->a[0:n]"), "g->a");
    }
}
