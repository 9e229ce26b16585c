//! The application: state plus the actions that change it. Drawing lives in [`crate::view`],
//! key and mouse decoding in [`crate::input`].

use crate::state::findings::Finding;
use crate::state::kind::Category;
use crate::state::load::Loader;
use crate::state::search::Filter;
use crate::state::store::{EventRef, LaneKind, Store};
use crate::state::table::{self, SortBy, TableRow};
use crate::state::track::Track;
use crate::state::viewport::Viewport;
use accprof_trace::{Event, StringTable};

/// What the keys currently act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Timeline,
    Help,
    /// Typing a search query.
    Search(String),
    /// The constructs/kernels table has the keys.
    Table,
    /// The advice findings have the keys.
    Findings,
}

/// Everything a key or the mouse can ask for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    Quit,
    ToggleHelp,
    /// Zoom by a factor (< 1: in) around the selection or the centre.
    Zoom(f64),
    /// Zoom by a factor around timeline column `col`.
    ZoomAt(f64, u16),
    /// Pan by a fraction of the window.
    Pan(f64),
    /// Select the nearest event in the row above (-1) or below (+1).
    Row(i32),
    /// Scroll rows by a page.
    Page(i32),
    /// Previous (-1) / next (+1) event in the selected row.
    Step(i32),
    /// Previous / next event of the selected event's category.
    StepKind(i32),
    /// Previous / next instance of the selected construct (same kind, name and location).
    StepConstruct(i32),
    ZoomToSelection,
    ZoomToRange { from_col: u16, to_col: u16 },
    ZoomAll,
    Home,
    End,
    /// Select the event at a timeline cell (row on screen, column of the timeline).
    ClickAt { row: u16, col: u16 },
    StartSearch,
    SearchChar(char),
    SearchBackspace,
    SearchSubmit,
    /// Leave the current mode, or clear the filter.
    Escape,
    OpenTable,
    OpenFindings,
    /// Move in the table or the findings list.
    ListMove(i32),
    CycleSort,
    ReverseSort,
    /// Jump to the table row's first instance or the finding's evidence.
    ListEnter,
    Resize,
}

/// The full event behind the selection, as re-read from the file.
#[derive(Clone, Debug)]
pub struct Details {
    pub rec: u32,
    pub event: Option<Event>,
    pub strings: StringTable,
    pub error: Option<String>,
}

/// The geometry of the last frame, for mapping mouse positions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Geometry {
    /// Timeline columns (without the lane labels).
    pub timeline_x: u16,
    pub timeline_width: u16,
    pub rows_y: u16,
    pub rows_height: u16,
}

pub struct App {
    pub store: Store,
    pub loader: Option<Loader>,
    pub view: Viewport,
    pub selected: Option<EventRef>,
    /// First row on screen.
    pub scroll: usize,
    /// The row with the keyboard focus when nothing is selected.
    pub focus_row: usize,
    pub mode: Mode,
    pub filter: Option<Filter>,
    pub details: Option<Details>,
    pub sort: SortBy,
    pub sort_reverse: bool,
    pub table_rows: Vec<TableRow>,
    /// Kernel and transfer rows of traces with device records, from accprof-analysis (see
    /// [`crate::state::table`]); empty until the analysis is done.
    pub profile_rows: Vec<TableRow>,
    /// Why `profile_rows` is missing when the analysis failed.
    pub profile_error: Option<String>,
    pub list_pos: usize,
    pub findings: Vec<Finding>,
    /// Why findings are empty (analysis not available, trace too large...).
    pub findings_note: String,
    /// The analysis producing the findings, while it runs.
    pub findings_job: Option<crate::findings::FindingsJob>,
    pub following: bool,
    pub quit: bool,
    /// A one-line message for the status bar (e.g. "no later upload").
    pub flash: Option<String>,
    pub geometry: Geometry,
    /// Width of the lane-name column, from the longest lane name.
    pub label_width: u16,
    /// Rows as (lane, track), in display order.
    rows: Vec<(usize, usize)>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("view", &self.view).field("selected", &self.selected).finish_non_exhaustive()
    }
}

/// Zoom step per key press or wheel notch.
pub const ZOOM_STEP: f64 = 0.5;
/// Pan step per key press, as a fraction of the window.
pub const PAN_STEP: f64 = 0.125;

