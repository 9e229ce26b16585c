//! The trace format end to end: write with TraceWriter, read with TraceReader, and every way a
//! file can be damaged.

use accprof_abi::acc_event_t;
use accprof_trace::{
    Event, Field, Footer, Header, Module, StrId, Trace, TraceError, TraceReader, TraceWriter,
};

fn header() -> Header {
    Header {
        exe: "/bin/laplace".into(),
        args: vec!["laplace".into(), "--n".into(), "64".into()],
        pid: 4242,
        hostname: "node17".into(),
        start_unix_ns: 1_795_000_000_000_000_000,
        start_monotonic_ns: 1_000,
        tool_version: "0.1.0".into(),
        mpi_rank: Some(3),
        registration: "constructor".into(),
        extra: vec![("future_key".into(), "v".into())],
    }
}

fn events(n: u64) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let kind = if i % 3 == 0 {
                acc_event_t::COMPUTE_CONSTRUCT_START
            } else {
                acc_event_t::ENQUEUE_UPLOAD_START
            };
            let mut e = Event::new(kind, 10_000 + i * 1000);
            e.end_ns = e.start_ns + 500;
            e.set_i64(Field::Thread, (i % 2) as i64);
            e.set(Field::SrcFile, 0);
            e.set_i64(Field::LineNo, 57 + (i % 3) as i64);
            if kind == acc_event_t::ENQUEUE_UPLOAD_START {
                e.set(Field::VarName, 1);
                e.set(Field::Bytes, 8 << 20);
                e.set(Field::HostPtr, 0x7f00_0000_0000 + i * 64);
            }
            e
        })
        .collect()
}

/// A complete trace with every kind of chunk.
fn write_trace(evs: &[Event]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    w.write_strings([(StrId(0), &b"laplace.c"[..]), (StrId(1), &b"A"[..])])
        .unwrap();
    w.write_modules(&[Module {
        path: "/bin/laplace".into(),
        bias: 0x5555_0000,
        start: 0x5555_1000,
        end: 0x5556_0000,
        build_id: vec![1, 2, 3],
    }])
    .unwrap();
    let (a, b) = evs.split_at(evs.len() / 2);
    w.write_events(a).unwrap();
    w.write_drops(&[(1, 7)]).unwrap();
    w.write_events(b).unwrap();
    w.write_footer(&Footer {
        events_recorded: evs.len() as u64,
        events_dropped: 7,
        end_monotonic_ns: 99,
    })
    .unwrap();
    w.into_inner()
}

fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
    Trace::from_reader(TraceReader::new("t.trace", bytes)?)
}

#[test]
fn round_trip_keeps_everything() {
    let evs = events(1000);
    let t = read(&write_trace(&evs)).unwrap();
    assert_eq!(t.header, header());
    assert_eq!(t.events, evs);
    assert_eq!(t.strings.get(StrId(0)), Some("laplace.c"));
    assert_eq!(t.str(evs[1].var_name()), Some("A"));
    assert_eq!(t.modules.len(), 1);
    assert_eq!(t.modules[0].build_id, vec![1, 2, 3]);
    assert_eq!(t.dropped_total, 7);
    assert_eq!(t.footer.unwrap().events_recorded, 1000);
    assert!(t.truncation_warning.is_none());
}

#[test]
fn reading_into_one_reused_event_gives_every_event_and_then_stops() {
    // The loop every view runs: each event decoded in place over the one before, copied once.
    let evs = events(1000);
    let bytes = write_trace(&evs);
    let mut r = TraceReader::new("t.trace", &bytes[..]).unwrap();
    let mut ev = Event::default();
    let mut got = Vec::new();
    while r.next_event_into(&mut ev).unwrap() {
        got.push(ev);
    }
    assert_eq!(got, evs);
    assert_eq!(ev, evs[999], "the end leaves the last event as it was");
    assert!(!r.next_event_into(&mut ev).unwrap());
}

