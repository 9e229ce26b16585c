//! Reading traces into profiles: streaming from a file, from a loaded [`Trace`], and merging the
//! profiles of several traces (the ranks of one MPI job).

use crate::build::ProfileBuilder;
use crate::model::*;
use accprof_symbols::ResolvingReader;
use accprof_trace::{Event, Header, StrId, StringTable, Trace, TraceError, TraceReader};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// How far reading has got, for progress bars: bytes of the file consumed and its size.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub bytes_read: u64,
    pub total_bytes: u64,
    pub events: u64,
}

/// Events between two progress callbacks.
const PROGRESS_EVERY: u64 = 1 << 18;

impl Profile {
    /// Streams the trace at `path` into a profile, in constant memory in the number of events.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Profile, TraceError> {
        Self::from_path_with_progress(path, |_| {})
    }

    /// Like [`from_path`](Self::from_path), calling `progress` now and then.
    pub fn from_path_with_progress(
        path: impl AsRef<Path>,
        progress: impl FnMut(Progress),
    ) -> Result<Profile, TraceError> {
        let path = path.as_ref();
        let total = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let reader = TraceReader::open(path)?;
        Self::from_reader_in_background(path.display().to_string(), reader, total, progress)
    }

    /// Like [`from_reader`](Self::from_reader), decoding on a second thread while this one builds
    /// the profile.
    pub fn from_reader_in_background<R: Read + Send>(
        label: String,
        reader: TraceReader<R>,
        total_bytes: u64,
        progress: impl FnMut(Progress),
    ) -> Result<Profile, TraceError> {
        let reader = ResolvingReader::new(reader);
        let read = Self::read_beside(label, reader, total_bytes, progress, |_, _| {
            std::ops::ControlFlow::Continue(())
        })?;
        Ok(read.0)
    }

    /// The profile of what `reader` streams (decoded on a second thread), with every batch of
    /// events also handed to `each` (with the bytes read by then), for a view that reads the
    /// trace for something else too (`accprof plot` draws its timeline in the same pass). When
    /// `each` stops the reading, the profile is of the events read so far and the flag is set.
    pub fn read_beside<R: Read + Send>(
        label: String,
        reader: ResolvingReader<R>,
        total_bytes: u64,
        mut progress: impl FnMut(Progress),
        mut each: impl FnMut(&[Event], u64) -> std::ops::ControlFlow<()>,
    ) -> Result<(Profile, bool), TraceError> {
        let mut b = builder_for(reader.header());
        let mut next_progress = PROGRESS_EVERY;
        let mut named = KernelNameNotes::default();
        let mut stopped = false;
        let note = move |ev: &Event, strings: &StringTable| named.note(ev, strings);
        let reader = reader.try_for_each_batch_noting(note, |events, names, bytes_read| {
            for (id, text) in names {
                b.name_kernel(*id, text);
            }
            for ev in events {
                b.feed(ev);
            }
            if b.events_seen() >= next_progress {
                next_progress = b.events_seen() + PROGRESS_EVERY;
                progress(Progress {
                    bytes_read,
                    total_bytes,
                    events: b.events_seen(),
                });
            }
            let flow = each(events, bytes_read);
            stopped = flow.is_break();
            flow
        })?;
        progress(Progress {
            bytes_read: reader.bytes_read(),
            total_bytes,
            events: b.events_seen(),
        });
        Ok((Self::finish_read(label, b, &reader), stopped))
    }

    /// Streams any [`TraceReader`] into a profile. `label` names the trace in the report.
    pub fn from_reader<R: Read>(
        label: String,
        reader: TraceReader<R>,
        total_bytes: u64,
        mut progress: impl FnMut(Progress),
    ) -> Result<Profile, TraceError> {
        let mut reader = ResolvingReader::new(reader);
        let mut b = builder_for(reader.header());
        let mut named = KernelNameNotes::default();
        while reader.advance()? {
            if let Some((id, text)) = named.note(reader.event(), reader.strings()) {
                b.name_kernel(id, &text);
            }
            b.feed(reader.event());
            if b.events_seen().is_multiple_of(PROGRESS_EVERY) {
                progress(Progress {
                    bytes_read: reader.bytes_read(),
                    total_bytes,
                    events: b.events_seen(),
                });
            }
        }
        progress(Progress {
            bytes_read: reader.bytes_read(),
            total_bytes,
            events: b.events_seen(),
        });
        Ok(Self::finish_read(label, b, &reader))
    }

    /// The profile of a trace read to its end by `reader`, whose events were all fed to `b`
    /// (made by [`ProfileBuilder::for_header`]): for a view that builds a profile while it
    /// reads the trace for something else (`accprof plot` draws its timeline in the same pass).
    pub fn finish_read<R: Read>(
        label: String,
        b: ProfileBuilder,
        reader: &ResolvingReader<R>,
    ) -> Profile {
        let footer_end = reader.footer().map(|f| f.end_monotonic_ns);
        let wall = wall_time(reader.header(), footer_end);
        let src = ProfileSource::of_header(label, reader.header(), footer_end.is_some());
        let mut p = b.finish_for(reader.strings(), wall, src);
        p.summary.dropped_events = reader.dropped_total();
        let cut = reader.truncation_warning();
        let ended = footer_end.is_some() || cut.is_some();
        p.warnings.extend(cut);
        p.warnings.extend(reader.loss_warning());
        p.warnings.extend(reader.warnings().iter().cloned());
        add_common_warnings(&mut p, ended);
        p
    }

    /// A profile of a trace already in memory.
    /// Events with only a return address are not resolved here: call
    /// `accprof_symbols::annotate_trace` on the trace first.
    pub fn from_trace(label: impl Into<String>, trace: &Trace) -> Profile {
        let mut b = builder_for(&trace.header);
        let mut named = KernelNameNotes::default();
        for ev in &trace.events {
            if let Some((id, text)) = named.note(ev, &trace.strings) {
                b.name_kernel(id, &text);
            }
            b.feed(ev);
        }
        let footer_end = trace.footer.as_ref().map(|f| f.end_monotonic_ns);
        let src = ProfileSource::of_header(label.into(), &trace.header, footer_end.is_some());
        let mut p = b.finish_for(&trace.strings, wall_time(&trace.header, footer_end), src);
        p.summary.dropped_events = trace.dropped_total;
        let ended = footer_end.is_some() || trace.truncation_warning.is_some();
        p.warnings.extend(trace.truncation_warning.iter().cloned());
        if let Some(w) = trace.integrity.loss_warning() {
            p.warnings.push(format!(
                "{}: {w}",
                p.sources.last().map_or("", |s| s.path.as_str())
            ));
        }
        add_common_warnings(&mut p, ended);
        p
    }
}

