//! Device records (CUPTI activity written by libaccprof) tied to the constructs that issued them.
//!
//! Two shapes of trace, built with TraceWriter the way libaccprof writes them (host events first,
//! device records in later chunks, because CUPTI delivers its buffers late):
//! - GCC-like: compute constructs with implicit data events and launches but no transfer events;
//!   the transfers exist only as device records, which must appear under the construct with
//!   their counts, bytes and device times;
//! - shim-like: every transfer reported by the runtime too; device records must add device
//!   times to those rows without counting the transfers twice.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_analysis::{advise, ChildKind, Direction, Profile, Rule, TimeSource};
use accprof_trace::{device, Event, Field, Footer, Header, StrId, TraceWriter};

const TID: i64 = 4711;
const LINE: i64 = 20;
const MB8: u64 = 8 << 20;
const PTR_A: u64 = 0x7f00_0000_0000;
const PTR_ANEW: u64 = 0x7f10_0000_0000;

fn host(kind: acc_event_t, s: u64, e: u64) -> Event {
    let mut x = Event::new(kind, s);
    x.end_ns = e;
    x.set_i64(Field::Thread, TID);
    x.set_i64(Field::LineNo, LINE);
    x.set(Field::SrcFile, 0);
    x.set(Field::FuncName, 4);
    x.set_i64(
        Field::ParentConstruct,
        i64::from(acc_construct_t::PARALLEL.0),
    );
    x
}

fn copy(dir: u64, host_call: u64, dev_start: u64, dev_ns: u64, ptr: u64) -> Event {
    let mut x = Event::new(device::MEMCPY, dev_start);
    x.end_ns = dev_start + dev_ns;
    x.set_i64(Field::Thread, TID);
    x.set(Field::Bytes, MB8);
    x.set(Field::HostPtr, ptr);
    x.set(Field::HostCallNs, host_call);
    x.set(
        Field::CopyKind,
        device::copy_kind(
            dir as u8,
            device::MEM_PAGEABLE as u8,
            device::MEM_DEVICE as u8,
        ),
    );
    x
}

fn kernel(host_call: u64, dev_start: u64, dev_ns: u64) -> Event {
    let mut x = Event::new(device::KERNEL, dev_start);
    x.end_ns = dev_start + dev_ns;
    x.set_i64(Field::Thread, TID);
    x.set(Field::KernelName, 1);
    x.set(Field::HostCallNs, host_call);
    x
}

/// `iters` compute constructs at LINE, 1 ms apart: copy A and Anew in, run the kernel, copy
/// both out (the seeds' naive Laplace). With `host_transfers`, the runtime reports the
/// transfers too (the shim); without, only the device knows of them (GCC).
fn naive(iters: u64, host_transfers: bool) -> (Vec<Event>, Vec<Event>) {
    let (mut h, mut d) = (Vec::new(), Vec::new());
    for i in 0..iters {
        let t = 1_000_000 + i * 1_000_000;
        for (j, ptr) in [PTR_A, PTR_ANEW].into_iter().enumerate() {
            let call = t + 20_000 + j as u64 * 100_000;
            if host_transfers {
                let mut u = host(
                    acc_event_t::ENQUEUE_UPLOAD_START,
                    call - 1_000,
                    call + 90_000,
                );
                u.set(Field::Bytes, MB8);
                u.set(Field::HostPtr, ptr);
                u.set(Field::VarName, 2 + j as u64);
                h.push(u);
            }
            d.push(copy(device::COPY_HTOD, call, call + 500, 80_000, ptr));
        }
        h.push(host(acc_event_t::ENTER_DATA_START, t + 10_000, t + 300_000));
        let mut l = host(acc_event_t::ENQUEUE_LAUNCH_START, t + 310_000, t + 320_000);
        l.set(Field::KernelName, 1);
        h.push(l);
        d.push(kernel(t + 315_000, t + 330_000, 40_000));
        for (j, ptr) in [PTR_A, PTR_ANEW].into_iter().enumerate() {
            let call = t + 420_000 + j as u64 * 200_000;
            if host_transfers {
                let mut u = host(
                    acc_event_t::ENQUEUE_DOWNLOAD_START,
                    call - 1_000,
                    call + 150_000,
                );
                u.set(Field::Bytes, MB8);
                u.set(Field::HostPtr, ptr);
                u.set(Field::VarName, 2 + j as u64);
                h.push(u);
            }
            d.push(copy(device::COPY_DTOH, call, call + 500, 120_000, ptr));
        }
        h.push(host(acc_event_t::EXIT_DATA_START, t + 400_000, t + 900_000));
        h.push(host(acc_event_t::COMPUTE_CONSTRUCT_START, t, t + 950_000));
    }
    // A copy the runtime made before any construct (device init): tied to no construct.
    d.push(copy(device::COPY_HTOD, 10, 20, 5, 0x1000));
    (h, d)
}

