//! Lays out and draws the figure: a title, the legend, the per-construct breakdown (stacked
//! horizontal bars) and the timeline (one lane per thread or queue), on any plotters backend, so
//! that SVG and PNG come from the same code.

use super::breakdown::{Row, Sources};
use super::category::{color, Category};
use super::timeline::Timeline;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const WIDTH: u32 = 1200;
const LABEL_W: i32 = 300;
const LEFT: i32 = LABEL_W + 16;
const RIGHT: i32 = WIDTH as i32 - 90;
const ROW_H: i32 = 22;
const LANE_H: i32 = 18;
const FONT: &str = "sans-serif";

/// Width of the plotting area in pixels: the timeline's number of columns.
pub const PLOT_W: usize = (RIGHT - LEFT) as usize;

pub struct Figure {
    pub title: String,
    pub rows: Vec<Row>,
    /// Where the bars' kernel and data times were measured (for the legend and heading).
    pub sources: Sources,
    pub timeline: Timeline,
    pub notes: Vec<String>,
}

impl Figure {
    pub fn height(&self) -> u32 {
        let lanes = self.timeline.lanes.len().max(1) as i32;
        let rows = self.rows.len().max(1) as i32;
        (70 + 40 + rows * ROW_H + 60 + lanes * LANE_H + 44 + self.notes.len() as i32 * 16) as u32
    }
}

type R<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

pub fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, fig: &Figure) -> R<DB> {
    area.fill(&WHITE)?;
    let text = |size: u32| TextStyle::from((FONT, size).into_font()).color(&BLACK);
    let right = |size: u32| text(size).pos(Pos::new(HPos::Right, VPos::Center));
    let left = |size: u32| text(size).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(fig.title.clone(), (16, 24), left(20)))?;
    // Legend, top right; entries as wide as their labels ("kernels [device]" is longer).
    let legend: Vec<(Category, String)> = Category::ALL
        .iter()
        .map(|&c| (c, fig.sources.legend(c)))
        .collect();
    let entry_w = |label: &str| (label.chars().count() as i32 * 7).max(50) + 40;
    let mut x = WIDTH as i32 - 16 - legend.iter().map(|(_, l)| entry_w(l)).sum::<i32>();
    for (c, label) in &legend {
        area.draw(&Rectangle::new([(x, 44), (x + 14, 58)], color(*c).filled()))?;
        area.draw(&Text::new(label.clone(), (x + 20, 51), left(13)))?;
        x += entry_w(label);
    }

    // Breakdown.
    let mut y = 80;
    area.draw(&Text::new(fig.sources.heading(), (16, y), left(15)))?;
    y += 24;
    let max = fig.rows.iter().map(Row::total).max().unwrap_or(0).max(1);
    let scale = |ns: u64| (ns as f64 / max as f64 * f64::from(RIGHT - LEFT)) as i32;
    if fig.rows.is_empty() {
        area.draw(&Text::new(
            "no OpenACC constructs in this trace",
            (LEFT, y + ROW_H / 2),
            left(13),
        ))?;
        y += ROW_H;
    }
    for r in &fig.rows {
        let mid = y + ROW_H / 2;
        area.draw(&Text::new(
            ellipsize(&r.label, 44),
            (LABEL_W, mid),
            right(13),
        ))?;
        let mut x = LEFT;
        let mut acc = 0u64;
        for c in Category::ALL {
            let ns = r.ns[c.index()];
            if ns == 0 {
                continue;
            }
            acc += ns;
            // Ends are placed from the running total, so rounding never piles up.
            let x1 = (LEFT + scale(acc)).max(x + 1);
            area.draw(&Rectangle::new(
                [(x, y + 3), (x1, y + ROW_H - 3)],
                color(c).filled(),
            ))?;
            x = x1;
        }
        area.draw(&Text::new(duration(r.total()), (x + 6, mid), left(12)))?;
        y += ROW_H;
    }

    // Timeline.
    y += 30;
    let tl = &fig.timeline;
    area.draw(&Text::new(
        format!("Timeline ({})", duration(tl.span_ns)),
        (16, y),
        left(15),
    ))?;
    y += 20;
    let top = y;
    if tl.lanes.is_empty() {
        area.draw(&Text::new(
            "no events to show",
            (LEFT, y + LANE_H / 2),
            left(13),
        ))?;
        y += LANE_H;
    }
    for lane in &tl.lanes {
        area.draw(&Text::new(
            ellipsize(&lane.label, 44),
            (LABEL_W, y + LANE_H / 2),
            right(12),
        ))?;
        area.draw(&Rectangle::new(
            [(LEFT, y + 2), (RIGHT, y + LANE_H - 2)],
            RGBColor(240, 240, 240).filled(),
        ))?;
        // Runs of one category become one rectangle.
        let mut px = 0;
        while px < lane.columns.len() {
            let c = lane.columns[px];
            let mut end = px + 1;
            while end < lane.columns.len() && lane.columns[end] == c {
                end += 1;
            }
            if let Some(c) = c {
                let x0 = LEFT + px as i32;
                area.draw(&Rectangle::new(
                    [(x0, y + 2), (LEFT + end as i32, y + LANE_H - 2)],
                    color(c).filled(),
                ))?;
            }
            px = end;
        }
        y += LANE_H;
    }
    // Time axis.
    area.draw(&PathElement::new(
        vec![(LEFT, y + 2), (RIGHT, y + 2)],
        BLACK,
    ))?;
    let step = nice_step(tl.span_ns.max(1), 8);
    let mut t = 0u64;
    while t <= tl.span_ns {
        let x = LEFT + (t as f64 / tl.span_ns.max(1) as f64 * f64::from(RIGHT - LEFT)) as i32;
        area.draw(&PathElement::new(
            vec![(x, top), (x, y + 6)],
            RGBColor(200, 200, 200),
        ))?;
        let label = TextStyle::from((FONT, 11).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(duration(t), (x, y + 8), label))?;
        t += step;
    }
    y += 36;
    if tl.hidden_lanes > 0 {
        area.draw(&Text::new(
            format!("{} more lanes not shown", tl.hidden_lanes),
            (LEFT, y),
            left(12),
        ))?;
        y += 16;
    }
    for n in &fig.notes {
        area.draw(&Text::new(n.clone(), (16, y), left(12)))?;
        y += 16;
    }
    Ok(())
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most `max_ticks` ticks.
fn nice_step(span: u64, max_ticks: u64) -> u64 {
    let raw = span.div_ceil(max_ticks).max(1);
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if p.saturating_mul(m) >= raw {
                return p * m;
            }
        }
        p = p.saturating_mul(10);
    }
}

pub use accprof_timeline::format::duration_compact as duration;

fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max - 1).collect();
    format!("{keep}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(nice_step(1_000, 8), 200);
        assert_eq!(nice_step(154_000, 8), 20_000);
        assert_eq!(nice_step(1, 8), 1);
    }
}
