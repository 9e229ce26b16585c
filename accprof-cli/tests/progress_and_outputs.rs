//! Commands that can run for seconds show a progress bar only on a terminal: with stderr going
//! to a pipe (as here) they print nothing beyond their usual lines. And `plot -o` refuses an
//! extension it cannot write with one line and a non-zero exit.

mod tools;

use std::path::PathBuf;
use tools::{run, stderr, stdout};

fn trace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/shim_naive.trace")
}

/// Progress bars draw with carriage returns and escape sequences; neither may reach a pipe.
fn assert_no_bar(what: &str, err: &str) {
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "{what}: progress output on a pipe: {err:?}"
    );
}

#[test]
fn not_a_terminal_prints_nothing_extra() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace();
    let t = t.to_str().unwrap();
    let pf = dir.path().join("a.pftrace");
    let json = dir.path().join("a.json");
    let svg = dir.path().join("a.svg");
    for (what, args, expect_lines) in [
        (
            "export perfetto",
            vec!["export", "-o", pf.to_str().unwrap(), t],
            1,
        ),
        (
            "export json",
            vec!["export", "-o", json.to_str().unwrap(), t],
            1,
        ),
        ("plot", vec!["plot", "-o", svg.to_str().unwrap(), t], 1),
        ("dump", vec!["dump", t], 0),
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let err = stderr(&o);
        assert_no_bar(what, &err);
        assert_eq!(
            err.lines().count(),
            expect_lines,
            "{what}: stderr was {err:?}"
        );
    }
    // -q is accepted everywhere a bar can appear, and changes nothing on a pipe.
    for args in [
        vec!["export", "-q", "-o", pf.to_str().unwrap(), t],
        vec!["plot", "-q", "-o", svg.to_str().unwrap(), t],
    ] {
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1);
    }
    let o = run(&["dump", "-q", t]);
    assert!(o.status.success() && stderr(&o).is_empty() && !stdout(&o).is_empty());
}

#[test]
fn plot_refuses_an_extension_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let jpg = dir.path().join("x.jpg");
    let o = run(&[
        "plot",
        "-o",
        jpg.to_str().unwrap(),
        trace().to_str().unwrap(),
    ]);
    assert!(!o.status.success(), "plot -o x.jpg must fail");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains("x.jpg") && err.contains(".svg or .png"),
        "{err}"
    );
    assert!(!jpg.exists(), "no file written under a misleading name");
    // The flag still overrides the extension, and the known ones work.
    let o = run(&[
        "plot",
        "--format",
        "svg",
        "-o",
        jpg.to_str().unwrap(),
        trace().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let png = dir.path().join("x.PNG");
    let o = run(&[
        "plot",
        "-o",
        png.to_str().unwrap(),
        trace().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}
