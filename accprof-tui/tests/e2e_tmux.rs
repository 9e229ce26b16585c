//! End to end: runs the real binary inside tmux, sends keys, reads the screen back.
//! Also: bad input gets one line on stderr and a non-zero exit, before the screen is touched.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_accprof-tui");

/// A tmux server of our own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cmd: &str) -> Tmux {
        let socket = format!("accprof-tui-test-{}-{}", std::process::id(), rand_suffix());
        let t = Tmux { socket };
        let ok = Command::new("tmux")
            .args([
                "-L",
                &t.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                cmd,
            ])
            .status()
            .expect("tmux must be installed for this test (apt-get install tmux)");
        assert!(ok.success(), "tmux new-session failed");
        t
    }

    fn send(&self, keys: &[&str]) {
        let mut args = vec!["-L", &self.socket, "send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `pred` holds, or fails with the last screen after 20 s.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            if t.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether tmux still runs the command: its window closes when the command exits.
    fn program_running(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_007
}

fn write_trace(dir: &Path, iterations: u64) -> std::path::PathBuf {
    let p = dir.join("e2e.trace");
    support::synth::write_trace(&p, iterations).unwrap();
    p
}

#[test]
fn keys_drive_the_real_binary_and_q_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), 40);
    // After the program exits, print a marker so we can see the shell got a sane terminal back.
    let cmd = format!("{BIN} {}; echo EXITED-$?; sleep 30", trace.display());
    let t = Tmux::start(&cmd);
    t.wait_for("the timeline", |s| {
        s.contains("thread 0") && s.contains("e2e.trace") && s.contains("Details")
    });
    t.send(&["?"]);
    t.wait_for("the help overlay", |s| s.contains("accprof-tui keys"));
    t.send(&["Escape"]);
    t.wait_for("help closed", |s| !s.contains("accprof-tui keys"));
    // Zoom in, select in the launch row, step to an event: the details pane fills.
    t.send(&["+", "+", "+", "+", "+", "+", "j", "j", "]"]);
    t.wait_for("details of the selection", |s| {
        s.contains("recorded fields") && s.contains("acc_ev_")
    });
    // Search for the async kernel: the header shows the filter.
    t.send(&["/", "main_52", "Enter"]);
    t.wait_for("the filter", |s| s.contains("filter \"main_52\""));
    // Escape and the next key go separately: together they read as Alt+key.
    t.send(&["Escape"]);
    t.wait_for("the filter cleared", |s| !s.contains("filter \""));
    t.send(&["t"]);
    t.wait_for("the constructs table", |s| {
        s.contains("Constructs and kernels")
    });
    t.send(&["Escape"]);
    t.wait_for("the table closed", |s| {
        !s.contains("Constructs and kernels")
    });
    t.send(&["a"]);
    t.wait_for("the findings panel", |s| s.contains("Advice findings"));
    t.send(&["Escape"]);
    t.wait_for("the findings closed", |s| !s.contains("Advice findings"));
    t.send(&["q"]);
    let s = t.wait_for("exit", |s| s.contains("EXITED-0"));
    // Back on the normal screen: the timeline is gone.
    assert!(
        !s.contains("Details"),
        "the alternate screen was left:\n{s}"
    );
}

#[test]
fn a_gpu_trace_shows_its_device_stream_lane() {
    // Recorded on an H200 (traces/gpu/README.md); the stream lane holds CUPTI's device records.
    let trace =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/shim_naive.trace");
    let t = Tmux::start(&format!("{BIN} {}", trace.display()));
    // The legend names the device categories (waited for too: tmux may show half a frame).
    t.wait_for("a device lane", |s| {
        s.contains("device stream 0x") && s.contains("shim_naive.trace") && s.contains("device:")
    });
    // Open the table: once the analysis is done, kernels carry device times.
    t.send(&["t"]);
    t.wait_for("device-timed rows", |s| {
        s.contains("Constructs and kernels") && s.contains("[device]")
    });
    t.send(&["q"]);
}

