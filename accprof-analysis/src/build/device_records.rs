//! Device records: tying each (CUPTI or CUDA-event) record to the construct and operation that
//! issued it, and preferring the device's times where it has them.
//!
//! Records arrive late (CUPTI delivers its buffers when they fill), so they are kept until what
//! issued them is known, then tied in rounds: a record is ready once a construct instance that
//! was open at its issuing call has arrived (an inner one would have arrived before it), or,
//! when too many wait, once nothing still waiting on its thread's stack can hold its call (it
//! is then a runtime call outside any construct). After a round, construct and operation spans
//! that ended before the earliest call still waiting or just tied on their thread are dropped:
//! records come roughly in issue order, so memory stays bounded whatever the trace's length. A
//! record whose call falls before what was dropped is counted as late (a warning says how many)
//! instead of being tied to the wrong construct.
//!
//! What issued a record is decided by the timeline's issuer rule
//! ([`accprof_timeline::device`]: where to look, which candidate wins; and
//! [`accprof_timeline::by_name`] for kernel records that name no call), the rule the export's
//! layout and the TUI apply: the candidates here are the operations the runtime reported (its
//! enqueues) and the construct instances, kept per thread; the innermost construct open at a
//! call is found by the timeline's own sweep ([`innermost_open`]). The record kept here is not
//! the timeline's `DeviceRecord`: it keeps what the totals need and a timeline does not (the
//! event's reference for samples, the variable, host address and allocation site of a copy,
//! the kernel's name).

use super::kernel_names::CLOCK_SLACK_NS;
use super::*;
use accprof_timeline::device::{innermost_open, issuer_among, IssuerSearch, Query, Span};

/// Records that wait before a round ties those that are ready.
pub(super) const DEVICE_ROUND: usize = 1 << 15;

/// The builder's state between rounds of device records.
#[derive(Debug, Default)]
pub(super) struct DeviceRounds {
    /// Records kept waiting before a round; [`DEVICE_ROUND`] unless a test asked for another.
    pub(super) size: Option<usize>,
    /// Whether a round ran (slice runs its records opened are closed at the end).
    ran: bool,
    /// Kernel records that do not say which call issued them were seen and the reader did not
    /// name their kernels (see `kernel_names`): they are matched by name at the end, against
    /// every launch, so launch spans are kept.
    by_name: bool,
    /// Per thread, spans that ended before this were dropped.
    dropped_below: HashMap<i64, u64>,
    /// Per thread, the earliest call of the last round, to drop spans before at the next one.
    low: HashMap<i64, u64>,
    /// Records whose issuing call fell before their thread's dropped spans.
    pub(super) late: u64,
}

impl ProfileBuilder {
    pub(super) fn feed_device_record(&mut self, ev: &Event, thread: i64, r: EventRef) {
        let Some(kind) = DeviceOp::of(ev) else { return };
        self.summary.device_records += 1;
        // As the timeline's `DeviceRecord::issued`: a call names its thread and time.
        let issued = ev.get(Field::HostCallNs).is_some() && ev.thread().is_some();
        let mut name_pending = false;
        if !issued && kind == DeviceOp::Kernel {
            match ev.kernel_name() {
                Some(id) if self.kernel_names.of(Some(id)).is_some() => {
                    name_pending = true;
                    self.kernel_names.records_seen = true;
                }
                // A kernel that names nothing is tied to no launch, streaming or not.
                None if self.kernel_names.enabled => {}
                _ => self.device_rounds.by_name = true,
            }
        }
        self.device_records.push(DeviceRecord {
            thread,
            host_ns: ev.get(Field::HostCallNs).unwrap_or(r.start_ns),
            issued,
            name_pending,
            correlation: ev.get(Field::CorrelationId),
            kind,
            r,
            bytes: ev.bytes(),
            host_ptr: ev.get(Field::HostPtr),
            var: ev.var_name(),
            alloc_site: ev.get(Field::AllocSite).unwrap_or(0),
            kernel: ev.kernel_name(),
        });
        // Records matched by name at the end wait for it all; a round would only sort them
        // again each time (quadratic in records), so none runs once that is known.
        if !self.device_rounds.by_name && self.device_records.len() >= 2 * self.device_round_size()
        {
            self.run_device_round();
        }
    }

