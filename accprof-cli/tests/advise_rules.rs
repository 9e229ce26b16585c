//! Each advice rule that no example program triggers on the emulated device fires on a trace
//! shaped like the problem it names, and stays silent on the same program done right.
//! The traces are written with the real writer and read by the real `accprof advise`.

use accprof_abi::acc_event_t;
use accprof_trace::{Event, Field, Footer, Header, StrId, TraceWriter};
use std::path::Path;
use std::process::Command;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const T0: u64 = 1_000 * MS;

/// Builds one thread's events in time order, with a source location on every construct.
struct Run {
    events: Vec<Event>,
    now: u64,
}

impl Run {
    fn new() -> Self {
        Self {
            events: Vec::new(),
            now: T0,
        }
    }

    fn event(&self, kind: acc_event_t, start: u64, end: u64, line: i64) -> Event {
        let mut e = Event::new(kind, start);
        e.end_ns = end;
        e.set_i64(Field::Thread, 1);
        e.set(Field::SrcFile, 0);
        e.set(Field::FuncName, 1);
        e.set_i64(Field::LineNo, line);
        e.set_i64(Field::DeviceType, 5);
        e
    }

    /// Host work outside OpenACC.
    fn host(&mut self, ns: u64) {
        self.now += ns;
    }

    fn init(&mut self, ns: u64) {
        let e = self.event(acc_event_t::DEVICE_INIT_START, self.now, self.now + ns, 10);
        self.events.push(e);
        self.now += ns;
    }

    /// A compute construct at `line` lasting `ns`, with one launch of the given geometry and,
    /// when `wait_ns` > 0, the implicit wait for its kernel at the end. Async when `queue` is set.
    fn compute(
        &mut self,
        line: i64,
        ns: u64,
        gangs: u64,
        vector: u64,
        wait_ns: u64,
        queue: Option<i64>,
    ) {
        let start = self.now;
        let mut launch = self.event(
            acc_event_t::ENQUEUE_LAUNCH_START,
            start + US / 2,
            start + US / 2 + 2 * US,
            line,
        );
        launch.set(Field::KernelName, 2);
        launch.set(Field::NumGangs, gangs);
        launch.set(Field::NumWorkers, 1);
        launch.set(Field::VectorLength, vector);
        let mut c = self.event(
            acc_event_t::COMPUTE_CONSTRUCT_START,
            start,
            start + ns,
            line,
        );
        c.set_i64(Field::ParentConstruct, 0);
        if let Some(q) = queue {
            for e in [&mut launch, &mut c] {
                e.set_i64(Field::Async, q);
                e.set_i64(Field::AsyncQueue, q);
            }
        }
        // Children first, as the tool writes them (a construct ends after what it contains).
        self.events.push(launch);
        if wait_ns > 0 {
            let w = self.event(
                acc_event_t::WAIT_START,
                start + ns - wait_ns,
                start + ns - US / 10,
                line,
            );
            self.events.push(w);
        }
        self.events.push(c);
        self.now += ns;
    }

    fn write(&self, path: &Path) {
        let header = Header {
            exe: "/bin/app".into(),
            args: vec!["app".into()],
            pid: 42,
            hostname: "node".into(),
            start_unix_ns: 1,
            start_monotonic_ns: T0,
            tool_version: "test".into(),
            mpi_rank: None,
            registration: "test".into(),
            extra: vec![],
        };
        let mut w = TraceWriter::new(std::fs::File::create(path).unwrap(), &header).unwrap();
        w.write_strings([
            (StrId(0), &b"app.c"[..]),
            (StrId(1), &b"main"[..]),
            (StrId(2), &b"main_42_gpu"[..]),
        ])
        .unwrap();
        w.write_events(&self.events).unwrap();
        w.write_footer(&Footer {
            events_recorded: self.events.len() as u64,
            events_dropped: 0,
            end_monotonic_ns: self.now + US,
        })
        .unwrap();
    }
}

/// The rule ids `accprof advise --format json` reports for `run`.
fn rules(name: &str, run: &Run) -> Vec<String> {
    // Removed when this function returns.
    let dir = tempfile::Builder::new()
        .prefix(&format!("accprof-advise-rules-{name}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("t.trace");
    run.write(&path);
    let out = Command::new(env!("CARGO_BIN_EXE_accprof"))
        .args(["advise", "--format", "json", "-q"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn short_kernels_fire_when_launching_dominates_and_not_for_substantial_kernels() {
    // 2000 constructs of 5 us each, back to back: launch overhead is the whole story.
    let mut bad = Run::new();
    bad.init(100 * US);
    for _ in 0..2000 {
        bad.compute(42, 5 * US, 1024, 128, 0, None);
        bad.host(US);
    }
    assert!(rules("short", &bad).contains(&"short_kernels".to_string()));
    // The same loop with 2 ms of work per construct.
    let mut good = Run::new();
    good.init(100 * US);
    for _ in 0..2000 {
        good.compute(42, 2 * MS, 1024, 128, 0, None);
        good.host(US);
    }
    assert!(!rules("short-good", &good).contains(&"short_kernels".to_string()));
}

#[test]
fn a_kernel_on_one_gang_and_one_lane_fires_and_a_parallel_one_does_not() {
    let mut bad = Run::new();
    bad.init(100 * US);
    for _ in 0..10 {
        bad.compute(57, 10 * MS, 1, 1, 0, None);
    }
    let found = rules("sequential", &bad);
    assert!(
        found.contains(&"sequential_kernel".to_string()),
        "{found:?}"
    );
    let mut good = Run::new();
    good.init(100 * US);
    for _ in 0..10 {
        good.compute(57, 10 * MS, 4096, 128, 0, None);
    }
    assert!(!rules("sequential-good", &good).contains(&"sequential_kernel".to_string()));
}

#[test]
fn waiting_on_synchronous_constructs_beside_host_work_suggests_async() {
    // Each iteration: the host waits 3 ms for the device, then does 3 ms of its own work.
    let mut bad = Run::new();
    bad.init(100 * US);
    for _ in 0..50 {
        bad.compute(70, 4 * MS, 4096, 128, 3 * MS, None);
        bad.host(3 * MS);
    }
    let found = rules("async", &bad);
    assert!(found.contains(&"async_queues".to_string()), "{found:?}");
    // Already asynchronous: nothing to suggest.
    let mut good = Run::new();
    good.init(100 * US);
    for _ in 0..50 {
        good.compute(70, 4 * MS, 4096, 128, 0, Some(1));
        good.host(3 * MS);
    }
    assert!(!rules("async-good", &good).contains(&"async_queues".to_string()));
}

#[test]
fn device_initialization_dominating_a_short_run_suggests_initializing_early() {
    let mut bad = Run::new();
    bad.init(300 * MS);
    bad.compute(80, 20 * MS, 4096, 128, 0, None);
    let found = rules("init", &bad);
    assert!(found.contains(&"init_early".to_string()), "{found:?}");
    let mut good = Run::new();
    good.init(300 * MS);
    for _ in 0..200 {
        good.compute(80, 20 * MS, 4096, 128, 0, None);
    }
    assert!(!rules("init-good", &good).contains(&"init_early".to_string()));
}
