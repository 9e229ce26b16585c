//! `accprof plot`: SVG and PNG pictures of a trace, and its answers to bad input.

mod tools;

use std::path::Path;
use tools::synth::{laplace_like, Synth};
use tools::{assert_one_line_failure, run, stderr};

fn laplace_trace(dir: &Path, iters: u64) -> std::path::PathBuf {
    let mut s = Synth::new("/home/user/laplace", 4242, None);
    laplace_like(&mut s, iters);
    let p = dir.join("laplace.trace");
    s.write(&p);
    p
}

fn plot(trace: &Path, out: &Path) -> String {
    let o = run(&["plot", trace.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "plot failed: {}", stderr(&o));
    stderr(&o)
}

/// The texts of an SVG, in order.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            Some(
                t.split_once('>')?
                    .1
                    .split_once("</text>")?
                    .0
                    .trim()
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn svg_shows_the_breakdown_per_construct_and_a_lane_per_track() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("laplace.svg");
    plot(&laplace_trace(dir.path(), 10), &out);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    let texts = svg_texts(&svg);
    for expected in [
        "accprof: laplace (pid 4242)",
        "kernels",
        "data",
        "wait",
        "init",
        "host",
        "Host time per construct (longest first)",
        "parallel laplace.c:42 (x10)",
        "host thread 0",
        "host thread 0: device (synchronous)",
        "host thread 1",
        "device: async queue 1",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "no text {expected:?} in {texts:?}"
        );
    }
    // The compute construct at line 42 took the most host time: it is the first bar.
    let first_bar = texts
        .iter()
        .position(|t| t == "Host time per construct (longest first)")
        .unwrap()
        + 1;
    assert_eq!(texts[first_bar], "parallel laplace.c:42 (x10)");
    // Each category of the legend colors some rectangle (kernels blue, data orange, host green).
    for rgb in ["#0072B2", "#E69F00", "#009E73"] {
        assert!(
            svg.contains(rgb) || svg.contains(&rgb.to_lowercase()),
            "no {rgb} in the picture"
        );
    }
}

#[test]
fn svg_snapshot_of_a_small_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.svg");
    plot(&laplace_trace(dir.path(), 2), &out);
    let texts = svg_texts(&std::fs::read_to_string(&out).unwrap());
    insta::assert_snapshot!("plot_small_texts", texts.join("\n"));
}

#[test]
fn png_with_the_bundled_font() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("laplace.png");
    plot(&laplace_trace(dir.path(), 10), &out);
    let png = std::fs::read(&out).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Width and height from the IHDR chunk.
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!(w, 1200);
    assert!(h > 300, "{h}");
    if let Ok(dir) = std::env::var("ACCPROF_PLOT_KEEP") {
        std::fs::copy(&out, Path::new(&dir).join("laplace.png")).unwrap();
    }
}

#[test]
fn format_flag_overrides_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("picture.img");
    let t = laplace_trace(dir.path(), 1);
    let o = run(&[
        "plot",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "png",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&std::fs::read(&out).unwrap()[..4], b"\x89PNG");
}

#[test]
fn empty_trace_plots_an_empty_figure() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("idle.trace");
    Synth::new("/bin/idle", 9, None).write(&p);
    let out = dir.path().join("idle.svg");
    plot(&p, &out);
    let texts = svg_texts(&std::fs::read_to_string(&out).unwrap());
    assert!(
        texts
            .iter()
            .any(|t| t == "no OpenACC constructs in this trace"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "no events to show"), "{texts:?}");
}

#[test]
fn truncated_trace_plots_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = laplace_trace(dir.path(), 3);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(b"CK\x04\x00\x00\x01\x00\x00");
    std::fs::write(&p, &bytes).unwrap();
    let out = dir.path().join("cut.svg");
    let err = plot(&p, &out);
    assert_eq!(
        err.matches("ends in the middle of a chunk").count(),
        1,
        "{err}"
    );
    assert!(svg_texts(&std::fs::read_to_string(&out).unwrap())
        .iter()
        .any(|t| t.starts_with("parallel laplace.c:42")));
}

#[test]
fn bad_inputs_fail_with_one_line_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.svg");
    let o = out.to_str().unwrap();
    assert_one_line_failure(
        &run(&["plot", d.join("missing.trace").to_str().unwrap(), "-o", o]),
        "missing.trace",
    );
    let foreign = d.join("foreign.trace");
    std::fs::write(&foreign, b"P1\n1 1\n0\n").unwrap();
    assert_one_line_failure(
        &run(&["plot", foreign.to_str().unwrap(), "-o", o]),
        "not an accprof trace",
    );
    let empty = d.join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    assert_one_line_failure(&run(&["plot", empty.to_str().unwrap(), "-o", o]), "empty");
    assert!(!out.exists());
    let good = laplace_trace(d, 1);
    let bad_dir = d.join("nope/o.svg");
    assert_one_line_failure(
        &run(&[
            "plot",
            good.to_str().unwrap(),
            "-o",
            bad_dir.to_str().unwrap(),
        ]),
        "cannot write",
    );
}

#[test]
fn help_explains_with_an_example() {
    let o = run(&["plot", "--help"]);
    assert!(o.status.success());
    let help = tools::stdout(&o);
    assert!(
        help.contains("accprof plot accprof.laplace.1234.trace -o laplace.svg"),
        "{help}"
    );
    assert!(help.contains("kernels, data, wait, init, host"), "{help}");
}