impl App {
    pub fn new(store: Store, loader: Option<Loader>, following: bool) -> Self {
        let view = Viewport::fit(store.origin, store.end);
        let mut app = App {
            store,
            loader,
            view,
            selected: None,
            scroll: 0,
            focus_row: 0,
            mode: Mode::Timeline,
            filter: None,
            details: None,
            sort: SortBy::Total,
            sort_reverse: false,
            table_rows: Vec::new(),
            profile_rows: Vec::new(),
            profile_error: None,
            list_pos: 0,
            findings: Vec::new(),
            findings_note: "No findings.".into(),
            findings_job: None,
            following,
            quit: false,
            flash: None,
            geometry: Geometry { timeline_width: 80, ..Geometry::default() },
            label_width: crate::view::timeline::LABEL_WIDTH,
            rows: Vec::new(),
        };
        app.refresh_rows();
        app
    }

    /// Rows as (lane, track) in display order.
    pub fn rows(&self) -> &[(usize, usize)] {
        &self.rows
    }

    fn refresh_rows(&mut self) {
        self.rows = self
            .store
            .lanes
            .iter()
            .enumerate()
            .flat_map(|(li, l)| (0..l.tracks.len().max(1)).map(move |t| (li, t)))
            .collect();
        self.focus_row = self.focus_row.min(self.rows.len().saturating_sub(1));
        let labels: Vec<String> = (0..self.store.lanes.len()).map(|l| self.store.lane_label(l)).collect();
        self.label_width = crate::view::timeline::label_width(labels.iter().map(String::as_str));
    }

    /// The track drawn for a row: the filtered one while a filter is on.
    pub fn shown_track(&self, lane: usize, track: usize) -> Option<&Track> {
        match &self.filter {
            Some(f) => f.lanes.get(lane)?.get(track).map(|t| &t.track),
            None => self.store.lanes.get(lane)?.tracks.get(track),
        }
    }

    /// A shown index in a row to the event's reference.
    fn shown_to_ref(&self, lane: usize, track: usize, shown: usize) -> EventRef {
        let idx = match &self.filter {
            Some(f) => f.lanes[lane][track].orig[shown] as usize,
            None => shown,
        };
        EventRef { lane, track, idx }
    }

    /// The event's index among the shown events of its row, if shown.
    fn ref_to_shown(&self, r: EventRef) -> Option<usize> {
        match &self.filter {
            Some(f) => f.lanes.get(r.lane)?.get(r.track)?.orig.binary_search(&(r.idx as u32)).ok(),
            None => Some(r.idx),
        }
    }

    /// The row index (display order) of a selection.
    pub fn row_of(&self, r: EventRef) -> Option<usize> {
        self.rows.iter().position(|&(l, t)| l == r.lane && t == r.track)
    }

    /// The current row: the selection's, else the focused one.
    pub fn current_row(&self) -> usize {
        self.selected.and_then(|s| self.row_of(s)).unwrap_or(self.focus_row)
    }

    /// The time zoom and row moves centre on: the selected event's middle if on screen,
    /// else the middle of the window.
    pub fn cursor_time(&self) -> u64 {
        if let Some(s) = self.selected {
            let (a, b) = self.store.span_of(s);
            let mid = a / 2 + b / 2;
            if mid >= self.view.t0 && mid <= self.view.end() {
                return mid;
            }
        }
        self.view.t0 + self.view.span / 2
    }

