//! Device records tied to their constructs in rounds while the trace streams (so that report
//! memory does not grow with records) give the profile one pass at the end gives, on the
//! CUPTI-shaped synthetic traces: records for every launch and transfer, delivered in batches
//! after the host events that issued them.

use accprof_analysis::{Profile, ProfileBuilder, TimeSource};
use accprof_testkit::laplace::{self as synth, Shape, SynthConfig};
use accprof_trace::{Event, StringTable};

fn profile(events: &[Event], builder: ProfileBuilder) -> Profile {
    let mut b = builder;
    events.iter().for_each(|ev| b.feed(ev));
    b.finish(&StringTable::default())
}

#[test]
fn rounds_give_what_one_pass_gives() {
    for shape in [Shape::LaplaceNaive, Shape::LaplaceData, Shape::LooseOps] {
        let cfg = SynthConfig::new(shape).with_cupti().iterations(400);
        let events = synth::events(&cfg);
        let records = events
            .iter()
            .filter(|e| accprof_trace::device::is_device_record(e.kind))
            .count() as u64;
        // The data region's own upload and download come before and after the iterations.
        let outside_loop = if shape == Shape::LaplaceData { 2 } else { 0 };
        assert_eq!(
            records,
            400 * (cfg.events_per_iteration() - SynthConfig::new(shape).events_per_iteration())
                + outside_loop,
            "{shape:?}: a record per launch and transfer"
        );
        let once = profile(&events, ProfileBuilder::with_cupti_records());
        assert_eq!(once.summary.device_records, records);
        assert_eq!(once.summary.device_records_outside, 0, "{shape:?}");
        assert_eq!(once.summary.kernels.source, TimeSource::Device);
        assert_eq!(
            once.summary.kernels.count,
            400 * if shape == Shape::LooseOps { 3 } else { 2 }
        );
        for round in [256, 2000] {
            let rounds = profile(
                &events,
                ProfileBuilder::with_cupti_records().device_round(round),
            );
            assert!(
                rounds.warnings.is_empty(),
                "{shape:?}: {:?}",
                rounds.warnings
            );
            assert!(
                once == rounds,
                "{shape:?}, rounds of {round}: the profiles differ"
            );
        }
    }
}

/// A record that arrives after the spans of its construct were let go is counted outside any
/// construct and said, not tied to a wrong construct.
#[test]
fn a_record_arriving_after_its_construct_was_let_go_is_said() {
    let cfg = SynthConfig::new(Shape::LaplaceNaive)
        .with_cupti()
        .iterations(200);
    let mut events = synth::events(&cfg);
    let first = events
        .iter()
        .position(|e| e.kind == accprof_trace::device::KERNEL)
        .unwrap();
    let late = events.remove(first);
    events.push(late);
    let once = profile(&events, ProfileBuilder::with_cupti_records());
    assert_eq!(once.summary.device_records_outside, 0);
    assert!(once.warnings.is_empty(), "{:?}", once.warnings);
    let rounds = profile(
        &events,
        ProfileBuilder::with_cupti_records().device_round(256),
    );
    assert_eq!(rounds.summary.device_records_outside, 1);
    assert!(
        rounds
            .warnings
            .iter()
            .any(|w| w.starts_with("1 device record(s) arrived after")),
        "{:?}",
        rounds.warnings
    );
    assert_eq!(rounds.summary.device_records, once.summary.device_records);
}

/// The synthetic trace `cfg` written and read back: its events and string table.
fn written(cfg: &SynthConfig) -> accprof_trace::Trace {
    let (_, bytes) = synth::write_trace_to(cfg, Vec::new()).unwrap();
    let r = accprof_trace::TraceReader::new("synth", std::io::Cursor::new(bytes)).unwrap();
    accprof_trace::Trace::from_reader(r).unwrap()
}

/// GCC-shaped CUPTI traces: kernel records that name their kernel (with a string id of their
/// own) but not their issuing call. Tied by name while streaming, in rounds, they give the
/// profile that matching every record against every launch at the end gives.
#[test]
fn kernels_matched_by_name_in_rounds_give_what_one_pass_gives() {
    for shape in [Shape::LaplaceNaive, Shape::LaplaceData, Shape::LooseOps] {
        let cfg = SynthConfig::new(shape)
            .with_cupti_kernels_by_name()
            .iterations(400);
        let trace = written(&cfg);
        let by_name = trace
            .events
            .iter()
            .filter(|e| e.kind == accprof_trace::device::KERNEL)
            .inspect(|e| assert!(e.get(accprof_trace::Field::HostCallNs).is_none()))
            .count() as u64;
        let launches = 400 * if shape == Shape::LooseOps { 3 } else { 2 };
        assert_eq!(by_name, launches, "{shape:?}: a kernel record per launch");
        let mut once = ProfileBuilder::with_cupti_records();
        trace.events.iter().for_each(|ev| once.feed(ev));
        let once = once.finish(&trace.strings);
        assert_eq!(once.summary.device_records_outside, 0, "{shape:?}");
        assert_eq!(once.summary.kernels.source, TimeSource::Device);
        assert_eq!(once.summary.kernels.count, launches);
        for round in [256, 2000, 1 << 15] {
            let mut b = ProfileBuilder::with_cupti_records().device_round(round);
            for (id, text) in trace.strings.iter() {
                b.name_kernel(id, text);
            }
            trace.events.iter().for_each(|ev| b.feed(ev));
            let rounds = b.finish(&trace.strings);
            assert!(
                rounds.warnings.is_empty(),
                "{shape:?}: {:?}",
                rounds.warnings
            );
            assert_eq!(once.summary, rounds.summary, "{shape:?} {round}");
            assert!(
                once == rounds,
                "{shape:?}, rounds of {round}: the profiles differ"
            );
        }
        let streamed = Profile::from_trace("synth", &trace);
        assert_eq!(streamed.constructs, once.constructs, "{shape:?}");
        assert_eq!(streamed.kernels, once.kernels, "{shape:?}");
    }
}

/// A kernel record whose launch is not in the trace stays outside any construct; the next
/// record of the kernel still finds its own launch.
#[test]
fn a_kernel_record_without_its_launch_is_not_given_another() {
    let cfg = SynthConfig::new(Shape::LaplaceNaive)
        .with_cupti_kernels_by_name()
        .iterations(300);
    let mut trace = written(&cfg);
    let first_launch = trace
        .events
        .iter()
        .position(|e| e.kind == accprof_abi::acc_event_t::ENQUEUE_LAUNCH_START)
        .unwrap();
    trace.events.remove(first_launch);
    let mut b = ProfileBuilder::with_cupti_records().device_round(256);
    for (id, text) in trace.strings.iter() {
        b.name_kernel(id, text);
    }
    trace.events.iter().for_each(|ev| b.feed(ev));
    let p = b.finish(&trace.strings);
    assert_eq!(p.summary.device_records_outside, 1, "{:?}", p.warnings);
    assert_eq!(p.summary.kernels.count, 600);
}
