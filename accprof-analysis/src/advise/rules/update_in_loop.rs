//! An update directive inside a loop moving whole arrays on every iteration.

use crate::advise::clauses;
use crate::advise::placement::{self, Sources};
use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::{directive, Language};
use std::collections::BTreeMap;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct UpdateInLoop;

impl AdviceRule for UpdateInLoop {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::UpdateInLoop]
    }

    fn check(&self, p: &Profile, _claimed: &mut Claimed, out: &mut Vec<Finding>) {
        update_in_loop(p, out);
    }
}

fn update_in_loop(p: &Profile, out: &mut Vec<Finding>) {
    // "Every iteration" is as often as the loop's compute constructs run: an output routine's
    // update every hundredth step (miniWeather's, over two ranks merged) is not.
    let most_computed = p
        .constructs
        .iter()
        .filter(|c| c.kind == ConstructKind::Compute)
        .map(|c| c.reached)
        .max()
        .unwrap_or(0);
    let mut sources = Sources::default();
    for (ci, c) in p.constructs.iter().enumerate() {
        if c.kind != ConstructKind::Update || c.reached < 3 || c.reached * 2 < most_computed {
            continue;
        }
        let sites: Vec<&TransferSite> = p
            .transfer_sites
            .iter()
            .filter(|s| s.construct == Some(ci) && s.max_bytes >= 64 * 1024 && s.same_range)
            .collect();
        if sites.is_empty() {
            continue;
        }
        let file = c.location.file.as_deref();
        let lang = Language::of(file.unwrap_or(""));
        // With the source at hand: the loop that repeats the update, and whether the program
        // updates the same arrays again after it (then it needs them inside the loop too).
        let the_loop = placement::place(p, &mut sources, &[vec![c]]);
        if file.is_some()
            && the_loop.is_none()
            && crate::source::read(p, file.unwrap_or("")).is_some()
        {
            continue;
        }
        let names: Vec<String> = sites
            .iter()
            .map(|s| p.variables[s.variable].name.clone())
            .collect();
        if let Some(l) = &the_loop {
            if updated_after(p, c, &names, l) {
                continue;
            }
        }
        let count: u64 = sites.iter().map(|s| s.count).sum();
        let xbytes: u64 = sites.iter().map(|s| s.bytes).sum();
        let time: u64 = sites.iter().map(|s| s.time.total_ns).sum();
        let saving = time - time / c.reached.max(1);
        // One directive per direction, each with its arrays as the source names them.
        let mut by_dir: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut unnamed = Vec::new();
        let stand_in = clauses::none_nameable(
            sites.iter().map(|s| p.variables[s.variable].name.as_str()),
            lang,
        );
        for s in &sites {
            let word = if s.direction == Direction::HostToDevice {
                "device"
            } else {
                "self"
            };
            let name = &p.variables[s.variable].name;
            if clauses::clause_item(name, lang).is_none() && !unnamed.contains(name) {
                unnamed.push(name.clone());
            }
            if let Some(item) = clauses::clause_item_or_stand_in(name, lang, stand_in) {
                let list = by_dir.entry(word).or_default();
                if !list.contains(&item) {
                    list.push(item);
                }
            }
        }
        let updates: Vec<String> = by_dir
            .iter()
            .map(|(w, items)| {
                format!(
                    "`{}`",
                    directive(file, &format!("update {w}({})", items.join(", ")))
                )
            })
            .collect();
        let after = match &the_loop {
            Some(l) => format!("once after the loop at {}", l.describe()),
            None => "once after the loop".into(),
        };
        // A std::vector's data by the pointer the note declares (`x_data`), not the vector.
        let first = names
            .first()
            .map(|n| match accprof_symbols::pointer_for(n) {
                Some((p, _)) => accprof_symbols::base_name(&p).to_string(),
                None => accprof_symbols::base_name(n).to_string(),
            })
            .unwrap_or_else(|| "a".into());
        let part = match lang {
            Language::C => format!("`update self({first}[first:count])`"),
            Language::Fortran => format!("`update self({first}(i:j))`"),
        };
        out.push(Finding {
            rule: Rule::UpdateInLoop,
            title: format!("update of whole {} on every iteration", names.join(", ")),
            location: FindingLocation::of(c),
            evidence: Evidence {
                count,
                bytes: xbytes,
                time_ns: time,
                details: vec![format!(
                    "the update at {} ran {} times, moving {} ({} each time) in {}",
                    c.location.short(),
                    c.reached,
                    bytes(xbytes),
                    bytes(xbytes / c.reached.max(1)),
                    duration(time)
                )],
            },
            estimated_saving_ns: saving,
            change: format!(
                "move {} out of the loop ({after}, where the host needs the data), or update only the part the host reads each iteration, e.g. {part}{}{}",
                updates.join(" and "),
                clauses::unnamed_note(&unnamed, stand_in),
                clauses::pointer_note(names.iter().map(String::as_str))
            ),
            events: c.samples.clone(),
            time_ranges: vec![(c.first_ns, c.last_ns)],
        });
    }
}

