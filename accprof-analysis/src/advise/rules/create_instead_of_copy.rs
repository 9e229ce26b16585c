//! An array copied out by one construct and copied back in unchanged by the next: keep it on the
//! device (`create` / `present`).

use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::{directive, Language};

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct CreateInsteadOfCopy;

impl AdviceRule for CreateInsteadOfCopy {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::CreateInsteadOfCopy]
    }

    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>) {
        create_instead_of_copy(p, claimed, out);
    }
}

fn create_instead_of_copy(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    for r in &p.roundtrips {
        let v = &p.variables[r.variable];
        if claimed.variables.contains(&v.name)
            || r.count == 0
            || r.bytes / r.count < MIN_ARRAY_BYTES
        {
            continue;
        }
        let (Some(from), Some(to)) = (p.construct(r.from_construct), p.construct(r.to_construct))
        else {
            continue;
        };
        if from.location.function != to.location.function || from.location.file != to.location.file
        {
            out.push(across_functions(p, r, from, to));
            continue;
        }
        let lines: Vec<i64> = [
            from.location.line,
            to.location.line,
            from.location.end_line,
            to.location.end_line,
        ]
        .into_iter()
        .flatten()
        .collect();
        let (mut a, mut b) = (lines.iter().min().copied(), lines.iter().max().copied());
        // With the source at hand: the loop around both constructs, which the region must enclose
        // (the copy out and back in repeat with it).
        let file = from.location.file.as_deref();
        let starts: Vec<i64> = [from.location.line, to.location.line]
            .into_iter()
            .flatten()
            .collect();
        if let (Some(src), Some(&lo), Some(&hi)) = (
            file.and_then(|f| crate::source::read_matching(p, f, &starts)),
            starts.iter().min(),
            starts.iter().max(),
        ) {
            if let Some(l) = src.enclosing_loop(lo, hi) {
                (a, b) = (Some(l.start), Some(l.end));
            }
        }
        let end = match Language::of(file.unwrap_or("")) {
            Language::Fortran => format!(" ... `{}`", directive(file, "end data")),
            Language::C => String::new(),
        };
        let mut loc = FindingLocation::of(from);
        loc.line = a;
        loc.end_line = b;
        let span = (
            r.samples.first().map(|e| e.start_ns).unwrap_or(0),
            r.samples.last().map(|e| e.end_ns).unwrap_or(0),
        );
        out.push(Finding {
            rule: Rule::CreateInsteadOfCopy,
            title: format!("{} copied out at {} and copied back in at {} unchanged", v.name, from.location.short(), to.location.short()),
            location: loc,
            evidence: Evidence {
                count: r.count * 2,
                bytes: r.bytes * 2,
                time_ns: r.time_ns,
                details: vec![format!(
                    "{} went device->host after {} and host->device again for {}, {} times ({} each way), costing {}",
                    v.name,
                    from.location.short(),
                    to.location.short(),
                    r.count,
                    bytes(r.bytes),
                    duration(r.time_ns)
                )],
            },
            estimated_saving_ns: r.time_ns,
            change: format!(
                "keep {name} on the device: wrap lines {} in `{}`{end} and use `present({name})` on both constructs instead of copyout/copyin (if the host never reads it, it is a device-only temporary)",
                match (a, b) {
                    (Some(a), Some(b)) => format!("{a}-{b}"),
                    _ => "of both constructs".into(),
                },
                directive(from.location.file.as_deref(), &format!("data create({})", v.name)),
                name = v.name
            ),
            events: r.samples.clone(),
            time_ranges: vec![span],
        });
    }
}

