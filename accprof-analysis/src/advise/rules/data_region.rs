//! Arrays copied in and out by the compute constructs of a loop: a data region around the
//! innermost loop that repeats them, in their function or in the caller whose loop calls it
//! (`data_region`), or enter/exit data when no one loop encloses the constructs of the
//! different functions that move them (`enter_exit_data`). Claims the variables and constructs
//! it advises on.

use crate::advise::clauses::{self, clause_text};
use crate::advise::placement::{self, Placement, Sources};
use crate::advise::*;
use crate::format::{bytes, duration};
use crate::model::*;
use crate::source::{directive, Language};
use std::collections::{BTreeMap, BTreeSet};

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct DataRegion;

impl AdviceRule for DataRegion {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::DataRegion, Rule::EnterExitData]
    }

    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>) {
        claimed.merge(data_region_rules(p, out));
    }
}

/// The constructs of `sites` grouped by file and function, in first-seen order.
fn groups<'p>(p: &'p Profile, sites: &[&TransferSite]) -> Vec<Vec<&'p Construct>> {
    let mut keys: Vec<(Option<String>, Option<String>)> = Vec::new();
    let mut out: Vec<Vec<&Construct>> = Vec::new();
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for s in sites {
        let Some(i) = s.construct else { continue };
        if !seen.insert(i) {
            continue;
        }
        let c = &p.constructs[i];
        let key = (c.location.file.clone(), c.location.function.clone());
        match keys.iter().position(|k| *k == key) {
            Some(g) => out[g].push(c),
            None => {
                keys.push(key);
                out.push(vec![c]);
            }
        }
    }
    for g in &mut out {
        g.sort_by_key(|c| c.location.line);
    }
    out
}

/// What a finding about some arrays sums up.
struct Totals {
    names: Vec<String>,
    count: u64,
    bytes: u64,
    time: u64,
    saving: u64,
    events: Vec<EventRef>,
    span: (u64, u64),
    constructs: BTreeSet<usize>,
}

fn totals(vars: &[&VarTraffic]) -> Totals {
    let mut events: Vec<EventRef> = vars.iter().flat_map(|v| v.events()).collect();
    events.sort_by_key(|r| r.start_ns);
    events.truncate(MAX_SAMPLES);
    Totals {
        names: vars.iter().map(|v| v.name.clone()).collect(),
        count: vars
            .iter()
            .map(|v| v.sites.iter().map(|s| s.count).sum::<u64>())
            .sum(),
        bytes: vars.iter().map(|v| v.bytes()).sum(),
        time: vars
            .iter()
            .map(|v| v.time(Direction::HostToDevice) + v.time(Direction::DeviceToHost))
            .sum(),
        saving: vars.iter().map(|v| v.saving()).sum(),
        events,
        span: vars
            .iter()
            .map(|v| v.span())
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1))),
        constructs: vars
            .iter()
            .flat_map(|v| v.sites.iter().filter_map(|s| s.construct))
            .collect(),
    }
}