#[test]
fn a_panic_restores_the_terminal_before_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), 4);
    let t = Tmux::start(&format!(
        "ACCPROF_TUI_PANIC_AFTER_DRAW=1 {BIN} {}; echo EXITED-$?; sleep 30",
        trace.display()
    ));
    let s = t.wait_for("exit after the panic", |s| s.contains("EXITED-"));
    assert!(
        s.contains("panic requested"),
        "the message is on the normal screen:\n{s}"
    );
    assert!(!s.contains("EXITED-0"), "a panic is a failure:\n{s}");
    assert!(
        !s.contains("Details"),
        "the alternate screen was left:\n{s}"
    );
}

#[test]
fn resize_relayouts_the_screen() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), 40);
    let t = Tmux::start(&format!("{BIN} {}", trace.display()));
    t.wait_for("the timeline", |s| s.contains("Details"));
    assert!(Command::new("tmux")
        .args([
            "-L",
            &t.socket,
            "resize-window",
            "-t",
            "0",
            "-x",
            "80",
            "-y",
            "24"
        ])
        .status()
        .unwrap()
        .success());
    // Below 100 columns the details pane is dropped and the legend moves to row 23.
    t.wait_for("the narrow layout", |s| {
        !s.contains("Details") && s.lines().nth(22).is_some_and(|l| l.contains("compute"))
    });
    t.send(&["q"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while t.program_running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!t.program_running(), "q quits");
}

#[test]
fn follow_shows_events_as_they_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.trace");
    let file = std::fs::File::create(&path).unwrap();
    let mut s = support::synth::Synth::new(file).unwrap();
    s.prologue().unwrap();
    s.iteration(0).unwrap();
    s.flush_events().unwrap();
    let t = Tmux::start(&format!("{BIN} --follow {}", path.display()));
    let first = t.wait_for("the first events", |sc| {
        sc.contains("following") && sc.contains(" events")
    });
    assert!(!first.contains("queue 1"), "no async work yet:\n{first}");
    for i in 1..8 {
        s.iteration(i).unwrap();
    }
    s.flush_events().unwrap();
    // Iteration 3 launches on queue 1: its lane appears.
    t.wait_for("the new lane", |sc| sc.contains("queue 1"));
    t.send(&["q"]);
}

fn run_bin(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn assert_one_line_failure(out: &std::process::Output, needle: &str) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err}");
    // Nothing was drawn: no escape sequence for the alternate screen on stdout.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\x1b[?1049h"));
}

#[test]
fn bad_input_is_one_line_and_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    assert_one_line_failure(
        &run_bin(&[dir.path().join("missing.trace").to_str().unwrap()]),
        "cannot read",
    );
    let empty = dir.path().join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    assert_one_line_failure(&run_bin(&[empty.to_str().unwrap()]), "empty");
    let foreign = dir.path().join("foreign.trace");
    std::fs::write(&foreign, b"hello, this is not a trace at all").unwrap();
    assert_one_line_failure(
        &run_bin(&[foreign.to_str().unwrap()]),
        "not an accprof trace",
    );
    // A chunk with a bad checksum.
    let good = write_trace(dir.path(), 4);
    let mut bytes = std::fs::read(&good).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    let corrupt = dir.path().join("corrupt.trace");
    std::fs::write(&corrupt, bytes).unwrap();
    assert_one_line_failure(&run_bin(&[corrupt.to_str().unwrap()]), "corrupt");
}

