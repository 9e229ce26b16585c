//! The visible time window and the mapping between terminal columns and nanoseconds.

/// The narrowest window: one nanosecond per cell is as far as timestamps go.
const MIN_NS_PER_CELL: u64 = 1;

/// `[t0, t0 + span)` on the store's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewport {
    pub t0: u64,
    pub span: u64,
}

impl Viewport {
    /// A window showing all of `[start, end]`.
    pub fn fit(start: u64, end: u64) -> Self {
        Self {
            t0: start,
            span: (end.saturating_sub(start)).max(1),
        }
    }

    pub fn end(&self) -> u64 {
        self.t0.saturating_add(self.span)
    }

    /// The time range of column `col` of `width`.
    pub fn cell(&self, col: u16, width: u16) -> (u64, u64) {
        (self.time_at(col, width), self.time_at(col + 1, width))
    }

    /// The time at the left edge of column `col`.
    pub fn time_at(&self, col: u16, width: u16) -> u64 {
        let w = u128::from(width.max(1));
        self.t0 + (u128::from(self.span) * u128::from(col) / w) as u64
    }

    /// The column holding time `t` (fractional), which may lie outside `0..width`.
    pub fn col_of(&self, t: u64, width: u16) -> f64 {
        (t as f64 - self.t0 as f64) / self.span as f64 * f64::from(width.max(1))
    }

    /// Zooms by `factor` (< 1 zooms in) keeping time `anchor` at the same column.
    pub fn zoom(&mut self, factor: f64, anchor: u64, width: u16) {
        let anchor = anchor.clamp(self.t0, self.end());
        let min_span = MIN_NS_PER_CELL * u64::from(width.max(1));
        let new_span = ((self.span as f64 * factor).round() as u64).max(min_span);
        let frac = (anchor - self.t0) as f64 / self.span as f64;
        self.t0 = anchor.saturating_sub((frac * new_span as f64).round() as u64);
        self.span = new_span;
    }

    /// Moves by `frac` of the window (negative: to the left).
    pub fn pan(&mut self, frac: f64) {
        let d = (self.span as f64 * frac.abs()).round().max(1.0) as u64;
        self.t0 = if frac < 0.0 {
            self.t0.saturating_sub(d)
        } else {
            self.t0.saturating_add(d)
        };
    }

    /// Keeps the window overlapping `[start, end]` and no wider than a bit more than it.
    pub fn clamp_to(&mut self, start: u64, end: u64) {
        let total = end.saturating_sub(start).max(1);
        let max_span = total + total / 10 + 1;
        if self.span > max_span {
            self.span = max_span;
        }
        let lo = start.saturating_sub(self.span / 2);
        let hi = end.saturating_sub(self.span / 2);
        self.t0 = self.t0.clamp(lo.min(hi), hi.max(lo));
    }

    /// Shows `[a, b]` with a small margin on both sides.
    pub fn show_range(&mut self, a: u64, b: u64, width: u16) {
        let len = b
            .saturating_sub(a)
            .max(u64::from(width.max(1)) * MIN_NS_PER_CELL);
        let margin = len / 8;
        self.t0 = a.saturating_sub(margin);
        self.span = len + 2 * margin;
    }

    /// Pans (without zooming) so that `[a, b]` is on screen, if it is not already.
    pub fn reveal(&mut self, a: u64, b: u64) {
        if a >= self.t0 && b <= self.end() {
            return;
        }
        let mid = a / 2 + b / 2;
        self.t0 = mid.saturating_sub(self.span / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let mut v = Viewport { t0: 0, span: 1000 };
        v.zoom(0.5, 250, 100);
        assert_eq!(v, Viewport { t0: 125, span: 500 });
        assert_eq!(v.col_of(250, 100), 25.0);
    }

    #[test]
    fn columns_tile_the_window() {
        let v = Viewport { t0: 10, span: 1000 };
        assert_eq!(v.cell(0, 100), (10, 20));
        assert_eq!(v.cell(99, 100), (1000, 1010));
    }
}
