//! Allocations: device allocations and frees per construct and size, with the data operations'
//! overhead.

use super::*;

impl ProfileBuilder {
    pub(super) fn account_alloc(&mut self, c: Option<u32>, leaf: &Leaf, alloc: bool) {
        // By host array and size: an enter data directive allocates and an exit data directive
        // frees the same array; the site keeps the construct that allocated first. The
        // program's own allocations have no host array: their call's line tells them apart.
        let api_line = match (leaf.api_call, alloc, leaf.device_ptr) {
            (None, ..) => None,
            (Some(_), true, Some(d)) => {
                self.api_alloc_line.insert(d, leaf.line);
                leaf.line
            }
            (Some(_), false, Some(d)) => self.api_alloc_line.remove(&d).flatten(),
            (Some(_), _, None) => leaf.line,
        };
        let key = (leaf.host_ptr, leaf.bytes, api_line);
        let i = match self.alloc_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.allocs.len();
                self.alloc_index.insert(key, i);
                self.allocs.push(AllocSite {
                    construct: c.map(|c| c as usize),
                    bytes: leaf.bytes,
                    allocs: 0,
                    frees: 0,
                    overhead_ns: 0,
                    first_ns: leaf.r.start_ns,
                    last_ns: 0,
                    samples: Vec::new(),
                    call: None,
                    name: None,
                });
                self.alloc_calls.push(None);
                i
            }
        };
        let a = &mut self.allocs[i];
        if alloc && a.allocs == 0 && c.is_some() {
            a.construct = c.map(|c| c as usize);
        }
        if let (true, None, Some((file, func))) = (alloc, c, leaf.api_call) {
            let name = match leaf.var {
                VarId::Name(n, _) => Some(n),
                _ => None,
            };
            self.alloc_calls[i].get_or_insert((file, func, leaf.line, name));
        }
        // Alloc and create (or free and delete) both describe one allocation: count the pair
        // once, by the alloc/free event when the runtime sends it.
        let counts = matches!(leaf.kind, ChildKind::Alloc | ChildKind::Free);
        if counts {
            if alloc {
                a.allocs += 1;
            } else {
                a.frees += 1;
            }
        }
        a.overhead_ns += leaf.overhead_ns;
        a.first_ns = a.first_ns.min(leaf.r.start_ns);
        a.last_ns = a.last_ns.max(leaf.r.end_ns);
        if counts {
            push_sample(&mut a.samples, leaf.r);
        }
    }
}
