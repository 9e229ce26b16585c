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
        if names.records_seen && names.left_window > 0 {
            profile.warnings.push(format!(
                "{} launch(es) waited for their kernel record longer than accprof keeps launches ({} per kernel); kernel records meant for them may be counted outside any construct",
                names.left_window,
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
                v
            })
            .collect();
        profile.transfer_sites = self.sites;
        profile.roundtrips = self.roundtrips;
        profile.slice_runs = self
            .slices
            .into_iter()
            .map(|(id, mut s)| {
                s.array = match id {
                    VarId::Name(n) => {
                        let full = strings.get(n).unwrap_or("?");
                        full.split('[').next().unwrap_or(full).to_string()
                    }
                    VarId::Host { ptr, .. } => format!("host array near {ptr:#x}"),
                    VarId::Unknown => "?".into(),
                };
                s
            })
            .collect();
        profile.allocs = self.allocs;
        (profile.nvtx_ranges, profile.nvtx_marks) = self.nvtx.finish(strings);
        profile
    }
}

fn var_label(id: VarId, strings: &StringTable) -> String {
    match id {
        VarId::Name(n) => strings.get(n).unwrap_or("?").to_string(),
        VarId::Host { ptr, bytes } => format!("host {ptr:#x}+{}", crate::format::bytes(bytes)),
        VarId::Unknown => "(unknown variable)".into(),
    }
}
