//! The per-construct breakdown: for the constructs that took the most host time, how that time
//! splits into kernels, data, wait, init and the rest (host), from accprof-analysis's
//! [`Profile`].
//!
//! Where the trace has device records, the analysis gives kernels and copies their device time
//! (`TimeSource::Device`) and the bars show that: [`Sources`] says which, for the labels.

use super::category::Category;
use accprof_analysis::{ChildKind, Construct, ConstructKind, Profile, TimeSource};

/// Where the kernel and data times of the bars were measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sources {
    pub kernels: TimeSource,
    pub data: TimeSource,
}

impl Sources {
    pub fn of(profile: &Profile) -> Self {
        let s = &profile.summary;
        let device = |t: &accprof_analysis::Timing| t.source == TimeSource::Device;
        let pick = |d: bool| {
            if d {
                TimeSource::Device
            } else {
                TimeSource::Host
            }
        };
        Sources {
            kernels: pick(device(&s.kernels)),
            data: pick(device(&s.uploads) || device(&s.downloads)),
        }
    }

    /// Whether any category of the bars is device time.
    pub fn any_device(&self) -> bool {
        self.kernels == TimeSource::Device || self.data == TimeSource::Device
    }

    /// Where `c`'s time was measured.
    pub fn of_category(&self, c: Category) -> TimeSource {
        match c {
            Category::Kernels => self.kernels,
            Category::Data => self.data,
            _ => TimeSource::Host,
        }
    }

    /// The legend entry of `c`: "kernels [device]" where the device measured it.
    pub fn legend(&self, c: Category) -> String {
        match self.of_category(c) {
            TimeSource::Device => format!("{} [device]", c.label()),
            TimeSource::Host => c.label().to_string(),
        }
    }

    /// The breakdown's heading.
    pub fn heading(&self) -> String {
        let device: Vec<&str> = [Category::Kernels, Category::Data]
            .into_iter()
            .filter(|&c| self.of_category(c) == TimeSource::Device)
            .map(Category::label)
            .collect();
        if device.is_empty() {
            "Host time per construct (longest first)".to_string()
        } else {
            format!(
                "Time per construct (longest first): {} [device], the rest [host]",
                device.join(" and ")
            )
        }
    }
}

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
        let mut other = Row {
            label: format!("{} other constructs", rest.len()),
            ns: [0; 5],
        };
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
    Row {
        label: label(c),
        ns,
    }
}

/// "parallel laplace.c:42 (x1000)".
fn label(c: &Construct) -> String {
    // Compute constructs by their type (parallel, kernels, serial); the rest by what they are.
    let what = match c.kind {
        ConstructKind::Compute => c.construct_type.clone().unwrap_or_else(|| "compute".into()),
        other => other.label().to_string(),
    };
    let loc = c.location.short();
    let at = if loc == "?" {
        String::new()
    } else {
        format!(" {loc}")
    };
    let reached = if c.reached > 1 {
        format!(" (x{})", c.reached)
    } else {
        String::new()
    };
    format!("{what}{at}{reached}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn gpu_profile(name: &str) -> Profile {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../traces/gpu")
            .join(format!("{name}.trace"));
        Profile::from_path(&p).unwrap()
    }

    #[test]
    fn bars_of_a_trace_with_device_records_show_device_time() {
        let profile = gpu_profile("shim_naive");
        let sources = Sources::of(&profile);
        assert_eq!(
            sources,
            Sources {
                kernels: TimeSource::Device,
                data: TimeSource::Device
            }
        );
        assert_eq!(sources.legend(Category::Kernels), "kernels [device]");
        assert_eq!(sources.legend(Category::Wait), "wait");
        let top = profile.top_constructs(1)[0].1;
        let device_ns = |kinds: &[ChildKind]| -> u64 {
            top.children
                .iter()
                .filter(|c| kinds.contains(&c.kind))
                .inspect(|c| assert_eq!(c.time.source, TimeSource::Device, "{c:?}"))
                .map(|c| c.time.total_ns)
                .sum()
        };
        let r = &rows(&profile)[0];
        assert_eq!(
            r.ns[Category::Kernels.index()],
            device_ns(&[ChildKind::Launch])
        );
        assert!(r.ns[Category::Kernels.index()] > 0);
        // The launches' host time differs from their device time: the bar shows the latter.
        let host: u64 = top
            .children
            .iter()
            .filter(|c| c.kind == ChildKind::Launch)
            .map(|c| c.host_time.total_ns)
            .sum();
        assert_ne!(host, r.ns[Category::Kernels.index()]);
    }

    #[test]
    fn a_trace_without_device_records_keeps_host_labels() {
        let sources = Sources::of(&Profile::default());
        assert!(!sources.any_device());
        assert_eq!(sources.heading(), "Host time per construct (longest first)");
        assert_eq!(sources.legend(Category::Data), "data");
    }
}
