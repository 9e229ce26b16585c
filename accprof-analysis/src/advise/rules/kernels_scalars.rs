//! A `kernels` construct copying its scalars back to the host after every launch.
//!
//! In a `kernels` construct every scalar the region uses is implicitly `copy`: copied in before
//! and out after each launch. GCC maps a Fortran routine's scalar dummy arguments that way (they
//! are references), so a kernel in a routine taking loop bounds and coefficients moves a dozen
//! 4-8 byte cells each way per launch, each one a separate copy (CloverLeaf: 17 per construct).
//! On a GPU each costs a synchronous round trip. Naming the scalars it only reads in `copyin`,
//! or a `parallel` construct (whose scalars are firstprivate), stops the copies back.
//!
//! The trace shows them as the runtime's own small transfers (unnamed cells, see
//! [`crate::runtime_internal`]); only the source tells a `kernels` construct, so the rule needs
//! it at hand.

use crate::advise::*;
use crate::format::{duration, thousands};
use crate::model::*;
use crate::source::{directive, SourceText};
use std::collections::HashMap;

/// Copies back per launch from which the rule speaks: one is a reduction's result cell.
const MIN_PER_LAUNCH: u64 = 2;
/// Launches from which a per-launch cost matters.
const MIN_REACHED: u64 = 10;
/// The largest scalar (a double complex).
const MAX_SCALAR_BYTES: u64 = 16;

/// The rule's checker, for [`AdviceRule`].
#[derive(Debug, Default)]
pub struct KernelsScalars;

impl AdviceRule for KernelsScalars {
    fn rules(&self) -> &'static [Rule] {
        &[Rule::KernelsScalars]
    }

    fn check(&self, p: &Profile, claimed: &mut Claimed, out: &mut Vec<Finding>) {
        kernels_scalars(p, claimed, out);
    }
}

/// Per construct: (cells copied back, their copies, their time, copies in of cells).
#[derive(Default, Clone, Copy)]
struct Cells {
    back: u64,
    back_copies: u64,
    back_ns: u64,
    in_copies: u64,
}

fn kernels_scalars(p: &Profile, claimed: &Claimed, out: &mut Vec<Finding>) {
    let mut per: HashMap<usize, Cells> = HashMap::new();
    for s in &p.transfer_sites {
        let Some(c) = s.construct else { continue };
        // A scalar's cell: the runtime's own (unnamed, small) or a named one no larger than a
        // scalar (gfortran keeps an initialized local as a static `x_lo.5`, which the symbol
        // table names).
        let v = &p.variables[s.variable];
        let scalar = s.count > 0 && s.bytes / s.count <= MAX_SCALAR_BYTES;
        if !(scalar || crate::runtime_internal::is_runtime_internal(v)) {
            continue;
        }
        let e = per.entry(c).or_default();
        match s.direction {
            Direction::DeviceToHost => {
                e.back += 1;
                e.back_copies += s.count;
                e.back_ns += s.time.total_ns;
            }
            Direction::HostToDevice => e.in_copies += s.count,
        }
    }
    let mut constructs: Vec<(usize, Cells)> = per.into_iter().collect();
    constructs.sort_by_key(|(c, _)| *c);
    // (construct, kernels directive line, cells)
    let mut hits: Vec<(&Construct, i64, Cells)> = Vec::new();
    for (ci, cells) in constructs {
        let c = &p.constructs[ci];
        if claimed.constructs.contains(&ci)
            || c.kind != ConstructKind::Compute
            || c.reached < MIN_REACHED
            || cells.back_copies < MIN_PER_LAUNCH * c.reached
        {
            continue;
        }
        let (Some(file), Some(line)) = (c.location.file.as_deref(), c.location.line) else {
            continue;
        };
        let Some(src) = crate::source::read_matching(p, file, &[line]) else {
            continue;
        };
        if let Some(at) = kernels_directive(&src, line) {
            hits.push((c, at, cells));
        }
    }
    // One cause, one finding: a code written with kernels constructs in routines taking scalar
    // arguments has dozens (CloverLeaf: 72), each listed in the evidence by cost.
    hits.sort_by_key(|(_, _, cells)| std::cmp::Reverse(cells.back_ns));
    let Some(&(top, at, _)) = hits.first() else {
        return;
    };
    let file = top.location.file.as_deref().unwrap_or("");
    let place = |c: &Construct, at: i64| {
        format!(
            "{}:{at}",
            file_name(c.location.file.as_deref().unwrap_or("?"))
        )
    };
    let copies: u64 = hits.iter().map(|(_, _, k)| k.back_copies).sum();
    let time: u64 = hits.iter().map(|(_, _, k)| k.back_ns).sum();
    let per_launch = |c: &Construct, k: &Cells| k.back_copies / c.reached.max(1);
    let title = match hits.as_slice() {
        [(c, at, k)] => format!(
            "kernels construct at {} copies {} scalars back to the host after each of its {} launches",
            place(c, *at),
            per_launch(c, k),
            c.reached
        ),
        _ => format!(
            "{} kernels constructs copy the scalars they use back to the host after every launch ({} copies)",
            hits.len(),
            thousands(copies)
        ),
    };
    let mut details = vec![format!(
        "{} copies device->host of small cells, costing {} here; on a GPU each is a synchronous transfer of several microseconds",
        thousands(copies),
        duration(time)
    )];
    details.extend(hits.iter().take(5).map(|(c, at, k)| {
        format!(
            "{}: {} scalars back after each of {} launches ({} copies in before them), {}",
            place(c, *at),
            per_launch(c, k),
            thousands(c.reached),
            thousands(k.in_copies),
            duration(k.back_ns)
        )
    }));
    if hits.len() > 5 {
        details.push(format!("and {} more kernels constructs", hits.len() - 5));
    }
    let mut loc = FindingLocation::of(top);
    loc.line = Some(at);
    out.push(Finding {
        rule: Rule::KernelsScalars,
        title,
        location: loc,
        evidence: Evidence {
            count: copies,
            bytes: 0,
            time_ns: time,
            details,
        },
        estimated_saving_ns: time,
        change: format!(
            "scalars in a kernels construct are copied in and out (implicit copy; GCC passes a Fortran routine's scalar arguments so): name the ones it only reads in `copyin(...)` on the kernels directive (line {at} first), or make it `{}` (scalars there are firstprivate: copied in only)",
            directive(Some(file), "parallel loop")
        ),
        events: top.samples.clone(),
        time_ranges: hits.iter().map(|(c, _, _)| (c.first_ns, c.last_ns)).collect(),
    });
}

