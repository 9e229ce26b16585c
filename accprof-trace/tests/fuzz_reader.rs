//! Mutation fuzzing of the reader: a valid trace damaged in every way a disk, a killed
//! writer or a hostile file can damage it (bit flips, truncation, duplicated, dropped and
//! swapped chunks, huge lengths, counts and ids, re-checksummed so they get past the CRC).
//! Whatever the damage: no panic, no hang, memory bounded by the file's size, and either
//! events or one clear line. A fixed seed and a fixed number of rounds: the same few seconds
//! in CI every time.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_abi::acc_event_t;
use accprof_trace::{
    Event, Field, Footer, Header, LostReason, Module, StrId, Trace, TraceReader, TraceWriter,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Counts live heap bytes and their peak, to bound what one read may allocate.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only adds counters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ROUNDS: usize = 2500;
const CHUNK_HEADER: usize = 16;
const FILE_HEADER: usize = 16;

/// A small xorshift generator: the same mutations in every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn header() -> Header {
    Header {
        exe: "/bin/app".into(),
        args: vec!["app".into()],
        pid: 7,
        tool_version: "t".into(),
        ..Default::default()
    }
}

/// A trace with every kind of chunk: strings, modules, events in several chunks, drops,
/// lost events and a footer.
fn pristine() -> (Vec<u8>, usize) {
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    w.write_strings([
        (StrId(0), &b"app.c"[..]),
        (StrId(1), &b"A"[..]),
        (StrId(2), &b"main"[..]),
    ])
    .unwrap();
    w.write_modules(&[Module {
        path: "/bin/app".into(),
        bias: 0x1000,
        start: 0x1000,
        end: 0x9000,
        build_id: vec![9; 20],
    }])
    .unwrap();
    let mut n = 0;
    for batch in 0..6u64 {
        let evs: Vec<Event> = (0..40u64)
            .map(|i| {
                let kind = if i % 2 == 0 {
                    acc_event_t::ENQUEUE_UPLOAD_START
                } else {
                    acc_event_t::COMPUTE_CONSTRUCT_START
                };
                let mut e = Event::new(kind, 1_000 + batch * 100_000 + i * 1_000);
                e.end_ns = e.start_ns + 400;
                e.set_i64(Field::Thread, (batch % 3) as i64);
                e.set(Field::SrcFile, 0);
                e.set(Field::FuncName, 2);
                e.set_i64(Field::LineNo, 10 + i as i64);
                if i % 2 == 0 {
                    e.set(Field::VarName, 1);
                    e.set(Field::Bytes, 4096);
                    e.set(Field::ReturnAddress, 0x2000 + i);
                }
                e
            })
            .collect();
        n += evs.len();
        w.write_events(&evs).unwrap();
        if batch == 2 {
            w.write_drops(&[(1, 3)]).unwrap();
            w.write_lost(&[(LostReason::Late, 2)]).unwrap();
        }
    }
    w.write_footer(&Footer {
        events_recorded: n as u64,
        events_dropped: 3,
        end_monotonic_ns: 1,
    })
    .unwrap();
    (w.into_inner(), n)
}

/// (offset, total length) of each chunk after the file header.
fn chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = FILE_HEADER;
    while at + CHUNK_HEADER <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at, CHUNK_HEADER + len));
        at += CHUNK_HEADER + len;
    }
    out
}

/// A chunk of `kind` with `payload` and sequence number `seq`, with a valid checksum.
fn forged_chunk(kind: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&seq.to_le_bytes());
    crc.update(payload);
    let mut c = b"CK".to_vec();
    c.extend_from_slice(&[kind, 0]);
    c.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    c.extend_from_slice(&crc.finalize().to_le_bytes());
    c.extend_from_slice(&seq.to_le_bytes());
    c[3] = accprof_trace::chunk::header_check(&c);
    c.extend_from_slice(payload);
    c
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn seq_of(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at + 12..at + 16].try_into().unwrap())
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    FlipBits,
    Truncate,
    DuplicateChunk,
    DropChunk,
    SwapChunks,
    HugeLength,
    HugeStringId,
    HugeEventCount,
    HugeBlob,
}

