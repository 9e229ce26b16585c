//! Device records: tying each (CUPTI or CUDA-event) record to the construct and operation that
//! issued it, and preferring the device's times where it has them.

use super::*;
use accprof_timeline::device::{innermost_open, Query, Span};

impl ProfileBuilder {
    pub(super) fn feed_device_record(&mut self, ev: &Event, thread: i64, r: EventRef) {
        let Some(kind) = DeviceOp::of(ev) else { return };
        self.summary.device_records += 1;
        self.device_records.push(DeviceRecord {
            thread,
            host_ns: ev.get(Field::HostCallNs).unwrap_or(r.start_ns),
            issued: ev.get(Field::HostCallNs).is_some(),
            correlation: ev.get(Field::CorrelationId),
            kind,
            r,
            bytes: ev.bytes(),
            host_ptr: ev.get(Field::HostPtr),
            var: ev.var_name(),
            kernel: ev.kernel_name(),
        });
    }

    /// Ties each device record to what its issuing thread was doing when it issued the driver
    /// call: the transfer or launch the runtime reported (the device time is added to that
    /// operation's rows), else the innermost construct instance open then (the record is a new
    /// operation of that construct: GCC reports no transfers), else no construct.
    pub(super) fn attribute_device_records(&mut self, strings: &StringTable) {
        if self.device_records.is_empty() {
            return;
        }
        let mut recs = std::mem::take(&mut self.device_records);
        for ts in self.threads.values_mut() {
            index_spans(ts);
        }
        match_kernels_by_name(&self.threads, &mut recs, strings);
        // Issue order per thread: the round-trip and slice rules read transfers in order.
        recs.sort_by_key(|d| (d.thread, d.host_ns, d.r.start_ns));
        let enclosing = self.enclosing_constructs(&recs);
        self.device_gaps = super::device_gaps::find(&recs, &enclosing);
        for (d, span) in recs.into_iter().zip(enclosing) {
            match d.kind {
                DeviceOp::Memset => {
                    self.summary.memsets.source = TimeSource::Device;
                    self.summary.memsets.add(dur(d.r));
                    self.summary.memset_bytes += d.bytes.unwrap_or(0);
                    continue;
                }
                DeviceOp::OtherCopy => continue,
                DeviceOp::Kernel | DeviceOp::Copy(_) => {}
            }
            let want = match d.kind {
                DeviceOp::Kernel => ChildKind::Launch,
                DeviceOp::Copy(Direction::HostToDevice) => ChildKind::Upload,
                _ => ChildKind::Download,
            };
            let ts = self.threads.get(&d.thread);
            // The issuing thread's own operation; else one open on another thread at that time:
            // runtimes stage copies on helper threads of their own (the shim's pinned uploads),
            // which report no OpenACC events.
            let op = ts.and_then(|ts| find_op(ts, d.host_ns, want)).or_else(|| {
                let helper =
                    ts.is_none_or(|ts| ts.construct_spans.is_empty() && ts.op_spans.is_empty());
                if !helper {
                    return None;
                }
                self.threads
                    .values()
                    .find_map(|other| find_op(other, d.host_ns, want))
            });
            if let Some(op) = op {
                self.add_device_bytes(want, d.bytes);
                self.add_device_time(&op, dur(d.r));
                continue;
            }
            self.add_device_bytes(want, d.bytes);
            let (c, inst) = match span {
                Some(span) => (Some(span.construct), span.instance),
                None => {
                    self.summary.device_records_outside += 1;
                    (None, u64::MAX)
                }
            };
            let leaf = Leaf {
                kind: want,
                r: d.r,
                // Like the runtime's own operations inside a construct: the construct's line.
                line: None,
                bytes: d.bytes,
                host_ptr: d.host_ptr,
                var: match (d.var, d.host_ptr) {
                    (Some(n), _) => VarId::Name(n),
                    (None, Some(p)) => VarId::Host {
                        ptr: p,
                        bytes: d.bytes.unwrap_or(0),
                    },
                    (None, None) => VarId::Unknown,
                },
                kernel: d.kernel,
                gangs: None,
                workers: None,
                vector: None,
                is_async: false,
                overhead_ns: 0,
                host_timed: false,
                device_ns: Some(dur(d.r)),
            };
            self.resolve(d.thread, c, inst, vec![leaf]);
        }
        for ts in self.threads.values_mut() {
            if let Some(run) = ts.run.take() {
                self.close_run_later.push(run);
            }
        }
        for run in std::mem::take(&mut self.close_run_later) {
            self.close_run(run);
        }
    }

