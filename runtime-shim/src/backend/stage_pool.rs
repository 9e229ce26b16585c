//! Persistent host threads for the staged copies: spawning threads per copy would cost more
//! than the copy of a few MiB.
//!
//! Between copies the threads sleep. Waking one costs its waker a system call, and on the H200
//! machine (a virtual machine) most start within 60 us of the upload, but a few take 300-900
//! us: an idle virtual CPU is slow to run again (docs/performance/shim.md, session 6). Waking
//! them as a tree (each woken thread waking two more) was measured and started them later, so
//! the caller wakes every thread itself, and the staged copies hand out their work in small
//! pieces so that late threads simply take less of it.

use super::HostJob;
use crossbeam_channel::{Receiver, Sender};

type Message = (HostJob, Sender<()>);

pub struct StagePool {
    senders: Vec<Sender<Message>>,
}

impl StagePool {
    /// `threads` threads (at least one), each running `init` first (the CUDA backend makes its
    /// context current there).
    pub fn new(threads: usize, init: impl Fn() + Send + Clone + 'static) -> StagePool {
        let senders = (0..threads.max(1))
            .map(|i| {
                let (tx, rx) = crossbeam_channel::unbounded::<Message>();
                let init = init.clone();
                std::thread::Builder::new()
                    .name(format!("accshim-stage{i}"))
                    .spawn(move || {
                        init();
                        serve(rx)
                    })
                    .expect("spawn staging thread");
                tx
            })
            .collect();
        StagePool { senders }
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        self.senders.len()
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
            let _ = self.senders[i % self.senders.len()].send((job, done_tx.clone()));
        }
        here();
        // A job that panicked still reports (serve), so this cannot wait forever.
        for _ in 0..n {
            let _ = done_rx.recv();
        }
    }
}

/// A pool thread: runs each job it is sent and reports it done, even when the job panicked.
fn serve(rx: Receiver<Message>) {
    for (job, done) in rx {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let _ = done.send(());
    }
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
        let pool = StagePool::new(15, || {});
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
            let pool = StagePool::new(3, || {});
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
        let pool = StagePool::new(4, move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        pool.run((0..4).map(|_| Box::new(|| {}) as HostJob).collect());
        assert_eq!(pool.threads(), 4);
        assert_eq!(inits.load(std::sync::atomic::Ordering::Relaxed), 4);
    }
}
