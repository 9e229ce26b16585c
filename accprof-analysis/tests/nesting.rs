//! Attribution of transfers and launches to their construct, whatever order the events come in.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_analysis::{ChildKind, ProfileBuilder};
use accprof_trace::{Event, Field, StringTable};

fn ev(kind: acc_event_t, s: u64, e: u64, thread: i64, line: i64) -> Event {
    let mut x = Event::new(kind, s);
    x.end_ns = e;
    x.set_i64(Field::Thread, thread);
    x.set_i64(Field::LineNo, line);
    x.set_i64(
        Field::ParentConstruct,
        i64::from(acc_construct_t::PARALLEL.0),
    );
    if kind == acc_event_t::ENQUEUE_UPLOAD_START {
        x.set(Field::Bytes, 4096);
        x.set(Field::HostPtr, 0x1000);
    }
    x
}

/// One construct at `line` on `thread` starting at `t`: an upload inside the implicit enter
/// data, then a launch.
fn construct(t: u64, thread: i64, line: i64) -> [Event; 4] {
    [
        ev(
            acc_event_t::ENQUEUE_UPLOAD_START,
            t + 20,
            t + 30,
            thread,
            line,
        ),
        ev(acc_event_t::ENTER_DATA_START, t + 10, t + 40, thread, line),
        ev(
            acc_event_t::ENQUEUE_LAUNCH_START,
            t + 50,
            t + 60,
            thread,
            line,
        ),
        ev(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            t,
            t + 100,
            thread,
            line,
        ),
    ]
}

fn check(events: &[Event]) {
    let mut b = ProfileBuilder::new();
    for e in events {
        b.feed(e);
    }
    let p = b.finish(&StringTable::default());
    assert_eq!(p.constructs.len(), 2, "{:#?}", p.constructs);
    for c in &p.constructs {
        assert_eq!(c.reached, 3);
        assert_eq!(c.child_total(ChildKind::Upload), (3, 3 * 4096, 30));
        assert_eq!(c.child_total(ChildKind::Launch).0, 3);
    }
    assert_eq!(p.summary.uploads.count, 6);
}

fn interleaved(order: impl Fn([Event; 4]) -> Vec<Event>) -> Vec<Event> {
    let mut all = Vec::new();
    for i in 0..3u64 {
        // Two threads running constructs at lines 10 and 20 side by side.
        all.extend(order(construct(1000 * i, 1, 10)));
        all.extend(order(construct(1000 * i + 5, 2, 20)));
    }
    all
}

#[test]
fn end_ordered_events_nest_under_their_construct() {
    check(&interleaved(|c| c.to_vec()));
}

#[test]
fn start_ordered_events_nest_under_their_construct() {
    check(&interleaved(|c| vec![c[3], c[1], c[0], c[2]]));
}
