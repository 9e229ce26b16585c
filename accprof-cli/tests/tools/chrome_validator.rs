//! A structural check of Chrome Trace Event JSON, written from the format's documentation and
//! what Perfetto enforces: the checks that decide whether every event shows up in a viewer.
//!
//! - the top level is `{"traceEvents": [...]}` (with `displayTimeUnit`, if any, "ms" or "ns");
//! - every event has `ph`, `pid` and `name`; all but metadata have a non-negative `ts`; complete
//!   events (`X`) a non-negative `dur`; thread events a `tid`;
//! - on every (pid, tid) track, complete slices nest strictly (Perfetto drops one that crosses
//!   another), and `B`/`E` pairs balance, names matching;
//! - every process has a `process_name` and every track a `thread_name`;
//! - counter (`C`) events of one (pid, name) come in time order, with numeric args;
//! - flow events (`s` start, `f` finish) pair up by id: every `s` has one `f` with the same id,
//!   name and category, not before it; each lies within (edges included) a complete slice of its
//!   own track, the slice a viewer binds it to (a flow bound to nothing is not drawn).

#![allow(dead_code)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What a valid file held, for tests to assert on.
#[derive(Debug, Default)]
pub struct Summary {
    pub complete: usize,
    pub instants: usize,
    pub counters: usize,
    pub metadata: usize,
    /// Names of processes, by pid.
    pub processes: BTreeMap<i64, String>,
    /// Names of threads (tracks), by (pid, tid).
    pub threads: BTreeMap<(i64, i64), String>,
    /// Names of threads in the order a viewer shows them: by their process's sort index, then
    /// their own (thread ids are only handles).
    pub shown: Vec<String>,
    /// Maximum nesting depth of complete slices over all tracks.
    pub max_depth: usize,
    /// Flow arrows (matched `s`/`f` pairs).
    pub flows: usize,
}

/// One end of a flow arrow, as read.
#[derive(Debug, Clone)]
struct FlowEnd {
    track: (i64, i64),
    ts: i64,
    name: String,
    cat: String,
    index: usize,
}

/// Nanoseconds from a microsecond number, rounded as Perfetto rounds them.
fn ns(v: &Value) -> Option<i64> {
    v.as_f64().map(|us| (us * 1000.0).round() as i64)
}

