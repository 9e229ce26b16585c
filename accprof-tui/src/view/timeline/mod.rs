//! The timeline screen's own state: the time window, the rows on screen, the selection and its
//! details, the search filter; and the actions that move them. The loaded traces are read from
//! [`State`], never changed here (except the loader re-reading a selected event).

pub mod render;

use crate::action::Action;
use crate::state::kind::BarKind;
use crate::state::search::Filter;
use crate::state::store::{BarRef, LaneKind, Store};
use crate::state::track::Track;
use crate::state::State;
use crate::view::details::Details;
use crate::view::geometry::Geometry;
use crate::view::viewport::Viewport;

/// Width of the lane-name column: at least this, wider when a lane's name needs it
/// (`device stream 0x7f..`), up to [`MAX_LABEL_WIDTH`].
pub const LABEL_WIDTH: u16 = 14;
pub const MAX_LABEL_WIDTH: u16 = 34;

/// The lane-name column's width for these lane names: the marker, the name and the rule.
pub fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> u16 {
    let longest = labels.map(|l| l.chars().count()).max().unwrap_or(0);
    u16::try_from(longest + 2)
        .unwrap_or(MAX_LABEL_WIDTH)
        .clamp(LABEL_WIDTH, MAX_LABEL_WIDTH)
}

/// A one-line message for the status bar, when an action has one (e.g. "no later upload").
pub type Flash = Option<String>;

/// The timeline screen.
#[derive(Debug)]
pub struct TimelineView {
    pub viewport: Viewport,
    pub selected: Option<BarRef>,
    /// The full event behind the selection, as re-read from the file.
    pub details: Option<Details>,
    /// First row on screen.
    pub scroll: usize,
    /// The row with the keyboard focus when nothing is selected.
    pub focus_row: usize,
    pub filter: Option<Filter>,
    /// Width of the lane-name column, from the longest lane name.
    pub label_width: u16,
    /// Rows as (lane, track), in display order.
    rows: Vec<(usize, usize)>,
}

impl TimelineView {
    /// The whole trace in the window, nothing selected.
    pub fn new(store: &Store) -> Self {
        let mut v = TimelineView {
            viewport: Viewport::fit(store.origin, store.end),
            selected: None,
            details: None,
            scroll: 0,
            focus_row: 0,
            filter: None,
            label_width: LABEL_WIDTH,
            rows: Vec::new(),
        };
        v.refresh_rows(store);
        v
    }

    /// Rows as (lane, track) in display order.
    pub fn rows(&self) -> &[(usize, usize)] {
        &self.rows
    }

    fn refresh_rows(&mut self, store: &Store) {
        self.rows = store
            .lanes
            .iter()
            .enumerate()
            .flat_map(|(li, l)| (0..l.tracks.len().max(1)).map(move |t| (li, t)))
            .collect();
        self.focus_row = self.focus_row.min(self.rows.len().saturating_sub(1));
        let labels: Vec<String> = (0..store.lanes.len())
            .map(|l| store.lane_label(l))
            .collect();
        self.label_width = label_width(labels.iter().map(String::as_str));
    }