    pub fn apply(&mut self, action: Action) {
        self.flash = None;
        let w = self.geometry.timeline_width.max(1);
        match action {
            Action::Quit => self.quit = true,
            Action::ToggleHelp => {
                self.mode = if self.mode == Mode::Help { Mode::Timeline } else { Mode::Help };
            }
            Action::Zoom(f) => {
                let anchor = self.cursor_time();
                self.view.zoom(f, anchor, w);
            }
            Action::ZoomAt(f, col) => {
                let anchor = self.view.time_at(col.min(w), w);
                self.view.zoom(f, anchor, w);
            }
            Action::Pan(frac) => self.view.pan(frac),
            Action::Row(d) => self.move_row(d),
            Action::Page(d) => {
                let page = usize::from(self.geometry.rows_height.max(1));
                let max = self.rows.len().saturating_sub(1);
                self.scroll = if d < 0 { self.scroll.saturating_sub(page) } else { (self.scroll + page).min(max) };
                self.focus_row = self.scroll;
                self.selected = None;
            }
            Action::Step(d) => self.step_in_row(d),
            Action::StepKind(d) => self.step_matching(d, false),
            Action::StepConstruct(d) => self.step_matching(d, true),
            Action::ZoomToSelection => match self.selected {
                Some(s) => {
                    let (a, b) = self.store.span_of(s);
                    self.view.show_range(a, b, w);
                }
                None => self.flash = Some("select an event first (click it, or ↑/↓ and [ ])".into()),
            },
            Action::ZoomToRange { from_col, to_col } => {
                let (a, b) = (from_col.min(to_col), from_col.max(to_col));
                if b > a {
                    let (t0, t1) = (self.view.time_at(a, w), self.view.time_at(b + 1, w));
                    self.view = Viewport { t0, span: (t1 - t0).max(u64::from(w)) };
                }
            }
            Action::ZoomAll => self.view = Viewport::fit(self.store.origin, self.store.end),
            Action::Home => self.view.t0 = self.store.origin,
            Action::End => self.view.t0 = self.store.end.saturating_sub(self.view.span),
            Action::ClickAt { row, col } => self.click(row, col),
            Action::StartSearch => self.mode = Mode::Search(String::new()),
            Action::SearchChar(c) => {
                if let Mode::Search(q) = &mut self.mode {
                    q.push(c);
                }
            }
            Action::SearchBackspace => {
                if let Mode::Search(q) = &mut self.mode {
                    q.pop();
                }
            }
            Action::SearchSubmit => {
                if let Mode::Search(q) = std::mem::replace(&mut self.mode, Mode::Timeline) {
                    self.set_filter(&q);
                }
            }
            Action::Escape => match self.mode {
                Mode::Timeline => {
                    if self.filter.take().is_some() {
                        self.flash = Some("filter cleared".into());
                    } else {
                        self.selected = None;
                    }
                }
                _ => self.mode = Mode::Timeline,
            },
            Action::OpenTable => {
                self.refresh_table();
                self.list_pos = 0;
                self.mode = if self.mode == Mode::Table { Mode::Timeline } else { Mode::Table };
            }
            Action::OpenFindings => {
                self.list_pos = 0;
                // A followed trace has grown since the last analysis: run it again.
                if self.following && self.findings_job.is_none() && self.mode != Mode::Findings {
                    crate::findings::attach(self);
                }
                self.mode = if self.mode == Mode::Findings { Mode::Timeline } else { Mode::Findings };
            }
            Action::ListMove(d) => {
                let len = if self.mode == Mode::Findings { self.findings.len() } else { self.table_rows.len() };
                let pos = self.list_pos as i64 + i64::from(d);
                self.list_pos = pos.clamp(0, len.saturating_sub(1) as i64) as usize;
            }
            Action::CycleSort | Action::ReverseSort => {
                if action == Action::CycleSort {
                    self.sort = self.sort.next();
                    self.sort_reverse = false;
                } else {
                    self.sort_reverse = !self.sort_reverse;
                }
                self.refresh_table();
            }
            Action::ListEnter => self.list_enter(),
            Action::Resize => {}
        }
        if !matches!(action, Action::ZoomAll | Action::ZoomToRange { .. } | Action::ZoomAt(..) | Action::Zoom(_)) {
            self.view.clamp_to(self.store.origin, self.store.end);
        }
        self.keep_current_row_visible();
    }

    fn keep_current_row_visible(&mut self) {
        let h = usize::from(self.geometry.rows_height.max(1));
        let row = self.current_row();
        if row < self.scroll {
            self.scroll = row;
        } else if row >= self.scroll + h {
            self.scroll = row + 1 - h;
        }
    }

    /// Rebuilds the table's rows (host counts and the profile's device-timed rows).
    pub fn refresh_table(&mut self) {
        self.table_rows = table::rows(&self.store, &self.profile_rows, self.sort, self.sort_reverse);
    }

    /// What the table is missing, if anything: the kernels and transfers of traces with device
    /// records until the analysis gives them.
    pub fn table_note(&self) -> Option<String> {
        if !self.store.sources.iter().any(|s| s.device_activity) {
            return None;
        }
        if let Some(e) = &self.profile_error {
            return Some(format!("kernels and transfers missing: the analysis failed: {e}"));
        }
        (self.findings_job.is_some() && self.profile_rows.is_empty()).then(|| "kernels and transfers: analysing (device times)…".to_string())
    }

