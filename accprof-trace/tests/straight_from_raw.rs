//! The writer encodes a thread buffer's raw records straight into events chunks
//! (`TraceWriter::stage_events`), without building events. It must write exactly the bytes that
//! decoding every record into an `Event` and encoding those would: for every event kind, partly
//! filled structures, NULL, -1 and SIZE_MAX fields, hashes, missing starts and ends, ends that
//! complete their start, packed events between raw records, and records that repeat their
//! predecessor's structures (which the straight path does not read again).

use accprof_abi::acc_event_t;
use accprof_trace::packed::Unpack;
use accprof_trace::raw::{self, word};
use accprof_trace::{Event, Field, Header, PackedEvents, TraceWriter};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Kinds of every shape and information kind, and numbers no specification defines.
const KINDS: &[i32] = &[
    1, 3, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 22, 24, 0, -3, 12345, 31,
];

/// Values a runtime puts in a word: zeros, -1, SIZE_MAX, small numbers, pointers.
fn value(r: &mut Rng) -> u64 {
    r.pick(&[
        0,
        u64::MAX,
        u64::MAX - 1,
        1,
        2,
        64,
        4096,
        0x7f00_0000_1000,
        0x7f00_0000_2000,
        0x7000_0000_0000,
        0x5555_0000_1234,
    ])
}

/// Two 32-bit values as one word (low, high).
fn halves(lo: u64, hi: u64) -> u64 {
    (lo & 0xffff_ffff) | hi << 32
}

fn int(r: &mut Rng) -> u64 {
    r.pick(&[0, 1, 2, 5, 62, 70, 201711, 0xffff_ffff, 0xffff_fffe])
}

/// A copied structure of `words` words with `valid` bytes filled: bytes past them zero, or
/// (a damaged live file) left as they were.
fn structure(r: &mut Rng, kind: i32, words: usize, full: u64, first_hi_is_valid: bool) -> Vec<u64> {
    let valid = match r.below(10) {
        0 => r.below(full + 16),
        1 => 0xffff_ffff, // -1: covers nothing
        _ => full,
    };
    let mut w: Vec<u64> = (0..words)
        .map(|i| match i {
            0 => 0,
            _ if r.chance(50) => halves(int(r), int(r)),
            _ => value(r),
        })
        .collect();
    w[0] = if first_hi_is_valid {
        halves(kind as u32 as u64, valid)
    } else {
        halves(int(r), valid)
    };
    if valid < full && r.chance(80) {
        // Zero every byte past `valid`.
        let bytes = (valid as usize).min(words * 8);
        for (i, word) in w.iter_mut().enumerate() {
            let from = i * 8;
            if from >= bytes {
                *word = 0;
            } else if from + 8 > bytes {
                *word &= (1u64 << ((bytes - from) * 8)) - 1;
            }
        }
        // The first 8 bytes are always filled.
        w[0] = halves(kind as u32 as u64, valid);
    }
    w
}

/// The structures of the previous record, reused now and then (the common case the straight
/// path skips).
#[derive(Default)]
struct Last {
    prof: Vec<u64>,
    api: Vec<u64>,
    header: [u64; 3],
}

fn record(r: &mut Rng, last: &mut Last) -> Vec<u64> {
    let kind = r.pick(KINDS);
    let info_words = raw::info_words(acc_event_t(kind));
    let mut parts = 0;
    let mut body = Vec::new();
    if r.chance(95) {
        parts |= raw::PROF;
        if last.prof.is_empty() || r.chance(30) {
            last.prof = structure(r, kind, raw::PROF_WORDS, 72, true);
        }
        let mut p = last.prof.clone();
        p[0] = halves(kind as u32 as u64, p[0] >> 32);
        body.extend(p);
    }
    if r.chance(80) {
        parts |= raw::INFO;
        body.extend(structure(r, kind, info_words, info_words as u64 * 8, true));
    }
    if r.chance(70) {
        parts |= raw::API;
        if last.api.is_empty() || r.chance(30) {
            last.api = structure(r, kind, raw::API_WORDS, 40, false);
        }
        body.extend(last.api.clone());
    }
    if r.chance(20) {
        parts |= raw::END_INFO;
        body.extend(structure(
            r,
            kind + 1,
            info_words,
            info_words as u64 * 8,
            true,
        ));
    }
    if r.chance(10) {
        parts |= raw::HASH;
        body.push(value(r));
    }
    let flags = r.pick(&[0, 0, 0, raw::NO_START, raw::NO_END]);
    let start = 1_000_000 + r.below(1 << 20);
    let end = start + r.pick(&[0, 1, 500, 1 << 40]);
    if r.chance(40) || last.header == [0; 3] {
        last.header = [
            halves(r.below(3), r.below(3)),
            halves(r.below(3), r.below(3)),
            halves(r.pick(&[4242, 4243]), r.pick(&[0, 0, 7])),
        ];
    }
    let mut w = vec![
        raw::TAG | parts | flags | u64::from(kind as u32),
        start,
        end,
        last.header[0],
        last.header[1],
        last.header[2],
        r.pick(&[0, 0, 0x40_1234, 0x5555_0000_1234]),
    ];
    w.extend(body);
    assert_eq!(w.len(), raw::len(w[word::HEAD]));
    w
}