fn write(
    host_events: &[Event],
    device_events: &[Event],
    device_header: bool,
) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    let mut header = Header {
        exe: "/bin/laplace".into(),
        pid: 1,
        start_monotonic_ns: 1,
        ..Header::default()
    };
    if device_header {
        header.extra.push((
            "device_activity".into(),
            "cupti /usr/local/cuda/lib64/libcupti.so.13".into(),
        ));
    }
    let mut w = TraceWriter::new(std::fs::File::create(f.path()).unwrap(), &header).unwrap();
    w.write_strings([
        (StrId(0), &b"laplace.c"[..]),
        (StrId(1), &b"main$_omp_fn$0"[..]),
        (StrId(2), &b"A"[..]),
        (StrId(3), &b"Anew"[..]),
        (StrId(4), &b"main"[..]),
    ])
    .unwrap();
    w.write_strings([
        (StrId(5), &b"main$_omp_fn$1"[..]),
        (StrId(6), &b"volta_sgemm"[..]),
    ])
    .unwrap();
    w.write_events(host_events).unwrap();
    w.write_events(device_events).unwrap();
    w.write_footer(&Footer {
        events_recorded: 0,
        events_dropped: 0,
        end_monotonic_ns: 20_000_000,
    })
    .unwrap();
    w.flush().unwrap();
    f
}

fn profile(host_transfers: bool) -> Profile {
    let (h, d) = naive(3, host_transfers);
    let f = write(&h, &d, true);
    Profile::from_path(f.path()).unwrap()
}

#[test]
fn gcc_transfers_known_only_from_the_device_appear_under_their_construct() {
    let p = profile(false);
    assert_eq!(
        p.constructs
            .iter()
            .filter(|c| c.kind == accprof_analysis::ConstructKind::Compute)
            .count(),
        1
    );
    let c = p
        .constructs
        .iter()
        .find(|c| c.kind == accprof_analysis::ConstructKind::Compute)
        .unwrap();
    let up = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Upload)
        .expect("copyin row from device records");
    assert_eq!((up.count, up.bytes), (6, 6 * MB8));
    assert_eq!(up.time.source, TimeSource::Device);
    assert_eq!(up.time.total_ns, 6 * 80_000);
    assert_eq!(up.host_time.count, 0, "GCC reported no upload");
    let down = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Download)
        .unwrap();
    assert_eq!(
        (down.count, down.bytes, down.time.total_ns),
        (6, 6 * MB8, 6 * 120_000)
    );
    // The launches the runtime reported get the kernels' device time, counted once.
    let launch = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Launch)
        .unwrap();
    assert_eq!(launch.count, 3);
    assert_eq!(
        (launch.time.source, launch.time.total_ns),
        (TimeSource::Device, 3 * 40_000)
    );
    assert_eq!(
        (launch.host_time.count, launch.host_time.total_ns),
        (3, 3 * 10_000)
    );
    let s = &p.summary;
    assert_eq!((s.uploads.count, s.upload_bytes), (7, 6 * MB8 + MB8));
    assert_eq!(s.kernels.source, TimeSource::Device);
    assert_eq!(s.kernels_host.count, 3);
    assert_eq!(s.device_records, 3 * 5 + 1);
    assert_eq!(s.device_records_outside, 1);
    // Variables are host ranges (GCC names none); A is copied out and in again every iteration.
    let a_out = p
        .variables
        .iter()
        .find(|v| v.host_ptr == Some(PTR_A) && v.direction == Direction::DeviceToHost)
        .unwrap();
    assert_eq!(a_out.count, 3);
    assert!(
        !p.roundtrips.is_empty(),
        "copied out, then in again by the next construct"
    );
}