/// The kernel names a builder was given, so that each goes once
/// ([`ProfileBuilder::name_kernel`]: kernel records without their call are then tied to their
/// launches while reading, in bounded memory).
#[derive(Debug, Default)]
pub struct KernelNameNotes(std::collections::HashSet<StrId>);

impl KernelNameNotes {
    /// The kernel name of `ev` with its text, the first time it is seen defined.
    pub fn note(&mut self, ev: &Event, strings: &StringTable) -> Option<(StrId, Box<str>)> {
        let id = ev.kernel_name()?;
        if self.0.contains(&id) {
            return None;
        }
        let text = strings.get(id)?;
        self.0.insert(id);
        Some((id, text.into()))
    }
}

/// The header key libaccprof writes when it records device activity (CUPTI), naming the
/// library it loaded.
pub use accprof_trace::header::DEVICE_ACTIVITY_KEY;

impl ProfileBuilder {
    /// The builder a trace with header `h` needs (device records or not, CUPTI or CUDA events).
    pub fn for_header(h: &Header) -> ProfileBuilder {
        builder_for(h)
    }

    /// The profile of the trace `source` names, every event of which was fed: the one way
    /// every view ends a profile, so that they all agree. `wall_ns` is the run's wall time
    /// when the trace says it. Data regions get the closing line of their block from the
    /// source where it is at hand ([`crate::source::close_regions`]).
    pub fn finish_for(
        self,
        strings: &StringTable,
        wall_ns: Option<u64>,
        source: ProfileSource,
    ) -> Profile {
        let mut p = self.finish_with_wall(strings, wall_ns);
        p.sources.push(source);
        crate::source::close_regions(&mut p);
        p
    }
}