fn packed_event(r: &mut Rng) -> Event {
    let mut e = Event::new(
        acc_event_t(r.pick(&[1201, 1202, 1203])),
        2_000_000 + r.below(1000),
    );
    e.end_ns = e.start_ns + r.below(100);
    for _ in 0..r.below(6) {
        e.set(Field::ALL[r.below(48) as usize], value(r));
    }
    e
}

/// A thread buffer of `n` events: raw records with a packed event now and then.
fn buffer(r: &mut Rng, last: &mut Last, n: usize) -> PackedEvents {
    let mut b = PackedEvents::with_capacity_words(n * raw::MAX_WORDS + 64);
    for _ in 0..n {
        if r.chance(5) {
            assert!(b.push(&packed_event(r)));
        } else {
            let w = record(r, last);
            let mut words = [0; raw::MAX_WORDS];
            words[..w.len()].copy_from_slice(&w);
            assert!(b.push_raw(&words, w.len()));
        }
    }
    b
}

/// What the writer does to each event between reading and encoding it: its clock, and a name
/// for some host pointers.
fn adjust(start: u64, end: u64) -> (u64, u64) {
    (start * 3 + 7, end * 3 + 7)
}

fn names_for(e: &Event) -> Option<[(Field, u64); 3]> {
    let p = e.get(Field::HostPtr)?;
    // Now and then a field the record set itself, and one of the fields records repeat.
    let repeated = if p & 0x2000 != 0 {
        Field::Thread
    } else {
        Field::AllocBytes
    };
    (e.get(Field::VarName).is_none() && p & 0x1000 != 0).then_some([
        (Field::AllocSite, 0x5555_0000_0042),
        (Field::AllocBase, p & !0xfff),
        (repeated, 1 << 20),
    ])
}

/// Both paths over the same buffers, into two traces.
fn both(buffers: &[&[u64]]) -> (Vec<u8>, Vec<u8>, u64) {
    let mut by_events = TraceWriter::new(Vec::new(), &Header::default()).unwrap();
    let mut straight = TraceWriter::new(Vec::new(), &Header::default()).unwrap();
    let mut total = 0;
    for words in buffers {
        let mut evs = Vec::new();
        Unpack::from_words(words).unpack_into(&mut evs);
        for e in &mut evs {
            (e.start_ns, e.end_ns) = adjust(e.start_ns, e.end_ns);
            if let Some(fields) = names_for(e) {
                for (f, v) in fields {
                    e.set(f, v);
                }
            }
        }
        by_events.write_events(&evs).unwrap();
        let n = straight.stage_events(words, |ev| {
            let (s, e) = adjust(ev.event().start_ns, ev.event().end_ns);
            ev.set_times(s, e);
            if let Some(fields) = names_for(ev.event()) {
                for (f, v) in fields {
                    // Set twice: the second value replaces the first.
                    ev.set(f, v ^ 1);
                    ev.set(f, v);
                }
            }
        });
        assert_eq!(n, evs.len() as u64);
        straight.write_staged().unwrap();
        total += n;
    }
    (by_events.into_inner(), straight.into_inner(), total)
}

#[test]
fn straight_encoding_writes_the_bytes_of_decoding_and_encoding() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut last = Last::default();
    // Several buffers, one of them over a chunk's 16384 events, and many short ones (each
    // starts a chunk, often with the structures of the record before).
    let sizes = [300, 1, 17000, 2000]
        .into_iter()
        .chain((0..60).map(|i| 1 + i % 4));
    let bufs: Vec<PackedEvents> = sizes.map(|n| buffer(&mut r, &mut last, n)).collect();
    let words: Vec<Vec<u64>> = bufs
        .iter()
        .map(|b| b.shared().untaken().0.to_vec())
        .collect();
    let refs: Vec<&[u64]> = words.iter().map(|w| &w[..]).collect();
    let (a, b, n) = both(&refs);
    assert_eq!(n, 300 + 1 + 17000 + 2000 + 150);
    assert!(a == b, "the straight path wrote other bytes");
    // And the trace reads back with every event.
    let reader = accprof_trace::TraceReader::new("straight", &b[..]).unwrap();
    let t = accprof_trace::Trace::from_reader(reader.without_live_file()).unwrap();
    assert_eq!(t.events.len() as u64, n);
}

#[test]
fn both_paths_stop_at_the_same_word_that_does_not_decode() {
    let mut r = Rng(7);
    let b = buffer(&mut r, &mut Last::default(), 50);
    let words = b.shared().untaken().0.to_vec();
    // Cut inside the last event, then a word that is neither a record nor a packed event.
    for cut in [words.len() - 1, words.len() - 3] {
        let (a, s, _) = both(&[&words[..cut]]);
        assert!(a == s);
    }
    let mut bad = words.clone();
    bad.push(u64::MAX >> 1);
    let (a, s, n) = both(&[&bad]);
    assert!(a == s);
    assert_eq!(n, 50);
}
