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

/// The arrays that went out after one construct and back in for another: one finding, however
/// many (a code's start-up region copies out every field that the main loop's region copies
/// back in).
struct Trip<'p> {
    from: &'p Construct,
    to: &'p Construct,
    names: Vec<&'p str>,
    /// Round trips (each one copy out and one copy back in), summed over the arrays.
    count: u64,
    /// Bytes each way, summed over the arrays.
    bytes: u64,
    time_ns: u64,
    samples: Vec<EventRef>,
}

impl Trip<'_> {
    /// For a title: the array, or how many and the first few.
    fn label(&self) -> String {
        match self.names.as_slice() {
            [one] => (*one).to_string(),
            names if names.len() <= 3 => format!("{} arrays ({})", names.len(), names.join(", ")),
            names => format!(
                "{} arrays ({}, ... and {} more)",
                names.len(),
                names[..3].join(", "),
                names.len() - 3
            ),
        }
    }

    /// For a clause: the arrays, or `...` for more than three (listed once, in the evidence).
    fn list(&self) -> String {
        if self.names.len() <= 3 {
            self.names.join(", ")
        } else {
            "...".into()
        }
    }

    /// The evidence: how they moved, and every array when the clauses cannot list them.
    fn details(&self, from: &str, to: &str) -> Vec<String> {
        let mut d = vec![self.moved(from, to)];
        if self.names.len() > 3 {
            d.push(format!("the arrays: {}", self.names.join(", ")));
        }
        d
    }

    /// "X went ... 20 times (8 MiB each way)" or, for several, the totals.
    fn moved(&self, from: &str, to: &str) -> String {
        match self.names.as_slice() {
            [one] => format!(
                "{one} went device->host after {from} and host->device again for {to}, {} times ({} each way), costing {}",
                self.count,
                bytes(self.bytes),
                duration(self.time_ns)
            ),
            names => format!(
                "{} arrays went device->host after {from} and host->device again for {to}, {} copies each way in all ({} each way), costing {}",
                names.len(),
                self.count,
                bytes(self.bytes),
                duration(self.time_ns)
            ),
        }
    }

    fn span(&self) -> (u64, u64) {
        (
            self.samples.iter().map(|e| e.start_ns).min().unwrap_or(0),
            self.samples.iter().map(|e| e.end_ns).max().unwrap_or(0),
        )
    }
}

fn create_instead_of_copy(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    let mut trips: Vec<Trip> = Vec::new();
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
        let same = |t: &Trip| std::ptr::eq(t.from, from) && std::ptr::eq(t.to, to);
        let trip = match trips.iter().position(same) {
            Some(i) => &mut trips[i],
            None => {
                trips.push(Trip {
                    from,
                    to,
                    names: Vec::new(),
                    count: 0,
                    bytes: 0,
                    time_ns: 0,
                    samples: Vec::new(),
                });
                trips.last_mut().expect("just pushed")
            }
        };
        if !trip.names.contains(&v.name.as_str()) {
            trip.names.push(&v.name);
        }
        trip.count += r.count;
        trip.bytes += r.bytes;
        trip.time_ns += r.time_ns;
        trip.samples.extend(r.samples.iter().copied());
    }
    for mut t in trips {
        t.samples.sort_by_key(|e| e.start_ns);
        t.samples.truncate(MAX_SAMPLES);
        if t.from.location.function != t.to.location.function
            || t.from.location.file != t.to.location.file
        {
            out.push(across_functions(&t));
        } else {
            out.push(within_function(p, &t));
        }
    }
}

