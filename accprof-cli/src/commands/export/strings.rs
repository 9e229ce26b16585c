//! The strings a slice names (variable or kernel, source file, function) as the writers look
//! them up: in the copies shipped to the writing thread with the events that first use them.

use accprof_timeline::CompactEvent;
use accprof_trace::{Event, StrId, StringTable};
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

/// Which strings of one trace were sent to the writing thread already: the strings an event
/// names are sent with the first event that names them, from the thread that decodes the trace
/// (it has the trace's strings at hand as they are defined).
#[derive(Default, Debug)]
pub struct Shipping {
    sent: FxHashSet<u32>,
    /// The ids checked last (sent already), to skip the set for runs of events naming the same
    /// strings.
    recent: [Option<u32>; 3],
    /// Events that named a string the trace had not defined before them (a damaged trace):
    /// written without it.
    pub undefined: u64,
}

impl Shipping {
    /// The strings `ev` names that were not sent before, with their ids.
    pub fn ship(&mut self, ev: &Event, table: &StringTable) -> Option<Vec<(u32, Box<str>)>> {
        let mut out: Option<Vec<(u32, Box<str>)>> = None;
        for (slot, id) in CompactEvent::strings_named(ev).into_iter().enumerate() {
            let Some(id) = id else { continue };
            if self.recent[slot] == Some(id.0) {
                continue;
            }
            if !self.sent.contains(&id.0) {
                let Some(text) = table.get(id) else {
                    self.undefined += 1;
                    continue;
                };
                out.get_or_insert_with(Vec::new).push((id.0, text.into()));
                self.sent.insert(id.0);
            }
            self.recent[slot] = Some(id.0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::{Event, Field};

    #[test]
    fn each_string_is_shipped_once_and_an_undefined_one_is_counted() {
        let mut table = StringTable::default();
        let file = table.intern("/src/laplace.c");
        let mut ev = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 1);
        ev.set(Field::SrcFile, u64::from(file.0));
        let mut shipping = Shipping::default();
        let first = shipping.ship(&ev, &table).unwrap();
        assert_eq!(first, [(file.0, "/src/laplace.c".into())]);
        assert_eq!(shipping.ship(&ev, &table), None);
        let mut shipped = Shipped::default();
        for (id, text) in first {
            shipped.add(id, text);
        }
        assert_eq!(shipped.resolve(Some(file)), Some("/src/laplace.c"));
        // A string the trace has not defined (yet) is not sent, and is counted.
        ev.set(Field::FuncName, 7);
        assert_eq!(shipping.ship(&ev, &table), None);
        assert_eq!(shipping.undefined, 1);
    }
}
