//! Constructs: one row per construct identity, the instances reached, and the operations inside
//! each (its children, per kind and line).

use super::*;

impl ProfileBuilder {
    pub(super) fn push_construct(
        &mut self,
        thread: i64,
        ev: &Event,
        kind: ConstructKind,
        r: EventRef,
    ) {
        self.check_late_enclosing(thread, r);
        let cid = self.construct_id(ev, kind);
        let dur = r.end_ns - r.start_ns;
        {
            let acc = &mut self.constructs[cid as usize];
            let c = &mut acc.c;
            let exit_of_data_region =
                kind == ConstructKind::Data && ev.kind == acc_event_t::EXIT_DATA_START;
            if !exit_of_data_region {
                c.reached += 1;
            }
            c.time.add(dur);
            if is_async(ev) {
                c.async_count += 1;
            }
            if c.time.count == 1 {
                c.first_ns = r.start_ns;
            }
            c.first_ns = c.first_ns.min(r.start_ns);
            c.last_ns = c.last_ns.max(r.end_ns);
            if let Some(e) = ev.get_i64(Field::EndLineNo) {
                let cur = c.location.end_line.get_or_insert(e);
                *cur = (*cur).max(e);
            }
            push_sample(&mut c.samples, r);
        }
        match kind {
            ConstructKind::Compute => self.summary.compute.add(dur),
            ConstructKind::Init => self.summary.device_init.add(dur),
            ConstructKind::Wait => self.summary.waits.add(dur),
            ConstructKind::Data
            | ConstructKind::EnterData
            | ConstructKind::ExitData
            | ConstructKind::Update
            | ConstructKind::RuntimeApi => self.summary.data_constructs.add(dur),
        }
        let ts = self.threads.entry(thread).or_default();
        ts.instance += 1;
        let inst = ts.instance;
        if self.device_mode {
            ts.construct_spans.push(ConstructSpan {
                start: r.start_ns,
                end: r.end_ns,
                kind: ev.kind,
                construct: cid,
                instance: inst,
            });
        }
        let (mut leaves, covered) = Self::pop_inside(ts, r.start_ns, r.end_ns);
        let inside_open = matches!(ts.stack.back(), Some(Item::Closed { start, end, resolved: true, .. }) if *start <= r.start_ns && r.end_ns <= *end);
        if !inside_open {
            ts.covered_ns = ts.covered_ns - covered + dur;
            match ts.stack.back_mut() {
                // Merge with the previous top-level construct: keeps the stack short over a long
                // run while no event encloses both.
                Some(Item::Closed {
                    end,
                    construct,
                    resolved,
                    ..
                }) if *end <= r.start_ns && !matches!(kind, ConstructKind::Init) => {
                    *end = r.end_ns;
                    *construct = Some(cid);
                    *resolved = true;
                }
                _ => ts.stack.push_back(Item::Closed {
                    start: r.start_ns,
                    end: r.end_ns,
                    construct: Some(cid),
                    resolved: true,
                }),
            }
        }
        if kind != ConstructKind::Compute {
            share_overhead(&mut leaves, dur);
        }
        if !leaves.is_empty() {
            self.resolve(thread, Some(cid), inst, leaves);
        }
    }

    pub(super) fn construct_id(&mut self, ev: &Event, kind: ConstructKind) -> u32 {
        let key = ConstructKey::of(ev, kind);
        if let Some(&i) = self.construct_index.get(&key) {
            return i;
        }
        let i = self.constructs.len() as u32;
        self.construct_index.insert(key, i);
        self.constructs.push(ConstructAcc {
            key,
            c: Construct {
                kind,
                construct_type: key
                    .ctype
                    .and_then(|v| acc_construct_t(v as i32).name())
                    .map(|n| n.trim_start_matches("acc_construct_").to_string()),
                location: Location {
                    file: None,
                    function: None,
                    line: key.line,
                    end_line: None,
                    device_type: key.dev_type,
                    device_number: key.dev_num,
                },
                reached: 0,
                time: Timing::host(),
                async_count: 0,
                first_ns: 0,
                last_ns: 0,
                children: Vec::new(),
                samples: Vec::new(),
            },
            children: HashMap::default(),
            device: Vec::new(),
        });
        i
    }

    /// Accounts `leaf` as a child of construct `c`; returns the child's index.
    pub(super) fn account_child(&mut self, c: Option<u32>, leaf: &Leaf) -> Option<u32> {
        let c = c?;
        let acc = &mut self.constructs[c as usize];
        let kernel_key = if leaf.kind == ChildKind::Launch {
            leaf.kernel
        } else {
            None
        };
        let key = (leaf.kind, leaf.line, kernel_key);
        let n = acc.children.len();
        let i = *acc.children.entry(key).or_insert(n);
        if i == acc.c.children.len() {
            acc.c.children.push(ConstructChild {
                kind: leaf.kind,
                line: leaf.line,
                kernel: None,
                count: 0,
                bytes: 0,
                time: Timing::host(),
                host_time: Timing::host(),
            });
            acc.device.push(Timing::device());
        }
        let ch = &mut acc.c.children[i];
        ch.count += 1;
        ch.bytes += leaf.bytes.unwrap_or(0);
        leaf.add_times(&mut ch.time, &mut acc.device[i]);
        Some(i as u32)
    }
}