#[test]
fn advice_on_device_only_transfers_names_the_construct() {
    let p = profile(false);
    let findings = advise(&p);
    let f = findings
        .iter()
        .find(|f| f.rule == Rule::DataRegion)
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert_eq!(f.location.line, Some(LINE), "{f:#?}");
    assert!(f.estimated_saving_ns > 0);
}

#[test]
fn reported_transfers_get_device_times_without_being_counted_twice() {
    let p = profile(true);
    let c = p
        .constructs
        .iter()
        .find(|c| c.kind == accprof_analysis::ConstructKind::Compute)
        .unwrap();
    let up = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Upload)
        .unwrap();
    assert_eq!((up.count, up.bytes), (6, 6 * MB8));
    assert_eq!(
        (up.time.source, up.time.total_ns),
        (TimeSource::Device, 6 * 80_000)
    );
    assert_eq!((up.host_time.count, up.host_time.total_ns), (6, 6 * 91_000));
    let a = p
        .variables
        .iter()
        .find(|v| v.name == "A" && v.direction == Direction::HostToDevice)
        .unwrap();
    assert_eq!(
        (a.count, a.time.total_ns, a.host_time.total_ns),
        (3, 3 * 80_000, 3 * 91_000)
    );
    let site = p
        .transfer_sites
        .iter()
        .find(|s| s.variable == p.variables.iter().position(|v| std::ptr::eq(v, a)).unwrap())
        .unwrap();
    assert_eq!((site.count, site.time.source), (3, TimeSource::Device));
    assert_eq!(p.summary.uploads_host.count, 6);
    // The copy outside every construct was not reported by the runtime: counted from the device.
    assert_eq!(p.summary.uploads.count, 7);
}

#[test]
fn report_labels_every_time_with_its_source() {
    let p = profile(false);
    let text = accprof_analysis::report::text::render(
        &[accprof_analysis::report::Section {
            label: "t".into(),
            profile: p,
        }],
        None,
        accprof_analysis::report::ReportOptions::default(),
    );
    assert!(text.contains("kernels [device]"), "{text}");
    assert!(text.contains("launch calls [host]"), "{text}");
    assert!(text.contains("data copyin transfers: 6"), "{text}");
    assert!(text.contains("device time(us): total=480"), "{text}");
    assert!(text.contains("16 device records"), "{text}");
}

#[test]
fn without_the_header_key_device_records_count_but_tie_to_no_construct() {
    // Honest fallback: the spans were not kept, so nothing is attributed by guesswork.
    let (h, d) = naive(2, false);
    let f = write(&h, &d, false);
    let p = Profile::from_path(f.path()).unwrap();
    assert_eq!(p.summary.device_records, 11);
    assert_eq!(p.summary.device_records_outside, 11);
    let c = p
        .constructs
        .iter()
        .find(|c| c.kind == accprof_analysis::ConstructKind::Compute)
        .unwrap();
    assert!(c.children.iter().all(|k| k.kind != ChildKind::Upload));
}

