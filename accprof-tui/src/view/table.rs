//! The constructs-and-kernels table screen: its rows, sort order and cursor. The counts come
//! from [`crate::state::table`]; sorting and moving are this screen's own.

use crate::state::table::{self, TableRow};
use crate::state::State;
use crate::view::list::{selected_style, window_start};
use accprof_timeline::format;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, Widget};

/// The table's columns, in the order a sort key cycles through them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SortBy {
    Total,
    Count,
    Average,
    Bytes,
    Name,
}

impl SortBy {
    pub fn next(self) -> Self {
        match self {
            SortBy::Total => SortBy::Count,
            SortBy::Count => SortBy::Average,
            SortBy::Average => SortBy::Bytes,
            SortBy::Bytes => SortBy::Name,
            SortBy::Name => SortBy::Total,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            SortBy::Total => "total",
            SortBy::Count => "count",
            SortBy::Average => "average",
            SortBy::Bytes => "bytes",
            SortBy::Name => "name",
        }
    }
}

/// The table screen.
#[derive(Debug)]
pub struct TableView {
    pub sort: SortBy,
    pub reverse: bool,
    pub rows: Vec<TableRow>,
    /// The row with the cursor.
    pub pos: usize,
}

impl Default for TableView {
    fn default() -> Self {
        TableView {
            sort: SortBy::Total,
            reverse: false,
            rows: Vec::new(),
            pos: 0,
        }
    }
}

impl TableView {
    /// Rebuilds the rows (host counts and the profile's device-timed rows) in the current order.
    pub fn refresh(&mut self, state: &State) {
        self.rows = table::rows(
            &state.store,
            &state.analysis.profile_rows,
            &state.analysis.region_ends,
        );
        sort(&mut self.rows, self.sort, self.reverse);
    }

    /// The next sort column (`cycle`), or the same one reversed.
    pub fn resort(&mut self, cycle: bool, state: &State) {
        if cycle {
            self.sort = self.sort.next();
            self.reverse = false;
        } else {
            self.reverse = !self.reverse;
        }
        self.refresh(state);
    }

    pub fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        let note = table_note(state)
            .map(|n| format!("{n} — "))
            .unwrap_or_default();
        let title = format!(
            " Constructs and kernels ({}) — {note}sorted by {}{}; s: sort, S: reverse, Enter: jump, Esc: close ",
            self.rows.len(),
            self.sort.label(),
            if self.reverse { " (reversed)" } else { "" }
        );
        let block = Block::default().borders(Borders::ALL).title(title);
        let inner = block.inner(area);
        block.render(area, buf);
        let visible = inner.height.saturating_sub(1) as usize;
        let first = window_start(self.pos, visible);
        let rows = self
            .rows
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(i, r)| {
                let style = if i == self.pos {
                    selected_style()
                } else {
                    Style::default()
                };
                Row::new(vec![
                    Cell::from(r.what.clone()),
                    Cell::from(r.count.to_string()),
                    Cell::from(format::duration(r.total_ns)),
                    Cell::from(format::duration(r.avg_ns())),
                    Cell::from(r.source_label()),
                    Cell::from(if r.bytes > 0 {
                        format::bytes(r.bytes)
                    } else {
                        "-".into()
                    }),
                    Cell::from(
                        r.host_ns
                            .map(format::duration)
                            .unwrap_or_else(|| "-".into()),
                    ),
                ])
                .style(style)
            });
        // "time" says where total and average were measured; "host enqueue" is the runtime's
        // launch/transfer calls behind a device-timed row.
        let header = Row::new(vec![
            "construct / kernel / transfer",
            "count",
            "total",
            "average",
            "time",
            "data",
            "host enqueue",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let widths = [
            Constraint::Min(30),
            Constraint::Length(7),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(12),
        ];
        Table::new(rows, widths).header(header).render(inner, buf);
    }
}

/// Sorts by `by`: descending for numbers, ascending for names; `reverse` flips it.
fn sort(rows: &mut [TableRow], by: SortBy, reverse: bool) {
    rows.sort_by(|a, b| {
        let o = match by {
            SortBy::Total => b.total_ns.cmp(&a.total_ns),
            SortBy::Count => b.count.cmp(&a.count),
            SortBy::Average => b.avg_ns().cmp(&a.avg_ns()),
            SortBy::Bytes => b.bytes.cmp(&a.bytes),
            SortBy::Name => a.what.cmp(&b.what),
        };
        o.then_with(|| a.what.cmp(&b.what))
    });
    if reverse {
        rows.reverse();
    }
}

/// What the table is missing, if anything: the kernels and transfers of traces with device
/// records until the analysis gives them.
pub fn table_note(state: &State) -> Option<String> {
    if !state.store.sources.iter().any(|s| s.device_activity) {
        return None;
    }
    let a = &state.analysis;
    if let Some(e) = &a.error {
        return Some(format!(
            "kernels and transfers missing: the analysis failed: {e}"
        ));
    }
    (a.running() && a.profile_rows.is_empty())
        .then(|| "kernels and transfers: analysing (device times)…".to_string())
}
