//! Finishing: the last operations no construct enclosed, the device records, and the tables
//! with their names resolved.

use super::*;

impl ProfileBuilder {
    /// Ends the stream: accounts what is still waiting for a construct, resolves names with
    /// `strings` (the trace's table, complete by now) and returns the profile.
    pub fn finish(self, strings: &StringTable) -> Profile {
        self.finish_with_wall(strings, None)
    }

    /// Like [`finish`](Self::finish), with the run's wall time when the trace knows it (from its
    /// header's start to its footer); else the span of the events is used.
    pub fn finish_with_wall(mut self, strings: &StringTable, wall_ns: Option<u64>) -> Profile {
        let mut threads: Vec<i64> = self.threads.keys().copied().collect();
        threads.sort_unstable();
        let mut busiest = 0u64;
        for t in &threads {
            let ts = self.threads.get_mut(t).expect("key from the map");
            busiest = busiest.max(ts.covered_ns);
            let stack = std::mem::take(&mut ts.stack);
            let run = ts.run.take();
            let mut loose = Vec::new();
            for item in stack {
                match item {
                    Item::Leaf(l) => loose.push(l),
                    Item::Group { leaves, .. } => loose.extend(leaves),
                    Item::Closed { .. } => {}
                }
            }
            if let Some(run) = run {
                self.close_run(run);
            }
            if !loose.is_empty() {
                self.resolve(*t, None, u64::MAX, loose);
            }
        }
        self.attribute_device_records(strings);
        self.prefer_device_times();
        let name = |id: Option<StrId>| strings.resolve(id).map(str::to_string);
        let devices = self.device_limits(strings);
        let mut profile = Profile {
            summary: self.summary,
            ..Profile::default()
        };
        profile.device_memory = std::mem::take(&mut self.device_memory).finish(strings);
        profile.device_gaps = std::mem::take(&mut self.device_gaps).finish();
        profile.devices = devices;
        let launch_geometry = std::mem::take(&mut self.launch_geometry);
        if let (n @ 1.., Some((kind, correlation))) = self.impossible_records {
            let what = match kind {
                device::KERNEL => "kernel record",
                device::MEMCPY => "copy record",
                device::MEMSET => "memset record",
                _ => "device record",
            };
            let id = correlation.map_or(String::new(), |c| format!(", correlation id {c}"));
            profile.warnings.push(format!(
                "{n} device record(s) had impossible times (the first: a {what}{id}, with a zero timestamp, an end before its start, or a start before the trace began); they are left out of every total"
            ));
        }
        if self.device_rounds.late > 0 {
            profile.warnings.push(format!(
                "{} device record(s) arrived after accprof had let go of the constructs open when they were issued (records come in CUPTI's buffers, roughly in issue order); they were counted outside any construct",
                self.device_rounds.late
            ));
        }
        let names = &self.kernel_names;
        if names.gave_up > 0 {
            profile.warnings.push(format!(
                "{} kernel record(s) without their launch call found no launch of their kernel while accprof kept them waiting (records come in CUPTI's buffers, roughly in issue order); they were counted outside any construct",
                names.gave_up
            ));
        }
        if names.records_seen && names.launches.left_window > 0 {
            profile.warnings.push(format!(
                "{} launch(es) waited for their kernel record longer than accprof keeps launches ({} per kernel); kernel records meant for them may be counted outside any construct",
                names.launches.left_window,
                kernel_names::LAUNCH_WINDOW
            ));
        }
        if self.late_enclosing > 0 {
            profile.warnings.push(format!(
                "{} construct(s) enclosed more operations that no inner construct did than accprof keeps waiting for their construct ({MIN_PENDING} to {MAX_PENDING} per thread); operations of theirs were counted outside any construct",
                self.late_enclosing
            ));
        }
        if self.cuda_event_records_set_aside > 0 {
            profile.warnings.push(format!(
                "this run recorded device times both with CUPTI and with CUDA events (ACCPROF_CUDA_EVENTS=on); the {} CUDA-event records are left out and CUPTI's are used",
                self.cuda_event_records_set_aside
            ));
        }
        profile.summary.threads = threads.len() as u64;
        profile.summary.untracked_ns = 0;
        let span = wall_ns.unwrap_or_else(|| {
            profile
                .summary
                .last_ns
                .saturating_sub(profile.summary.first_ns)
        });
        profile.summary.wall_ns = span;
        profile.summary.wall_from_footer = wall_ns.is_some();
        profile.summary.untracked_ns = span.saturating_sub(busiest);
        profile.constructs = self
            .constructs
            .into_iter()
            .map(|acc| {
                let mut c = acc.c;
                c.location.file = name(acc.key.file);
                c.location.function = name(acc.key.func);
                c
            })
            .collect();
        let cname = |c: Option<u32>, cs: &[Construct]| -> String {
            match c.and_then(|c| cs.get(c as usize)) {
                Some(c) => format!("<kernel of {}>", c.location.short()),
                None => "<unnamed kernel>".into(),
            }
        };
        profile.kernels = self
            .kernels
            .into_iter()
            .map(|(n, c, mut k)| {
                k.name = name(n).unwrap_or_else(|| cname(c, &profile.constructs));
                k
            })
            .collect();
        super::geometry::attach(
            &mut profile.kernels,
            &profile.devices,
            launch_geometry,
            strings,
        );
        profile.variables = self
            .variables
            .into_iter()
            .map(|(id, mut v)| {
                v.name = var_label(id, strings);
                // A name the source writes; not a hint such as `heap@x.c:3 (returned)`.
                v.named = matches!(id, VarId::Name(..)) && accprof_symbols::is_source_text(&v.name);
                v.content = None;
                v.alloc_site = match id {
                    VarId::Name(_, site) if site != 0 => Some(site),
                    _ => None,
                };
                v
            })
            .collect();
        for (v, c) in profile.variables.iter_mut().zip(&self.variable_content) {
            v.content = (c.hashed > 0).then_some(*c);
        }
        profile.transfer_sites = self.sites;
        profile.roundtrips = self.roundtrips;
        // Runs over neighbouring objects (separate variables side by side in memory, as a
        // code's global scalars are) are no slices of one array.
        let one_array = |names: &Vec<StrId>| {
            let bases: std::collections::BTreeSet<&str> = names
                .iter()
                .filter_map(|n| strings.get(*n))
                .map(accprof_symbols::base_name)
                .collect();
            bases.len() <= 1
        };
        profile.slice_runs = self
            .slices
            .into_iter()
            .zip(self.slice_names)
            .filter(|(_, names)| one_array(names))
            .map(|((id, mut s), _)| {
                s.array = match id {
                    VarId::Name(n, _) => {
                        let full = strings.get(n).unwrap_or("?");
                        s.named = accprof_symbols::is_source_text(full);
                        accprof_symbols::base_name(full).to_string()
                    }
                    VarId::Host { ptr, .. } => format!("host array near {ptr:#x}"),
                    VarId::Unknown => "?".into(),
                };
                s
            })
            .collect();
        profile.allocs = self.allocs;
        for (a, call) in profile.allocs.iter_mut().zip(self.alloc_calls) {
            if let Some((file, func, line, var)) = call {
                a.call = Some(Location {
                    file: name(file),
                    function: name(func),
                    line,
                    ..Location::default()
                });
                a.name = name(var);
            }
        }
        (profile.nvtx_ranges, profile.nvtx_marks) = self.nvtx.finish(strings);
        profile
    }
}

fn var_label(id: VarId, strings: &StringTable) -> String {
    match id {
        VarId::Name(n, _) => strings.get(n).unwrap_or("?").to_string(),
        VarId::Host { ptr, bytes } => format!("host {ptr:#x}+{}", crate::format::bytes(bytes)),
        VarId::Unknown => "(unknown variable)".into(),
    }
}
