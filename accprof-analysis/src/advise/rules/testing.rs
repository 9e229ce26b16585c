//! Hand-built profiles for the rules' unit tests: a few events of one thread, fed to the
//! builder the way the tool writes them (what a construct contains before the construct).

use crate::advise::{AdviceRule, Claimed, Finding, Rule};
use crate::build::ProfileBuilder;
use crate::model::Profile;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{Event, Field, StringTable};

pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;

pub struct Run {
    b: ProfileBuilder,
    strings: StringTable,
    /// The time the next construct starts.
    pub now: u64,
    /// The function the next events are in (`main` unless a test moves on).
    pub function: &'static str,
}

impl Run {
    pub fn new() -> Self {
        Self {
            b: ProfileBuilder::new(),
            strings: StringTable::default(),
            now: MS,
            function: "main",
        }
    }

    /// A run whose trace holds device records (CUPTI's), fed with [`Run::feed`].
    pub fn with_device_records() -> Self {
        Self {
            b: ProfileBuilder::with_cupti_records(),
            ..Self::new()
        }
    }

    /// A kernel `kernel` the device ran from `start` to `end`, issued by thread 1 at `call`.
    pub fn device_kernel(&mut self, start: u64, end: u64, call: u64, kernel: &str) -> Event {
        let mut e = Event::new(accprof_trace::device::KERNEL, start);
        e.end_ns = end;
        e.set_i64(Field::Thread, 1);
        e.set(Field::HostCallNs, call);
        e.set(Field::KernelName, u64::from(self.strings.intern(kernel).0));
        e
    }

    /// An event of thread 1 at `line` of [`Run::function`] in app.c.
    pub fn ev(&mut self, kind: acc_event_t, start: u64, end: u64, line: i64) -> Event {
        let mut e = Event::new(kind, start);
        e.end_ns = end;
        e.set_i64(Field::Thread, 1);
        e.set(Field::SrcFile, u64::from(self.strings.intern("app.c").0));
        e.set(
            Field::FuncName,
            u64::from(self.strings.intern(self.function).0),
        );
        e.set_i64(Field::LineNo, line);
        e.set_i64(Field::DeviceType, 5);
        e
    }

    /// A transfer (`ENQUEUE_UPLOAD_START` or `ENQUEUE_DOWNLOAD_START`) of `bytes` of `var` at
    /// host address `ptr`.
    pub fn transfer(
        &mut self,
        kind: acc_event_t,
        start: u64,
        end: u64,
        line: i64,
        var: &str,
        bytes: u64,
        ptr: u64,
    ) -> Event {
        let mut e = self.ev(kind, start, end, line);
        e.set(Field::VarName, u64::from(self.strings.intern(var).0));
        e.set(Field::Bytes, bytes);
        e.set(Field::HostPtr, ptr);
        e
    }

    /// A launch of `kernel` with `gangs` x `vector`.
    pub fn launch(
        &mut self,
        start: u64,
        end: u64,
        line: i64,
        kernel: &str,
        gangs: u64,
        vector: u64,
    ) -> Event {
        let mut e = self.ev(acc_event_t::ENQUEUE_LAUNCH_START, start, end, line);
        e.set(Field::KernelName, u64::from(self.strings.intern(kernel).0));
        e.set(Field::NumGangs, gangs);
        e.set(Field::NumWorkers, 1);
        e.set(Field::VectorLength, vector);
        e
    }

    /// The id of `s` in the run's string table.
    pub fn intern(&mut self, s: &str) -> accprof_trace::StrId {
        self.strings.intern(s)
    }

    pub fn feed(&mut self, e: Event) {
        self.b.feed(&e);
    }

    /// A construct of `kind` (`parent` construct type) at `line` lasting `dur` from
    /// [`now`](Self::now), after the children `inside` makes (given the construct's start);
    /// then `gap` of host work.
    pub fn construct(
        &mut self,
        kind: acc_event_t,
        parent: acc_construct_t,
        line: i64,
        dur: u64,
        gap: u64,
        inside: impl FnOnce(&mut Self, u64) -> Vec<Event>,
    ) {
        let start = self.now;
        for child in inside(self, start) {
            self.b.feed(&child);
        }
        let mut c = self.ev(kind, start, start + dur, line);
        c.set_i64(Field::ParentConstruct, i64::from(parent.0));
        self.b.feed(&c);
        self.now = start + dur + gap;
    }

    /// A `parallel` compute construct.
    pub fn compute(
        &mut self,
        line: i64,
        dur: u64,
        gap: u64,
        inside: impl FnOnce(&mut Self, u64) -> Vec<Event>,
    ) {
        self.construct(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            acc_construct_t::PARALLEL,
            line,
            dur,
            gap,
            inside,
        );
    }

    /// The profile, for a run of `wall` ns.
    pub fn profile(self, wall: u64) -> Profile {
        self.b.finish_with_wall(&self.strings, Some(wall))
    }
}

/// The findings `rule` gives for `p` on its own, with nothing claimed.
pub fn findings(rule: &dyn AdviceRule, p: &Profile) -> Vec<Finding> {
    let mut out = Vec::new();
    rule.check(p, &mut Claimed::default(), &mut out);
    out
}

/// The rules of `findings`.
pub fn rules_of(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|f| f.rule).collect()
}
