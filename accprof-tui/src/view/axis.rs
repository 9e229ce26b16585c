//! The time axis under the timeline: ticks at round intervals, labelled relative to the start of
//! the trace in a unit that fits the zoom.

use crate::view::viewport::Viewport;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};

/// A round tick interval (1, 2 or 5 times a power of ten ns) giving ticks about `min_cols` apart.
pub fn tick_step(span: u64, width: u16, min_cols: u16) -> u64 {
    let raw = (span as f64 * f64::from(min_cols) / f64::from(width.max(1))).max(1.0);
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = p.saturating_mul(m);
            if step as f64 >= raw {
                return step;
            }
        }
        if p > u64::MAX / 10 {
            return p;
        }
        p *= 10;
    }
}

/// `t` (ns) in the unit of `step`, with as many decimals as the step needs.
pub fn tick_label(t: u64, step: u64) -> String {
    let (div, unit) = if step >= 100_000_000 {
        (1e9, "s")
    } else if step >= 100_000 {
        (1e6, "ms")
    } else if step >= 100 {
        (1e3, "us")
    } else {
        (1.0, "ns")
    };
    let step_in_unit = step as f64 / div;
    let decimals = if step_in_unit >= 1.0 {
        0
    } else {
        (-step_in_unit.log10()).ceil() as usize
    };
    format!("{:.*} {unit}", decimals, t as f64 / div)
}

/// Two rows: tick marks, then labels. `origin` is time zero of the labels.
pub fn render(view: &Viewport, origin: u64, area: Rect, buf: &mut Buffer) {
    if area.height < 2 || area.width < 2 {
        return;
    }
    let width = area.width;
    let style = Style::default().fg(Color::DarkGray);
    for x in 0..width {
        buf.set_string(area.x + x, area.y, "─", style);
    }
    let step = tick_step(view.span, width, 14);
    let rel0 = view.t0.saturating_sub(origin);
    let mut t = rel0.div_ceil(step) * step;
    let mut next_free = 0u16;
    while t <= rel0 + view.span {
        let col = view.col_of(origin + t, width).floor();
        if col >= 0.0 && col < f64::from(width) {
            let col = col as u16;
            buf.set_string(area.x + col, area.y, "┬", style);
            let label = tick_label(t, step);
            if col >= next_free && col + label.chars().count() as u16 <= width {
                buf.set_string(area.x + col, area.y + 1, &label, Style::default());
                next_free = col + label.chars().count() as u16 + 2;
            }
        }
        t += step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_labels_carry_units() {
        assert_eq!(tick_step(1_000_000, 100, 10), 100_000);
        assert_eq!(tick_step(1_000_000, 100, 15), 200_000);
        assert_eq!(tick_label(250_000, 50_000), "250 us");
        assert_eq!(tick_label(1_500_000, 500_000), "1.5 ms");
        assert_eq!(tick_label(3_000_000_000, 1_000_000_000), "3 s");
    }
}