    /// For each record, the innermost construct instance open on its issuing thread when it was
    /// issued: the shared matching sweep (`accprof_timeline::device::innermost_open`) over every
    /// thread's construct spans at once.
    fn enclosing_constructs(&self, recs: &[DeviceRecord]) -> Vec<Option<ConstructSpan>> {
        struct ThreadSpan(u32, ConstructSpan);
        impl Span for ThreadSpan {
            fn start(&self) -> u64 {
                self.1.start
            }
            fn end(&self) -> u64 {
                self.1.end
            }
        }
        let mut threads: Vec<i64> = self.threads.keys().copied().collect();
        threads.sort_unstable();
        let group = |t: i64| threads.binary_search(&t).ok().map(|g| g as u32);
        let mut spans: Vec<ThreadSpan> = Vec::new();
        for (g, t) in threads.iter().enumerate() {
            spans.extend(
                self.threads[t]
                    .construct_spans
                    .iter()
                    .map(|s| ThreadSpan(g as u32, *s)),
            );
        }
        spans.sort_by_key(|s| (s.0, s.1.start, std::cmp::Reverse(s.1.end)));
        let queries = recs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                Some(Query {
                    group: group(d.thread)?,
                    t: d.host_ns,
                    tag: i,
                })
            })
            .collect();
        let mut out = vec![None; recs.len()];
        for (q, found) in innermost_open(&spans, |s| s.0, |_| 0, queries, |_, _| true) {
            out[q.tag] = Some(spans[found].1);
        }
        out
    }

    /// Counts what a device copy moved, for the summary: with device records the device says
    /// how many copies moved how many bytes (a runtime's one upload may be many staged copies).
    pub(super) fn add_device_bytes(&mut self, kind: ChildKind, bytes: Option<u64>) {
        match kind {
            ChildKind::Upload => self.device_totals.upload_bytes += bytes.unwrap_or(0),
            ChildKind::Download => self.device_totals.download_bytes += bytes.unwrap_or(0),
            _ => {}
        }
    }

    /// Adds a device record's time to the rows its host-reported operation was accounted in.
    pub(super) fn add_device_time(&mut self, op: &OpSpan, ns: u64) {
        if let (Some(c), Some(ch)) = (op.construct, op.child) {
            self.constructs[c as usize].device[ch as usize].add(ns);
        }
        match op.kind {
            ChildKind::Launch => {
                if let Some(k) = op.kernel {
                    self.kernel_device[k as usize].add(ns);
                }
                self.device_totals.kernels.add(ns);
            }
            _ => {
                if let Some(v) = op.variable {
                    self.variable_device[v as usize].add(ns);
                }
                if let Some(s) = op.site {
                    self.site_device[s as usize].add(ns);
                }
                if op.kind == ChildKind::Upload {
                    self.device_totals.uploads.add(ns);
                } else {
                    self.device_totals.downloads.add(ns);
                }
            }
        }
    }

    /// Every row whose operations have device records reports the device's time; the host's is
    /// kept in `host_time`. NV_ACC_TIME prefers device times the same way.
    pub(super) fn prefer_device_times(&mut self) {
        fn pick(time: &mut Timing, host_time: &mut Timing, dev: &Timing) {
            *host_time = *time;
            if dev.count > 0 {
                *time = *dev;
            }
        }
        for acc in &mut self.constructs {
            for (ch, dev) in acc.c.children.iter_mut().zip(&acc.device) {
                pick(&mut ch.time, &mut ch.host_time, dev);
            }
        }
        for ((_, _, k), dev) in self.kernels.iter_mut().zip(&self.kernel_device) {
            pick(&mut k.time, &mut k.host_time, dev);
        }
        for ((_, v), dev) in self.variables.iter_mut().zip(&self.variable_device) {
            pick(&mut v.time, &mut v.host_time, dev);
        }
        for (s, dev) in self.sites.iter_mut().zip(&self.site_device) {
            pick(&mut s.time, &mut s.host_time, dev);
        }
        let s = &mut self.summary;
        if self.device_totals.uploads.count > 0 {
            s.upload_bytes = self.device_totals.upload_bytes;
        }
        if self.device_totals.downloads.count > 0 {
            s.download_bytes = self.device_totals.download_bytes;
        }
        pick(
            &mut s.kernels,
            &mut s.kernels_host,
            &self.device_totals.kernels,
        );
        pick(
            &mut s.uploads,
            &mut s.uploads_host,
            &self.device_totals.uploads,
        );
        pick(
            &mut s.downloads,
            &mut s.downloads_host,
            &self.device_totals.downloads,
        );
    }
}

