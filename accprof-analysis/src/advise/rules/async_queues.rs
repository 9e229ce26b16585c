//! The host waits on synchronous constructs while it has work of its own: async queues.

use crate::advise::*;
use crate::format::duration;
use crate::model::*;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct AsyncQueues;

impl AdviceRule for AsyncQueues {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::AsyncQueues]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        async_queues(p, out);
    }
}

fn async_queues(p: &Profile, out: &mut Vec<Finding>) {
    // On the host fallback a construct runs synchronously whatever its clauses say: its time is
    // no measure of what an async queue would overlap.
    if crate::host_fallback::ran_on_host(p) {
        return;
    }
    let wall = p.summary.wall_ns;
    let mut waited = 0u64;
    let mut lines: Vec<&Construct> = Vec::new();
    let mut events = Vec::new();
    for c in &p.constructs {
        if c.kind != ConstructKind::Compute || c.async_count > 0 || async_in_source(p, c) {
            continue;
        }
        // A reduction's result is what the host waits for (the convergence test of a
        // `while (error > tol)` loop): it needs it right after the construct, queue or not.
        if clause_in_source(p, c, "reduction") {
            continue;
        }
        let (n, _, t) = c.child_total(ChildKind::Wait);
        let w = if n > 0 { t } else { c.own_time_ns() };
        if w > 0 {
            waited += w;
            lines.push(c);
            events.extend(c.samples.iter().copied().take(2));
        }
    }
    if lines.is_empty() {
        return;
    }
    // Host work that can overlap the constructs is work between them: set-up before the first
    // and output after the last overlap nothing.
    let host_work = host_work_between(p, &lines);
    if wall == 0 || waited * 20 < wall || host_work * 20 < wall {
        return;
    }
    lines.sort_by_key(|c| std::cmp::Reverse(c.time.total_ns));
    let first = lines[0];
    let first_ns = lines.iter().map(|c| c.first_ns).min().unwrap_or(0);
    let last_ns = lines.iter().map(|c| c.last_ns).max().unwrap_or(0);
    lines.truncate(4);
    out.push(Finding {
        rule: Rule::AsyncQueues,
        title: "the host waits for the device while it has work of its own".into(),
        location: FindingLocation::of(first),
        evidence: Evidence {
            count: lines.len() as u64,
            bytes: 0,
            time_ns: waited,
            details: vec![format!(
                "{} waiting in synchronous compute constructs ({}) and {} of host work outside OpenACC that could overlap it",
                duration(waited),
                construct_lines(&lines),
                duration(host_work)
            )],
        },
        estimated_saving_ns: waited.min(host_work),
        change: format!(
            "add `async(1)` to the constructs at {} and `{}` just before the host needs their results, so host work and device work overlap",
            construct_lines(&lines),
            crate::source::directive(first.location.file.as_deref(), "wait(1)")
        ),
        events,
        time_ranges: vec![(first_ns, last_ns)],
    });
}

/// Whether the directive of `c` already has an `async` clause in the source (a runtime that ran
/// it synchronously does not report it as async).
fn async_in_source(p: &Profile, c: &Construct) -> bool {
    clause_in_source(p, c, "async")
}

/// Whether the directive of `c` has `clause` in the source.
fn clause_in_source(p: &Profile, c: &Construct, clause: &str) -> bool {
    match (c.location.file.as_deref(), c.location.line) {
        (Some(f), Some(line)) => crate::source::read_matching(p, f, &[line])
            .is_some_and(|s| s.directive_has_clause(line, clause)),
        _ => false,
    }
}