/// The data clauses of a region keeping `vars` on the device (each with its clause), in
/// `lang`, and the arrays no clause can name.
fn region_clauses(
    vars: &[(&VarTraffic, &'static str)],
    lang: Language,
) -> (String, Vec<String>, Unnamed) {
    let mut clauses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut unnamed = Vec::new();
    let mut present = Vec::new();
    let stand_in = clauses::none_nameable(vars.iter().map(|(v, _)| v.name.as_str()), lang);
    for (v, clause) in vars {
        if clauses::clause_item(&v.name, lang).is_none() {
            unnamed.push(v.name.clone());
        }
        if let Some(item) = clauses::clause_item_or_stand_in(&v.name, lang, stand_in) {
            let list = clauses.entry(clause).or_default();
            if !list.contains(&item) {
                list.push(item.clone());
            }
            if !present.contains(&item) {
                present.push(item);
            }
        }
    }
    (
        clause_text(&clauses),
        present,
        Unnamed { unnamed, stand_in },
    )
}

/// The arrays of a directive that no clause can name, and whether the directive holds
/// stand-ins for them (it had no nameable array at all).
struct Unnamed {
    unnamed: Vec<String>,
    stand_in: bool,
}

impl Unnamed {
    fn note(&self) -> String {
        clauses::unnamed_note(&self.unnamed, self.stand_in)
    }
}

fn details(vars: &[(&VarTraffic, &'static str)], t: &Totals, cs: &[&Construct]) -> Vec<String> {
    let mut details = vec![format!(
        "{} moved {} times ({}) by the compute constructs at {}, costing {} of host time",
        t.names.join(", "),
        t.count,
        bytes(t.bytes),
        construct_lines(cs),
        duration(t.time)
    )];
    for (v, clause) in vars {
        let why = match v.content.describe() {
            Some(c) => c,
            None => format!(
                "first moved {}",
                v.sites
                    .iter()
                    .min_by_key(|s| s.first_ns)
                    .map(|s| s.direction.label())
                    .unwrap_or("?")
            ),
        };
        details.push(format!(
            "{}: {} uploads, {} downloads; {why} -> {clause}",
            v.name,
            v.count(Direction::HostToDevice),
            v.count(Direction::DeviceToHost),
        ));
    }
    details
}

/// Without the bytes' hashes, the clauses come from the traffic's pattern: say how to have
/// them chosen from what the program needed.
fn content_hint(vars: &[(&VarTraffic, &'static str)]) -> &'static str {
    let guessed = vars
        .iter()
        .any(|(v, c)| *c == "copy" && v.content.uploads == 0);
    if guessed {
        "; `copy` keeps what each array needs whatever the program does: to tell from the bytes moved which arrays need less (a temporary takes `create`), run it with `accprof run --content`"
    } else {
        ""
    }
}

/// What the hashes say the host did between the transfers: arrays it changed inside the loop
/// need an `update device` there, or the region would compute with stale data.
fn host_changes_note(
    vars: &[(&VarTraffic, &'static str)],
    file: Option<&str>,
    lang: Language,
) -> String {
    let changed: Vec<String> = vars
        .iter()
        .filter(|(v, _)| v.content.host_changes() > 0)
        .filter_map(|(v, _)| {
            let item = clauses::clause_item(&v.name, lang)?;
            Some(format!(
                "{} of {} uploads of {} carried bytes the device did not hold: the host changes it inside the loop, so add `{}` after each change",
                v.content.uploads - v.content.uploads_held,
                v.content.uploads,
                v.name,
                directive(file, &format!("update device({item})"))
            ))
        })
        .collect();
    if changed.is_empty() {
        String::new()
    } else {
        format!("; {}", changed.join("; "))
    }
}

fn data_region_rules(p: &Profile, out: &mut Vec<Finding>) -> Claimed {
    let mut claimed = Claimed::default();
    // Transfers of arrays by compute constructs, per array (name and allocation).
    let mut by_var: BTreeMap<(String, Option<u64>), Vec<&TransferSite>> = BTreeMap::new();
    for s in &p.transfer_sites {
        let Some(c) = p.construct(s.construct) else {
            continue;
        };
        if c.kind != ConstructKind::Compute || s.max_bytes < MIN_ARRAY_BYTES || !s.same_range {
            continue;
        }
        let v = &p.variables[s.variable];
        by_var
            .entry((v.name.clone(), v.alloc_site))
            .or_default()
            .push(s);
    }
    // Repeated: moved again and again (a loop around the constructs, or around their calls).
    let repeated: Vec<VarTraffic> = by_var
        .into_iter()
        .map(|((name, _), sites)| VarTraffic {
            name,
            content: VarContent::of(p, &sites),
            sites,
        })
        .filter(|v| v.count(Direction::HostToDevice) >= 2 || v.count(Direction::DeviceToHost) >= 2)
        .collect();
    let mut sources = Sources::default();
    // Each array at the innermost loop that repeats every construct moving it; arrays at the
    // same loop are one region, one finding.
    let mut placed: Vec<(Placement, Vec<&VarTraffic>)> = Vec::new();
    let mut per_function: BTreeMap<(Option<String>, Option<String>), Vec<&VarTraffic>> =
        BTreeMap::new();
    let mut across: Vec<&VarTraffic> = Vec::new();
    for v in &repeated {
        let gs = groups(p, &v.sites);
        if let Some(place) = placement::place(p, &mut sources, &gs) {
            match placed
                .iter_mut()
                .find(|(q, _)| q.file == place.file && q.the_loop == place.the_loop)
            {
                Some((q, vars)) => {
                    for c in place.calls {
                        if !q.calls.contains(&c) {
                            q.calls.push(c);
                        }
                    }
                    vars.push(v);
                }
                None => placed.push((place, vec![v])),
            }
            continue;
        }
        match gs.as_slice() {
            [one] => {
                let c = one[0];
                per_function
                    .entry((c.location.file.clone(), c.location.function.clone()))
                    .or_default()
                    .push(v);
            }
            _ => across.push(v),
        }
    }
    for (place, vars) in placed {
        out.push(at_loop(p, &mut sources, &place, &vars));
        let t = totals(&vars);
        claimed.variables.extend(t.names);
        claimed.constructs.extend(t.constructs);
    }
    for vars in per_function.into_values() {
        out.push(around_lines(p, &vars));
        let t = totals(&vars);
        claimed.variables.extend(t.names);
        claimed.constructs.extend(t.constructs);
    }
    if !across.is_empty() {
        out.push(enter_exit(p, &across));
        let t = totals(&across);
        claimed.variables.extend(t.names);
        claimed.constructs.extend(t.constructs);
    }
    claimed
}

/// A region at the loop the sources show repeats the constructs.
fn at_loop(p: &Profile, sources: &mut Sources, place: &Placement, vars: &[&VarTraffic]) -> Finding {
    let mut t = totals(vars);
    let cs: Vec<&Construct> = t.constructs.iter().map(|&i| &p.constructs[i]).collect();
    let lang = Language::of(&place.file);
    // Whether the program reads an array after the loop is read from the loop's function,
    // where its own arrays are named; a caller that reaches a class's members through an
    // object (`f.sum()`) may read them by no name at all.
    let method = cs.iter().any(|c| {
        c.location
            .function
            .as_deref()
            .is_some_and(|f| f.contains("::"))
    });
    let chosen: Vec<(&VarTraffic, &'static str)> = vars
        .iter()
        .map(|v| {
            let after = if method && !place.calls.is_empty() {
                None
            } else {
                placement::used_after(p, sources, place, &v.name)
            };
            let written_first = placement::written_first(p, sources, v);
            (*v, v.clause_from(after, written_first))
        })
        .collect();
    t.saving = chosen.iter().map(|(v, c)| v.saving_with(c)).sum();
    let (pragma, present, unnamed) = region_clauses(&chosen, lang);
    let open = lang.directive(&format!("data {pragma}"));
    let wrap = match lang {
        Language::Fortran => format!(
            "put `{open}` before the loop at {} and `{}` after its `end do`",
            place.describe(),
            lang.directive("end data")
        ),
        Language::C => format!(
            "wrap the loop at {} in `{open}` (the loop is the region's block)",
            place.describe()
        ),
    };
    // A C++ method's arrays are members: the caller's loop reaches them through the object.
    let class = cs
        .iter()
        .find_map(|c| c.location.function.as_deref())
        .and_then(|f| f.split('(').next())
        .and_then(|f| f.rsplit_once("::"))
        .map(|(class, _)| class.to_string());
    let members = match (&class, &place.function) {
        (Some(class), Some(f)) if !place.calls.is_empty() && !f.starts_with(class.as_str()) => format!(
            " (the names are {class}'s as its methods write them: in {f}, reach them through the object, or keep them on the device for the object's life with `enter data` at the end of its constructor and `exit data` in its destructor)"
        ),
        _ => String::new(),
    };
    let inside = if place.calls.is_empty() {
        format!(
            "use `present({})` on the compute constructs, so the arrays stay on the device between them",
            present.join(", ")
        )
    } else {
        format!(
            "the compute constructs at {} then find the arrays present and copy nothing on each call",
            construct_lines(&cs)
        )
    };
    let location = FindingLocation {
        file: Some(place.file.clone()),
        line: Some(place.the_loop.start),
        end_line: Some(place.the_loop.end),
        function: place
            .function
            .clone()
            .or_else(|| cs.first().and_then(|c| c.location.function.clone())),
    };
    Finding {
        rule: Rule::DataRegion,
        title: format!(
            "{} copied to and from the device on every iteration",
            t.names.join(", ")
        ),
        location,
        evidence: Evidence {
            count: t.count,
            bytes: t.bytes,
            time_ns: t.time,
            details: details(&chosen, &t, &cs),
        },
        estimated_saving_ns: t.saving,
        change: format!(
            "{wrap}{members}; {inside}{}{}{}{}",
            host_changes_note(&chosen, Some(&place.file), lang),
            content_hint(&chosen),
            unnamed.note(),
            clauses::pointer_note(chosen.iter().map(|(v, _)| v.name.as_str()))
        ),
        events: t.events,
        time_ranges: vec![t.span],
    }
}

/// A region around the constructs' lines, where the sources are not at hand to show the loop.
fn around_lines(p: &Profile, vars: &[&VarTraffic]) -> Finding {
    let t = totals(vars);
    let cs: Vec<&Construct> = t.constructs.iter().map(|&i| &p.constructs[i]).collect();
    let first_line = cs.iter().filter_map(|c| c.location.line).min();
    let last_line = cs
        .iter()
        .filter_map(|c| c.location.end_line.or(c.location.line))
        .max();
    let first = cs
        .iter()
        .min_by_key(|c| c.location.line)
        .copied()
        .expect("a variable has sites");
    let lines = match (first_line, last_line) {
        (Some(a), Some(b)) if cs.len() > 1 && b > a => format!("lines {a}-{b}"),
        (Some(a), Some(b)) if b > a => format!("the loop around lines {a}-{b}"),
        (Some(a), _) => format!("the loop around line {a}"),
        _ => "the loop around these constructs".into(),
    };
    let lang = Language::of(first.location.file.as_deref().unwrap_or(""));
    let chosen: Vec<(&VarTraffic, &'static str)> = vars
        .iter()
        .map(|v| (*v, v.clause_from(None, None)))
        .collect();
    let (pragma, present, unnamed) = region_clauses(&chosen, lang);
    let open = lang.directive(&format!("data {pragma}"));
    let wrap = match lang {
        Language::Fortran => format!(
            "wrap {lines} in `{open}` ... `{}` (a data region around the loop that repeats them, in this function or where it is called)",
            lang.directive("end data")
        ),
        Language::C => format!(
            "wrap {lines} in `{open}` (a data region around the loop that repeats them, in this function or where it is called)"
        ),
    };
    let mut loc = FindingLocation::of(first);
    loc.line = first_line;
    loc.end_line = last_line;
    Finding {
        rule: Rule::DataRegion,
        title: format!(
            "{} copied to and from the device on every iteration",
            t.names.join(", ")
        ),
        location: loc,
        evidence: Evidence {
            count: t.count,
            bytes: t.bytes,
            time_ns: t.time,
            details: details(&chosen, &t, &cs),
        },
        estimated_saving_ns: t.saving,
        change: format!(
            "{wrap} and use `present({})` on the compute constructs, so the arrays stay on the device between them{}{}{}{}",
            present.join(", "),
            host_changes_note(&chosen, first.location.file.as_deref(), lang),
            content_hint(&chosen),
            unnamed.note(),
            clauses::pointer_note(chosen.iter().map(|(v, _)| v.name.as_str()))
        ),
        events: t.events,
        time_ranges: vec![t.span],
    }
}

/// Arrays moved by constructs of several functions that no one loop in the sources encloses:
/// unstructured data lifetimes.
fn enter_exit(p: &Profile, across: &[&VarTraffic]) -> Finding {
    let t = totals(across);
    let cs: Vec<&Construct> = t.constructs.iter().map(|&i| &p.constructs[i]).collect();
    let first = cs
        .iter()
        .min_by_key(|c| c.first_ns)
        .copied()
        .expect("a variable has sites");
    let file = first.location.file.as_deref();
    let lang = Language::of(file.unwrap_or(""));
    let mut enter: Vec<String> = Vec::new();
    let mut exit: Vec<String> = Vec::new();
    let mut unnamed = Vec::new();
    let mut present = Vec::new();
    let stand_in = clauses::none_nameable(across.iter().map(|v| v.name.as_str()), lang);
    for v in across {
        if clauses::clause_item(&v.name, lang).is_none() {
            unnamed.push(v.name.clone());
        }
        let Some(item) = clauses::clause_item_or_stand_in(&v.name, lang, stand_in) else {
            continue;
        };
        present.push(item.clone());
        let (e, x) = match v.clause() {
            "copy" => ("copyin", "copyout"),
            "copyin" => ("copyin", "delete"),
            "copyout" => ("create", "copyout"),
            _ => ("create", "delete"),
        };
        enter.push(format!("{e}({item})"));
        exit.push(format!("{x}({item})"));
    }
    let funcs: BTreeSet<String> = cs
        .iter()
        .map(|c| c.location.function.clone().unwrap_or_else(|| "?".into()))
        .collect();
    Finding {
        rule: Rule::EnterExitData,
        title: format!(
            "{} copied again by each call of {}",
            t.names.join(", "),
            funcs.iter().cloned().collect::<Vec<_>>().join(", ")
        ),
        location: FindingLocation::of(first),
        evidence: Evidence {
            count: t.count,
            bytes: t.bytes,
            time_ns: t.time,
            details: vec![format!(
                "{} moved {} times ({}) by the compute constructs at {} in {} functions, costing {}",
                t.names.join(", "),
                t.count,
                bytes(t.bytes),
                construct_lines(&cs),
                funcs.len(),
                duration(t.time)
            )],
        },
        estimated_saving_ns: t.saving,
        change: format!(
            "add `{}` before the first call and `{}` after the last one, and `present({})` on the constructs at {}{}{}",
            directive(file, &format!("enter data {}", enter.join(" "))),
            directive(file, &format!("exit data {}", exit.join(" "))),
            present.join(", "),
            construct_lines(&cs),
            clauses::unnamed_note(&unnamed, stand_in),
            clauses::pointer_note(across.iter().map(|v| v.name.as_str()))
        ),
        events: t.events,
        time_ranges: vec![t.span],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;

    /// `iterations` of a compute construct at line 57 copying A in and out.
    fn profile(iterations: u64) -> Profile {
        let mut r = Run::new();
        let (u, d) = (
            acc_event_t::ENQUEUE_UPLOAD_START,
            acc_event_t::ENQUEUE_DOWNLOAD_START,
        );
        for _ in 0..iterations {
            r.compute(57, MS, MS, |r, t| {
                vec![
                    r.transfer(u, t + US, t + MS / 4, 57, "A", 1 << 20, 0x7f00_0000),
                    r.transfer(d, t + MS / 2, t + MS - US, 57, "A", 1 << 20, 0x7f00_0000),
                ]
            });
        }
        let wall = r.now;
        r.profile(wall)
    }

    #[test]
    fn fires_on_an_array_moved_every_iteration_and_claims_it() {
        let p = profile(3);
        let (mut claimed, mut out) = (Claimed::default(), Vec::new());
        DataRegion.check(&p, &mut claimed, &mut out);
        assert_eq!(rules_of(&out), [Rule::DataRegion]);
        assert!(out[0].change.contains("copy(A)"), "{}", out[0].change);
        assert!(claimed.variables.contains("A"));
    }

    /// The seeds' naive Laplace with the bytes of every transfer hashed: the first construct
    /// reads A and writes Anew, the second reads Anew and writes A.
    #[test]
    fn hashed_transfers_choose_each_arrays_clause_and_prove_the_copies_redundant() {
        let mut r = Run::new();
        let (u, d) = (
            acc_event_t::ENQUEUE_UPLOAD_START,
            acc_event_t::ENQUEUE_DOWNLOAD_START,
        );
        let (pa, pn) = (0x7f00_0000u64, 0x7f80_0000u64);
        let hashed = |e: &mut accprof_trace::Event, h: u64| {
            e.set(accprof_trace::Field::ContentHash, h);
        };
        // Iteration k: A holds 100 + k before it, Anew 200 + k; each construct's writes add 1.
        for k in 0..4u64 {
            let (a0, n0) = (100 + k, 200 + k);
            let n1 = n0 + 1;
            r.compute(57, MS, MS, |r, t| {
                let mut v = vec![
                    r.transfer(u, t + US, t + 2 * US, 57, "A", 1 << 20, pa),
                    r.transfer(u, t + 3 * US, t + 4 * US, 57, "Anew", 1 << 20, pn),
                    r.transfer(d, t + MS / 2, t + MS / 2 + US, 57, "A", 1 << 20, pa),
                    r.transfer(
                        d,
                        t + MS / 2 + 2 * US,
                        t + MS / 2 + 3 * US,
                        57,
                        "Anew",
                        1 << 20,
                        pn,
                    ),
                ];
                for (e, h) in v.iter_mut().zip([a0, n0, a0, n1]) {
                    hashed(e, h);
                }
                v
            });
            let a1 = a0 + 1;
            r.compute(65, MS, MS, |r, t| {
                let mut v = vec![
                    r.transfer(u, t + US, t + 2 * US, 65, "Anew", 1 << 20, pn),
                    r.transfer(u, t + 3 * US, t + 4 * US, 65, "A", 1 << 20, pa),
                    r.transfer(d, t + MS / 2, t + MS / 2 + US, 65, "Anew", 1 << 20, pn),
                    r.transfer(
                        d,
                        t + MS / 2 + 2 * US,
                        t + MS / 2 + 3 * US,
                        65,
                        "A",
                        1 << 20,
                        pa,
                    ),
                ];
                for (e, h) in v.iter_mut().zip([n1, a0, n1, a1]) {
                    hashed(e, h);
                }
                v
            });
        }
        let wall = r.now;
        let mut p = r.profile(wall);
        let f = findings(&DataRegion, &p);
        assert_eq!(rules_of(&f), [Rule::DataRegion]);
        // Without the source, whether the host reads Anew after the loop is not known: copy.
        assert!(f[0].change.contains("copy(A, Anew)"), "{}", f[0].change);
        // With it (the loop at lines 55-70; after it only A is read): A is read before the
        // device writes it, copy; Anew is assigned before it is read by its first construct,
        // create.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("laplace.c");
        let mut text = "int main(void)\n{\n".to_string() + &"\n".repeat(52);
        text.push_str("    while (err > tol) {\n\n#pragma acc parallel loop\n");
        text.push_str("        for (int j = 1; j < n; j++) Anew[j] = 0.5 * A[j + 1];\n");
        text.push_str(&"        x();\n".repeat(6));
        text.push_str("#pragma acc parallel loop\n");
        text.push_str("        for (int j = 1; j < n; j++) A[j] = Anew[j];\n");
        text.push_str(&"        y();\n".repeat(3));
        text.push_str("    }\n    print(A[0]);\n}\n");
        std::fs::write(&path, text).unwrap();
        for c in &mut p.constructs {
            c.location.file = Some(path.display().to_string());
        }
        let f = findings(&DataRegion, &p);
        assert!(
            f[0].change.contains("copy(A) create(Anew)"),
            "{}",
            f[0].change
        );
        let details = f[0].evidence.details.join("\n");
        assert!(
            details.contains("A: 8 uploads, 8 downloads; 7 of 8 uploads carried bytes the device already held; 4 of 8 downloads brought back bytes the device had not changed -> copy"),
            "{details}"
        );
    }

    /// No array has a name a clause can take (a stack array of one of two sizes, say): the
    /// directive still says which clause each takes, with its label for the user to replace,
    /// never an empty `#pragma acc data`.
    #[test]
    fn arrays_no_clause_can_name_stand_in_by_their_labels() {
        let mut r = Run::new();
        let label = "host 0x7ffd0000+1 MiB";
        for _ in 0..3 {
            r.compute(57, MS, MS, |r, t| {
                vec![
                    r.transfer(
                        acc_event_t::ENQUEUE_UPLOAD_START,
                        t + US,
                        t + MS / 4,
                        57,
                        label,
                        1 << 20,
                        0x7ffd_0000,
                    ),
                    r.transfer(
                        acc_event_t::ENQUEUE_DOWNLOAD_START,
                        t + MS / 2,
                        t + MS - US,
                        57,
                        label,
                        1 << 20,
                        0x7ffd_0000,
                    ),
                ]
            });
        }
        let wall = r.now;
        let f = findings(&DataRegion, &r.profile(wall));
        assert_eq!(rules_of(&f), [Rule::DataRegion]);
        let change = &f[0].change;
        assert!(
            change.contains(&format!("data copy(<{label}>)")),
            "{change}"
        );
        assert!(change.contains(&format!("present(<{label}>)")), "{change}");
        assert!(change.contains("in place of its <label>"), "{change}");
    }

    #[test]
    fn silent_when_the_array_moves_once() {
        assert!(findings(&DataRegion, &profile(1)).is_empty());
    }
}