const MUTATIONS: [Mutation; 9] = [
    Mutation::FlipBits,
    Mutation::Truncate,
    Mutation::DuplicateChunk,
    Mutation::DropChunk,
    Mutation::SwapChunks,
    Mutation::HugeLength,
    Mutation::HugeStringId,
    Mutation::HugeEventCount,
    Mutation::HugeBlob,
];

fn mutate(rng: &mut Rng, base: &[u8], m: Mutation) -> Vec<u8> {
    let mut b = base.to_vec();
    let cs = chunks(base);
    // Never the header chunk (index 0) for chunk-level mutations: that one is tested apart.
    let pick = |rng: &mut Rng| cs[1 + rng.below(cs.len() - 1)];
    let next_seq = seq_of(base, cs[cs.len() - 1].0) + 1;
    match m {
        Mutation::FlipBits => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        Mutation::Truncate => b.truncate(rng.below(b.len())),
        Mutation::DuplicateChunk => {
            let (at, len) = pick(rng);
            let copy = base[at..at + len].to_vec();
            let (to, _) = pick(rng);
            let to = if to > at { to } else { at + len };
            b.splice(to..to, copy);
        }
        Mutation::DropChunk => {
            let (at, len) = pick(rng);
            b.drain(at..at + len);
        }
        Mutation::SwapChunks => {
            let (a, b2) = (pick(rng), pick(rng));
            let (first, second) = if a.0 < b2.0 { (a, b2) } else { (b2, a) };
            if first.0 != second.0 {
                let mut out = base[..first.0].to_vec();
                out.extend_from_slice(&base[second.0..second.0 + second.1]);
                out.extend_from_slice(&base[first.0 + first.1..second.0]);
                out.extend_from_slice(&base[first.0..first.0 + first.1]);
                out.extend_from_slice(&base[second.0 + second.1..]);
                b = out;
            }
        }
        Mutation::HugeLength => {
            let (at, _) = pick(rng);
            let len = [u32::MAX, 64 << 20, (64 << 20) - 1, 1 << 30][rng.below(4)];
            b[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
            // Half of them with a matching header check: only the memory bound stops those.
            if rng.below(2) == 0 {
                b[at + 3] = accprof_trace::chunk::header_check(&b[at..at + CHUNK_HEADER]);
            }
        }
        Mutation::HugeStringId => {
            let mut p = Vec::new();
            varint(
                &mut p,
                [(1 << 26) - 1, 1 << 26, u64::from(u32::MAX), u64::MAX][rng.below(4)],
            );
            varint(&mut p, 1);
            p.push(b'x');
            b.extend(forged_chunk(2, next_seq, &p));
        }
        Mutation::HugeEventCount => {
            let mut p = Vec::new();
            varint(&mut p, [u64::MAX, 1 << 40, 1 << 20][rng.below(3)]);
            p.extend_from_slice(&[2, 0, 0, 0]);
            b.extend(forged_chunk(4, next_seq, &p));
        }
        Mutation::HugeBlob => {
            // A modules chunk whose path claims more bytes than the chunk has.
            let mut p = Vec::new();
            varint(&mut p, u64::MAX >> rng.below(40));
            p.extend_from_slice(b"short");
            b.extend(forged_chunk(3, next_seq, &p));
        }
    }
    b
}

fn check_one(bytes: &[u8], m: Mutation, expected: usize) -> Outcome {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let result = std::panic::catch_unwind(|| {
        TraceReader::new("fuzzed.trace", bytes)
            .and_then(Trace::from_reader)
            .map_err(|e| e.to_string())
    });
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    // Whole decoded events (~300 bytes each, at most one per payload byte) dominate: a bound
    // in the file's size, far below the gigabytes a trusted length or id would cost.
    let bound = (8 << 20) + bytes.len() * 1024;
    assert!(
        peak <= bound,
        "{m:?}: reading {} bytes allocated {peak} bytes at peak",
        bytes.len()
    );
    match result {
        Err(_) => panic!("{m:?}: the reader panicked"),
        Ok(Err(line)) => {
            assert!(
                !line.is_empty() && !line.contains('\n'),
                "{m:?}: not one line: {line:?}"
            );
            assert!(
                line.starts_with("fuzzed.trace: "),
                "{m:?}: the error names no file: {line}"
            );
            Outcome::Error
        }
        Ok(Ok(t)) => {
            let i = &t.integrity;
            let shown = i.to_string();
            assert!(
                !shown.contains('\n'),
                "{m:?}: integrity is not one line: {shown}"
            );
            match m {
                Mutation::DuplicateChunk if t.events.len() != expected => {
                    panic!(
                        "{m:?}: a duplicated chunk changed the events read: {} of {expected}",
                        t.events.len()
                    )
                }
                Mutation::DuplicateChunk => assert!(i.duplicate_chunks >= 1, "{m:?}: {shown}"),
                Mutation::DropChunk => {
                    assert!(i.missing_chunks >= 1 || !i.ended_cleanly, "{m:?}: {shown}")
                }
                _ => {}
            }
            if t.events.len() < expected {
                assert!(
                    !i.is_complete(),
                    "{m:?}: {} of {expected} events read, yet complete",
                    t.events.len()
                );
            }
            Outcome::Read
        }
    }
}

enum Outcome {
    Read,
    Error,
}

#[test]
fn a_damaged_trace_reads_or_fails_in_one_line_never_panics_and_allocates_in_proportion() {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    // On a thread of its own so that a hang fails the test instead of stalling CI.
    std::thread::spawn(move || {
        let (base, expected) = pristine();
        let t = Trace::from_reader(TraceReader::new("pristine", &base[..]).unwrap()).unwrap();
        assert_eq!(t.events.len(), expected);
        assert_eq!(t.integrity.dropped, 3);
        assert_eq!(t.integrity.lost_late, 2);
        assert!(
            !t.integrity.is_complete(),
            "drops and lost events are problems to show"
        );
        let mut rng = Rng(0x5eed_acc9_u64);
        let (mut read, mut errors) = (0, 0);
        for round in 0..ROUNDS {
            let m = MUTATIONS[round % MUTATIONS.len()];
            let bytes = mutate(&mut rng, &base, m);
            match check_one(&bytes, m, expected) {
                Outcome::Read => read += 1,
                Outcome::Error => errors += 1,
            }
        }
        // A header chunk damaged in place: the file is refused in one line, never guessed.
        let mut bad_header = base.clone();
        bad_header[FILE_HEADER + CHUNK_HEADER + 3] ^= 0x40;
        assert!(matches!(
            check_one(&bad_header, Mutation::FlipBits, expected),
            Outcome::Error
        ));
        done_tx.send((read, errors)).unwrap();
    });
    let (read, errors) = done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the fuzz rounds finished (no hang)");
    assert_eq!(read + errors, ROUNDS);
    assert!(
        read > 0 && errors > 0,
        "the mutations reach both outcomes: {read} read, {errors} refused"
    );
}

/// The trace of a killed run (no footer) whose writer had written the first `written` events
/// of live-file slot 0 (generation 1), and its live file: slot 0 holds 5 events, slot 1
/// (generation 3) 4 more, timestamps in ticks at 2 ns per tick from the anchors.
fn killed_run(written: usize) -> (Vec<u8>, Vec<u8>, Vec<Event>) {
    use accprof_trace::live::{self, word, SlotHeader};
    let event = |i: u64| {
        let mut e = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 1_500 + i * 10);
        e.end_ns = e.start_ns + 5;
        e.set(Field::SrcFile, 0);
        e.set(Field::KernelName, 9);
        e.set_i64(Field::LineNo, i as i64);
        e
    };
    let slot_events: [Vec<Event>; 2] = [(0..5).map(event).collect(), (5..9).map(event).collect()];
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    w.write_strings([(StrId(0), &b"app.c"[..])]).unwrap();
    let in_trace: Vec<Event> = slot_events[0][..written]
        .iter()
        .map(|e| {
            let mut e = *e;
            e.start_ns = 5_000 + (e.start_ns - 1_000) * 2;
            e.end_ns = 5_000 + (e.end_ns - 1_000) * 2;
            e
        })
        .collect();
    w.write_slot_written(0, 1, written as u64).unwrap();
    w.write_events(&in_trace).unwrap();

    let (slot_words, strings) = (4 * accprof_trace::packed::MAX_EVENT_WORDS, 256);
    let slots_offset = live::HEADER_BYTES + strings;
    let len = slots_offset + 2 * live::slot_stride(slot_words);
    let mut image = vec![0u64; len / 8];
    let h = |image: &mut Vec<u64>, i: usize, v: u64| image[i] = v;
    for (i, v) in [
        (word::MAGIC, u64::from_le_bytes(live::LIVE_MAGIC)),
        (word::VERSION, live::LIVE_VERSION),
        (word::PID, 7),
        (word::FILE_LEN, len as u64),
        (word::SLOT_COUNT, 2),
        (word::SLOT_WORDS, slot_words as u64),
        (word::SLOTS_OFFSET, slots_offset as u64),
        (word::STRINGS_OFFSET, live::HEADER_BYTES as u64),
        (word::STRINGS_CAPACITY, strings as u64),
        (word::CLOCK, 1),
        (word::FIRST_TICKS, 1_000),
        (word::FIRST_NS, 5_000),
        (word::ANCHOR_INDEX, 1),
        (word::ANCHORS + 2, 2_000),
        (word::ANCHORS + 3, 7_000),
    ] {
        h(&mut image, i, v);
    }
    // One string, committed: "kern" as id 9.
    let s = live::HEADER_BYTES / 8;
    image[s] = 5;
    image[s + 1] = 9 | live::STRING_COMMITTED;
    image[s + 2] = u64::from_le_bytes(*b"kern\0\0\0\0");
    image[word::STRINGS_RESERVED] = 24;
    for (i, events) in slot_events.iter().enumerate() {
        let at = (slots_offset + i * live::slot_stride(slot_words)) / 8;
        let base = image.as_mut_ptr();
        // SAFETY: `at` and the slot's words lie inside `image`, which outlives `buf` (dropped
        // at the end of this iteration) and is not touched while it lives.
        let mut buf = unsafe {
            let header = std::ptr::NonNull::new_unchecked(base.add(at) as *mut SlotHeader);
            header
                .as_ref()
                .generation
                .store([1, 3][i], Ordering::Relaxed);
            let data = std::ptr::NonNull::new_unchecked(base.add(at + 8));
            accprof_trace::PackedEvents::in_slot(data, slot_words, header, i as u32)
        };
        for e in events {
            assert!(buf.push(e));
        }
    }
    let bytes = image.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut want: Vec<Event> = slot_events.concat()[written..].to_vec();
    for e in &mut want {
        e.start_ns = 5_000 + (e.start_ns - 1_000) * 2;
        e.end_ns = 5_000 + (e.end_ns - 1_000) * 2;
    }
    (w.into_inner(), bytes, want)
}

