//! When the writer cannot keep up, memory stays bounded, the program is not held up
//! indefinitely, and every dropped event is counted in the trace and said at exit.

#![warn(clippy::undocumented_unsafe_blocks)]

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_stalled_writer_drops_and_counts_instead_of_blocking() {
    let dir = scratch("backpressure");
    let exe = compile_c("threads.c", &dir, &["-pthread"]);
    // The trace goes into a FIFO that nobody reads for a while: the writer thread blocks on it.
    let fifo = dir.join("trace.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (threads, iters) = (2usize, 20000usize);
    let started = Instant::now();
    let child = Command::new(&exe)
        .args([threads.to_string(), iters.to_string()])
        .env("LD_PRELOAD", libaccprof())
        .env("ACCPROF_OUT", &fifo)
        .env("ACCPROF_BUFFER_EVENTS", "64")
        .env("ACCPROF_MAX_BUFFER_MB", "1")
        .env("ACCPROF_MAX_WAIT_MS", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader opens the FIFO but reads nothing for the first 3 s: the writer blocks on the
    // full pipe, buffers run out, and the threads must drop rather than wait. Then it drains
    // the FIFO so the program can exit.
    let reader = std::thread::spawn({
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        move || {
            std::thread::sleep(Duration::from_secs(3));
            let mut trace = Vec::new();
            let mut f = f;
            let mut buf = vec![0u8; 1 << 16];
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                match f.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => trace.extend_from_slice(&buf[..n]),
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            trace
        }
    });
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let trace = reader.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // 40,000 events: waiting even 1 ms for each would take 40 s; the exit's own bounded wait for
    // the writer is 30 s. A stalled writer may cost the program one short wait, then drops.
    assert!(
        took < Duration::from_secs(20),
        "the program was held up: {took:?}"
    );
    let saved = dir.join("saved.trace");
    std::fs::write(&saved, &trace).unwrap();
    let t = load(&saved);
    let footer = t
        .footer
        .as_ref()
        .expect("footer written once the FIFO drained");
    let computes = t
        .events
        .iter()
        .filter(|e| e.kind == acc_event_t::COMPUTE_CONSTRUCT_START)
        .count() as u64;
    let total = (threads * iters) as u64;
    assert!(
        footer.events_dropped > 0,
        "the writer was stalled, so some events must have been dropped"
    );
    assert_eq!(
        t.dropped_total, footer.events_dropped,
        "drop records in the trace add up to the footer"
    );
    // Nothing vanished silently: recorded + dropped = what the runtime reported (+1 device init).
    assert_eq!(footer.events_recorded + footer.events_dropped, total + 1);
    assert_eq!(computes + 1, footer.events_recorded);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{} events DROPPED", footer.events_dropped)),
        "{err}"
    );
}
