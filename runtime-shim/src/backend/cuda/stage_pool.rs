//! Persistent host threads for the staged copies: spawning threads per copy would cost more
//! than the copy of a few MiB.
//!
//! Between copies the threads sleep. Waking one costs its waker a system call, and on the H200
//! machine (a virtual machine) most start within 60 us of the upload, but a few take 300-900
//! us: an idle virtual CPU is slow to run again (docs/performance/shim.md). Waking
//! them as a tree (each woken thread waking two more) was measured and started them later, so
//! the caller wakes every thread itself, and the staged copies hand out their work in small
//! pieces so that late threads simply take less of it.
//!
//! For a while after each job ([`Warm`]) a thread sleeps only briefly at a time, so that its
//! CPU never idles long enough to be slow to wake: after 90 ms of idle CPUs, 170 of 480 threads
//! took their first piece of a 1.6 ms upload 150-450 us late, and 5 of 480 when kept warm
//! (docs/performance/shim.md).

use crate::backend::HostJob;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Message = (HostJob, Sender<()>);

/// How long after a job (and after it starts) a pool thread keeps its CPU from idling
/// (`window`), by sleeping at most `tick` at a time; a zero window or tick: it sleeps until the
/// next job at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Warm {
    pub window: Duration,
    pub tick: Duration,
}

/// One pool thread: where its jobs go, and its handle, to wake it from a short sleep and to
/// join it when the pool goes.
struct Worker {
    jobs: Sender<Message>,
    handle: JoinHandle<()>,
}

pub struct StagePool {
    workers: Vec<Worker>,
}

impl StagePool {
    /// `threads` threads (at least one), each running `init` first (the CUDA backend makes its
    /// context current there), kept `warm` after each job.
    pub fn new(threads: usize, warm: Warm, init: impl Fn() + Send + Clone + 'static) -> StagePool {
        let workers = (0..threads.max(1))
            .map(|i| {
                let (jobs, rx) = crossbeam_channel::unbounded::<Message>();
                let init = init.clone();
                let handle = crate::backend::spawn_worker(format!("accshim-stage{i}"), move || {
                    init();
                    serve(rx, warm)
                })
                .expect("spawn staging thread");
                Worker { jobs, handle }
            })
            .collect();
        StagePool { workers }
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Runs job i on thread i (modulo the pool's size) and waits for all of them.
    pub fn run(&self, jobs: Vec<HostJob>) {
        self.run_with(jobs, || {});
    }

    /// Like [`run`](Self::run), and runs `here` on the calling thread while the jobs run (the
    /// caller would only wait otherwise, and it needs no waking).
    pub fn run_with(&self, jobs: Vec<HostJob>, here: impl FnOnce()) {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let n = jobs.len();
        for (i, job) in jobs.into_iter().enumerate() {
            let w = &self.workers[i % self.workers.len()];
            let _ = w.jobs.send((job, done_tx.clone()));
            // A thread in its warm window sleeps outside the channel (next_job). Once the window
            // is over the channel's send has woken it already, and this costs no system call.
            w.handle.thread().unpark();
        }
        here();
        // A job that panicked still reports (serve), so this cannot wait forever.
        for _ in 0..n {
            let _ = done_rx.recv();
        }
    }
}

impl Drop for StagePool {
    /// Closes every thread's channel, wakes the threads (those in a warm window exit now rather
    /// than at its end) and joins them: a device that is shut down leaves no thread behind.
    fn drop(&mut self) {
        let handles: Vec<JoinHandle<()>> = self.workers.drain(..).map(|w| w.handle).collect();
        for h in &handles {
            h.thread().unpark();
        }
        for h in handles {
            let _ = h.join();
        }
    }
}

/// A pool thread: runs each job it is sent and reports it done, even when the job panicked.
fn serve(rx: Receiver<Message>, warm: Warm) {
    while let Some((job, done)) = next_job(&rx, warm) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let _ = done.send(());
    }
}

/// The next job; None once the pool is gone. Within the warm window the thread sleeps in
/// `park_timeout` (which the sender's `unpark` ends at once) rather than in the channel, whose
/// timed wait spins before it sleeps and cost twice the CPU time (docs/performance/shim.md).
fn next_job(rx: &Receiver<Message>, warm: Warm) -> Option<Message> {
    if !warm.window.is_zero() && !warm.tick.is_zero() {
        let until = Instant::now() + warm.window;
        loop {
            match rx.try_recv() {
                Ok(m) => return Some(m),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) if Instant::now() >= until => break,
                Err(TryRecvError::Empty) => std::thread::park_timeout(warm.tick),
            }
        }
    }
    rx.recv().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::sync::Mutex;