fn dur(r: EventRef) -> u64 {
    r.end_ns.saturating_sub(r.start_ns)
}

/// Sorts a thread's host-reported operations by start (outermost first), for [`find_op`].
fn index_spans(ts: &mut ThreadState) {
    ts.op_spans
        .sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
}

/// The host-reported operation of kind `want` whose callbacks enclose `t` on this thread.
/// How far a kernel may seem to start before its launch was issued: device times converted by
/// anchoring CUPTI's clock to the host's (no timestamp callback) can be off by this much.
const CLOCK_SLACK_NS: u64 = 1_000_000;

/// Gives kernel records that do not say which call issued them the thread and time of the
/// runtime's reported launch of the same kernel. libaccprof stops CUPTI's launch callback once
/// the runtime reports launches through acc_prof (the callback cost about 0.6 us per launch on
/// the H200); GCC, NVHPC and the shim report each launch with the kernel's name, which CUPTI's
/// records carry too. Per name, the launches not already claimed by a record with its call are
/// taken in host time order and the records in issue (correlation id) order; a record that
/// started on the device before its candidate launch was issued is not that launch's, and stays
/// outside any construct (as do kernels that no runtime reported, such as a CUDA library's).
fn match_kernels_by_name(
    threads: &HashMap<i64, ThreadState>,
    recs: &mut [DeviceRecord],
    strings: &StringTable,
) {
    if !recs.iter().any(|d| d.kind == DeviceOp::Kernel && !d.issued) {
        return;
    }
    let mut claimed = std::collections::HashSet::new();
    for d in recs
        .iter()
        .filter(|d| d.kind == DeviceOp::Kernel && d.issued)
    {
        if let Some(op) = threads
            .get(&d.thread)
            .and_then(|ts| find_op(ts, d.host_ns, ChildKind::Launch))
        {
            claimed.insert((d.thread, op.start));
        }
    }
    let mut launches: HashMap<&str, Vec<(u64, u64, i64)>> = HashMap::default();
    for (&thread, ts) in threads {
        for o in ts
            .op_spans
            .iter()
            .filter(|o| o.kind == ChildKind::Launch && !claimed.contains(&(thread, o.start)))
        {
            if let Some(name) = strings.resolve(o.kernel_name) {
                launches
                    .entry(name)
                    .or_default()
                    .push((o.start, o.end, thread));
            }
        }
    }
    for list in launches.values_mut() {
        list.sort_unstable();
    }
    let mut order: Vec<usize> = (0..recs.len())
        .filter(|&i| recs[i].kind == DeviceOp::Kernel && !recs[i].issued)
        .collect();
    order.sort_by_key(|&i| (recs[i].correlation.unwrap_or(u64::MAX), recs[i].r.start_ns));
    let mut next: HashMap<&str, usize> = HashMap::default();
    for i in order {
        let Some(name) = strings.resolve(recs[i].kernel) else {
            continue;
        };
        let Some(list) = launches.get(name) else {
            continue;
        };
        let k = next.entry(name).or_default();
        let Some(&(start, end, thread)) = list.get(*k) else {
            continue;
        };
        if recs[i].r.start_ns.saturating_add(CLOCK_SLACK_NS) < start {
            continue;
        }
        *k += 1;
        recs[i].thread = thread;
        recs[i].host_ns = start + (end - start) / 2;
    }
}

fn find_op(ts: &ThreadState, t: u64, want: ChildKind) -> Option<OpSpan> {
    let ops = &ts.op_spans;
    let end = ops.partition_point(|o| o.start <= t);
    // Operations of one kind do not overlap on a thread; look back over a few neighbours.
    ops[..end]
        .iter()
        .rev()
        .take(8)
        .find(|o| o.kind == want && o.end >= t)
        .copied()
}
