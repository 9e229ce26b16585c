//! The symbols chunk appended to a finished trace, as `accprof run` and `accprof symbolize` do:
//! after the footer (and after a chunk a kill cut short, which is dropped first), continuing the
//! sequence numbers, found by readers before the events.

use accprof_abi::acc_event_t;
use accprof_trace::symbols::{scan, Site};
use accprof_trace::{Event, Field, Footer, Header, SymbolTable, Trace, TraceWriter};
use std::io::{Seek, SeekFrom};

fn finished_trace(path: &std::path::Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = TraceWriter::new(file, &Header::default()).unwrap();
    let events: Vec<Event> = (0..100)
        .map(|i| {
            let mut e = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 1000 + i);
            e.set(Field::ReturnAddress, 0x5000_1234);
            e
        })
        .collect();
    w.write_events(&events).unwrap();
    w.write_footer(&Footer {
        events_recorded: 100,
        ..Footer::default()
    })
    .unwrap();
}

fn table() -> SymbolTable {
    let mut t = SymbolTable::default();
    t.module_mut(0, b"id").sites.insert(
        0x1234,
        Site {
            file: Some("/src/app.c".into()),
            line: Some(12),
            function: Some("main".into()),
        },
    );
    t
}

fn append(path: &std::path::Path) {
    let found = scan(path).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(found.complete_end).unwrap();
    f.seek(SeekFrom::End(0)).unwrap();
    TraceWriter::append(f, found.next_seq)
        .write_symbols(&table())
        .unwrap();
}

#[test]
fn a_symbols_chunk_after_the_footer_is_read_first_and_the_trace_stays_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    finished_trace(&path);
    let before = scan(&path).unwrap();
    assert_eq!(before.symbols_chunks, 0);
    // Header, events, footer.
    assert_eq!(before.next_seq, 3);
    append(&path);
    let after = scan(&path).unwrap();
    assert_eq!(after.symbols_chunks, 1);
    assert_eq!(after.next_seq, 4);
    let mut r = accprof_trace::TraceReader::open(&path).unwrap();
    // Known before the first event is read.
    assert_eq!(r.symbols(), &table());
    while r.next_event().unwrap().is_some() {}
    assert!(r.integrity().is_complete(), "{}", r.integrity());
    let t = Trace::load(&path).unwrap();
    assert_eq!(t.symbols, table());
    assert_eq!(t.events.len(), 100);
}

#[test]
fn a_chunk_cut_short_by_a_kill_is_dropped_before_the_symbols_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    finished_trace(&path);
    // Killed while writing another events chunk: half of it reached the file.
    let whole = std::fs::read(&path).unwrap();
    let mut more = Vec::new();
    {
        let mut w = TraceWriter::append(&mut more, 3);
        w.write_events(&[Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 5)])
            .unwrap();
    }
    let mut killed = whole.clone();
    killed.extend_from_slice(&more[..more.len() / 2]);
    std::fs::write(&path, &killed).unwrap();
    assert_eq!(scan(&path).unwrap().complete_end, whole.len() as u64);
    append(&path);
    let t = Trace::load(&path).unwrap();
    assert_eq!(t.symbols, table());
    assert!(t.truncation_warning.is_none());
    assert!(t.integrity.is_complete(), "{}", t.integrity);
}
