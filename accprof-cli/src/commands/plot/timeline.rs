//! The timeline: one lane per host thread, synchronous device track, async queue and, when the
//! trace has device records, CUDA stream (the tracks of `accprof export`), each reduced to one category per pixel column so that a trace of any
//! size draws as at most lanes x width rectangles.

use super::category::Category;
use crate::commands::export::tracks::{assign_lanes, TrackKind, TrackTable};
use crate::commands::export::Collected;

/// Lanes beyond this are left out of the picture (and said so).
pub const MAX_LANES: usize = 40;

/// One lane: its label and, per pixel column, the category that took most of that column's time.
#[derive(Debug)]
pub struct Lane {
    pub label: String,
    pub columns: Vec<Option<Category>>,
}

#[derive(Debug)]
pub struct Timeline {
    pub lanes: Vec<Lane>,
    /// Lanes not shown because of [`MAX_LANES`].
    pub hidden_lanes: usize,
    /// The time the timeline spans, in ns.
    pub span_ns: u64,
}

/// Bins the slices of `c` into `width` pixel columns per lane.
pub fn build(mut c: Collected, width: usize) -> Timeline {
    assign_lanes(&mut c.slices, &mut c.tracks);
    let tids = c.tracks.thread_ids();
    let intervals = c.slices.iter().filter(|s| !s.is_point());
    let zero = intervals.clone().map(|s| s.start).min().unwrap_or(0);
    let end = intervals.map(|s| s.end).max().unwrap_or(0);
    let span = end.saturating_sub(zero).max(1);
    // Rows in display order: per track, per lane.
    let mut row_of = std::collections::HashMap::new();
    let mut labels = Vec::new();
    for &t in &tids.order {
        let key = c.tracks.key(t);
        let prefix = if c.processes.len() > 1 {
            format!("{}: ", c.processes[key.trace as usize].name)
        } else {
            String::new()
        };
        for lane in 0..tids.lanes(t) {
            row_of.insert((t, lane), labels.len());
            let more = if lane > 0 {
                format!(" ({})", lane + 1)
            } else {
                String::new()
            };
            labels.push(format!(
                "{prefix}{}{more}",
                short_label(&key.kind, &c.tracks, t)
            ));
        }
    }
    let mut time = vec![[0u64; 5]; labels.len() * width];
    let px_ns = span as f64 / width as f64;
    for s in c.slices.iter().filter(|s| !s.is_point()) {
        let row = row_of[&(s.track, s.lane)];
        let cat = s.category().index();
        let (a, b) = (s.start - zero, s.end - zero);
        let first = ((a as f64 / px_ns) as usize).min(width - 1);
        let last = ((b as f64 / px_ns) as usize).min(width - 1);
        for px in first..=last {
            let lo = (px as f64 * px_ns) as u64;
            let hi = ((px + 1) as f64 * px_ns) as u64;
            // At least 1 ns, so that a slice shorter than a pixel still shows.
            let overlap = b.min(hi).saturating_sub(a.max(lo)).max(1);
            time[row * width + px][cat] += overlap;
        }
    }
    let mut lanes: Vec<Lane> = labels
        .into_iter()
        .enumerate()
        .map(|(row, label)| Lane {
            label,
            columns: (0..width)
                .map(|px| dominant(&time[row * width + px]))
                .collect(),
        })
        .collect();
    let hidden_lanes = lanes.len().saturating_sub(MAX_LANES);
    lanes.truncate(MAX_LANES);
    Timeline {
        lanes,
        hidden_lanes,
        span_ns: end.saturating_sub(zero),
    }
}

/// The category with the most time in a column, if any. Ties go to the more specific kind
/// (kernels before data before wait ...), which is the order of [`Category::ALL`].
fn dominant(times: &[u64; 5]) -> Option<Category> {
    let (i, &t) = times.iter().enumerate().rev().max_by_key(|(_, &t)| t)?;
    (t > 0).then_some(Category::ALL[i])
}

fn short_label(kind: &TrackKind, tracks: &TrackTable, track: u32) -> String {
    let thread = |t: &Option<i64>| t.map_or("thread ?".to_string(), |t| format!("thread {t}"));
    match kind {
        TrackKind::Host { thread: t } => format!("host {}", thread(t)),
        TrackKind::Nvtx { thread: t } => format!("NVTX {}", thread(t)),
        TrackKind::DeviceSync { thread: t } => format!("device ({}, sync)", thread(t)),
        TrackKind::DeviceQueue { queue } => format!("device queue {queue}"),
        // What the device did, measured on it: the export's name ("device stream 0x7 (queue 1)").
        TrackKind::DeviceStream { .. } => tracks.label(track),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_category_with_most_time_wins_a_column() {
        assert_eq!(dominant(&[0, 0, 0, 0, 0]), None);
        assert_eq!(dominant(&[5, 9, 0, 0, 1]), Some(Category::Data));
        assert_eq!(dominant(&[3, 3, 0, 0, 3]), Some(Category::Kernels));
    }
}