#[test]
fn every_truncation_reads_a_prefix_or_fails_cleanly() {
    let evs = events(200);
    let full = write_trace(&evs);
    for cut in 0..full.len() {
        match read(&full[..cut]) {
            Ok(t) => {
                // Whatever was read is a prefix of what was written.
                assert_eq!(&evs[..t.events.len()], &t.events[..], "cut at {cut}");
                // The footer is the last chunk: only the whole file has it. A cut inside a chunk
                // is reported; a cut at a chunk boundary is only told by the missing footer.
                assert_eq!(t.footer.is_some(), cut == full.len(), "cut at {cut}");
            }
            Err(TraceError::Empty { .. }) => assert_eq!(cut, 0),
            Err(TraceError::Corrupt { what, .. }) => {
                assert!(what.contains("header"), "cut at {cut}: {what}")
            }
            Err(e) => panic!("cut at {cut}: unexpected {e}"),
        }
    }
}

#[test]
fn flipped_bytes_never_panic_and_never_invent_events() {
    let evs = events(100);
    let full = write_trace(&evs);
    for pos in 0..full.len() {
        let mut bad = full.clone();
        bad[pos] ^= 0x5a;
        // Either an error, or (a flip in a reserved byte or unknown-kind skip) the same events.
        if let Ok(t) = read(&bad) {
            assert!(t.events.len() <= evs.len(), "flip at {pos}");
        }
    }
}

