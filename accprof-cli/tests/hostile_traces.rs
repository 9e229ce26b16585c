//! Traces someone hands you. A crafted trace names a FIFO as the binary its call sites are in
//! (opening it would wait forever), `/proc/self/pagemap` as a source file (it reads as
//! gigabytes), and fills its strings with terminal escapes: set the title, clear the screen,
//! write the clipboard (OSC 52), C1 controls, bidirectional overrides, `<` and `&` for SVG.
//! Every command reads it in bounded time and memory, prints none of those characters, and
//! writes well-formed SVG; a copy cut at any chunk boundary before its end marker is warned
//! about by every command.

mod tools;

use accprof_abi::acc_event_t;
use accprof_trace::{Event, Field, Footer, Header, Module, StrId, TraceWriter};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use tools::{accprof, stderr};

/// A command past this is hanging.
const HANG: Duration = Duration::from_secs(60);
/// Memory a command may use on this small trace (a source file naming /proc/self/pagemap reads
/// gigabytes unless bounded by its size).
const MAX_RSS_KB: i64 = 512 << 10;

const HOSTILE: &str = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZWNobw==\x07\u{9b}31m\u{202e}<b>&amp;\n";

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Writes the crafted trace to `path`; with `footer` false it ends without its end marker.
fn crafted(dir: &Path, path: &Path, footer: bool) {
    let fifo = dir.join("libvictim.so");
    if !fifo.exists() {
        mkfifo(&fifo);
    }
    let header = Header {
        exe: format!("/bin/app{HOSTILE}"),
        args: vec!["app".into(), HOSTILE.into()],
        pid: 4242,
        hostname: format!("node{HOSTILE}"),
        start_unix_ns: 1_700_000_000_000_000_000,
        start_monotonic_ns: 1_000_000,
        tool_version: "0.1.0".into(),
        registration: "acc_register_library".into(),
        ..Header::default()
    };
    let mut w = TraceWriter::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    let func = format!("main{HOSTILE}");
    let var = format!("A{HOSTILE}");
    w.write_strings([
        (StrId(0), &b"/proc/self/pagemap"[..]),
        (StrId(1), func.as_bytes()),
        (StrId(2), var.as_bytes()),
    ])
    .unwrap();
    w.write_modules(&[Module {
        path: fifo.display().to_string(),
        bias: 0,
        start: 0x40_0000,
        end: 0x50_0000,
        build_id: Vec::new(),
    }])
    .unwrap();
    let mut events = Vec::new();
    for i in 0..20u64 {
        let t = 2_000_000 + i * 100_000;
        let mut up = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, t + 10_000);
        up.end_ns = t + 20_000;
        up.set_i64(Field::Thread, 1);
        up.set(Field::Bytes, 1 << 20);
        up.set(Field::VarName, 2);
        up.set(Field::HostPtr, 0x7000_0000);
        up.set(Field::ReturnAddress, 0x40_1234);
        events.push(up);
        let mut c = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, t);
        c.end_ns = t + 50_000;
        c.set_i64(Field::Thread, 1);
        c.set(Field::SrcFile, 0);
        c.set(Field::FuncName, 1);
        c.set_i64(Field::LineNo, 3);
        c.set_i64(Field::DeviceType, 5);
        events.push(c);
        // A call site in the module the FIFO stands for, to be resolved from it.
        let mut l = Event::new(acc_event_t::ENQUEUE_LAUNCH_START, t + 30_000);
        l.end_ns = t + 31_000;
        l.set_i64(Field::Thread, 1);
        l.set(Field::ReturnAddress, 0x40_2000 + i);
        events.push(l);
        if i == 9 {
            // Two events chunks: more boundaries to cut at.
            w.write_events(&events).unwrap();
            events.clear();
        }
    }
    w.write_events(&events).unwrap();
    if footer {
        w.write_footer(&Footer {
            events_recorded: 60,
            events_dropped: 0,
            end_monotonic_ns: 5_000_000,
        })
        .unwrap();
    }
}

/// Runs accprof with `args`; fails the test if it runs past [`HANG`] or uses more than
/// [`MAX_RSS_KB`].
fn bounded(args: &[&str]) -> Output {
    let mut child = accprof()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let pid = child.id() as i32;
    // Read while waiting: a full pipe must not look like a hang.
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(child.stdout.as_mut().unwrap(), &mut s).unwrap();
        (child, s)
    });
    while !out.is_finished() {
        if start.elapsed() > HANG {
            // SAFETY: kill with the pid of our own child, which has not been waited for.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("accprof {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (child, stdout) = out.join().unwrap();
    let mut o = child.wait_with_output().unwrap();
    o.stdout = stdout;
    // SAFETY: rusage is plain integers, for which zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes our struct.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert!(
        usage.ru_maxrss < MAX_RSS_KB,
        "accprof {args:?}: {} KB of memory",
        usage.ru_maxrss
    );
    o
}