/// Whether the program updates the same arrays, the same way, after the loop `l` that repeats
/// the update `c` (in the loop's function, below it).
fn updated_after(p: &Profile, c: &Construct, names: &[String], l: &placement::Placement) -> bool {
    p.constructs.iter().enumerate().any(|(i, u)| {
        u.kind == ConstructKind::Update
            && !std::ptr::eq(u, c)
            && u.location.file.as_deref() == Some(l.file.as_str())
            && u.location.line.is_some_and(|line| line > l.the_loop.end)
            && p.transfer_sites
                .iter()
                .filter(|s| s.construct == Some(i))
                .any(|s| names.contains(&p.variables[s.variable].name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::{acc_construct_t, acc_event_t};

    fn run(times: u64) -> Vec<Finding> {
        findings(&UpdateInLoop, &updates(Run::new(), times, 0, 0))
    }

    /// `times` updates of A at line 60 with `computes` compute constructs at line 58 among
    /// them, and `after` more updates of A at line 70 after them.
    fn updates(mut r: Run, times: u64, computes: u64, after: u64) -> Profile {
        for _ in 0..computes {
            r.compute(58, MS, 0, |_, _| Vec::new());
        }
        for (line, n) in [(60, times), (70, after)] {
            for _ in 0..n {
                r.construct(
                    acc_event_t::UPDATE_START,
                    acc_construct_t::UPDATE,
                    line,
                    MS,
                    MS,
                    |r, t| {
                        vec![r.transfer(
                            acc_event_t::ENQUEUE_DOWNLOAD_START,
                            t + US,
                            t + MS - US,
                            line,
                            "A",
                            1 << 20,
                            0x7f00_0000,
                        )]
                    },
                );
            }
        }
        let wall = r.now;
        r.profile(wall)
    }

    /// The program's source: the update at line 60 inside the loop of lines 57-62, another
    /// update of A at line 70 after it.
    fn with_source(p: &mut Profile, dir: &std::path::Path) {
        let mut text = "int main(void) {\n".to_string() + &"\n".repeat(55);
        text.push_str("    for (int i = 0; i < n; i++) {\n#pragma acc parallel loop\n        for (int j = 0; j < n; j++) a[j] += 1;\n#pragma acc update self(A)\n        use(A);\n    }\n");
        text.push_str(&"\n".repeat(7));
        text.push_str("#pragma acc update self(A)\n}\n");
        let path = dir.join("app.c");
        std::fs::write(&path, text).unwrap();
        for c in &mut p.constructs {
            c.location.file = Some(path.display().to_string());
        }
    }

    #[test]
    fn silent_when_the_program_updates_again_after_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = updates(Run::new(), 10, 10, 0);
        with_source(&mut p, dir.path());
        assert_eq!(rules_of(&findings(&UpdateInLoop, &p)), [Rule::UpdateInLoop]);
        let mut p = updates(Run::new(), 10, 10, 1);
        with_source(&mut p, dir.path());
        assert!(findings(&UpdateInLoop, &p).is_empty());
    }

    /// miniWeather's output routine over two merged ranks: its update runs every hundredth
    /// step, not every iteration.
    #[test]
    fn silent_on_an_update_far_rarer_than_the_loops_constructs() {
        let p = updates(Run::new(), 10, 1000, 0);
        assert!(findings(&UpdateInLoop, &p).is_empty());
    }

    #[test]
    fn fires_on_an_update_of_a_whole_array_every_iteration() {
        let f = run(3);
        assert_eq!(rules_of(&f), [Rule::UpdateInLoop]);
        assert!(
            f[0].change.contains("`#pragma acc update self(A)`"),
            "{}",
            f[0].change
        );
    }

    #[test]
    fn silent_on_an_update_reached_twice() {
        assert!(run(2).is_empty());
    }
}