fn within_function(p: &Profile, t: &Trip) -> Finding {
    let (from, to) = (t.from, t.to);
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
    let (first, last) = (from.location.short(), to.location.short());
    Finding {
        rule: Rule::CreateInsteadOfCopy,
        title: format!(
            "{} copied out at {first} and copied back in at {last} unchanged",
            t.label()
        ),
        location: loc,
        evidence: Evidence {
            count: t.count * 2,
            bytes: t.bytes * 2,
            time_ns: t.time_ns,
            details: t.details(&first, &last),
        },
        estimated_saving_ns: t.time_ns,
        change: format!(
            "keep {name} on the device: wrap lines {} in `{}`{end} and use `present({list})` on both constructs instead of copyout/copyin (if the host never reads it, it is a device-only temporary)",
            match (a, b) {
                (Some(a), Some(b)) => format!("{a}-{b}"),
                _ => "of both constructs".into(),
            },
            directive(from.location.file.as_deref(), &format!("data create({})", t.list())),
            name = t.label(),
            list = t.list()
        ),
        events: t.samples.clone(),
        time_ranges: vec![t.span()],
    }
}

/// The two constructs are in different functions (a C++ class's methods, a Fortran module's
/// procedures): no region can span lines of two functions, so the array is kept on the device
/// by unstructured data lifetimes, or by a region in the code that calls both.
fn across_functions(t: &Trip) -> Finding {
    let (from, to) = (t.from, t.to);
    let file = from.location.file.as_deref();
    let fname = |c: &Construct| {
        c.location
            .function
            .clone()
            .unwrap_or_else(|| c.location.short())
    };
    let (name, list) = (t.label(), t.list());
    let (enter, exit, region) = (
        directive(file, &format!("enter data copyin({list})")),
        directive(file, &format!("exit data copyout({list})")),
        directive(file, &format!("data copy({list})")),
    );
    let first = format!("{} ({})", from.location.short(), fname(from));
    let last = format!("{} ({})", to.location.short(), fname(to));
    Finding {
        rule: Rule::CreateInsteadOfCopy,
        title: format!(
            "{} copied out at {} and copied back in at {} unchanged",
            t.label(),
            from.location.short(),
            to.location.short()
        ),
        location: FindingLocation::of(from),
        evidence: Evidence {
            count: t.count * 2,
            bytes: t.bytes * 2,
            time_ns: t.time_ns,
            details: t.details(&first, &last),
        },
        estimated_saving_ns: t.time_ns,
        change: format!(
            "keep {name} on the device between {} and {}, which are different functions: `{enter}` once after {name} {is} created and `{exit}` once before {it} freed (a class's constructor and destructor, say), or `{region}` around the calls of both in their caller; then `present({list})` in both instead of copyout/copyin",
            fname(from),
            fname(to),
            is = if t.names.len() == 1 { "is" } else { "are" },
            it = if t.names.len() == 1 { "it is" } else { "they are" },
        ),
        events: t.samples.clone(),
        time_ranges: vec![t.span()],
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
    fn arrays_making_the_same_trip_are_one_finding() {
        let mut r = Run::new();
        let (d, u) = (
            acc_event_t::ENQUEUE_DOWNLOAD_START,
            acc_event_t::ENQUEUE_UPLOAD_START,
        );
        let names = ["X", "Y", "Z", "W"];
        r.compute(20, MS, MS, |r, t| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let (s, p) = (
                        t + (i as u64 + 1) * US,
                        0x7f00_0000 + (i as u64) * (2 << 20),
                    );
                    r.transfer(d, s, s + US / 2, 20, n, 1 << 20, p)
                })
                .collect()
        });
        r.compute(30, MS, MS, |r, t| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let (s, p) = (
                        t + (i as u64 + 1) * US,
                        0x7f00_0000 + (i as u64) * (2 << 20),
                    );
                    r.transfer(u, s, s + US / 2, 30, n, 1 << 20, p)
                })
                .collect()
        });
        let wall = r.now;
        let f = findings(&CreateInsteadOfCopy, &r.profile(wall));
        assert_eq!(rules_of(&f), [Rule::CreateInsteadOfCopy]);
        assert!(
            f[0].title.starts_with("4 arrays (X, Y, Z, ... and 1 more)"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].evidence.count, 8);
        assert!(
            f[0].evidence.details[1].ends_with("X, Y, Z, W"),
            "{:?}",
            f[0].evidence.details
        );
        assert!(f[0].change.contains("data create(...)"), "{}", f[0].change);
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