    fn names_of_threads_running(pool: &StagePool, jobs: usize) -> Vec<String> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let jobs: Vec<HostJob> = (0..jobs)
            .map(|_| {
                let seen = seen.clone();
                Box::new(move || {
                    let name = std::thread::current().name().unwrap_or("").to_string();
                    seen.lock().unwrap().push(name);
                }) as HostJob
            })
            .collect();
        let mut here_ran = false;
        pool.run_with(jobs, || here_ran = true);
        assert!(here_ran);
        let v = seen.lock().unwrap().clone();
        v
    }

    #[test]
    fn every_job_runs_once_on_its_own_thread_either_way() {
        let pool = StagePool::new(15, Warm::default(), || {});
        for n in [0, 1, 2, 3, 7, 15] {
            let names = names_of_threads_running(&pool, n);
            assert_eq!(names.len(), n, "{n} jobs");
            let distinct: HashSet<&String> = names.iter().collect();
            assert_eq!(distinct.len(), n, "job i runs on thread i");
            assert!(names.iter().all(|s| s.starts_with("accshim-stage")));
        }
    }

    #[test]
    fn more_jobs_than_threads_and_a_panicking_job_still_finish() {
        {
            let pool = StagePool::new(
                3,
                Warm {
                    window: Duration::from_millis(5),
                    tick: Duration::from_micros(20),
                },
                || {},
            );
            assert_eq!(names_of_threads_running(&pool, 10).len(), 10);
            // Job 0 panics: the caller still hears from every job.
            let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let jobs: Vec<HostJob> = (0..7)
                .map(|i| {
                    let ran = ran.clone();
                    Box::new(move || {
                        if i == 0 {
                            panic!("job 0 fails");
                        }
                        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }) as HostJob
                })
                .collect();
            pool.run(jobs);
            assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 6);
        }
    }

    #[test]
    fn init_runs_on_every_thread() {
        let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = inits.clone();
        let pool = StagePool::new(4, Warm::default(), move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        pool.run((0..4).map(|_| Box::new(|| {}) as HostJob).collect());
        assert_eq!(pool.threads(), 4);
        assert_eq!(inits.load(std::sync::atomic::Ordering::Relaxed), 4);
    }

    /// A warm window and sleeps of an hour: only the sender's wake can start the job.
    fn an_hour() -> Warm {
        Warm {
            window: Duration::from_secs(3600),
            tick: Duration::from_secs(3600),
        }
    }

    #[test]
    fn a_thread_in_its_warm_window_or_past_it_starts_the_next_job() {
        let windows = [
            an_hour(),
            Warm {
                window: Duration::from_millis(5),
                tick: Duration::from_millis(1),
            },
        ];
        for warm in windows {
            let (done_tx, done_rx) = crossbeam_channel::unbounded();
            std::thread::spawn(move || {
                let pool = StagePool::new(2, warm, || {});
                pool.run((0..2).map(|_| Box::new(|| {}) as HostJob).collect());
                // Long enough for the threads to sleep, and to leave the short window.
                std::thread::sleep(Duration::from_millis(50));
                pool.run((0..2).map(|_| Box::new(|| {}) as HostJob).collect());
                let _ = done_tx.send(());
            });
            let waited = done_rx.recv_timeout(Duration::from_secs(60));
            assert!(waited.is_ok(), "the second jobs did not run ({warm:?})");
        }
    }

    #[test]
    fn dropping_the_pool_ends_threads_in_their_warm_window() {
        let alive = Arc::new(());
        let held = alive.clone();
        let pool = StagePool::new(3, an_hour(), move || {
            let _ = &held;
        });
        pool.run((0..3).map(|_| Box::new(|| {}) as HostJob).collect());
        assert_eq!(
            Arc::strong_count(&alive),
            1 + 3,
            "one copy of `init` per thread"
        );
        // Bounded: a pool whose threads stayed in their window would hang the drop.
        let (dropped_tx, dropped_rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            drop(pool);
            let _ = dropped_tx.send(());
        });
        assert!(
            dropped_rx.recv_timeout(Duration::from_secs(60)).is_ok(),
            "dropping the pool did not end its threads"
        );
        // Joined: each thread has dropped its copy of `init` by the time the drop returns.
        assert_eq!(
            Arc::strong_count(&alive),
            1,
            "threads still running after the pool was dropped"
        );
    }
}