fn builder_for(h: &Header) -> ProfileBuilder {
    let activity = |v: &str| {
        h.extra
            .iter()
            .any(|(k, val)| k == DEVICE_ACTIVITY_KEY && val.starts_with(v))
    };
    let b = if activity("cupti") {
        ProfileBuilder::with_cupti_records()
    } else if h.extra.iter().any(|(k, _)| k == DEVICE_ACTIVITY_KEY) {
        ProfileBuilder::with_device_records()
    } else {
        ProfileBuilder::new()
    };
    b.started_at(h.start_monotonic_ns)
}

fn wall_time(h: &Header, footer_end: Option<u64>) -> Option<u64> {
    let end = footer_end?;
    (h.start_monotonic_ns > 0 && end > h.start_monotonic_ns).then(|| end - h.start_monotonic_ns)
}

impl ProfileSource {
    /// The trace read from `label` with header `h`, as a profile names it.
    pub fn of_header(label: String, h: &Header, clean_end: bool) -> ProfileSource {
        ProfileSource {
            path: label,
            exe: h.exe.clone(),
            args: h.args.clone(),
            pid: h.pid,
            hostname: h.hostname.clone(),
            mpi_rank: h.mpi_rank,
            start_monotonic_ns: h.start_monotonic_ns,
            clean_end,
            cwd: crate::source::working_directory(h),
        }
    }
}

/// `ended_said`: the trace has its end marker, or a warning already says how it was cut.
fn add_common_warnings(p: &mut Profile, ended_said: bool) {
    let label = p.sources.last().map(|s| s.path.clone()).unwrap_or_default();
    if p.summary.dropped_events > 0 {
        p.warnings.push(format!(
            "{label}: the tool dropped {} events (no buffer was free: its writer fell behind, or more threads recorded at once than there were buffers); totals are lower bounds",
            p.summary.dropped_events
        ));
    }
    if !ended_said {
        p.warnings.push(format!(
            "{label}: the trace has no end marker (the program crashed, was killed or is still running, or its disk filled); wall time is the span of the recorded events"
        ));
    }
}

/// Merges profiles (one per MPI rank or process) into one: constructs, kernels and variables
/// with the same identity are summed. Wall time is the longest of the inputs; the untracked time
/// is the smallest (the ranks ran side by side).
/// Adds `p`'s NVTX ranges and marks to `out`'s, by domain and name.
fn merge_nvtx(out: &mut Profile, p: &Profile) {
    for r in &p.nvtx_ranges {
        match out
            .nvtx_ranges
            .iter_mut()
            .find(|o| (&o.domain, &o.name, o.start_end) == (&r.domain, &r.name, r.start_end))
        {
            Some(o) => {
                o.time.merge(&r.time);
                o.inside.add(&r.inside);
            }
            None => out.nvtx_ranges.push(r.clone()),
        }
    }
    out.nvtx_ranges
        .sort_by_key(|r| std::cmp::Reverse(r.time.total_ns));
    for m in &p.nvtx_marks {
        match out
            .nvtx_marks
            .iter_mut()
            .find(|o| (&o.domain, &o.name) == (&m.domain, &m.name))
        {
            Some(o) => o.count += m.count,
            None => out.nvtx_marks.push(m.clone()),
        }
    }
}

