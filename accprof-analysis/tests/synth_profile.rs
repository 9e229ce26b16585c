//! Profiles and advice of the synthetic Laplace traces: the numbers the generator put in come
//! back out, the naive version gets the data-region advice and the data version none.

use accprof_analysis::{advise, ChildKind, ConstructKind, Direction, Profile, Rule};
use accprof_testkit::laplace::{self as synth, Shape, SynthConfig};

fn profile_of(cfg: &SynthConfig) -> Profile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    synth::write_trace(cfg, &path).unwrap();
    Profile::from_path(&path).unwrap()
}

#[test]
fn events_per_iteration_is_what_the_generator_emits() {
    for shape in [Shape::LaplaceNaive, Shape::LaplaceData] {
        let one = synth::events(&SynthConfig::new(shape).iterations(1)).len() as u64;
        let three = synth::events(&SynthConfig::new(shape).iterations(3)).len() as u64;
        assert_eq!(
            three - one,
            2 * SynthConfig::new(shape).events_per_iteration(),
            "{shape:?}"
        );
    }
}

#[test]
fn naive_laplace_profile_counts_every_construct_and_transfer() {
    let p = profile_of(
        &SynthConfig::new(Shape::LaplaceNaive)
            .iterations(10)
            .grid(256),
    );
    let compute: Vec<_> = p
        .constructs
        .iter()
        .filter(|c| c.kind == ConstructKind::Compute)
        .collect();
    assert_eq!(compute.len(), 2);
    for c in &compute {
        assert_eq!(c.reached, 10);
        assert_eq!(c.location.function.as_deref(), Some("main"));
        let (ups, up_bytes, _) = c.child_total(ChildKind::Upload);
        assert!(ups >= 20, "{ups}");
        assert!(up_bytes >= 20 * 256 * 256 * 8);
        assert_eq!(c.child_total(ChildKind::Launch).0, 10);
    }
    assert_eq!(p.summary.compute.count, 20);
    assert_eq!(p.summary.uploads.count, 50);
    assert_eq!(p.summary.downloads.count, 50);
    let a_in = p
        .variables
        .iter()
        .find(|v| v.name == "A" && v.direction == Direction::HostToDevice)
        .unwrap();
    assert_eq!(a_in.count, 20);
    assert_eq!(a_in.bytes, 20 * 256 * 256 * 8);
    assert_eq!(p.kernels.len(), 2);
    assert_eq!(p.kernels[0].launches, 10);
    assert!(p.summary.wall_ns > p.summary.compute.total_ns);
    assert_eq!(p.summary.device_init.count, 1);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn naive_laplace_gets_a_data_region_on_lines_57_to_80() {
    let p = profile_of(&SynthConfig::new(Shape::LaplaceNaive).iterations(100));
    let f = advise(&p);
    let dr = f
        .iter()
        .find(|f| f.rule == Rule::DataRegion)
        .expect("data region finding");
    assert!(dr.change.contains("wrap lines 57-80"), "{}", dr.change);
    assert!(
        dr.change.contains("copy(A, Anew)") || dr.change.contains("copy(A) create(Anew)"),
        "{}",
        dr.change
    );
    assert_eq!(dr.location.function.as_deref(), Some("main"));
    assert!(dr.estimated_saving_ns > 0);
    assert!(!dr.events.is_empty());
    assert_eq!(f[0].rule, Rule::DataRegion, "largest saving first: {f:#?}");
}

#[test]
fn data_region_laplace_gets_no_data_advice() {
    let p = profile_of(&SynthConfig::new(Shape::LaplaceData).iterations(20));
    let f = advise(&p);
    assert!(f.iter().all(|f| !f.rule.is_data_rule()), "{f:#?}");
    let data = p
        .constructs
        .iter()
        .find(|c| c.kind == ConstructKind::Data)
        .unwrap();
    assert_eq!(data.reached, 1);
}
