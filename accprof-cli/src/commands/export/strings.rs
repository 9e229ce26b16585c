//! The strings a slice names (variable or kernel, source file, function) as the writers look
//! them up: in the reader's whole table, or, when the export streams, in the copies shipped to
//! the writing thread with the slices that first use them.

use super::slice::Slice;
use accprof_trace::{StrId, StringTable};
use rustc_hash::{FxHashMap, FxHashSet};

/// Resolves a trace's string ids.
pub trait Strings {
    fn get(&self, id: StrId) -> Option<&str>;

    fn resolve(&self, id: Option<StrId>) -> Option<&str> {
        id.and_then(|id| self.get(id))
    }
}

impl Strings for StringTable {
    fn get(&self, id: StrId) -> Option<&str> {
        StringTable::get(self, id)
    }
}

/// The strings the writing thread has been sent.
#[derive(Default, Debug)]
pub struct Shipped(FxHashMap<u32, Box<str>>);

impl Shipped {
    pub fn add(&mut self, id: u32, text: Box<str>) {
        self.0.insert(id, text);
    }
}

impl Strings for Shipped {
    fn get(&self, id: StrId) -> Option<&str> {
        self.0.get(&id.0).map(|s| &**s)
    }
}

/// The reading side: which strings were sent already.
#[derive(Default, Debug)]
pub struct Shipping {
    sent: FxHashSet<u32>,
    /// The ids checked last (sent already), to skip the set for runs of slices naming the
    /// same strings.
    recent: [Option<u32>; 3],
}

/// A slice names a string the trace has not defined (yet): its definition may come later in
/// the file, so the slice cannot be written now.
#[derive(Debug)]
pub struct Undefined(pub u32);

impl Shipping {
    /// Adds to `out` the strings `s` names that were not sent before, with `s`'s trace (one
    /// `Shipping` per trace: ids are the trace's).
    pub fn ship(
        &mut self,
        s: &Slice,
        table: &StringTable,
        out: &mut Vec<(u16, u32, Box<str>)>,
    ) -> Result<(), Undefined> {
        let ids = [s.name_id(), s.src_file_id(), s.func_id()];
        for (slot, id) in ids.into_iter().enumerate() {
            let Some(id) = id else { continue };
            if self.recent[slot] == Some(id.0) {
                continue;
            }
            if !self.sent.contains(&id.0) {
                let text = table.get(id).ok_or(Undefined(id.0))?;
                out.push((s.trace, id.0, text.into()));
                self.sent.insert(id.0);
            }
            self.recent[slot] = Some(id.0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::{Event, Field};

    #[test]
    fn each_string_is_shipped_once_and_an_undefined_one_is_refused() {
        let mut table = StringTable::default();
        let file = table.intern("/src/laplace.c");
        let mut ev = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 1);
        ev.set(Field::SrcFile, u64::from(file.0));
        let s = Slice::from_event(&ev, 2, 0, |t| t);
        let (mut shipping, mut out) = (Shipping::default(), Vec::new());
        shipping.ship(&s, &table, &mut out).unwrap();
        shipping.ship(&s, &table, &mut out).unwrap();
        assert_eq!(out, [(2, file.0, "/src/laplace.c".into())]);
        let mut shipped = Shipped::default();
        for (_, id, text) in out {
            shipped.add(id, text);
        }
        assert_eq!(shipped.resolve(s.src_file_id()), Some("/src/laplace.c"));
        // A string the trace has not defined (yet) cannot be written.
        ev.set(Field::FuncName, 7);
        let s = Slice::from_event(&ev, 2, 0, |t| t);
        assert!(matches!(
            shipping.ship(&s, &table, &mut Vec::new()),
            Err(Undefined(7))
        ));
    }
}
