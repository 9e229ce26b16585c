//! The constructs-and-kernels table: every distinct construct, kernel and transfer (by kind,
//! name and source location) with its count, total and average time and data bytes, each row
//! saying where its time was measured (`[host]` or `[device]`).
//!
//! Host events are counted while the trace is read, so the table costs one hash lookup per event
//! and no second pass over ten million events. Those counts are host times.
//!
//! For traces with device records, the kernel and transfer rows are not counted here: they come
//! from accprof-analysis's [`accprof_analysis::Profile`] (its kernels and transfer sites), which
//! ties every device record to the launch or transfer the runtime reported, or to the construct
//! open when the runtime reported none (GCC reports no transfers), and prefers the device's time
//! as NV_ACC_TIME does. We switch to the Profile's rows rather than adding device columns to
//! ours because a device-only transfer has no host event to hang a column on. The Profile is
//! built in the background (with the advice), so those rows appear when it is done; the host
//! enqueue time stays beside the device time in the "host" column.

use crate::state::constructs::RowKey;
use crate::state::kind::kind_of_code;
use crate::state::store::Store;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_analysis::source::RegionEnds;
use accprof_analysis::{Profile, TimeSource};
use accprof_trace::device;
use std::collections::HashMap;

/// One row as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    pub what: String,
    /// The events the row counts: a host event's kind (the start event of a pair); the enqueue
    /// event for kernel and transfer rows taken from a profile, whichever clock timed them;
    /// `device::MEMSET` for memsets.
    pub event: acc_event_t,
    pub count: u64,
    pub total_ns: u64,
    pub bytes: u64,
    /// Where `total_ns` was measured.
    pub time_source: TimeSource,
    /// The host enqueue calls' time of a device-timed row, when the runtime reported them.
    pub host_ns: Option<u64>,
    /// The record Enter jumps to.
    pub jump: Option<u32>,
}

impl TableRow {
    pub fn avg_ns(&self) -> u64 {
        self.total_ns.checked_div(self.count).unwrap_or(0)
    }

    /// `[host]` or `[device]`.
    pub fn source_label(&self) -> &'static str {
        match self.time_source {
            TimeSource::Host => "[host]",
            TimeSource::Device => "[device]",
        }
    }
}

/// The label of a host-counted row whose first event is `rec`.
fn host_label(store: &Store, key: &RowKey, rec: u32, region_ends: &[RegionEnds]) -> String {
    let r = rec as usize;
    let data = store.records.parent[r] == acc_construct_t::DATA.0 as u8;
    let ends = region_ends.get(usize::from(store.records.source[r]));
    let closing = ends.filter(|_| data).and_then(|ends| {
        let file = store.str(store.records.file[r])?;
        let function = match key {
            RowKey::Construct(k) => k.func.and_then(|f| store.str(f.0)),
            RowKey::Event(_) => None,
        };
        ends.exit_line(file, function, i64::from(store.records.line[r]))
    });
    let line = closing.and_then(|l| i32::try_from(l).ok());
    store.row_label_at(rec, line.unwrap_or(store.records.line[r]))
}

/// A kernel or transfer row from a profile, before its evidence event is mapped to a record.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRow {
    pub row: TableRow,
    /// The evidence event's index in its trace (accprof-analysis numbering).
    pub sample: Option<u64>,
}

/// The kernel and transfer rows of one trace's profile (device-timed where it has device
/// records), plus its device memsets.
pub fn profile_rows(p: &Profile) -> Vec<ProfileRow> {
    let mut out = Vec::new();
    let loc = |c: Option<usize>| {
        p.construct(c)
            .map(|c| format!(" {}", c.location.short()))
            .unwrap_or_default()
    };
    let host = |t: &accprof_analysis::Timing, host: &accprof_analysis::Timing| {
        (t.source == TimeSource::Device && host.count > 0).then_some(host.total_ns)
    };
    for k in &p.kernels {
        let name = if k.time.source == TimeSource::Device {
            "kernel"
        } else {
            "launch"
        };
        let count = if k.launches > 0 {
            k.launches
        } else {
            k.time.count
        };
        out.push(ProfileRow {
            row: TableRow {
                what: format!("{name} {}{}", k.name, loc(k.construct)),
                event: acc_event_t::ENQUEUE_LAUNCH_START,
                count,
                total_ns: k.time.total_ns,
                bytes: 0,
                time_source: k.time.source,
                host_ns: host(&k.time, &k.host_time),
                jump: None,
            },
            sample: k.samples.first().map(|s| s.index),
        });
    }
    for site in &p.transfer_sites {
        let var = p
            .variables
            .get(site.variable)
            .map(|v| v.name.as_str())
            .unwrap_or("?");
        let (dir, event) = match site.direction {
            accprof_analysis::Direction::HostToDevice => {
                ("upload", acc_event_t::ENQUEUE_UPLOAD_START)
            }
            accprof_analysis::Direction::DeviceToHost => {
                ("download", acc_event_t::ENQUEUE_DOWNLOAD_START)
            }
        };
        out.push(ProfileRow {
            row: TableRow {
                what: format!("{dir} {var}{}", loc(site.construct)),
                event,
                count: site.count,
                total_ns: site.time.total_ns,
                bytes: site.bytes,
                time_source: site.time.source,
                host_ns: host(&site.time, &site.host_time),
                jump: None,
            },
            sample: site.samples.first().map(|s| s.index),
        });
    }
    let m = &p.summary.memsets;
    if m.count > 0 {
        out.push(ProfileRow {
            row: TableRow {
                what: "memset (device)".into(),
                event: device::MEMSET,
                count: m.count,
                total_ns: m.total_ns,
                bytes: p.summary.memset_bytes,
                time_source: m.source,
                host_ns: None,
                jump: None,
            },
            sample: None,
        });
    }
    out
}

/// The rows, in no particular order (the table view sorts them): the host-counted rows, and
/// `from_profiles` (kernels and transfers of traces with device records), rows of the same name
/// from several traces summed.
///
/// A host row of a data region's exit (its event's parent construct is a data construct) is
/// shown at the region's closing line where its trace's source is at hand (`region_ends`, per
/// source: [`RegionEnds::exit_line`], the rule the report's profile follows), not at the
/// statement inside the region where the runtime reported it.
pub fn rows(
    store: &Store,
    from_profiles: &[TableRow],
    region_ends: &[RegionEnds],
) -> Vec<TableRow> {
    let mut rows: Vec<TableRow> = store
        .constructs
        .map
        .iter()
        .map(|(key, s)| TableRow {
            what: host_label(store, key, s.first_rec, region_ends),
            event: kind_of_code(store.records.kind[s.first_rec as usize]),
            count: s.count,
            total_ns: s.total_ns,
            bytes: s.bytes,
            time_source: TimeSource::Host,
            host_ns: None,
            jump: Some(s.first_rec),
        })
        .collect();
    let mut index: HashMap<(String, TimeSource), usize> = HashMap::new();
    for r in from_profiles {
        match index.get(&(r.what.clone(), r.time_source)) {
            Some(&i) => {
                let m = &mut rows[i];
                m.count += r.count;
                m.total_ns += r.total_ns;
                m.bytes += r.bytes;
                m.host_ns = match (m.host_ns, r.host_ns) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
                m.jump = m.jump.or(r.jump);
            }
            None => {
                index.insert((r.what.clone(), r.time_source), rows.len());
                rows.push(r.clone());
            }
        }
    }
    rows
}