/// The characters that would act on a terminal, wherever they are in `bytes`.
fn acting(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn check_printable(what: &str, o: &Output) {
    for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let bad = acting(bytes);
        assert!(bad.is_empty(), "{what} {stream}: {bad:?}");
    }
}

struct Files {
    dir: tempfile::TempDir,
    whole: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("crafted.trace");
    crafted(dir.path(), &whole, true);
    Files { dir, whole }
}

#[test]
fn every_command_reads_a_crafted_trace_bounded_and_prints_nothing_raw() {
    let f = files();
    let t = f.whole.to_str().unwrap();
    let out = |name: &str| f.dir.path().join(name).display().to_string();
    let (json, pf, svg) = (out("x.json"), out("x.pftrace"), out("x.svg"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", t],
        vec!["report", "--format", "csv", t],
        vec!["advise", t],
        vec!["diff", t, t],
        vec!["dump", "--header", t],
        vec!["export", "-o", &json, t],
        vec!["export", "-o", &pf, t],
        vec!["plot", "-o", &svg, t],
    ];
    for args in &commands {
        let o = bounded(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        check_printable(&format!("{args:?}"), &o);
    }
    // The text views show the strings, escaped.
    let report = bounded(&["report", t]);
    assert!(
        String::from_utf8_lossy(&report.stdout).contains("\\x1b]0;owned\\x07"),
        "{}",
        String::from_utf8_lossy(&report.stdout)
    );
    // The files hold no raw escapes either, and the SVG is well-formed XML.
    for p in [&json, &svg] {
        let bytes = std::fs::read(p).unwrap();
        assert!(acting(&bytes).is_empty(), "{p}: {:?}", acting(&bytes));
    }
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert_well_formed(&svg_text);
    // symbolize opens the module the trace names only if it is a regular file.
    let copy = f.dir.path().join("copy.trace");
    std::fs::copy(&f.whole, &copy).unwrap();
    let o = bounded(&["symbolize", copy.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    check_printable("symbolize", &o);
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

/// Element and attribute syntax balanced, entities known: enough to tell text that was
/// written into SVG unescaped.
fn assert_well_formed(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        check_entities(text);
        assert!(!text.contains('>'), "a stray '>' in text: {text:?}");
        let end = rest[lt..].find('>').expect("an unclosed tag") + lt;
        let tag = &rest[lt + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        assert!(!tag.contains('<'), "a '<' inside a tag: {tag:?}");
        check_entities(tag);
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap_or_default();
            stack.push(name.to_string());
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
}

fn check_entities(s: &str) {
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        let after = &rest[amp + 1..];
        let semi = after.find(';').expect("a bare '&'");
        let name = &after[..semi];
        assert!(
            matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                || name.starts_with('#') && name.len() > 1,
            "an unknown entity &{name};"
        );
        rest = &after[semi + 1..];
    }
}

#[test]
fn a_trace_cut_at_any_chunk_boundary_is_warned_about_by_every_command() {
    let f = files();
    let whole = std::fs::read(&f.whole).unwrap();
    let boundaries = chunk_ends(&whole);
    assert!(boundaries.len() >= 5, "{boundaries:?}");
    // Every cut before the footer: after the header, the strings, the modules, each events
    // chunk.
    let cuts: Vec<usize> = boundaries[..boundaries.len() - 1].to_vec();
    for (i, &cut) in cuts.iter().enumerate() {
        let p = f.dir.path().join(format!("cut{i}.trace"));
        std::fs::write(&p, &whole[..cut]).unwrap();
        let t = p.to_str().unwrap();
        let out = |name: &str| {
            f.dir
                .path()
                .join(format!("{i}{name}"))
                .display()
                .to_string()
        };
        let (json, pf, svg) = (out("x.json"), out("x.pftrace"), out("x.svg"));
        for args in [
            vec!["report", t],
            vec!["advise", t],
            vec!["diff", t, t],
            vec!["dump", t],
            vec!["export", "-o", &json, t],
            vec!["export", "-o", &pf, t],
            vec!["plot", "-o", &svg, t],
        ] {
            let o = bounded(&args);
            assert!(o.status.success(), "cut at {cut}: {args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("no end marker"),
                "cut at {cut}: {args:?} says nothing: {}",
                stderr(&o)
            );
        }
    }
}

/// Where each chunk of a version 2 trace ends.
fn chunk_ends(bytes: &[u8]) -> Vec<usize> {
    let mut at = 16;
    let mut ends = Vec::new();
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 16 + len;
        ends.push(at);
    }
    ends
}