    /// No launch that starts before this can still be accounted: launches wait on the
    /// threads' stacks until their construct arrives.
    fn launch_horizon(&self) -> u64 {
        let launch_start = |l: &Leaf| (l.kind == ChildKind::Launch).then_some(l.r.start_ns);
        self.threads
            .values()
            .flat_map(|ts| ts.stack.iter())
            .filter_map(|item| match item {
                Item::Leaf(l) => launch_start(l),
                Item::Group { leaves, .. } => leaves.iter().filter_map(launch_start).min(),
                Item::Closed { .. } => None,
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    fn device_round_size(&self) -> usize {
        self.device_rounds.size.unwrap_or(DEVICE_ROUND).max(1)
    }

    /// Ties the records that are ready (see the module's comment) and drops the spans no
    /// record to come should need.
    fn run_device_round(&mut self) {
        let round = self.device_round_size();
        let mut recs = std::mem::take(&mut self.device_records);
        for ts in self.threads.values_mut() {
            index_spans(ts);
        }
        let horizon = self.launch_horizon();
        self.match_named_kernels(&mut recs, horizon);
        let at_end = self.device_rounds.by_name;
        let holds = |d: &DeviceRecord| {
            d.name_pending || (at_end && d.kind == DeviceOp::Kernel && !d.issued)
        };
        let enclosing = self.enclosing_constructs(&recs);
        let (mut ready, mut waiting) = (Vec::new(), Vec::new());
        for (d, span) in recs.into_iter().zip(enclosing) {
            if span.is_some() && !holds(&d) {
                ready.push(d);
            } else {
                waiting.push(d);
            }
        }
        if waiting.len() > round {
            // The oldest go as runtime calls outside any construct, once no operation still
            // waiting for its construct on their thread can hold their call.
            // Sorting (key, index) pairs and moving each record once beats moving the ~100-byte
            // records through a merge sort; the order is the same (stable).
            waiting.sort_by_cached_key(|d| d.host_ns);
            let stack_start = |ts: &ThreadState| {
                ts.stack
                    .iter()
                    .map(|i| i.span().0)
                    .min()
                    .unwrap_or(u64::MAX)
            };
            let fronts: HashMap<i64, u64> = self
                .threads
                .iter()
                .filter(|(_, ts)| ts.reports_events)
                .map(|(&t, ts)| (t, stack_start(ts)))
                .collect();
            // A helper thread's copy belongs to an operation of another thread.
            let helpers = self
                .threads
                .values()
                .map(stack_start)
                .min()
                .unwrap_or(u64::MAX);
            let frontier = |t: i64| fronts.get(&t).copied().unwrap_or(helpers);
            let mut excess = waiting.len() - round;
            let mut keep = Vec::with_capacity(round);
            for mut d in waiting {
                let launch_settled = d.r.start_ns.saturating_add(CLOCK_SLACK_NS) < horizon;
                if excess > 0 && d.name_pending && launch_settled {
                    // Waited a window's worth for a launch that would have been accounted by
                    // now: counted outside, and said if the runtime reported launches of that
                    // kernel at all.
                    excess -= 1;
                    d.name_pending = false;
                    let n = self.kernel_names.of(d.kernel);
                    if n.is_some_and(|n| self.kernel_names.launches.launched(n)) {
                        self.kernel_names.gave_up += 1;
                    }
                    ready.push(d);
                } else if excess > 0 && !holds(&d) && d.host_ns < frontier(d.thread) {
                    excess -= 1;
                    ready.push(d);
                } else {
                    keep.push(d);
                }
            }
            waiting = keep;
        }
        let mut low: HashMap<i64, u64> = HashMap::default();
        let mut helpers_low = u64::MAX;
        for d in ready.iter().chain(&waiting).filter(|d| d.issued) {
            if self
                .threads
                .get(&d.thread)
                .is_some_and(|ts| ts.reports_events)
            {
                let l = low.entry(d.thread).or_insert(u64::MAX);
                *l = (*l).min(d.host_ns);
            } else {
                helpers_low = helpers_low.min(d.host_ns);
            }
        }
        self.device_records = waiting;
        if !ready.is_empty() {
            self.device_rounds.ran = true;
            self.attribute(ready);
        }
        if self.device_rounds.by_name {
            return;
        }
        // Spans before the previous round's earliest call go: one round of slack for records
        // that arrive out of order.
        for (&t, ts) in self.threads.iter_mut() {
            // Launches still waiting for a record by name keep their spans.
            let launch = self.kernel_names.earliest_on(t).unwrap_or(u64::MAX);
            let now = low
                .get(&t)
                .copied()
                .unwrap_or(u64::MAX)
                .min(helpers_low)
                .min(launch);
            let Some(before) = self.device_rounds.low.insert(t, now) else {
                continue;
            };
            let w = before.min(now);
            if w == u64::MAX {
                continue;
            }
            ts.construct_spans.retain(|s| s.end >= w);
            ts.op_spans.retain(|o| o.end >= w);
            let d = self.device_rounds.dropped_below.entry(t).or_insert(0);
            *d = (*d).max(w);
        }
    }

    /// Ties each device record to what its issuing thread was doing when it issued the driver
    /// call: the transfer or launch the runtime reported (the device time is added to that
    /// operation's rows), else the innermost construct instance open then (the record is a new
    /// operation of that construct: GCC reports no transfers), else no construct.
    pub(super) fn attribute_device_records(&mut self, strings: &StringTable) {
        if self.device_records.is_empty() && !self.device_rounds.ran {
            return;
        }
        let mut recs = std::mem::take(&mut self.device_records);
        for ts in self.threads.values_mut() {
            index_spans(ts);
        }
        if self.device_rounds.by_name {
            self.match_kernels_at_end(&mut recs, strings);
        } else {
            self.match_named_kernels(&mut recs, u64::MAX);
        }
        self.attribute(recs);
        for ts in self.threads.values_mut() {
            if let Some(run) = ts.run.take() {
                self.close_run_later.push(run);
            }
        }
        for run in std::mem::take(&mut self.close_run_later) {
            self.close_run(run);
        }
    }

    /// Ties a round of records (see [`Self::attribute_device_records`]); the threads' operation
    /// spans are sorted.
    fn attribute(&mut self, mut recs: Vec<DeviceRecord>) {
        // Issue order per thread: the round-trip and slice rules read transfers in order.
        recs.sort_by_cached_key(|d| (d.thread, d.host_ns, d.r.start_ns));
        let enclosing = self.enclosing_constructs(&recs);
        self.device_gaps.add(&recs, &enclosing);
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
            if let Some((_, op)) = self.issuing_op(&d, span) {
                self.add_device_bytes(want, d.bytes);
                self.add_device_time(&op, dur(d.r));
                continue;
            }
            self.add_device_bytes(want, d.bytes);
            let (c, inst) = match span {
                Some(span) => (Some(span.construct), span.instance),
                None => {
                    self.summary.device_records_outside += 1;
                    let dropped = self.device_rounds.dropped_below.get(&d.thread);
                    if d.issued && dropped.is_some_and(|&w| d.host_ns < w) {
                        self.device_rounds.late += 1;
                    }
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
                    (Some(n), _) => VarId::Name(n, d.alloc_site),
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
                api_call: None,
                content: None,
                device_ptr: None,
                device_ns: Some(dur(d.r)),
            };
            self.resolve(d.thread, c, inst, vec![leaf]);
        }
    }

    /// Where the issuer rule looks for what issued `d`.
    pub(super) fn issuer_search(&self, d: &DeviceRecord) -> IssuerSearch {
        let reports = |t: i64| self.threads.get(&t).is_some_and(|ts| ts.reports_events);
        IssuerSearch::of(d.kind, d.issued.then_some((d.thread, d.host_ns)), reports)
    }

    /// The runtime-reported operation (with its thread) that issued `d` by the issuer rule,
    /// when the winner is one rather than `construct` (the innermost construct instance open
    /// at the call on the issuing thread, if any) or nothing.
    pub(super) fn issuing_op(
        &self,
        d: &DeviceRecord,
        construct: Option<ConstructSpan>,
    ) -> Option<(i64, OpSpan)> {
        #[derive(Clone, Copy)]
        enum Candidate {
            Op(i64, OpSpan),
            Construct(ConstructSpan),
        }
        let t = d.host_ns;
        let search = self.issuer_search(d);
        fn ops<'a>(
            (&thread, ts): (&i64, &'a ThreadState),
            t: u64,
        ) -> impl Iterator<Item = Candidate> + 'a {
            open_ops(ts, t).map(move |o| Candidate::Op(thread, o))
        }
        let of = |c: &Candidate| match *c {
            Candidate::Op(_, o) => (enqueue_of(o.kind), o.start, o.end),
            Candidate::Construct(s) => (s.kind, s.start, s.end),
        };
        let found = match search {
            IssuerSearch::Thread(thread, _) => {
                let own = self
                    .threads
                    .get_key_value(&thread)
                    .into_iter()
                    .flat_map(|e| ops(e, t));
                let constructs = construct.map(Candidate::Construct);
                issuer_among(search, t, own.chain(constructs), of)
            }
            IssuerSearch::Enqueue(_) => {
                issuer_among(search, t, self.threads.iter().flat_map(|e| ops(e, t)), of)
            }
            IssuerSearch::Nowhere => None,
        };
        match found? {
            Candidate::Op(thread, o) => Some((thread, o)),
            Candidate::Construct(_) => None,
        }
    }

    /// For each record, the innermost construct instance open on its issuing thread when it was
    /// issued (for records the issuer rule looks for on their own thread): the shared matching sweep (`accprof_timeline::device::innermost_open`) over every
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
        // Only threads that had constructs can enclose a record: the others' records (runtime
        // calls outside any construct) are not even queried.
        let mut threads: Vec<i64> = self
            .threads
            .iter()
            .filter(|(_, ts)| !ts.construct_spans.is_empty())
            .map(|(&t, _)| t)
            .collect();
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
                let IssuerSearch::Thread(thread, _) = self.issuer_search(d) else {
                    return None;
                };
                Some(Query {
                    group: group(thread)?,
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

/// Sorts a thread's host-reported operations by start (outermost first), for [`open_ops`].
fn index_spans(ts: &mut ThreadState) {
    ts.op_spans
        .sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
}

/// The host-reported operations of this thread that may be open at `t`: the issuer rule's
/// candidates among them. Operations of one kind do not overlap on a thread, so a look back
/// over a few neighbours of `t` finds every one open then.
fn open_ops(ts: &ThreadState, t: u64) -> impl Iterator<Item = OpSpan> + '_ {
    let ops = &ts.op_spans;
    let end = ops.partition_point(|o| o.start <= t);
    ops[..end]
        .iter()
        .rev()
        .take(8)
        .filter(move |o| o.end >= t)
        .copied()
}

/// The runtime event of a host-reported operation (operation spans hold launches, uploads and
/// downloads only).
fn enqueue_of(kind: ChildKind) -> acc_event_t {
    match kind {
        ChildKind::Launch => acc_event_t::ENQUEUE_LAUNCH_START,
        ChildKind::Upload => acc_event_t::ENQUEUE_UPLOAD_START,
        _ => acc_event_t::ENQUEUE_DOWNLOAD_START,
    }
}
