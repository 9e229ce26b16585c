//! Kernels: launches per kernel name (or per construct when the runtime names none), with their
//! geometry.

use super::*;

impl ProfileBuilder {
    /// Accounts a launch to its kernel; returns the kernel's index.
    pub(super) fn account_launch(&mut self, c: Option<u32>, leaf: &Leaf) -> u32 {
        let key = (leaf.kernel, if leaf.kernel.is_some() { None } else { c });
        let i = match self.kernel_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.kernels.len();
                self.kernel_index.insert(key, i);
                self.kernels.push((
                    leaf.kernel,
                    c,
                    Kernel {
                        name: String::new(),
                        construct: c.map(|c| c as usize),
                        launches: 0,
                        num_gangs: None,
                        num_workers: None,
                        vector_length: None,
                        time: Timing::host(),
                        host_time: Timing::host(),
                        async_launches: 0,
                        first_ns: leaf.r.start_ns,
                        last_ns: 0,
                        samples: Vec::new(),
                        geometry: None,
                    },
                ));
                self.kernel_device.push(Timing::device());
                i
            }
        };
        let k = &mut self.kernels[i].2;
        k.launches += 1;
        leaf.add_times(&mut k.time, &mut self.kernel_device[i]);
        if let Some(g) = leaf.gangs {
            ValueRange::add(&mut k.num_gangs, g);
        }
        if let Some(w) = leaf.workers {
            ValueRange::add(&mut k.num_workers, w);
        }
        if let Some(v) = leaf.vector {
            ValueRange::add(&mut k.vector_length, v);
        }
        if leaf.is_async {
            k.async_launches += 1;
        }
        k.first_ns = k.first_ns.min(leaf.r.start_ns);
        k.last_ns = k.last_ns.max(leaf.r.end_ns);
        push_sample(&mut k.samples, leaf.r);
        leaf.add_times(&mut self.summary.kernels, &mut self.device_totals.kernels);
        if let Some(c) = c {
            let acc = &mut self.constructs[c as usize];
            if let Some(&ci) = acc
                .children
                .get(&(ChildKind::Launch, leaf.line, leaf.kernel))
            {
                acc.c.children[ci].kernel = Some(i);
            }
        }
        i as u32
    }
}