pub fn merge(profiles: &[Profile]) -> Profile {
    let mut out = Profile::default();
    let mut cidx: HashMap<(ConstructKind, Option<String>, Location), usize> = HashMap::new();
    let mut kidx: HashMap<String, usize> = HashMap::new();
    let mut vidx: HashMap<(String, Direction), usize> = HashMap::new();
    let mut sidx: HashMap<(Option<usize>, usize), usize> = HashMap::new();
    let mut ridx: HashMap<(usize, Option<usize>, Option<usize>), usize> = HashMap::new();
    let mut slidx: HashMap<(Option<usize>, Direction, String), usize> = HashMap::new();
    let mut aidx: HashMap<(Option<usize>, Option<u64>), usize> = HashMap::new();
    for (n, p) in profiles.iter().enumerate() {
        out.sources.extend(p.sources.iter().cloned());
        out.warnings.extend(p.warnings.iter().cloned());
        out.device_memory.extend(p.device_memory.iter().cloned());
        merge_summary(&mut out.summary, &p.summary, n == 0);
        let cmap: Vec<usize> = p
            .constructs
            .iter()
            .map(|c| {
                let mut loc = c.location.clone();
                loc.end_line = None;
                let key = (c.kind, c.construct_type.clone(), loc);
                *cidx.entry(key).or_insert_with(|| {
                    let mut fresh = c.clone();
                    fresh.reached = 0;
                    fresh.time = Timing::host();
                    fresh.async_count = 0;
                    fresh.children.clear();
                    fresh.samples.clear();
                    out.constructs.push(fresh);
                    out.constructs.len() - 1
                })
            })
            .collect();
        let kmap: Vec<usize> = p
            .kernels
            .iter()
            .map(|k| {
                *kidx.entry(k.name.clone()).or_insert_with(|| {
                    let mut fresh = k.clone();
                    fresh.construct = k.construct.map(|c| cmap[c]);
                    fresh.launches = 0;
                    fresh.time = Timing {
                        source: k.time.source,
                        ..Timing::host()
                    };
                    fresh.host_time = Timing::host();
                    fresh.async_launches = 0;
                    fresh.samples.clear();
                    out.kernels.push(fresh);
                    out.kernels.len() - 1
                })
            })
            .collect();
        for (i, c) in p.constructs.iter().enumerate() {
            let o = &mut out.constructs[cmap[i]];
            o.reached += c.reached;
            o.time.merge(&c.time);
            o.async_count += c.async_count;
            o.first_ns = o.first_ns.min(c.first_ns);
            o.last_ns = o.last_ns.max(c.last_ns);
            o.location.end_line = o.location.end_line.max(c.location.end_line);
            for ch in &c.children {
                let kernel = ch.kernel.map(|k| kmap[k]);
                match o
                    .children
                    .iter_mut()
                    .find(|x| x.kind == ch.kind && x.line == ch.line && x.kernel == kernel)
                {
                    Some(x) => {
                        x.count += ch.count;
                        x.bytes += ch.bytes;
                        x.time.merge(&ch.time);
                        x.host_time.merge(&ch.host_time);
                    }
                    None => o.children.push(ConstructChild {
                        kernel,
                        ..ch.clone()
                    }),
                }
            }
        }
        for (i, k) in p.kernels.iter().enumerate() {
            let o = &mut out.kernels[kmap[i]];
            o.launches += k.launches;
            o.time.merge(&k.time);
            o.host_time.merge(&k.host_time);
            o.async_launches += k.async_launches;
            ValueRange::merge(&mut o.num_gangs, k.num_gangs);
            ValueRange::merge(&mut o.num_workers, k.num_workers);
            ValueRange::merge(&mut o.vector_length, k.vector_length);
        }
        let vmap: Vec<usize> = p
            .variables
            .iter()
            .map(|v| {
                let i = *vidx
                    .entry((v.name.clone(), v.direction))
                    .or_insert_with(|| {
                        let mut fresh = v.clone();
                        fresh.count = 0;
                        fresh.bytes = 0;
                        fresh.time = Timing {
                            source: v.time.source,
                            ..Timing::host()
                        };
                        fresh.host_time = Timing::host();
                        fresh.samples.clear();
                        out.variables.push(fresh);
                        out.variables.len() - 1
                    });
                let o = &mut out.variables[i];
                o.count += v.count;
                o.bytes += v.bytes;
                o.time.merge(&v.time);
                o.host_time.merge(&v.host_time);
                i
            })
            .collect();
        for s in &p.transfer_sites {
            let key = (s.construct.map(|c| cmap[c]), vmap[s.variable]);
            let i = *sidx.entry(key).or_insert_with(|| {
                out.transfer_sites.push(TransferSite {
                    construct: key.0,
                    variable: key.1,
                    count: 0,
                    bytes: 0,
                    time: Timing {
                        source: s.time.source,
                        ..Timing::host()
                    },
                    host_time: Timing::host(),
                    samples: Vec::new(),
                    ..s.clone()
                });
                out.transfer_sites.len() - 1
            });
            let o = &mut out.transfer_sites[i];
            o.count += s.count;
            o.bytes += s.bytes;
            o.max_bytes = o.max_bytes.max(s.max_bytes);
            o.same_range &= s.same_range;
            o.time.merge(&s.time);
            o.host_time.merge(&s.host_time);
        }
        for r in &p.roundtrips {
            let key = (
                vmap[r.variable],
                r.from_construct.map(|c| cmap[c]),
                r.to_construct.map(|c| cmap[c]),
            );
            let i = *ridx.entry(key).or_insert_with(|| {
                out.roundtrips.push(Roundtrip {
                    variable: key.0,
                    from_construct: key.1,
                    to_construct: key.2,
                    count: 0,
                    bytes: 0,
                    time_ns: 0,
                    samples: Vec::new(),
                });
                out.roundtrips.len() - 1
            });
            let o = &mut out.roundtrips[i];
            o.count += r.count;
            o.bytes += r.bytes;
            o.time_ns += r.time_ns;
        }
        for s in &p.slice_runs {
            let key = (s.construct.map(|c| cmap[c]), s.direction, s.array.clone());
            let i = *slidx.entry(key.clone()).or_insert_with(|| {
                out.slice_runs.push(SliceRuns {
                    construct: key.0,
                    runs: 0,
                    transfers: 0,
                    bytes: 0,
                    time: Timing::host(),
                    samples: Vec::new(),
                    ..s.clone()
                });
                out.slice_runs.len() - 1
            });
            let o = &mut out.slice_runs[i];
            o.runs += s.runs;
            o.transfers += s.transfers;
            o.bytes += s.bytes;
            o.time.merge(&s.time);
        }
        for a in &p.allocs {
            let key = (a.construct.map(|c| cmap[c]), a.bytes);
            let i = *aidx.entry(key).or_insert_with(|| {
                out.allocs.push(AllocSite {
                    construct: key.0,
                    allocs: 0,
                    frees: 0,
                    overhead_ns: 0,
                    samples: Vec::new(),
                    ..a.clone()
                });
                out.allocs.len() - 1
            });
            let o = &mut out.allocs[i];
            o.allocs += a.allocs;
            o.frees += a.frees;
            o.overhead_ns += a.overhead_ns;
        }
        merge_nvtx(&mut out, p);
    }
    out
}

