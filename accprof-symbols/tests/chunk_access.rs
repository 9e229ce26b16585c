//! Reading a trace again from any of its events chunks gives the same events as reading it
//! whole, resolved the same way, with the same string ids.

use accprof_symbols::{ChunkReader, ResolvingReader};
use accprof_testkit::laplace::{write_trace, Shape, SynthConfig};
use accprof_trace::Event;
use std::path::Path;

fn read_all<R: std::io::Read>(r: &mut ResolvingReader<R>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Some(ev) = r.next_event().unwrap() {
        out.push(ev);
    }
    out
}

#[test]
fn every_chunk_reads_again_as_it_read_the_first_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.trace");
    write_trace(
        &SynthConfig::new(Shape::LaplaceNaive).with_event_target(150_000),
        &path,
    )
    .unwrap();
    let mut first = ResolvingReader::open(&path).unwrap();
    let all = read_all(&mut first);
    let index = first.chunk_index().clone();
    assert!(
        index.len() >= 3,
        "a trace of {} events in {} chunks",
        all.len(),
        index.len()
    );
    assert_eq!(index.first_event(0), Some(0));
    for chunk in [1, index.len() / 2, index.len() - 1] {
        let start = index.first_event(chunk).unwrap();
        assert_eq!(index.chunk_of(start), Some(chunk));
        let mut again = ChunkReader::open_at(&path, &index, chunk, &first).unwrap();
        let tail = read_all(&mut again);
        assert_eq!(tail.len() as u64, all.len() as u64 - start, "chunk {chunk}");
        assert!(
            tail == all[start as usize..],
            "chunk {chunk} reads differently"
        );
        assert_eq!(again.events_read(), all.len() as u64);
    }
}

#[test]
fn resolved_names_keep_their_ids() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("traces/gpu");
    for name in ["gcc_data.trace", "gcc_heap.trace"] {
        let path = root.join(name);
        let mut first = ResolvingReader::open(&path).unwrap();
        let all = read_all(&mut first);
        let index = first.chunk_index().clone();
        let mut again = ChunkReader::open_at(&path, &index, 0, &first).unwrap();
        let tail = read_all(&mut again);
        assert!(tail == all, "{name} reads differently from its first chunk");
        for ev in &all {
            for id in [ev.src_file(), ev.var_name(), ev.func_name()] {
                assert_eq!(
                    first.strings().resolve(id),
                    again.strings().resolve(id),
                    "{name}"
                );
            }
        }
    }
}