#[test]
fn foreign_empty_and_future_files_say_what_they_are() {
    let e = read(b"").unwrap_err();
    assert!(matches!(e, TraceError::Empty { .. }), "{e}");
    let e = read(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap_err();
    assert!(matches!(e, TraceError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("not an accprof trace"));
    let mut future = write_trace(&events(3));
    future[8] = 200;
    let e = read(&future).unwrap_err();
    assert!(e.to_string().contains("newer than this accprof"), "{e}");
    // Display is one line.
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn a_growing_file_can_be_followed() {
    let evs = events(300);
    let full = write_trace(&evs);
    let cut = full.len() / 2;
    let shared = std::rc::Rc::new(std::cell::RefCell::new(full[..cut].to_vec()));
    struct Growing(std::rc::Rc<std::cell::RefCell<Vec<u8>>>, usize);
    impl std::io::Read for Growing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let data = self.0.borrow();
            let n = buf.len().min(data.len() - self.1);
            buf[..n].copy_from_slice(&data[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }
    let mut r = TraceReader::new("growing", Growing(shared.clone(), 0)).unwrap();
    let mut got = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        got.push(e);
    }
    assert!(got.len() < evs.len());
    shared.borrow_mut().extend_from_slice(&full[cut..]);
    while let Some(e) = r.next_event().unwrap() {
        got.push(e);
    }
    assert_eq!(got, evs);
    assert_eq!(r.truncated_bytes(), 0);
}

#[test]
fn launch_and_transfer_heavy_traces_stay_under_32_bytes_per_event() {
    // The shape of a real Laplace trace from the shim: per iteration, a compute construct with
    // one launch, an upload and a download of 8 MiB each.
    let mut evs = Vec::new();
    let mut t = 1_000_000u64;
    for i in 0..10_000u64 {
        for (kind, var, bytes) in [
            (acc_event_t::ENQUEUE_UPLOAD_START, Some(1u64), 8u64 << 20),
            (acc_event_t::ENQUEUE_LAUNCH_START, None, 0),
            (acc_event_t::ENQUEUE_DOWNLOAD_START, Some(1), 8 << 20),
        ] {
            let mut e = Event::new(kind, t);
            t += 3_517 + (i * 7919) % 1000;
            e.end_ns = e.start_ns + 1_234 + (i * 31) % 500;
            e.set_i64(Field::Thread, 1);
            e.set(Field::SrcFile, 0);
            e.set_i64(Field::LineNo, 62);
            e.set_i64(Field::DeviceType, 5);
            e.set_i64(Field::Async, -1);
            if let Some(v) = var {
                e.set(Field::VarName, v);
                e.set(Field::Bytes, bytes);
                e.set(Field::HostPtr, 0x7f12_3400_0000);
                e.set(Field::DevicePtr, 0x7000_0020_0000);
            } else {
                e.set(Field::KernelName, 2);
                e.set(Field::NumGangs, 4096);
                e.set(Field::VectorLength, 128);
            }
            evs.push(e);
        }
    }
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    let before = w.bytes_written();
    w.write_events(&evs).unwrap();
    let per_event = (w.bytes_written() - before) as f64 / evs.len() as f64;
    assert!(per_event <= 32.0, "{per_event:.1} bytes per event");
}

/// Device records (CUPTI activity) use kinds outside the specification and the last three fields;
/// they interleave with host events and must come back bit for bit, every field included.
#[test]
fn device_records_round_trip_with_every_field() {
    use accprof_trace::device;
    let mut evs = events(10);
    let mut k = Event::new(device::KERNEL, 20_000);
    k.end_ns = 20_000 + 364_000;
    k.set_i64(Field::Thread, 12345);
    k.set(Field::KernelName, 1);
    k.set(Field::AsyncHandle, 13);
    k.set(Field::CorrelationId, 77);
    k.set(Field::HostCallNs, 19_500);
    let mut c = Event::new(device::MEMCPY, 30_000);
    c.end_ns = 31_000_000;
    c.set_i64(Field::Thread, 12345);
    c.set(Field::Bytes, 134_217_728);
    c.set(Field::HostPtr, 0x5555_0000_1000);
    c.set(
        Field::CopyKind,
        device::copy_kind(
            device::COPY_HTOD as u8,
            device::MEM_PAGEABLE as u8,
            device::MEM_DEVICE as u8,
        ),
    );
    c.set(Field::CorrelationId, 78);
    c.set(Field::HostCallNs, 29_000);
    let mut m = Event::new(device::MEMSET, 40_000);
    m.end_ns = 40_100;
    m.set(Field::Bytes, 64);
    m.set(Field::CorrelationId, u64::from(u32::MAX));
    evs.splice(3..3, [k, c, m]);
    let t = read(&write_trace(&evs)).unwrap();
    assert_eq!(t.events, evs);
    let got = &t.events[4];
    assert_eq!(got.kind, device::MEMCPY);
    assert_eq!(
        device::split_copy_kind(got.get(Field::CopyKind).unwrap()),
        (device::COPY_HTOD, device::MEM_PAGEABLE, device::MEM_DEVICE)
    );
    assert_eq!(got.get(Field::HostCallNs), Some(29_000));
    assert_eq!(
        t.events[5].get(Field::CorrelationId),
        Some(u64::from(u32::MAX))
    );
}

/// A reader that adds strings while streaming (resolved source lines, variable names) must not
/// take an id the trace defines further on: device records' kernel names arrive at the end.
#[test]
fn strings_added_while_streaming_never_collide_with_later_definitions() {
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    w.write_strings([(StrId(0), &b"laplace.c"[..])]).unwrap();
    let mut e = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 5);
    e.set(Field::SrcFile, 0);
    w.write_events(&[e]).unwrap();
    w.write_strings([(StrId(1), &b"main$_omp_fn$0"[..])])
        .unwrap();
    let mut k = Event::new(accprof_trace::device::KERNEL, 9);
    k.set(Field::KernelName, 1);
    w.write_events(&[k]).unwrap();
    let bytes = w.into_inner();
    let mut r = TraceReader::new("t.trace", &bytes[..]).unwrap();
    r.next_event().unwrap().unwrap();
    let added = r.strings_mut().intern("/src/laplace.c");
    r.next_event().unwrap().unwrap();
    assert_eq!(r.strings().get(added), Some("/src/laplace.c"));
    assert_eq!(r.strings().get(StrId(1)), Some("main$_omp_fn$0"));
    assert_eq!(
        r.strings_mut().intern("laplace.c"),
        StrId(0),
        "a string the trace defined keeps its id"
    );
    assert!(r
        .strings()
        .iter()
        .any(|(id, s)| id == added && s == "/src/laplace.c"));
}
