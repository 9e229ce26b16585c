//! Device initialization dominating a short run: initialize early.

use crate::advise::*;
use crate::format::{duration, percent};
use crate::model::*;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct InitEarly;

impl AdviceRule for InitEarly {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::InitEarly]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        init_early(p, out);
    }
}

fn init_early(p: &Profile, out: &mut Vec<Finding>) {
    let wall = p.summary.wall_ns;
    let init = p.summary.device_init.total_ns;
    if wall == 0 || init * 4 < wall {
        return;
    }
    let c = p.constructs.iter().find(|c| c.kind == ConstructKind::Init);
    // In the program's language: the init construct's file, else any construct's.
    let file = c
        .or_else(|| p.constructs.first())
        .and_then(|c| c.location.file.as_deref());
    let call = match crate::source::Language::of(file.unwrap_or("")) {
        crate::source::Language::C => "call `acc_init(acc_device_default)`",
        crate::source::Language::Fortran => "`call acc_init(acc_device_default)` (`use openacc`)",
    };
    out.push(Finding {
        rule: Rule::InitEarly,
        title: "device initialization takes a large part of the run".into(),
        location: c.map(FindingLocation::of).unwrap_or_default(),
        evidence: Evidence {
            count: p.summary.device_init.count,
            bytes: 0,
            time_ns: init,
            details: vec![format!(
                "device initialization took {} of a {} run ({}), inside the first construct that needed the device",
                duration(init),
                duration(wall),
                percent(init, wall)
            )],
        },
        // Moving initialization earlier moves its cost, it does not remove it: a note for the
        // timing of a region, not a saving of the run.
        estimated_saving_ns: 0,
        change: format!(
            "note, not a saving: initialization costs the same wherever it happens; to keep it out of the part you time, initialize the device early: {call} (or `{}`) at the start of the program, before the part you time, so the first construct does not pay for it",
            crate::source::directive(file, "init")
        ),
        events: c.map(|c| c.samples.clone()).unwrap_or_default(),
        time_ranges: c.map(|c| vec![(c.first_ns, c.last_ns)]).unwrap_or_default(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::{acc_construct_t, acc_event_t};

    fn run(init: u64, wall: u64) -> Vec<Finding> {
        let mut r = Run::new();
        r.construct(
            acc_event_t::DEVICE_INIT_START,
            acc_construct_t::PARALLEL,
            10,
            init,
            0,
            |_, _| Vec::new(),
        );
        findings(&InitEarly, &r.profile(wall))
    }

    #[test]
    fn fires_when_initialization_is_a_quarter_of_the_run() {
        let f = run(100 * MS, 150 * MS);
        assert_eq!(rules_of(&f), [Rule::InitEarly]);
        assert_eq!(
            f[0].estimated_saving_ns, 0,
            "moving initialization saves nothing of the run"
        );
        assert_eq!(f[0].location.line, Some(10));
    }

    #[test]
    fn silent_on_a_long_run() {
        assert!(run(MS, 1000 * MS).is_empty());
    }
}