/// Host time outside OpenACC between the first and the last run of the constructs `cs`: the
/// span they were reached over, less the time of every construct reached within it (device
/// initialization aside).
fn host_work_between(p: &Profile, cs: &[&Construct]) -> u64 {
    let first = cs.iter().map(|c| c.first_ns).min().unwrap_or(0);
    let last = cs.iter().map(|c| c.last_ns).max().unwrap_or(0);
    let covered: u64 = p
        .constructs
        .iter()
        .filter(|c| c.kind != ConstructKind::Init && c.first_ns >= first && c.last_ns <= last)
        .map(|c| c.time.total_ns)
        .sum();
    last.saturating_sub(first)
        .saturating_sub(covered)
        .min(p.summary.untracked_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::Field;

    /// Ten synchronous constructs that wait 9 ms for their kernel, with 10 ms of host work
    /// between them.
    fn run(queue: Option<i64>) -> Vec<Finding> {
        let mut r = Run::new();
        for _ in 0..10 {
            r.compute(42, 10 * MS, 10 * MS, |r, t| {
                let mut launch = r.launch(t + US, t + 3 * US, 42, "main_42_gpu", 256, 128);
                let wait = r.ev(acc_event_t::WAIT_START, t + MS, t + 10 * MS - US, 42);
                if let Some(q) = queue {
                    launch.set_i64(Field::Async, q);
                }
                vec![launch, wait]
            });
        }
        let wall = r.now;
        let mut p = r.profile(wall);
        if queue.is_some() {
            // What the runtime reports of an async construct.
            p.constructs
                .iter_mut()
                .for_each(|c| c.async_count = c.reached);
        }
        findings(&AsyncQueues, &p)
    }

    #[test]
    fn fires_when_the_host_waits_and_has_work_of_its_own() {
        let f = run(None);
        assert_eq!(rules_of(&f), [Rule::AsyncQueues]);
        assert!(f[0].estimated_saving_ns > 0);
    }

    /// The best-practices Laplace with its data region: 100 ms of set-up before the loop, then
    /// constructs back to back. Set-up overlaps nothing.
    #[test]
    fn set_up_before_the_constructs_is_no_work_to_overlap() {
        let mut r = Run::new();
        r.now += 100 * MS;
        for _ in 0..10 {
            r.compute(42, 10 * MS, 10 * US, |r, t| {
                let launch = r.launch(t + US, t + 3 * US, 42, "main_42_gpu", 256, 128);
                let wait = r.ev(acc_event_t::WAIT_START, t + MS, t + 10 * MS - US, 42);
                vec![launch, wait]
            });
        }
        let wall = r.now;
        assert!(findings(&AsyncQueues, &r.profile(wall)).is_empty());
    }

    #[test]
    fn silent_when_the_host_needs_a_reduction_result() {
        assert!(run_with_source(
            "reduction.c",
            "#pragma acc parallel loop reduction(max:err)"
        )
        .is_empty());
    }

    #[test]
    fn silent_when_the_constructs_are_already_async() {
        assert!(run(Some(1)).is_empty());
    }

    /// The synchronous run of [`run`] with its constructs in a source file of `name` whose line
    /// 42 is `directive`.
    fn run_with_source(name: &str, directive: &str) -> Vec<Finding> {
        let dir =
            std::env::temp_dir().join(format!("accprof-async-rule-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let mut text = "\n".repeat(41);
        text.push_str(directive);
        text.push_str("\nfor (int i = 0; i < n; i++) a[i] = 0;\n");
        std::fs::write(&path, text).unwrap();
        let mut r = Run::new();
        for _ in 0..10 {
            r.compute(42, 10 * MS, 10 * MS, |r, t| {
                let launch = r.launch(t + US, t + 3 * US, 42, "main_42_gpu", 256, 128);
                let wait = r.ev(acc_event_t::WAIT_START, t + MS, t + 10 * MS - US, 42);
                vec![launch, wait]
            });
        }
        let wall = r.now;
        let mut p = r.profile(wall);
        p.constructs
            .iter_mut()
            .for_each(|c| c.location.file = Some(path.display().to_string()));
        let f = findings(&AsyncQueues, &p);
        let _ = std::fs::remove_dir_all(&dir);
        f
    }

    #[test]
    fn silent_when_the_source_already_says_async() {
        // A runtime that ran it synchronously (host fallback) reports no async queue.
        assert!(run_with_source("app.c", "#pragma acc parallel loop async(2)").is_empty());
        assert_eq!(
            rules_of(&run_with_source("app.c", "#pragma acc parallel loop")),
            [Rule::AsyncQueues]
        );
    }

    #[test]
    fn silent_on_the_host_fallback() {
        let mut r = Run::new();
        for _ in 0..10 {
            r.compute(42, 10 * MS, 10 * MS, |r, t| {
                vec![r.ev(acc_event_t::WAIT_START, t + MS, t + 10 * MS - US, 42)]
            });
        }
        let wall = r.now;
        let mut p = r.profile(wall);
        // What libgomp's host fallback reports: acc_device_host, nothing launched or moved.
        p.constructs
            .iter_mut()
            .for_each(|c| c.location.device_type = Some(2));
        assert!(crate::host_fallback::ran_on_host(&p));
        assert!(findings(&AsyncQueues, &p).is_empty());
    }

    #[test]
    fn fortran_gets_fortran_wait() {
        let f = run_with_source("app.f90", "!$acc parallel loop");
        assert!(
            f[0].change.contains("`!$acc wait(1)`") && !f[0].change.contains("#pragma"),
            "{}",
            f[0].change
        );
    }
}