    /// The track drawn for a row: the filtered one while a filter is on.
    pub fn shown_track<'a>(
        &'a self,
        store: &'a Store,
        lane: usize,
        track: usize,
    ) -> Option<&'a Track> {
        match &self.filter {
            Some(f) => f.lanes.get(lane)?.get(track).map(|t| &t.track),
            None => store.lanes.get(lane)?.tracks.get(track),
        }
    }

    /// A shown index in a row to the event's reference.
    fn shown_to_ref(&self, lane: usize, track: usize, shown: usize) -> BarRef {
        let idx = match &self.filter {
            Some(f) => f.lanes[lane][track].orig[shown] as usize,
            None => shown,
        };
        BarRef { lane, track, idx }
    }

    /// The event's index among the shown events of its row, if shown.
    fn ref_to_shown(&self, r: BarRef) -> Option<usize> {
        match &self.filter {
            Some(f) => f
                .lanes
                .get(r.lane)?
                .get(r.track)?
                .orig
                .binary_search(&(r.idx as u32))
                .ok(),
            None => Some(r.idx),
        }
    }

    /// The row index (display order) of a selection.
    pub fn row_of(&self, r: BarRef) -> Option<usize> {
        self.rows
            .iter()
            .position(|&(l, t)| l == r.lane && t == r.track)
    }

    /// The current row: the selection's, else the focused one.
    pub fn current_row(&self) -> usize {
        self.selected
            .and_then(|s| self.row_of(s))
            .unwrap_or(self.focus_row)
    }

    /// The time zoom and row moves centre on: the selected event's middle if on screen,
    /// else the middle of the window.
    pub fn cursor_time(&self, store: &Store) -> u64 {
        if let Some(s) = self.selected {
            let (a, b) = store.span_of(s);
            let mid = a / 2 + b / 2;
            if mid >= self.viewport.t0 && mid <= self.viewport.end() {
                return mid;
            }
        }
        self.viewport.t0 + self.viewport.span / 2
    }

    /// Applies a timeline action; returns the status bar's message, if any.
    pub fn apply(&mut self, action: Action, state: &mut State, g: &Geometry) -> Flash {
        let w = g.timeline_width.max(1);
        let store = &state.store;
        match action {
            Action::Zoom(f) => {
                let anchor = self.cursor_time(store);
                self.viewport.zoom(f, anchor, w);
            }
            Action::ZoomAt(f, col) => {
                let anchor = self.viewport.time_at(col.min(w), w);
                self.viewport.zoom(f, anchor, w);
            }
            Action::Pan(frac) => self.viewport.pan(frac),
            Action::Row(d) => self.move_row(d, state),
            Action::Page(d) => {
                let page = usize::from(g.rows_height.max(1));
                let max = self.rows.len().saturating_sub(1);
                self.scroll = if d < 0 {
                    self.scroll.saturating_sub(page)
                } else {
                    (self.scroll + page).min(max)
                };
                self.focus_row = self.scroll;
                self.selected = None;
            }
            Action::Step(d) => return self.step_in_row(d, state),
            Action::StepKind(d) => return self.step_matching(d, false, state),
            Action::StepConstruct(d) => return self.step_matching(d, true, state),
            Action::ZoomToSelection => match self.selected {
                Some(s) => {
                    let (a, b) = store.span_of(s);
                    self.viewport.show_range(a, b, w);
                }
                None => return Some("select an event first (click it, or ↑/↓ and [ ])".into()),
            },
            Action::ZoomToRange { from_col, to_col } => {
                let (a, b) = (from_col.min(to_col), from_col.max(to_col));
                if b > a {
                    let (t0, t1) = (self.viewport.time_at(a, w), self.viewport.time_at(b + 1, w));
                    self.viewport = Viewport {
                        t0,
                        span: (t1 - t0).max(u64::from(w)),
                    };
                }
            }
            Action::ZoomAll => self.viewport = Viewport::fit(store.origin, store.end),
            Action::Home => self.viewport.t0 = store.origin,
            Action::End => self.viewport.t0 = store.end.saturating_sub(self.viewport.span),
            Action::ClickAt { row, col } => self.click(row, col, state, g),
            Action::Escape => {
                if self.filter.take().is_some() {
                    return Some("filter cleared".into());
                }
                self.selected = None;
            }
            _ => {}
        }
        None
    }

    /// Keeps the window on the trace (unless `action` set the zoom) and the current row on
    /// screen; runs after every action, whichever screen had the keys.
    pub fn settle(&mut self, action: Action, store: &Store, g: &Geometry) {
        if !action.zooms() {
            self.viewport.clamp_to(store.origin, store.end);
        }
        let h = usize::from(g.rows_height.max(1));
        let row = self.current_row();
        if row < self.scroll {
            self.scroll = row;
        } else if row >= self.scroll + h {
            self.scroll = row + 1 - h;
        }
    }

    /// Selects `r` and loads its details.
    pub fn select(&mut self, r: BarRef, state: &mut State) {
        self.selected = Some(r);
        if let Some(row) = self.row_of(r) {
            self.focus_row = row;
        }
        let rec = state.store.rec_of(r);
        if self.details.as_ref().is_some_and(|d| d.rec == rec) {
            return;
        }
        self.details = Some(Details::fetch(&mut state.loader, rec));
    }

    /// Selects and reveals (pans to) an event.
    fn go_to(&mut self, r: BarRef, state: &mut State) {
        let (a, b) = state.store.span_of(r);
        self.viewport.reveal(a, b);
        self.select(r, state);
    }

    fn move_row(&mut self, d: i32, state: &mut State) {
        if self.rows.is_empty() {
            return;
        }
        let t = self.cursor_time(&state.store);
        // Land on the next row; select the event nearest the cursor there if it is on screen,
        // else just focus the row.
        let row = (self.current_row() as i64 + i64::from(d)).clamp(0, self.rows.len() as i64 - 1)
            as usize;
        self.focus_row = row;
        let (lane, track) = self.rows[row];
        let near = self
            .shown_track(&state.store, lane, track)
            .and_then(|tr| tr.event_near(t, self.viewport.span / 2));
        match near {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.select(r, state);
            }
            None => self.selected = None,
        }
    }

    fn step_in_row(&mut self, d: i32, state: &mut State) -> Flash {
        let row = self.current_row();
        let &(lane, track) = self.rows.get(row)?;
        let tr = self.shown_track(&state.store, lane, track)?;
        if tr.is_empty() {
            return None;
        }
        let next = match self.selected.and_then(|s| self.ref_to_shown(s)) {
            Some(i) if d > 0 => (i + 1 < tr.len()).then_some(i + 1),
            Some(i) => i.checked_sub(1),
            None => {
                // From the window's left edge (next) or right edge (previous).
                if d > 0 {
                    let i = tr.first_starting_at(self.viewport.t0);
                    (i < tr.len()).then_some(i)
                } else {
                    tr.first_starting_at(self.viewport.end()).checked_sub(1)
                }
            }
        };
        match next {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.go_to(r, state);
                None
            }
            None => Some(
                if d > 0 {
                    "last event in this row"
                } else {
                    "first event in this row"
                }
                .into(),
            ),
        }
    }

    /// Jumps to the nearest event after (d > 0) or before the selection that has the same
    /// category (`construct == false`) or is the same construct, over every row.
    fn step_matching(&mut self, d: i32, construct: bool, state: &mut State) -> Flash {
        let Some(sel) = self.selected else {
            return Some("select an event first".into());
        };
        let store = &state.store;
        let rec = store.rec_of(sel) as usize;
        let (t, _) = store.span_of(sel);
        let cat = store.lanes[sel.lane].tracks[sel.track].cat[sel.idx];
        let recs = &store.records;
        let key = (
            recs.kind[rec],
            recs.name[rec],
            recs.file[rec],
            recs.line[rec],
        );
        let same = |r: usize| {
            !construct || (recs.kind[r], recs.name[r], recs.file[r], recs.line[r]) == key
        };
        let mut best: Option<(u64, BarRef)> = None;
        for &(lane, track) in &self.rows {
            let Some(tr) = self.shown_track(store, lane, track) else {
                continue;
            };
            // Scan from the selection's time in the direction asked; the first hit in a row is
            // that row's candidate.
            let found = if d > 0 {
                let from = tr.first_starting_at(t);
                (from..tr.len()).find(|&i| {
                    tr.cat[i] == cat
                        && same(tr.rec[i] as usize)
                        && (tr.start[i] > t
                            || (self.shown_to_ref(lane, track, i) != sel
                                && tr.rec[i] as usize > rec))
                })
            } else {
                let to = tr.first_starting_at(t.saturating_add(1));
                (0..to).rev().find(|&i| {
                    tr.cat[i] == cat
                        && same(tr.rec[i] as usize)
                        && (tr.start[i] < t
                            || (self.shown_to_ref(lane, track, i) != sel
                                && (tr.rec[i] as usize) < rec))
                })
            };
            if let Some(i) = found {
                let dist = tr.start[i].abs_diff(t);
                if best.is_none_or(|(bd, _)| dist < bd) {
                    best = Some((dist, self.shown_to_ref(lane, track, i)));
                }
            }
        }
        match best {
            Some((_, r)) => {
                self.go_to(r, state);
                None
            }
            None => {
                let what = if construct {
                    "instance of this construct".to_string()
                } else {
                    BarKind::from_u8(cat).label().to_string()
                };
                Some(format!(
                    "no {} {what}",
                    if d > 0 { "later" } else { "earlier" }
                ))
            }
        }
    }

    fn click(&mut self, row: u16, col: u16, state: &mut State, g: &Geometry) {
        let w = g.timeline_width.max(1);
        let Some(&(lane, track)) = self.rows.get(self.scroll + usize::from(row)) else {
            return;
        };
        self.focus_row = self.scroll + usize::from(row);
        let (a, b) = self.viewport.cell(col.min(w - 1), w);
        let t = a / 2 + b / 2;
        // One cell of slack either side, so thin bars can be hit.
        let slack = (b - a) * 3 / 2;
        match self
            .shown_track(&state.store, lane, track)
            .and_then(|tr| tr.event_near(t, slack))
        {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.select(r, state);
            }
            None => self.selected = None,
        }
    }

    /// Filters the rows by a search query (an empty one clears the filter).
    pub fn set_filter(&mut self, store: &Store, q: &str) -> Flash {
        if q.trim().is_empty() {
            self.filter = None;
            return None;
        }
        let f = Filter::build(store, q);
        let flash = format!("{} events match \"{}\"", f.matches, q);
        self.filter = Some(f);
        // Keep the selection only if it still shows.
        if let Some(s) = self.selected {
            if self.ref_to_shown(s).is_none() {
                self.selected = None;
            }
        }
        Some(flash)
    }

    /// Finds the record's event on the timeline.
    pub fn find_rec(store: &Store, rec: u32) -> Option<BarRef> {
        let src = usize::from(*store.records.source.get(rec as usize)?);
        for (li, l) in store.lanes.iter().enumerate() {
            if l.source != src {
                continue;
            }
            for (ti, t) in l.tracks.iter().enumerate() {
                if let Some(i) = t.rec.iter().position(|&r| r == rec) {
                    return Some(BarRef {
                        lane: li,
                        track: ti,
                        idx: i,
                    });
                }
            }
        }
        None
    }

    /// Shows and selects record `rec` (a table row's first instance, a finding's evidence),
    /// dropping the filter if it hides it. Returns whether the record is on the timeline.
    pub fn jump_to(&mut self, rec: u32, state: &mut State, g: &Geometry) -> bool {
        let Some(r) = Self::find_rec(&state.store, rec) else {
            return false;
        };
        if self.ref_to_shown(r).is_none() {
            self.filter = None;
        }
        let (a, b) = state.store.span_of(r);
        let w = g.timeline_width.max(1);
        if b - a < self.viewport.span / 4 {
            self.viewport.reveal(a, b);
        } else {
            self.viewport.show_range(a, b, w);
        }
        self.select(r, state);
        true
    }

    /// What the selection was, to find it again after the store grew (references shift).
    pub fn before_growth(&self, store: &Store) -> Growth {
        let was_at_end = self.viewport.end() >= store.end;
        Growth {
            was_at_end,
            was_all: self.viewport.t0 <= store.origin && was_at_end,
            selected: self.selected.map(|s| {
                let l = &store.lanes[s.lane];
                (l.source, l.kind, store.rec_of(s))
            }),
        }
    }

    /// After a followed trace grew: keeps the selection and, when the window showed the end of
    /// the trace, keeps showing it.
    pub fn after_growth(&mut self, store: &Store, before: Growth) {
        self.refresh_rows(store);
        if before.was_all {
            self.viewport = Viewport::fit(store.origin, store.end);
        } else if before.was_at_end {
            self.viewport.t0 = store.end.saturating_sub(self.viewport.span);
        }
        self.selected = before
            .selected
            .and_then(|(src, kind, rec)| find_in_lane(store, src, kind, rec));
        if let Some(f) = &self.filter {
            let q = f.query.clone();
            self.filter = Some(Filter::build(store, &q));
        }
    }
}

/// The timeline's position relative to the trace before it grew.
#[derive(Clone, Copy, Debug)]
pub struct Growth {
    was_at_end: bool,
    was_all: bool,
    selected: Option<(usize, LaneKind, u32)>,
}

fn find_in_lane(store: &Store, src: usize, kind: LaneKind, rec: u32) -> Option<BarRef> {
    let lane = store
        .lanes
        .iter()
        .position(|l| l.source == src && l.kind == kind)?;
    for (ti, t) in store.lanes[lane].tracks.iter().enumerate() {
        if let Some(i) = t.rec.iter().position(|&r| r == rec) {
            return Some(BarRef {
                lane,
                track: ti,
                idx: i,
            });
        }
    }
    None
}