fn read_with_live(trace: &[u8], live: &std::path::Path) -> Result<Trace, String> {
    TraceReader::new("fuzzed.trace", trace)
        .map(|r| r.with_live_file(live))
        .and_then(Trace::from_reader)
        .map_err(|e| e.to_string())
}

#[test]
fn a_killed_runs_live_file_adds_what_the_trace_lacks_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace.live");
    for written in [0, 2, 5] {
        let (trace, live, want) = killed_run(written);
        std::fs::write(&path, &live).unwrap();
        let t = read_with_live(&trace, &path).unwrap();
        assert_eq!(t.events.len(), 9, "{written} in the trace: each event once");
        assert_eq!(&t.events[written..], &want[..], "converted to ns, in order");
        assert_eq!(t.integrity.recovered_from_live, 9 - written as u64);
        assert_eq!(
            t.str(t.events[8].get(Field::KernelName).map(|v| StrId(v as u32))),
            Some("kern")
        );
        assert!(t.integrity.to_string().contains(&format!(
            "{} events recovered from the live file",
            9 - written
        )));
    }
}

#[test]
fn a_damaged_live_file_is_used_or_ignored_in_one_line_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace.live");
    let (trace, live, _) = killed_run(2);
    let mut rng = Rng(0x11fe_5eed);
    let (mut used, mut ignored) = (0, 0);
    for round in 0..600 {
        let mut b = live.clone();
        match round % 4 {
            0 => {
                for _ in 0..1 + rng.below(16) {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
            1 => b.truncate(rng.below(b.len())),
            _ => {
                // A header or slot-header word made huge, or just wrong.
                let words = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
                let slot = (live.len() - 2 * (64 + 4 * 38 * 8)) / 8;
                let i = if rng.below(2) == 0 {
                    words[rng.below(words.len())]
                } else {
                    slot + rng.below(3) + (rng.below(2) * (8 + 4 * 38))
                };
                let v = [u64::MAX, 1 << 40, 1 << 26, 153, 0, rng.next()][rng.below(6)];
                b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        std::fs::write(&path, &b).unwrap();
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let r = std::panic::catch_unwind(|| read_with_live(&trace, &path));
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        assert!(
            peak <= (8 << 20) + b.len() * 1024,
            "round {round}: {peak} bytes"
        );
        let t = r
            .unwrap_or_else(|_| panic!("round {round}: the reader panicked"))
            .unwrap_or_else(|e| panic!("round {round}: the trace itself is fine: {e}"));
        let shown = t.integrity.to_string();
        assert!(!shown.contains('\n'), "{shown}");
        match &t.integrity.live_file_ignored {
            Some(why) => {
                ignored += 1;
                assert_eq!(t.events.len(), 2, "an ignored live file adds nothing");
                assert!(why.starts_with(&path.display().to_string()), "{why}");
            }
            None => used += 1,
        }
    }
    assert!(used > 0 && ignored > 0, "{used} used, {ignored} ignored");
}

#[test]
fn a_trace_cut_at_every_chunk_boundary_reads_and_says_it_has_no_end_marker() {
    let (base, expected) = pristine();
    let all = chunks(&base);
    let mut last_events = 0;
    for (i, &(at, len)) in all.iter().enumerate() {
        let cut = &base[..at + len];
        let mut r = TraceReader::new("cut.trace", cut).expect("the header is whole");
        let mut events = 0;
        while r.next_event().expect("reads").is_some() {
            events += 1;
        }
        assert!(events >= last_events, "cut {i}: fewer events than before");
        last_events = events;
        let warning = r.end_warning();
        if i + 1 == all.len() {
            assert_eq!(events, expected);
            assert_eq!(warning, None, "the whole trace");
        } else {
            let w = warning.unwrap_or_else(|| panic!("cut after chunk {i}: no warning"));
            assert!(
                w.starts_with("cut.trace: ") && w.contains("no end marker"),
                "{w}"
            );
        }
    }
}

#[test]
fn strings_that_would_act_on_a_terminal_are_read_back_escaped() {
    let hostile = "\x1b]0;owned\x07\x1b]52;c;ZWNobw==\x07\u{9b}2J\u{202e}\r\n";
    let h = Header {
        exe: format!("/bin/{hostile}"),
        args: vec![hostile.into()],
        hostname: hostile.into(),
        ..header()
    };
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    w.write_strings([(StrId(0), hostile.as_bytes())]).unwrap();
    let mut e = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 10);
    e.set(Field::FuncName, 0);
    w.write_events(&[e]).unwrap();
    let bytes = w.into_inner();
    let mut r = TraceReader::new("t", &bytes[..]).unwrap();
    let ev = r.next_event().unwrap().unwrap();
    let shown = [
        r.strings().get(StrId(0)).unwrap().to_string(),
        r.header().exe.clone(),
        r.header().args[0].clone(),
        r.header().hostname.clone(),
    ];
    for s in &shown {
        assert!(
            !s.chars().any(accprof_trace::printable::acts),
            "{s:?} still acts on a terminal"
        );
        assert!(s.contains("\\x1b]0;owned\\x07"), "{s:?}: shown, escaped");
    }
    assert_eq!(ev.func_name(), Some(StrId(0)));
}