#[test]
fn help_explains_with_an_example() {
    let out = run_bin(&["--help"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("accprof-tui laplace.trace") && s.contains("--follow"),
        "{s}"
    );
}

/// The advice says `see: event #N: accprof tui --event N TRACE`: the timeline opens with that
/// event selected, and `/#N` goes to another.
#[test]
fn the_event_the_advice_names_is_one_flag_or_search_away() {
    use accprof_abi::acc_event_t;
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), 40);
    let t = accprof_trace::Trace::load(&trace).unwrap();
    let nth = |kind: acc_event_t, k: usize| {
        t.events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == kind)
            .nth(k)
            .map(|(i, _)| i)
            .unwrap()
    };
    let launch = nth(acc_event_t::ENQUEUE_LAUNCH_START, 5);
    let upload = nth(acc_event_t::ENQUEUE_UPLOAD_START, 7);
    let cmd = format!("{BIN} --event {launch} {}; sleep 30", trace.display());
    let tmux = Tmux::start(&cmd);
    tmux.wait_for("the launch selected", |s| {
        s.contains(&format!("event #{launch}")) && s.contains("acc_ev_enqueue_launch")
    });
    tmux.send(&["/", &format!("#{upload}"), "Enter"]);
    // Titled as the exports title it, with its size (accprof_timeline::Title).
    tmux.wait_for("the upload selected", |s| {
        s.contains(&format!("event #{upload}"))
            && s.contains("acc_ev_enqueue_upload")
            && s.contains("upload 8 MiB ")
    });
    tmux.send(&["/", "#999999", "Enter"]);
    tmux.wait_for("no such event", |s| s.contains("no event #999999"));
    tmux.send(&["q"]);
}

/// A trace someone hands you: its module is a FIFO (opening it to resolve call sites would
/// wait forever), its source file `/proc/self/pagemap` (gigabytes unless read no further than
/// its size), and its strings set the terminal's title. The timeline, an event's details and
/// the advice open; the title stays the terminal's.
#[test]
fn a_crafted_trace_neither_hangs_the_timeline_nor_drives_the_terminal() {
    use accprof_abi::acc_event_t;
    use accprof_trace::{Event, Field, Footer, Header, Module, StrId, TraceWriter};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("libvictim.so");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let title = "\x1b]0;owned\x07\x1b]2;owned\x07";
    let header = Header {
        exe: format!("/bin/app{title}"),
        args: vec!["app".into()],
        pid: 4242,
        hostname: format!("node{title}"),
        start_unix_ns: 1_700_000_000_000_000_000,
        start_monotonic_ns: 1_000_000,
        tool_version: "0.1.0".into(),
        registration: "acc_register_library".into(),
        ..Header::default()
    };
    let trace = dir.path().join("crafted.trace");
    let mut w = TraceWriter::new(std::fs::File::create(&trace).unwrap(), &header).unwrap();
    let (func, var) = (format!("main{title}"), format!("A{title}"));
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
        let mut c = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, t);
        c.end_ns = t + 50_000;
        c.set_i64(Field::Thread, 1);
        c.set(Field::SrcFile, 0);
        c.set(Field::FuncName, 1);
        c.set_i64(Field::LineNo, 3);
        c.set(Field::ReturnAddress, 0x40_1000 + i);
        events.push(c);
        let mut up = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, t + 10_000);
        up.end_ns = t + 20_000;
        up.set_i64(Field::Thread, 1);
        up.set(Field::Bytes, 1 << 20);
        up.set(Field::VarName, 2);
        up.set(Field::HostPtr, 0x7000_0000);
        up.set(Field::ReturnAddress, 0x40_2000 + i);
        events.push(up);
    }
    w.write_events(&events).unwrap();
    w.write_footer(&Footer {
        events_recorded: 40,
        events_dropped: 0,
        end_monotonic_ns: 5_000_000,
    })
    .unwrap();
    drop(w);
    let tmux = Tmux::start(&format!("{BIN} --event 1 {}; sleep 30", trace.display()));
    tmux.wait_for("the upload's details", |s| {
        s.contains("crafted.trace") && s.contains("acc_ev_enqueue_upload") && s.contains("Details")
    });
    tmux.send(&["a"]);
    tmux.wait_for("the findings panel", |s| s.contains("Advice findings"));
    tmux.send(&["Escape"]);
    let pane_title = Command::new("tmux")
        .args(["-L", &tmux.socket, "display-message", "-p", "#{pane_title}"])
        .output()
        .unwrap();
    let pane_title = String::from_utf8_lossy(&pane_title.stdout);
    assert!(
        !pane_title.contains("owned"),
        "the trace set the title: {pane_title}"
    );
    tmux.send(&["q"]);
}
