//! The per-construct breakdown: for the constructs that took the most host time, how that time
//! splits into kernels, data, wait, init and the rest (host), from accprof-analysis's
//! [`Profile`].

use super::category::Category;
use accprof_analysis::{ChildKind, Construct, ConstructKind, Profile};

/// Constructs shown at most; the rest are summed in a last row.
pub const MAX_ROWS: usize = 15;

/// One bar: a construct and its time per category (indexed by [`Category::index`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub ns: [u64; 5],
}

impl Row {
    pub fn total(&self) -> u64 {
        self.ns.iter().sum()
    }
}

/// The rows for the `MAX_ROWS` constructs with the most host time, longest first, plus one row
/// summing the others when there are more.
pub fn rows(profile: &Profile) -> Vec<Row> {
    let top = profile.top_constructs(usize::MAX);
    let mut rows: Vec<Row> = top.iter().take(MAX_ROWS).map(|(_, c)| row(c)).collect();
    let rest = &top[top.len().min(MAX_ROWS)..];
    if !rest.is_empty() {
        let mut other = Row { label: format!("{} other constructs", rest.len()), ns: [0; 5] };
        for (_, c) in rest {
            for (o, v) in other.ns.iter_mut().zip(row(c).ns) {
                *o += v;
            }
        }
        rows.push(other);
    }
    rows.retain(|r| r.total() > 0);
    rows
}

fn row(c: &Construct) -> Row {
    let t = |k: ChildKind| c.child_total(k).2;
    let mut ns = [0u64; 5];
    let own = c.own_time_ns();
    ns[Category::Kernels.index()] = t(ChildKind::Launch);
    ns[Category::Data.index()] = t(ChildKind::Upload)
        + t(ChildKind::Download)
        + t(ChildKind::Alloc)
        + t(ChildKind::Free)
        + t(ChildKind::Create)
        + t(ChildKind::Delete);
    ns[Category::Wait.index()] = t(ChildKind::Wait);
    // A wait directive is all waiting, device init all init; elsewhere what the children do not
    // cover is the host's own time in the construct.
    let rest = match c.kind {
        ConstructKind::Wait => Category::Wait,
        ConstructKind::Init => Category::Init,
        _ => Category::Host,
    };
    ns[rest.index()] += own;
    Row { label: label(c), ns }
}

/// "parallel laplace.c:42 (x1000)".
fn label(c: &Construct) -> String {
    // Compute constructs by their type (parallel, kernels, serial); the rest by what they are.
    let what = match c.kind {
        ConstructKind::Compute => c.construct_type.clone().unwrap_or_else(|| "compute".into()),
        other => other.label().to_string(),
    };
    let loc = c.location.short();
    let at = if loc == "?" { String::new() } else { format!(" {loc}") };
    let reached = if c.reached > 1 { format!(" (x{})", c.reached) } else { String::new() };
    format!("{what}{at}{reached}")
}
