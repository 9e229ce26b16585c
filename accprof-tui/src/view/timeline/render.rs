//! The Gantt chart: one terminal row per lane row, one column per time slice.
//!
//! Each cell asks its row's [`Track`] for a summary of its time slice, so a frame costs
//! O(rows x width x log events) whatever the zoom. A cell covered by one event is drawn with
//! eighth blocks for the part it covers; a cell where several events fall is shaded by how busy
//! it is, in the colour of the category that takes most of its time. A bar wide enough carries
//! its label.

use super::TimelineView;
use crate::state::kind::BarKind;
use crate::state::store::Store;
use crate::state::track::{CellSummary, Track};
use crate::view::palette::color;
use crate::view::viewport::Viewport;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

/// Left-aligned partial blocks, one to eight eighths.
const LEFT_EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// The glyph for one cell.
pub fn glyph(s: &CellSummary, track: &Track, a: u64, b: u64) -> char {
    let width = (b - a).max(1);
    if s.covered_ns == 0 {
        return '│';
    }
    let eighths = ((s.covered_ns as f64 / width as f64) * 8.0)
        .round()
        .clamp(1.0, 8.0) as usize;
    match s.sole {
        Some(i) => {
            let starts_inside = track.start[i] > a;
            let ends_inside = track.end[i] < b;
            match (starts_inside, ends_inside) {
                (false, false) => '█',
                // The bar enters from the left and stops inside the cell.
                (false, true) => LEFT_EIGHTHS[eighths - 1],
                // The bar starts inside the cell and runs on: right-aligned blocks.
                (true, false) => match eighths {
                    0..=2 => '▕',
                    3..=6 => '▐',
                    _ => '█',
                },
                (true, true) => LEFT_EIGHTHS[eighths.max(1) - 1],
            }
        }
        None => match eighths {
            7.. => '█',
            4..=6 => '▓',
            2..=3 => '▒',
            _ => '░',
        },
    }
}

/// Draws rows `tl.scroll ..` into `area` (labels column included).
pub fn render(tl: &TimelineView, store: &Store, area: Rect, buf: &mut Buffer) {
    let label_w = tl.label_width;
    if area.width <= label_w + 1 || area.height == 0 {
        return;
    }
    let width = area.width - label_w;
    let x0 = area.x + label_w;
    let current_row = tl.current_row();
    let rows = tl.rows();
    for (screen_row, row) in (tl.scroll..rows.len())
        .take(area.height as usize)
        .enumerate()
    {
        let y = area.y + screen_row as u16;
        let (lane, track) = rows[row];
        // Lane name on the lane's first row; deeper rows are indented under it.
        let label = if track == 0 {
            store.lane_label(lane)
        } else {
            format!("  └{}", track)
        };
        let marker = if row == current_row { "▶" } else { " " };
        let style = if row == current_row {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        buf.set_stringn(
            area.x,
            y,
            format!("{marker}{label}"),
            label_w as usize - 1,
            style,
        );
        buf.set_string(x0 - 1, y, "│", Style::default().fg(Color::DarkGray));
        if let Some(t) = tl.shown_track(store, lane, track) {
            let sel = tl
                .selected
                .filter(|s| s.lane == lane && s.track == track)
                .map(|s| store.span_of(s));
            render_row(store, t, &tl.viewport, x0, y, width, sel, buf);
        }
    }
}

/// One row of bars.
fn render_row(
    store: &Store,
    t: &Track,
    view: &Viewport,
    x0: u16,
    y: u16,
    width: u16,
    sel: Option<(u64, u64)>,
    buf: &mut Buffer,
) {
    // Runs of cells covered by one event, for labels: (event index, first col, last col).
    let mut run: Option<(usize, u16, u16)> = None;
    let mut runs = Vec::new();
    for col in 0..width {
        let (a, b) = view.cell(col, width);
        let Some(s) = t.cell(a, b) else {
            if let Some(r) = run.take() {
                runs.push(r);
            }
            continue;
        };
        let mut style = Style::default().fg(color(s.dominant));
        if let Some((sa, sb)) = sel {
            if sa < b && (sb > a || sa >= a) {
                style = style.bg(Color::White).add_modifier(Modifier::BOLD);
            }
        }
        if let Some(cell) = buf.cell_mut((x0 + col, y)) {
            cell.set_char(glyph(&s, t, a, b)).set_style(style);
        }
        match (s.sole, &mut run) {
            (Some(i), Some((ri, _, last))) if *ri == i => *last = col,
            (Some(i), _) => {
                if let Some(r) = run.take() {
                    runs.push(r);
                }
                run = Some((i, col, col));
            }
            (None, _) => {
                if let Some(r) = run.take() {
                    runs.push(r);
                }
            }
        }
    }
    runs.extend(run);
    for (i, first, last) in runs {
        // Leave the edge cells to their partial blocks; label the inside.
        let inner = last.saturating_sub(first).saturating_sub(1);
        if inner < 3 {
            continue;
        }
        let text = store.label(t.rec[i]);
        let cat = BarKind::from_u8(t.cat[i]);
        let style = Style::default().fg(Color::Black).bg(color(cat));
        buf.set_stringn(x0 + first + 1, y, text, inner as usize, style);
    }
}