/// Checks `json`; the error names the first problem found.
pub fn validate(json: &str) -> Result<Summary, String> {
    let root: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let events = root
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array at the top level")?;
    if let Some(unit) = root.get("displayTimeUnit") {
        if !matches!(unit.as_str(), Some("ms" | "ns")) {
            return Err(format!("displayTimeUnit is {unit}, not \"ms\" or \"ns\""));
        }
    }
    let mut sum = Summary::default();
    // Per (pid, tid): each complete slice as (start ns, end ns, event index).
    type Spans = Vec<(i64, i64, usize)>;
    let mut slices: BTreeMap<(i64, i64), Spans> = BTreeMap::new();
    let mut open: BTreeMap<(i64, i64), Vec<(String, i64)>> = BTreeMap::new();
    let mut used_pids = BTreeSet::new();
    let mut used_tracks = BTreeSet::new();
    let mut last_counter: BTreeMap<(i64, String), i64> = BTreeMap::new();
    let mut flow_starts: BTreeMap<String, FlowEnd> = BTreeMap::new();
    let mut flow_ends: BTreeMap<String, FlowEnd> = BTreeMap::new();
    let mut process_sort: BTreeMap<i64, i64> = BTreeMap::new();
    let mut thread_sort: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let at = || format!("event {i} ({e})");
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{}: no ph", at()))?;
        let pid = e
            .get("pid")
            .and_then(Value::as_i64)
            .ok_or_else(|| format!("{}: no integer pid", at()))?;
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{}: no name", at()))?;
        if ph == "M" {
            sum.metadata += 1;
            let arg = |k: &str| e.get("args").and_then(|a| a.get(k)).cloned();
            match name {
                "process_name" => {
                    let n = arg("name")
                        .and_then(|v| v.as_str().map(String::from))
                        .ok_or_else(|| format!("{}: no args.name", at()))?;
                    sum.processes.insert(pid, n);
                }
                "thread_name" => {
                    let tid = e
                        .get("tid")
                        .and_then(Value::as_i64)
                        .ok_or_else(|| format!("{}: no tid", at()))?;
                    let n = arg("name")
                        .and_then(|v| v.as_str().map(String::from))
                        .ok_or_else(|| format!("{}: no args.name", at()))?;
                    sum.threads.insert((pid, tid), n);
                }
                "process_sort_index" | "thread_sort_index" => {
                    let index = arg("sort_index")
                        .and_then(|v| v.as_i64())
                        .ok_or_else(|| format!("{}: no integer args.sort_index", at()))?;
                    match e.get("tid").and_then(Value::as_i64) {
                        Some(tid) => {
                            thread_sort.insert((pid, tid), index);
                        }
                        None => {
                            process_sort.insert(pid, index);
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        used_pids.insert(pid);
        let ts = e
            .get("ts")
            .and_then(ns)
            .ok_or_else(|| format!("{}: no numeric ts", at()))?;
        if ts < 0 {
            return Err(format!("{}: negative ts", at()));
        }
        let tid = || {
            e.get("tid")
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("{}: no integer tid", at()))
        };
        match ph {
            "X" => {
                let dur = e
                    .get("dur")
                    .and_then(ns)
                    .ok_or_else(|| format!("{}: no numeric dur", at()))?;
                if dur < 0 {
                    return Err(format!("{}: negative dur", at()));
                }
                let track = (pid, tid()?);
                used_tracks.insert(track);
                slices.entry(track).or_default().push((ts, ts + dur, i));
                sum.complete += 1;
            }
            "B" => {
                let track = (pid, tid()?);
                used_tracks.insert(track);
                open.entry(track).or_default().push((name.to_string(), ts));
            }
            "E" => {
                let track = (pid, tid()?);
                let (b, bts) = open
                    .get_mut(&track)
                    .and_then(Vec::pop)
                    .ok_or_else(|| format!("{}: E without B", at()))?;
                if b != name && !name.is_empty() {
                    return Err(format!("{}: E closes {b:?}", at()));
                }
                if ts < bts {
                    return Err(format!("{}: E before its B", at()));
                }
            }
            "i" | "I" => {
                if e.get("s").and_then(Value::as_str).unwrap_or("t") == "t" {
                    used_tracks.insert((pid, tid()?));
                }
                sum.instants += 1;
            }
            "C" => {
                let args = e
                    .get("args")
                    .and_then(Value::as_object)
                    .ok_or_else(|| format!("{}: counter without args", at()))?;
                if args.is_empty() || !args.values().all(Value::is_number) {
                    return Err(format!("{}: counter args must be numbers", at()));
                }
                let key = (pid, name.to_string());
                if let Some(&prev) = last_counter.get(&key) {
                    if ts < prev {
                        return Err(format!(
                            "{}: counter goes back in time ({prev} ns before)",
                            at()
                        ));
                    }
                }
                last_counter.insert(key, ts);
                sum.counters += 1;
            }
            "s" | "f" => {
                let id = e
                    .get("id")
                    .map(|v| v.to_string())
                    .ok_or_else(|| format!("{}: flow without id", at()))?;
                let track = (pid, tid()?);
                used_tracks.insert(track);
                let cat = e
                    .get("cat")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let end = FlowEnd {
                    track,
                    ts,
                    name: name.to_string(),
                    cat,
                    index: i,
                };
                let ends = if ph == "s" {
                    &mut flow_starts
                } else {
                    &mut flow_ends
                };
                if ends.insert(id.clone(), end).is_some() {
                    return Err(format!("{}: a second {ph:?} with id {id}", at()));
                }
            }
            other => return Err(format!("{}: phase {other:?} not expected here", at())),
        }
    }
    for (track, stack) in &open {
        if let Some((name, _)) = stack.last() {
            return Err(format!("track {track:?}: B {name:?} never ends"));
        }
    }
    for (track, list) in &mut slices {
        // Viewers order slices by start, longer first; a stable sort keeps file order for ties.
        list.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut stack: Vec<(i64, i64, usize)> = Vec::new();
        for &(s, e, i) in list.iter() {
            while stack.last().is_some_and(|&(_, pe, _)| pe <= s) {
                stack.pop();
            }
            if let Some(&(ps, pe, pi)) = stack.last() {
                if e > pe {
                    return Err(format!(
                        "track {track:?}: slice {} [{s}, {e}] ns crosses slice {} [{ps}, {pe}] ns without nesting",
                        events[i], events[pi]
                    ));
                }
            }
            stack.push((s, e, i));
            sum.max_depth = sum.max_depth.max(stack.len());
        }
    }
    for (id, s) in &flow_starts {
        let f = flow_ends
            .get(id)
            .ok_or_else(|| format!("flow start {} has no finish with id {id}", events[s.index]))?;
        if (&f.name, &f.cat) != (&s.name, &s.cat) {
            return Err(format!(
                "flow {id}: start {} and finish {} differ in name or category",
                events[s.index], events[f.index]
            ));
        }
        if f.ts < s.ts {
            return Err(format!(
                "flow {id}: finish {} before its start {}",
                events[f.index], events[s.index]
            ));
        }
        for end in [s, f] {
            let inside = slices
                .get(&end.track)
                .is_some_and(|list| list.iter().any(|&(a, b, _)| a <= end.ts && end.ts <= b));
            if !inside {
                return Err(format!(
                    "flow {id}: {} lies within no slice of its track",
                    events[end.index]
                ));
            }
        }
        sum.flows += 1;
    }
    if let Some((id, f)) = flow_ends
        .iter()
        .find(|(id, _)| !flow_starts.contains_key(*id))
    {
        return Err(format!(
            "flow finish {} has no start with id {id}",
            events[f.index]
        ));
    }
    for pid in &used_pids {
        if !sum.processes.contains_key(pid) {
            return Err(format!("process {pid} has no process_name metadata"));
        }
    }
    for t in &used_tracks {
        if !sum.threads.contains_key(t) {
            return Err(format!("track {t:?} has no thread_name metadata"));
        }
    }
    let mut shown: Vec<(i64, i64, i64, i64, String)> = sum
        .threads
        .iter()
        .map(|(&(pid, tid), name)| {
            let p = process_sort.get(&pid).copied().unwrap_or(pid);
            let t = thread_sort.get(&(pid, tid)).copied().unwrap_or(tid);
            (p, pid, t, tid, name.clone())
        })
        .collect();
    shown.sort();
    sum.shown = shown.into_iter().map(|s| s.4).collect();
    Ok(sum)
}
