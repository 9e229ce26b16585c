//! Transfers: per variable and direction, per transfer site (construct x variable), round trips
//! (copied out, copied back in) and runs of adjacent slices.

use super::*;

impl ProfileBuilder {
    pub(super) fn variable_index(
        &mut self,
        var: VarId,
        dir: Direction,
        host_ptr: Option<u64>,
    ) -> u32 {
        if let Some(&i) = self.variable_index.get(&(var, dir)) {
            return i;
        }
        let i = self.variables.len() as u32;
        self.variable_index.insert((var, dir), i);
        self.variables.push((
            var,
            Variable {
                name: String::new(),
                named: matches!(var, VarId::Name(..)),
                alloc_site: None,
                host_ptr,
                direction: dir,
                count: 0,
                bytes: 0,
                time: Timing::host(),
                host_time: Timing::host(),
                samples: Vec::new(),
                content: None,
            },
        ));
        self.variable_device.push(Timing::device());
        self.variable_content.push(ContentStats::default());
        i
    }

    /// Accounts a transfer; returns the indices of its variable and transfer site.
    pub(super) fn account_transfer(
        &mut self,
        thread: i64,
        c: Option<u32>,
        inst: u64,
        leaf: &Leaf,
    ) -> (u32, u32) {
        let dir = if leaf.kind == ChildKind::Upload {
            Direction::HostToDevice
        } else {
            Direction::DeviceToHost
        };
        let bytes = leaf.bytes.unwrap_or(0);
        let dur = leaf.best_ns();
        match dir {
            Direction::HostToDevice => {
                leaf.add_times(&mut self.summary.uploads, &mut self.device_totals.uploads);
                self.summary.upload_bytes += bytes;
            }
            Direction::DeviceToHost => {
                leaf.add_times(
                    &mut self.summary.downloads,
                    &mut self.device_totals.downloads,
                );
                self.summary.download_bytes += bytes;
            }
        }
        let vi = self.variable_index(leaf.var, dir, leaf.host_ptr);
        {
            let v = &mut self.variables[vi as usize].1;
            v.count += 1;
            v.bytes += bytes;
            leaf.add_times(&mut v.time, &mut self.variable_device[vi as usize]);
            push_sample(&mut v.samples, leaf.r);
        }
        self.note_content(vi, dir, leaf);
        // Per construct and variable.
        let si = match self.site_index.get(&(c, vi)) {
            Some(&i) => i,
            None => {
                let i = self.sites.len();
                self.site_index.insert((c, vi), i);
                self.sites.push(TransferSite {
                    construct: c.map(|c| c as usize),
                    variable: vi as usize,
                    direction: dir,
                    count: 0,
                    bytes: 0,
                    max_bytes: 0,
                    host_ptr: leaf.host_ptr,
                    same_range: true,
                    time: Timing::host(),
                    host_time: Timing::host(),
                    first_ns: leaf.r.start_ns,
                    last_ns: 0,
                    samples: Vec::new(),
                });
                self.site_device.push(Timing::device());
                i
            }
        };
        let site = &mut self.sites[si];
        if site.count > 0 && (site.host_ptr != leaf.host_ptr || site.max_bytes != bytes) {
            site.same_range = false;
        }
        site.count += 1;
        site.bytes += bytes;
        site.max_bytes = site.max_bytes.max(bytes);
        leaf.add_times(&mut site.time, &mut self.site_device[si]);
        site.first_ns = site.first_ns.min(leaf.r.start_ns);
        site.last_ns = site.last_ns.max(leaf.r.end_ns);
        push_sample(&mut site.samples, leaf.r);

        // Copied out by one construct, copied back in by the next one that touches it.
        let range_key = match (leaf.host_ptr, leaf.var) {
            (Some(p), _) => VarId::Host { ptr: p, bytes },
            (None, v) => v,
        };
        let ts = self.threads.entry(thread).or_default();
        let prev = ts.last_transfer.insert(
            range_key,
            LastTransfer {
                dir,
                construct: c,
                instance: inst,
                var_index: vi,
                r: leaf.r,
                best_ns: dur,
            },
        );
        if let (Direction::HostToDevice, Some(p)) = (dir, prev) {
            if p.dir == Direction::DeviceToHost && p.instance != inst && range_key != VarId::Unknown
            {
                let key = (p.var_index, p.construct, c);
                let ri = match self.roundtrip_index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.roundtrips.len();
                        self.roundtrip_index.insert(key, i);
                        self.roundtrips.push(Roundtrip {
                            variable: p.var_index as usize,
                            from_construct: p.construct.map(|c| c as usize),
                            to_construct: c.map(|c| c as usize),
                            count: 0,
                            bytes: 0,
                            time_ns: 0,
                            samples: Vec::new(),
                        });
                        i
                    }
                };
                let rt = &mut self.roundtrips[ri];
                rt.count += 1;
                rt.bytes += bytes;
                rt.time_ns += dur + p.best_ns;
                push_sample(&mut rt.samples, p.r);
                push_sample(&mut rt.samples, leaf.r);
            }
        }
        self.track_slices(thread, c, dir, leaf);
        (vi, si as u32)
    }

    /// What the hash of a transfer's bytes shows: an upload of bytes the device already held,
    /// a download of bytes the device did not change.
    fn note_content(&mut self, vi: u32, dir: Direction, leaf: &Leaf) {
        let (Some(h), Some(p), Some(b)) = (leaf.content, leaf.host_ptr, leaf.bytes) else {
            if let (Some(p), Some(b)) = (leaf.host_ptr, leaf.bytes) {
                // Unhashed: what the device holds there is unknown from now on.
                self.device_held.remove(&(p, b));
            }
            return;
        };
        let held = self.device_held.insert((p, b), h);
        let first = !self.first_use_open.contains_key(&(p, b));
        let c = &mut self.variable_content[vi as usize];
        c.hashed += 1;
        let same = held == Some(h);
        if first {
            c.first_uploaded = Some(dir == Direction::HostToDevice);
        }
        match dir {
            Direction::HostToDevice => {
                if same {
                    c.already_held += 1;
                }
                self.first_use_open.entry((p, b)).or_insert(true);
            }
            Direction::DeviceToHost => {
                if same {
                    c.unchanged += 1;
                }
                // The first download after the first upload tells whether that use changed it.
                if self.first_use_open.insert((p, b), false) == Some(true) {
                    c.first_changed = Some(!same);
                }
            }
        }
    }

    /// Consecutive transfers of adjacent host ranges by one construct in one direction form a
    /// run; a long run could have been one transfer of the whole array.
    pub(super) fn track_slices(
        &mut self,
        thread: i64,
        c: Option<u32>,
        dir: Direction,
        leaf: &Leaf,
    ) {
        let bytes = leaf.bytes.unwrap_or(0);
        let array = match leaf.var {
            VarId::Name(n, site) => VarId::Name(n, site),
            _ => VarId::Unknown,
        };
        let ts = self.threads.entry(thread).or_default();
        let continues = match (&ts.run, leaf.host_ptr) {
            (Some(run), Some(p)) => {
                // Adjacent, or separated by a gap smaller than a slice (the halo columns a row
                // slice skips).
                run.construct == c
                    && run.dir == dir
                    && p >= run.next_ptr
                    && p - run.next_ptr <= bytes.max(64)
            }
            _ => false,
        };
        let name = match leaf.var {
            VarId::Name(n, _) => Some(n),
            _ => None,
        };
        if continues {
            let run = ts.run.as_mut().expect("checked above");
            if let Some(slot) = run.names.iter_mut().find(|k| k.is_none() || **k == name) {
                *slot = name;
            }
            run.count += 1;
            run.bytes += bytes;
            run.time.add(leaf.best_ns());
            run.next_ptr = leaf.host_ptr.unwrap_or(0) + bytes;
            run.last = leaf.r;
            return;
        }
        let finished = ts.run.take();
        if let Some(p) = leaf.host_ptr.filter(|_| bytes > 0) {
            let mut time = if leaf.device_ns.is_some() {
                Timing::device()
            } else {
                Timing::host()
            };
            time.add(leaf.best_ns());
            ts.run = Some(SliceRun {
                construct: c,
                dir,
                next_ptr: p + bytes,
                count: 1,
                bytes,
                time,
                first: leaf.r,
                last: leaf.r,
                array: match array {
                    VarId::Unknown => VarId::Host { ptr: p, bytes: 0 },
                    a => a,
                },
                names: {
                    let mut names = [None; SLICE_NAMES_KEPT];
                    names[0] = name;
                    names
                },
            });
        }
        if let Some(run) = finished {
            self.close_run(run);
        }
    }

    pub(super) fn close_run(&mut self, run: SliceRun) {
        if run.count < SLICE_MIN_RUN {
            return;
        }
        let key = (run.construct, run.dir, run.array);
        let i = match self.slice_index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.slices.len();
                self.slice_index.insert(key, i);
                self.slices.push((
                    run.array,
                    SliceRuns {
                        construct: run.construct.map(|c| c as usize),
                        direction: run.dir,
                        array: String::new(),
                        named: matches!(run.array, VarId::Name(..)),
                        runs: 0,
                        transfers: 0,
                        bytes: 0,
                        time: Timing::host(),
                        first_ns: run.first.start_ns,
                        last_ns: 0,
                        samples: Vec::new(),
                    },
                ));
                self.slice_names.push(Vec::new());
                i
            }
        };
        let names = &mut self.slice_names[i];
        for n in run.names.iter().flatten() {
            if names.len() < SLICE_NAMES_KEPT && !names.contains(n) {
                names.push(*n);
            }
        }
        let s = &mut self.slices[i].1;
        s.runs += 1;
        s.transfers += run.count;
        s.bytes += run.bytes;
        s.time.merge(&run.time);
        s.first_ns = s.first_ns.min(run.first.start_ns);
        s.last_ns = s.last_ns.max(run.last.end_ns);
        push_sample(&mut s.samples, run.first);
        push_sample(&mut s.samples, run.last);
    }
}