/// The line of the `kernels` directive that opens the construct seen at `line`: that line, or
/// one of the three before it (GCC places a Fortran `kernels` region at the loop directive or
/// statement after its directive). Only `loop` directives lie between.
fn kernels_directive(src: &SourceText, line: i64) -> Option<i64> {
    for l in (line.saturating_sub(3).max(1)..=line).rev() {
        if !src.is_directive(l) {
            continue;
        }
        let text = src.directive_text(l).to_ascii_lowercase();
        let mut words = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty());
        words.find(|w| *w == "acc")?;
        match words.next()? {
            "kernels" => return Some(l),
            "loop" => continue,
            // `parallel`, `serial`, `end kernels`, a data directive: not a kernels construct.
            _ => return None,
        }
    }
    None
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::rules::testing::*;
    use accprof_abi::acc_event_t;
    use accprof_trace::Event;

    /// An 8-byte unnamed cell number `i` at a stack address, copied at `s` (`kind`: upload or
    /// download) by the construct at `line`.
    fn cell(r: &mut Run, kind: acc_event_t, s: u64, line: i64, i: u64) -> Event {
        let mut e = r.ev(kind, s, s + US / 2, line);
        e.set(accprof_trace::Field::Bytes, 8);
        e.set(accprof_trace::Field::HostPtr, 0x7ffd_1000 + i * 8);
        e
    }

    /// The rule's findings for the run `r` with its constructs in a source file `name` holding
    /// `text` (written to a scratch directory, removed after).
    fn with_source(name: &str, text: &str, r: Run) -> Vec<Finding> {
        let dir = std::env::temp_dir().join(format!(
            "accprof-kernels-rule-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let wall = r.now;
        let mut p = r.profile(wall);
        p.constructs
            .iter_mut()
            .for_each(|c| c.location.file = Some(path.display().to_string()));
        let f = findings(&KernelsScalars, &p);
        let _ = std::fs::remove_dir_all(&dir);
        f
    }

    /// 20 launches of a construct at line 42 of a source whose lines 40-42 are `lines`, each
    /// copying `cells` 8-byte cells at stack addresses in and back out.
    fn run(name: &str, lines: [&str; 3], cells: u64) -> Vec<Finding> {
        let text = "\n".repeat(39) + &lines.join("\n") + "\nx = 1\n";
        let mut r = Run::new();
        for _ in 0..20 {
            r.compute(42, MS, MS, |r, t| {
                let kinds = [
                    acc_event_t::ENQUEUE_UPLOAD_START,
                    acc_event_t::ENQUEUE_DOWNLOAD_START,
                ];
                (0..2u64)
                    .flat_map(|k| (0..cells).map(move |c| (k, c)))
                    .map(|(k, c)| cell(r, kinds[k as usize], t + (k * 100 + c + 1) * US, 42, c))
                    .collect()
            });
        }
        with_source(&format!("{cells}-{name}"), &text, r)
    }

    /// As GCC reports it: the construct at the loop directive after `kernels`.
    const FORTRAN_KERNELS: [&str; 3] = ["", "!$ACC KERNELS", "!$ACC LOOP INDEPENDENT"];

    #[test]
    fn fires_on_a_kernels_construct_copying_scalars_back() {
        let f = run("k.f90", FORTRAN_KERNELS, 6);
        assert_eq!(rules_of(&f), [Rule::KernelsScalars]);
        assert_eq!(f[0].location.line, Some(41), "at the kernels directive");
        assert!(
            f[0].title.contains("copies 6 scalars back"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].change.contains("`!$acc parallel loop`"),
            "{}",
            f[0].change
        );
    }

    #[test]
    fn named_scalar_cells_count_too() {
        // On a GPU with libgomp the symbol table names gfortran's static locals (`x_lo.5`).
        let mut r = Run::new();
        for _ in 0..20 {
            r.compute(42, MS, MS, |r, t| {
                ["x_lo.5", "x_hi.4", "y_lo.3"]
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let s = t + (i as u64 + 1) * US;
                        r.transfer(
                            acc_event_t::ENQUEUE_DOWNLOAD_START,
                            s,
                            s + US / 2,
                            42,
                            n,
                            4,
                            0x5500_0000 + i as u64 * 4,
                        )
                    })
                    .collect()
            });
        }
        let f = with_source("named.f90", &("\n".repeat(41) + "!$acc kernels\n"), r);
        assert_eq!(rules_of(&f), [Rule::KernelsScalars]);
        assert!(
            f[0].title.contains("copies 3 scalars back"),
            "{}",
            f[0].title
        );
    }

    #[test]
    fn silent_on_a_reduction_cell_and_on_parallel_constructs() {
        assert!(
            run("r.f90", FORTRAN_KERNELS, 1).is_empty(),
            "one cell: a reduction"
        );
        let parallel = ["!$acc kernels", "!$acc end kernels", "!$acc parallel loop"];
        assert!(run("p.f90", parallel, 6).is_empty());
        let c = ["", "", "#pragma acc kernels loop"];
        assert_eq!(rules_of(&run("k.c", c, 6)), [Rule::KernelsScalars]);
    }

    /// 20 launches of the construct at `line`, each copying 3 cells back.
    fn copies_back(r: &mut Run, line: i64) {
        for _ in 0..20 {
            r.compute(line, MS, MS, |r, t| {
                let download = acc_event_t::ENQUEUE_DOWNLOAD_START;
                (0..3)
                    .map(|c| cell(r, download, t + (c + 1) * US, line, c))
                    .collect()
            });
        }
    }

    #[test]
    fn several_kernels_constructs_are_one_finding() {
        let mut r = Run::new();
        copies_back(&mut r, 40);
        copies_back(&mut r, 41);
        let text = "\n".repeat(39) + "!$acc kernels\n!$acc kernels\n";
        let f = with_source("two.f90", &text, r);
        assert_eq!(rules_of(&f), [Rule::KernelsScalars]);
        assert!(
            f[0].title.starts_with("2 kernels constructs copy"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].evidence.count, 120);
        assert_eq!(
            f[0].evidence.details.len(),
            3,
            "{:?}",
            f[0].evidence.details
        );
    }

    #[test]
    fn silent_without_the_source() {
        let mut r = Run::new();
        copies_back(&mut r, 42);
        let wall = r.now;
        assert!(findings(&KernelsScalars, &r.profile(wall)).is_empty());
    }
}