#[test]
fn copies_staged_by_a_runtime_helper_thread_belong_to_the_reported_upload() {
    // The shim uploads through pinned staging buffers on a thread of its own: one reported
    // upload of 8 MiB becomes four 2 MiB device copies issued from a thread with no OpenACC
    // events, while the upload event is open.
    let (h, mut d) = naive(1, true);
    d.retain(|e| {
        e.get(Field::CopyKind)
            .map(device::split_copy_kind)
            .map(|k| k.0)
            != Some(device::COPY_HTOD)
    });
    for j in 0..2u64 {
        let call = 1_000_000 + 20_000 + j * 100_000;
        for c in 0..4u64 {
            let mut x = copy(
                device::COPY_HTOD,
                call + c * 10_000,
                call + c * 10_000 + 500,
                20_000,
                0x9000_0000 + c * (MB8 / 4),
            );
            x.set(Field::Bytes, MB8 / 4);
            x.set_i64(Field::Thread, 999);
            d.push(x);
        }
    }
    let f = write(&h, &d, true);
    let p = Profile::from_path(f.path()).unwrap();
    let c = p
        .constructs
        .iter()
        .find(|c| c.kind == accprof_analysis::ConstructKind::Compute)
        .unwrap();
    let up = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Upload)
        .unwrap();
    assert_eq!(
        (up.count, up.bytes),
        (2, 2 * MB8),
        "the runtime's two uploads, not eight"
    );
    assert_eq!(
        (up.time.source, up.time.count, up.time.total_ns),
        (TimeSource::Device, 8, 8 * 20_000)
    );
    assert_eq!(p.summary.device_records_outside, 0);
    assert_eq!(
        (p.summary.uploads.count, p.summary.upload_bytes),
        (8, 2 * MB8),
        "the summary counts what the device moved"
    );
}

/// ACCPROF_CUDA_EVENTS=on beside CUPTI times each launch twice: the report must use CUPTI's
/// record and count the launch once.
#[test]
fn with_cupti_and_cuda_events_both_on_cupti_is_used_and_nothing_counted_twice() {
    let (h, mut d) = naive(3, true);
    // The same three kernels as timed by CUDA events: longer (they include launch latency).
    let cuda: Vec<Event> = d
        .iter()
        .filter(|e| e.kind == device::KERNEL)
        .map(|e| {
            let mut x = *e;
            x.end_ns += 25_000;
            x.add_flags(accprof_trace::EventFlags::FROM_CUDA_EVENTS);
            x
        })
        .collect();
    d.extend(cuda);
    let f = tempfile::NamedTempFile::new().unwrap();
    let mut header = Header {
        exe: "/bin/laplace".into(),
        pid: 1,
        start_monotonic_ns: 1,
        ..Header::default()
    };
    header
        .extra
        .push(("device_activity".into(), "cupti".into()));
    header
        .extra
        .push(("device_activity".into(), "cuda_events".into()));
    let mut w = TraceWriter::new(std::fs::File::create(f.path()).unwrap(), &header).unwrap();
    w.write_strings([
        (StrId(0), &b"laplace.c"[..]),
        (StrId(1), &b"main$_omp_fn$0"[..]),
        (StrId(2), &b"A"[..]),
        (StrId(3), &b"Anew"[..]),
        (StrId(4), &b"main"[..]),
    ])
    .unwrap();
    w.write_events(&h).unwrap();
    w.write_events(&d).unwrap();
    w.write_footer(&Footer {
        events_recorded: 0,
        events_dropped: 0,
        end_monotonic_ns: 20_000_000,
    })
    .unwrap();
    w.flush().unwrap();
    let p = Profile::from_path(f.path()).unwrap();
    let c = p
        .constructs
        .iter()
        .find(|c| c.kind == accprof_analysis::ConstructKind::Compute)
        .unwrap();
    let launch = c
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Launch)
        .unwrap();
    assert_eq!(
        (launch.time.source, launch.time.total_ns),
        (TimeSource::Device, 3 * 40_000),
        "CUPTI's kernel times, once"
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("3 CUDA-event records are left out")),
        "{:?}",
        p.warnings
    );
}