/// The two constructs are in different functions (a C++ class's methods, a Fortran module's
/// procedures): no region can span lines of two functions, so the array is kept on the device
/// by unstructured data lifetimes, or by a region in the code that calls both.
fn across_functions(p: &Profile, r: &Roundtrip, from: &Construct, to: &Construct) -> Finding {
    let v = &p.variables[r.variable];
    let file = from.location.file.as_deref();
    let fname = |c: &Construct| {
        c.location
            .function
            .clone()
            .unwrap_or_else(|| c.location.short())
    };
    let (enter, exit, region) = (
        directive(file, &format!("enter data copyin({})", v.name)),
        directive(file, &format!("exit data copyout({})", v.name)),
        directive(file, &format!("data copy({})", v.name)),
    );
    let span = (
        r.samples.first().map(|e| e.start_ns).unwrap_or(0),
        r.samples.last().map(|e| e.end_ns).unwrap_or(0),
    );
    Finding {
        rule: Rule::CreateInsteadOfCopy,
        title: format!(
            "{} copied out at {} and copied back in at {} unchanged",
            v.name,
            from.location.short(),
            to.location.short()
        ),
        location: FindingLocation::of(from),
        evidence: Evidence {
            count: r.count * 2,
            bytes: r.bytes * 2,
            time_ns: r.time_ns,
            details: vec![format!(
                "{} went device->host after {} ({}) and host->device again for {} ({}), {} times ({} each way), costing {}",
                v.name,
                from.location.short(),
                fname(from),
                to.location.short(),
                fname(to),
                r.count,
                bytes(r.bytes),
                duration(r.time_ns)
            )],
        },
        estimated_saving_ns: r.time_ns,
        change: format!(
            "keep {name} on the device between {} and {}, which are different functions: `{enter}` once after {name} is created and `{exit}` once before it is freed (a class's constructor and destructor, say), or `{region}` around the calls of both in their caller; then `present({name})` in both instead of copyout/copyin",
            fname(from),
            fname(to),
            name = v.name
        ),
        events: r.samples.clone(),
        time_ranges: vec![span],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;

    /// The construct at line 20 copies X out; the one at line 30 copies it back in.
    fn profile() -> Profile {
        let mut r = Run::new();
        let (d, u) = (
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            acc_event_t::ENQUEUE_UPLOAD_START,
        );
        r.compute(20, MS, MS, |r, t| {
            vec![r.transfer(d, t + US, t + MS / 2, 20, "X", 1 << 20, 0x7f00_0000)]
        });
        r.compute(30, MS, MS, |r, t| {
            vec![r.transfer(u, t + US, t + MS / 2, 30, "X", 1 << 20, 0x7f00_0000)]
        });
        let wall = r.now;
        r.profile(wall)
    }

    #[test]
    fn fires_on_an_array_copied_out_and_back_in() {
        let f = findings(&CreateInsteadOfCopy, &profile());
        assert_eq!(rules_of(&f), [Rule::CreateInsteadOfCopy]);
        assert_eq!(
            (f[0].location.line, f[0].location.end_line),
            (Some(20), Some(30))
        );
    }

    /// The copy out ends a region in one method and the copy back in starts another's: the
    /// advice cannot be a region over lines of both.
    #[test]
    fn constructs_in_two_functions_get_unstructured_data_not_a_region_across_them() {
        let mut r = Run::new();
        let (d, u) = (
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            acc_event_t::ENQUEUE_UPLOAD_START,
        );
        r.function = "Grid::smooth";
        r.compute(20, MS, MS, |r, t| {
            vec![r.transfer(d, t + US, t + MS / 2, 20, "X", 1 << 20, 0x7f00_0000)]
        });
        r.function = "Grid::total";
        r.compute(30, MS, MS, |r, t| {
            vec![r.transfer(u, t + US, t + MS / 2, 30, "X", 1 << 20, 0x7f00_0000)]
        });
        let wall = r.now;
        let f = findings(&CreateInsteadOfCopy, &r.profile(wall));
        assert_eq!(rules_of(&f), [Rule::CreateInsteadOfCopy]);
        assert_eq!(
            (f[0].location.line, f[0].location.end_line),
            (Some(20), None),
            "at the first construct, not a span over two functions"
        );
        assert!(
            f[0].change.contains("`#pragma acc enter data copyin(X)`")
                && f[0].change.contains("`#pragma acc exit data copyout(X)`")
                && f[0].change.contains("Grid::smooth and Grid::total"),
            "{}",
            f[0].change
        );
        assert!(!f[0].change.contains("wrap lines"), "{}", f[0].change);
    }

    #[test]
    fn silent_on_a_variable_a_data_region_rule_claimed() {
        let mut claimed = Claimed::default();
        claimed.variables.insert("X".into());
        let mut out = Vec::new();
        CreateInsteadOfCopy.check(&profile(), &mut claimed, &mut out);
        assert!(out.is_empty());
    }
}
