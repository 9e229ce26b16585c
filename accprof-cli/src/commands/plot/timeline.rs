//! The timeline: one row per lane of every track of the timeline's layout (host threads,
//! their synchronous device work, async queues and, when the trace has device records, CUDA
//! streams: the tracks of `accprof export`), each reduced to one category per pixel column, so
//! that a trace of any size draws as at most rows x width rectangles.
//!
//! The slices stream by ([`Bins`] is the layout's sink): each row sums its time per category in
//! fine bins of a power-of-two width, which doubles (neighbouring bins merged) whenever a slice
//! ends beyond the last bin. Memory is rows x bins, whatever the number of events; at the end
//! the bins are gathered into the picture's columns.

use super::category::Category;
use accprof_timeline::{CompactEvent, DeviceSlice, NameStyle, Sink, TrackId, TrackTable};
use rustc_hash::FxHashMap;

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

/// Busy time per category in one bin.
type Times = [u64; 5];

/// The layout's sink for the plot: every row's time per category, in bins.
#[derive(Debug)]
pub struct Bins {
    /// Bins per row.
    count: usize,
    /// Nanoseconds per bin (a power of two).
    bin_ns: u64,
    zero: u64,
    /// The latest end of a slice (not an instant).
    end: Option<u64>,
    rows: FxHashMap<(TrackId, u16), Vec<Times>>,
}

impl Bins {
    /// Bins enough for a picture `width` columns wide.
    pub fn new(width: usize) -> Self {
        Bins {
            count: 2 * width.max(1),
            bin_ns: 1,
            zero: 0,
            end: None,
            rows: FxHashMap::default(),
        }
    }

    fn add(&mut self, s: &CompactEvent) {
        if s.is_point() {
            return;
        }
        let (a, b) = (
            s.start.saturating_sub(self.zero),
            s.end.saturating_sub(self.zero),
        );
        self.end = Some(self.end.map_or(s.end, |e| e.max(s.end)));
        while b / self.bin_ns >= self.count as u64 {
            self.coarsen();
        }
        let row = self
            .rows
            .entry((s.track, s.lane))
            .or_insert_with(|| vec![[0; 5]; self.count]);
        let cat = s.category().index();
        // A slice ending on a bin's edge takes nothing of the bin after it.
        let last = if b > a {
            (b - 1) / self.bin_ns
        } else {
            a / self.bin_ns
        };
        let (first, last) = ((a / self.bin_ns) as usize, last as usize);
        for (bin, times) in row.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = bin as u64 * self.bin_ns;
            let hi = lo + self.bin_ns;
            // At least 1 ns, so that a slice shorter than a pixel still shows.
            times[cat] += b.min(hi).saturating_sub(a.max(lo)).max(1);
        }
    }

    /// Doubles the bins' width, each new bin the sum of two.
    fn coarsen(&mut self) {
        for row in self.rows.values_mut() {
            for i in 0..row.len() / 2 {
                let (x, y) = (row[2 * i], row[2 * i + 1]);
                row[i] = std::array::from_fn(|c| x[c] + y[c]);
            }
            let half = row.len() / 2;
            row[half..].fill([0; 5]);
        }
        self.bin_ns *= 2;
    }

    /// The picture: `width` columns per row, rows in the tracks' display order; `process` names
    /// a trace for the labels when there are several.
    pub fn into_timeline(
        self,
        tracks: &TrackTable,
        width: usize,
        process: Option<&dyn Fn(u16) -> String>,
    ) -> Timeline {
        let width = width.max(1);
        let span = self.end.map_or(0, |e| e.saturating_sub(self.zero));
        let px_ns = span.max(1) as f64 / width as f64;
        let mut lanes = Vec::new();
        for t in tracks.display_order() {
            let key = tracks.key(t);
            let name = tracks.name(t, NameStyle::Full);
            let prefix = process.map_or(String::new(), |p| format!("{}: ", p(key.trace)));
            for lane in 0..tracks.lanes(t) {
                let mut columns = vec![[0u64; 5]; width];
                if let Some(row) = self.rows.get(&(t, lane)) {
                    for (bin, times) in row.iter().enumerate() {
                        if times.iter().all(|&x| x == 0) {
                            continue;
                        }
                        let mid = (bin as f64 + 0.5) * self.bin_ns as f64;
                        let px = ((mid / px_ns) as usize).min(width - 1);
                        for c in 0..5 {
                            columns[px][c] += times[c];
                        }
                    }
                }
                let label = if lane == 0 {
                    format!("{prefix}{name}")
                } else {
                    format!("{prefix}{name} ({})", lane + 1)
                };
                lanes.push(Lane {
                    label,
                    columns: columns.iter().map(dominant).collect(),
                });
            }
        }
        let hidden_lanes = lanes.len().saturating_sub(MAX_LANES);
        lanes.truncate(MAX_LANES);
        Timeline {
            lanes,
            hidden_lanes,
            span_ns: span,
        }
    }
}

impl Sink for Bins {
    type Error = std::convert::Infallible;

    fn start(&mut self, zero: u64) -> Result<(), Self::Error> {
        self.zero = zero;
        Ok(())
    }

    fn slice(&mut self, _: &TrackTable, s: &CompactEvent, _: &[u64]) -> Result<(), Self::Error> {
        self.add(s);
        Ok(())
    }

    fn device(
        &mut self,
        _: &TrackTable,
        s: &CompactEvent,
        _: &DeviceSlice,
    ) -> Result<(), Self::Error> {
        self.add(s);
        Ok(())
    }
}

/// The category with the most time in a column, if any. Ties go to the more specific kind
/// (kernels before data before wait ...), which is the order of [`Category::ALL`].
fn dominant(times: &Times) -> Option<Category> {
    let (i, &t) = times.iter().enumerate().rev().max_by_key(|(_, &t)| t)?;
    (t > 0).then_some(Category::ALL[i])
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

    #[test]
    fn bins_double_as_the_run_grows_and_keep_short_slices() {
        let ev = accprof_trace::Event::new(accprof_abi::acc_event_t::ENQUEUE_LAUNCH_START, 0);
        let mut s = CompactEvent::from_event(&ev, 0, 0, |t| t);
        let mut bins = Bins::new(4);
        s.end = 2;
        bins.add(&s);
        assert_eq!(bins.bin_ns, 1);
        (s.start, s.end) = (900, 901);
        bins.add(&s);
        assert_eq!(bins.bin_ns, 128, "8 bins of 128 ns cover 901 ns");
        let row = &bins.rows[&(0, 0)];
        let cat = s.category().index();
        assert_eq!(row[0][cat], 2);
        assert_eq!(row[7][cat], 1);
    }
}