fn merge_summary(o: &mut Summary, s: &Summary, first: bool) {
    o.wall_ns = o.wall_ns.max(s.wall_ns);
    o.wall_from_footer = if first {
        s.wall_from_footer
    } else {
        o.wall_from_footer && s.wall_from_footer
    };
    o.compute.merge(&s.compute);
    o.kernels.merge(&s.kernels);
    o.uploads.merge(&s.uploads);
    o.upload_bytes += s.upload_bytes;
    o.downloads.merge(&s.downloads);
    o.download_bytes += s.download_bytes;
    o.kernels_host.merge(&s.kernels_host);
    o.uploads_host.merge(&s.uploads_host);
    o.downloads_host.merge(&s.downloads_host);
    o.memsets.merge(&s.memsets);
    o.memset_bytes += s.memset_bytes;
    o.device_records += s.device_records;
    o.device_records_outside += s.device_records_outside;
    o.data_constructs.merge(&s.data_constructs);
    o.waits.merge(&s.waits);
    o.device_init.merge(&s.device_init);
    o.untracked_ns = if first {
        s.untracked_ns
    } else {
        o.untracked_ns.min(s.untracked_ns)
    };
    o.events += s.events;
    o.threads += s.threads;
    o.dropped_events += s.dropped_events;
    o.first_ns = if first {
        s.first_ns
    } else {
        o.first_ns.min(s.first_ns)
    };
    o.last_ns = o.last_ns.max(s.last_ns);
}