    /// Selects `r` and loads its details.
    pub fn select(&mut self, r: EventRef) {
        self.selected = Some(r);
        if let Some(row) = self.row_of(r) {
            self.focus_row = row;
        }
        let rec = self.store.rec_of(r);
        if self.details.as_ref().is_some_and(|d| d.rec == rec) {
            return;
        }
        let details = match self.loader.as_mut().map(|l| l.fetch(rec)) {
            Some(Ok((ev, strings))) => Details { rec, event: Some(ev), strings: strings.clone(), error: None },
            Some(Err(e)) => Details { rec, event: None, strings: StringTable::default(), error: Some(e.to_string()) },
            None => Details { rec, event: None, strings: StringTable::default(), error: None },
        };
        self.details = Some(details);
    }

    /// Selects and reveals (pans to) an event.
    fn go_to(&mut self, r: EventRef) {
        let (a, b) = self.store.span_of(r);
        self.view.reveal(a, b);
        self.select(r);
    }

    fn move_row(&mut self, d: i32) {
        if self.rows.is_empty() {
            return;
        }
        let t = self.cursor_time();
        let mut row = self.current_row() as i64;
        // Skip rows that have nothing near the cursor? No: land on the next row, select the
        // event nearest the cursor there if it is on screen, else just focus the row.
        row = (row + i64::from(d)).clamp(0, self.rows.len() as i64 - 1);
        let row = row as usize;
        self.focus_row = row;
        let (lane, track) = self.rows[row];
        let near = self.shown_track(lane, track).and_then(|tr| tr.event_near(t, self.view.span / 2));
        match near {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.select(r);
            }
            None => self.selected = None,
        }
    }

    fn step_in_row(&mut self, d: i32) {
        let row = self.current_row();
        let Some(&(lane, track)) = self.rows.get(row) else { return };
        let Some(tr) = self.shown_track(lane, track) else { return };
        if tr.is_empty() {
            return;
        }
        let next = match self.selected.and_then(|s| self.ref_to_shown(s)) {
            Some(i) if d > 0 => (i + 1 < tr.len()).then_some(i + 1),
            Some(i) => i.checked_sub(1),
            None => {
                // From the window's left edge (next) or right edge (previous).
                if d > 0 {
                    let i = tr.first_starting_at(self.view.t0);
                    (i < tr.len()).then_some(i)
                } else {
                    tr.first_starting_at(self.view.end()).checked_sub(1)
                }
            }
        };
        match next {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.go_to(r);
            }
            None => self.flash = Some(if d > 0 { "last event in this row" } else { "first event in this row" }.into()),
        }
    }

    /// Jumps to the nearest event after (d > 0) or before the selection that has the same
    /// category (`construct == false`) or is the same construct, over every row.
    fn step_matching(&mut self, d: i32, construct: bool) {
        let Some(sel) = self.selected else {
            self.flash = Some("select an event first".into());
            return;
        };
        let rec = self.store.rec_of(sel) as usize;
        let (t, _) = self.store.span_of(sel);
        let cat = self.store.lanes[sel.lane].tracks[sel.track].cat[sel.idx];
        let recs = &self.store.records;
        let key = (recs.kind[rec], recs.name[rec], recs.file[rec], recs.line[rec]);
        let same = |r: usize| {
            if construct {
                (recs.kind[r], recs.name[r], recs.file[r], recs.line[r]) == key
            } else {
                true
            }
        };
        let mut best: Option<(u64, EventRef)> = None;
        for &(lane, track) in &self.rows {
            let Some(tr) = self.shown_track(lane, track) else { continue };
            // Scan from the selection's time in the direction asked; the first hit in a row is
            // that row's candidate.
            let found = if d > 0 {
                let from = tr.first_starting_at(t);
                (from..tr.len()).find(|&i| {
                    tr.cat[i] == cat
                        && same(tr.rec[i] as usize)
                        && (tr.start[i] > t || (self.shown_to_ref(lane, track, i) != sel && tr.rec[i] as usize > rec))
                })
            } else {
                let to = tr.first_starting_at(t.saturating_add(1));
                (0..to).rev().find(|&i| {
                    tr.cat[i] == cat
                        && same(tr.rec[i] as usize)
                        && (tr.start[i] < t || (self.shown_to_ref(lane, track, i) != sel && (tr.rec[i] as usize) < rec))
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
            Some((_, r)) => self.go_to(r),
            None => {
                let what = if construct { "instance of this construct".to_string() } else { Category::from_u8(cat).label().to_string() };
                self.flash = Some(format!("no {} {what}", if d > 0 { "later" } else { "earlier" }));
            }
        }
    }

    fn click(&mut self, row: u16, col: u16) {
        let w = self.geometry.timeline_width.max(1);
        let Some(&(lane, track)) = self.rows.get(self.scroll + usize::from(row)) else { return };
        self.focus_row = self.scroll + usize::from(row);
        let (a, b) = self.view.cell(col.min(w - 1), w);
        let t = a / 2 + b / 2;
        // One cell of slack either side, so thin bars can be hit.
        let slack = (b - a) * 3 / 2;
        match self.shown_track(lane, track).and_then(|tr| tr.event_near(t, slack)) {
            Some(i) => {
                let r = self.shown_to_ref(lane, track, i);
                self.select(r);
            }
            None => self.selected = None,
        }
    }

    fn set_filter(&mut self, q: &str) {
        if q.trim().is_empty() {
            self.filter = None;
            return;
        }
        let f = Filter::build(&self.store, q);
        self.flash = Some(format!("{} events match \"{}\"", f.matches, q));
        self.filter = Some(f);
        // Keep the selection only if it still shows.
        if let Some(s) = self.selected {
            if self.ref_to_shown(s).is_none() {
                self.selected = None;
            }
        }
    }

    /// Finds the record's event on the timeline.
    pub fn find_rec(&self, rec: u32) -> Option<EventRef> {
        let src = usize::from(*self.store.records.source.get(rec as usize)?);
        for (li, l) in self.store.lanes.iter().enumerate() {
            if l.source != src {
                continue;
            }
            for (ti, t) in l.tracks.iter().enumerate() {
                if let Some(i) = t.rec.iter().position(|&r| r == rec) {
                    return Some(EventRef { lane: li, track: ti, idx: i });
                }
            }
        }
        None
    }

    fn list_enter(&mut self) {
        let rec = match self.mode {
            Mode::Table => self.table_rows.get(self.list_pos).and_then(|r| r.jump),
            Mode::Findings => self.findings.get(self.list_pos).and_then(|f| f.evidence),
            _ => None,
        };
        let Some(rec) = rec else {
            self.flash = Some("nothing to jump to".into());
            return;
        };
        // The target may be hidden by the filter: drop the filter rather than jump nowhere.
        if let Some(r) = self.find_rec(rec) {
            if self.ref_to_shown(r).is_none() {
                self.filter = None;
            }
            self.mode = Mode::Timeline;
            let (a, b) = self.store.span_of(r);
            let w = self.geometry.timeline_width.max(1);
            if b - a < self.view.span / 4 {
                self.view.reveal(a, b);
            } else {
                self.view.show_range(a, b, w);
            }
            self.select(r);
        }
    }

    /// Reads what a followed trace appended; keeps the selection and, when the window showed
    /// the end of the trace, keeps showing it.
    pub fn poll_follow(&mut self) -> Result<usize, accprof_trace::TraceError> {
        let Some(loader) = self.loader.as_mut() else { return Ok(0) };
        let was_at_end = self.view.end() >= self.store.end;
        let was_all = self.view.t0 <= self.store.origin && was_at_end;
        let sel = self.selected.map(|s| {
            let l = &self.store.lanes[s.lane];
            (l.source, l.kind, self.store.rec_of(s))
        });
        let added = loader.poll(&mut self.store, &mut |_, _| {})?;
        if added == 0 {
            return Ok(0);
        }
        self.refresh_rows();
        if was_all {
            self.view = Viewport::fit(self.store.origin, self.store.end);
        } else if was_at_end {
            self.view.t0 = self.store.end.saturating_sub(self.view.span);
        }
        self.selected = sel.and_then(|(src, kind, rec)| self.find_in_lane(src, kind, rec));
        if let Some(f) = &self.filter {
            let q = f.query.clone();
            self.filter = Some(Filter::build(&self.store, &q));
        }
        if self.mode == Mode::Table {
            self.refresh_table();
        }
        Ok(added)
    }

    fn find_in_lane(&self, src: usize, kind: LaneKind, rec: u32) -> Option<EventRef> {
        let lane = self.store.lanes.iter().position(|l| l.source == src && l.kind == kind)?;
        for (ti, t) in self.store.lanes[lane].tracks.iter().enumerate() {
            if let Some(i) = t.rec.iter().position(|&r| r == rec) {
                return Some(EventRef { lane, track: ti, idx: i });
            }
        }
        None
    }
}