/// After the runtime's first reported launch libaccprof stops CUPTI's launch callback, so later
/// kernel records carry no thread and no call time: each takes the runtime's launch of the same
/// kernel name, in issue order, on whichever thread made it. Kernels no runtime reported (a CUDA
/// library's), and a record that ran before the launch it would pair with, stay outside.
#[test]
fn kernels_without_their_call_take_the_reported_launch_of_the_same_name() {
    const TID2: i64 = 815;
    let (mut h, mut d) = naive(3, true);
    // Only the first iteration's kernel was seen by the callback.
    let mut corr = 100u64;
    for (i, k) in d
        .iter_mut()
        .filter(|e| e.kind == device::KERNEL)
        .enumerate()
    {
        k.set(Field::CorrelationId, corr);
        corr += 10;
        if i > 0 {
            k.clear(Field::Thread);
            k.clear(Field::HostCallNs);
        }
    }
    // A second thread launches another kernel twice inside its own construct at line 40.
    for i in 0..2u64 {
        let t = 5_000_000 + i * 1_000_000;
        let on_thread2 = |mut e: Event| {
            e.set_i64(Field::Thread, TID2);
            e.set_i64(Field::LineNo, 40);
            e
        };
        let mut l = on_thread2(host(
            acc_event_t::ENQUEUE_LAUNCH_START,
            t + 10_000,
            t + 20_000,
        ));
        l.set(Field::KernelName, 5);
        h.push(l);
        h.push(on_thread2(host(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            t,
            t + 500_000,
        )));
        let mut k = Event::new(device::KERNEL, t + 30_000);
        k.end_ns = t + 30_000 + 70_000;
        k.set(Field::KernelName, 5);
        k.set(Field::CorrelationId, 500 + i);
        d.push(k);
    }
    // A library kernel nobody reported, and one more main$_omp_fn$0 than was launched.
    for (name, start, id) in [(6u64, 2_500_000u64, 400u64), (1, 3_990_000, 450)] {
        let mut k = Event::new(device::KERNEL, start);
        k.end_ns = start + 1_000;
        k.set(Field::KernelName, name);
        k.set(Field::CorrelationId, id);
        d.push(k);
    }
    let f = write(&h, &d, true);
    let p = Profile::from_path(f.path()).unwrap();
    let at = |line: i64| {
        p.constructs
            .iter()
            .find(|c| {
                c.kind == accprof_analysis::ConstructKind::Compute && c.location.line == Some(line)
            })
            .unwrap()
    };
    let launch = at(LINE)
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Launch)
        .unwrap();
    assert_eq!(
        (
            launch.count,
            launch.time.source,
            launch.time.count,
            launch.time.total_ns
        ),
        (3, TimeSource::Device, 3, 3 * 40_000)
    );
    let launch2 = at(40)
        .children
        .iter()
        .find(|k| k.kind == ChildKind::Launch)
        .unwrap();
    assert_eq!(
        (launch2.count, launch2.time.count, launch2.time.total_ns),
        (2, 2, 2 * 70_000),
        "thread 2's kernels, by name"
    );
    assert_eq!(
        p.summary.device_records_outside,
        1 + 2,
        "the copy before any construct, the library kernel, the extra kernel"
    );
}

/// NPB CG on an H200 gave one kernel record with zero timestamps: kept, it put a kernel at the
/// clock's epoch, made the run span the machine's uptime and the advice promise "5005.9% of the
/// run". Such a record is left out of every total and said in one line, and no saving exceeds
/// the run.
#[test]
fn a_device_record_with_impossible_times_is_left_out_and_said() {
    let (h, mut d) = naive(3, false);
    let good = profile(false);
    let mut zero = kernel(1_315_000, 0, 0);
    zero.end_ns = 5_000_000;
    zero.set(Field::CorrelationId, 77);
    d.push(zero);
    let f = write(&h, &d, true);
    let p = Profile::from_path(f.path()).unwrap();
    assert_eq!(p.summary.kernels, good.summary.kernels);
    assert_eq!(p.summary.first_ns, good.summary.first_ns);
    assert_eq!(p.summary.device_records, good.summary.device_records);
    assert_eq!(
        p.summary.device_records_outside,
        good.summary.device_records_outside
    );
    let w: Vec<&String> = p
        .warnings
        .iter()
        .filter(|w| w.contains("impossible times"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", p.warnings);
    assert!(
        w[0].contains("a kernel record, correlation id 77"),
        "{}",
        w[0]
    );
    for f in advise(&p) {
        assert!(f.estimated_saving_ns <= p.summary.wall_ns, "{f:?}");
    }
}
