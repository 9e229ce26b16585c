//! The async queues: each counts its submitted and completed jobs, and its jobs run in
//! submission order on one of a bounded set of worker threads.
//!
//! Queue numbers are the program's to choose (one per tile or iteration is common), so a
//! thread per queue number ran out of threads at about 32k of them. Queue q runs on worker
//! (q + 1) mod [`AsyncQueues::workers`]: acc_async_noval's queue (-1) and queues 0, 1, ... get
//! workers of their own up to that number, and a worker is started when its first queue is
//! used. Queues sharing a worker run one after the other, which the specification allows
//! (work on different queues may run in any order, or concurrently); each keeps its own order,
//! and acc_async_test and acc_wait look at its own counts.

use crate::backend::QueueId;
use crate::error::{AccError, Result};
use crossbeam_channel::{unbounded, Sender};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// This thread is a queue worker (see [`AsyncQueues::join_all`]).
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Worker threads unless `ACCSHIM_EMU_QUEUE_THREADS` says otherwise.
const DEFAULT_WORKERS: usize = 16;

pub struct AsyncQueues {
    inner: Mutex<Inner>,
    /// Jobs submitted to any queue and not yet completed: [`AsyncQueues::busy`] looks at each
    /// queue only when there are some (a program may use thousands of queues).
    pending: Arc<AtomicU64>,
}

struct Inner {
    queues: HashMap<QueueId, Arc<Queue>>,
    /// One slot per worker, started on first use.
    workers: Vec<Option<Worker>>,
}

/// One async queue's counts, shared by the threads that submit to it and wait for it and
/// the worker that runs its jobs.
pub struct Queue {
    id: QueueId,
    pending: Arc<AtomicU64>,
    /// (jobs submitted, jobs completed)
    counts: Mutex<(u64, u64)>,
    done: Condvar,
}

/// A worker thread running the jobs of the queues that map to it, in the order they came.
/// It holds only the receiving end: closing `tx` ends it once it has run what was sent.
struct Worker {
    tx: Sender<(Arc<Queue>, Job)>,
    thread: JoinHandle<()>,
}

impl AsyncQueues {
    pub fn new() -> AsyncQueues {
        let workers = crate::env::count("ACCSHIM_EMU_QUEUE_THREADS")
            .unwrap_or(DEFAULT_WORKERS)
            .max(1);
        let inner = Inner {
            queues: HashMap::new(),
            workers: (0..workers).map(|_| None).collect(),
        };
        AsyncQueues {
            inner: Mutex::new(inner),
            pending: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `job` on queue `q` after the jobs submitted to it before. Fails (a device
    /// error, not a panic) if the queue's worker thread cannot be started.
    pub fn submit(&self, q: QueueId, job: Job) -> Result<()> {
        let (queue, tx) = {
            let mut inner = self.lock();
            let slot = (q + 1).rem_euclid(inner.workers.len() as i64) as usize;
            let tx = match &inner.workers[slot] {
                Some(w) => w.tx.clone(),
                None => {
                    let w = Worker::start(slot)?;
                    let tx = w.tx.clone();
                    inner.workers[slot] = Some(w);
                    tx
                }
            };
            let pending = &self.pending;
            let queue = Arc::clone(
                inner
                    .queues
                    .entry(q)
                    .or_insert_with(|| Queue::new(q, Arc::clone(pending))),
            );
            (queue, tx)
        };
        queue.push(&tx, job)
    }

    /// Queue `q`, if it has been used.
    pub fn get(&self, q: QueueId) -> Option<Arc<Queue>> {
        self.lock().queues.get(&q).cloned()
    }

    /// The queues that have been used, in order.
    pub fn ids(&self) -> Vec<QueueId> {
        let mut v: Vec<_> = self.lock().queues.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Each queue with work not yet done, and the count of jobs submitted to it so far: once
    /// its completed jobs reach that count, everything queued there until now has run.
    pub fn busy(&self) -> Vec<(Arc<Queue>, u64)> {
        if self.pending.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        self.lock()
            .queues
            .values()
            .filter_map(|q| {
                let c = q.counts();
                (c.0 > c.1).then(|| (Arc::clone(q), c.0))
            })
            .collect()
    }

    /// Blocks until the work submitted so far to every queue has run: what a synchronous
    /// operation waits for first, as CUDA's legacy default stream waits for the blocking
    /// streams libgomp's queues use. A job running on a worker does not wait (it would wait for
    /// itself).
    pub fn join_all(&self) {
        if ON_WORKER.with(Cell::get) {
            return;
        }
        for (queue, target) in self.busy() {
            queue.wait_for(target);
        }
    }

    /// Forgets the queues and ends the workers, joining them once they have run what was
    /// submitted (outside the lock, which a last job might want).
    pub fn shut_down(&self) {
        let workers: Vec<Worker> = {
            let mut inner = self.lock();
            inner.queues.clear();
            inner.workers.iter_mut().filter_map(Option::take).collect()
        };
        for w in workers {
            drop(w.tx);
            // A thread cannot join itself (a shutdown from a job on this worker).
            if w.thread.thread().id() != std::thread::current().id() {
                let _ = w.thread.join();
            }
        }
    }
}

impl AsyncQueues {
    /// In a forked child: the workers' threads are not there. Their handles and channels are
    /// left alone (joining or detaching a thread of the parent would act on a stale id) and new
    /// workers start when a queue is next used; the queues themselves, idle, stay.
    pub fn forget_workers(&self) {
        for w in self.lock().workers.iter_mut() {
            std::mem::forget(w.take());
        }
    }
}

impl Worker {
    fn start(slot: usize) -> Result<Worker> {
        let (tx, rx) = unbounded::<(Arc<Queue>, Job)>();
        let thread = crate::backend::spawn_worker(format!("accshim-q{slot}"), move || {
            ON_WORKER.with(|w| w.set(true));
            for (queue, job) in rx {
                // A panicking job must not kill the worker (waiters would hang): the
                // runtime reports it and aborts, as for any device failure.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                    eprintln!(
                        "accshim: a kernel or host function panicked on async queue {}",
                        queue.id
                    );
                    std::process::abort();
                }
                queue.complete_one();
            }
        })
        .map_err(|e| {
            AccError::Device(format!(
                "cannot start a thread for the emulated device's async queues: {e}"
            ))
        })?;
        Ok(Worker { tx, thread })
    }
}

impl Queue {
    fn new(id: QueueId, pending: Arc<AtomicU64>) -> Arc<Queue> {
        Arc::new(Queue {
            id,
            pending,
            counts: Mutex::new((0, 0)),
            done: Condvar::new(),
        })
    }

    fn counts(&self) -> MutexGuard<'_, (u64, u64)> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `job` and sends it to the worker, under the count's lock: a job counted as
    /// submitted is in the worker's channel, so a job sent after reading the count (the
    /// wait job of queue_wait) comes after it on a worker they share.
    fn push(self: &Arc<Self>, tx: &Sender<(Arc<Queue>, Job)>, job: Job) -> Result<()> {
        let mut c = self.counts();
        // Counted before the worker can see it, so that its completion never comes first.
        self.pending.fetch_add(1, Ordering::AcqRel);
        if tx.send((Arc::clone(self), job)).is_err() {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            return Err(AccError::Device(format!(
                "the worker thread of async queue {} has ended",
                self.id
            )));
        }
        c.0 += 1;
        Ok(())
    }

    fn complete_one(&self) {
        let mut c = self.counts();
        c.1 += 1;
        self.pending.fetch_sub(1, Ordering::AcqRel);
        self.done.notify_all();
    }

    /// Blocks until `target` jobs have completed.
    pub fn wait_for(&self, target: u64) {
        let mut c = self.counts();
        while c.1 < target {
            c = self.done.wait(c).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether `target` jobs have completed.
    pub fn reached(&self, target: u64) -> bool {
        self.counts().1 >= target
    }

    pub fn submitted(&self) -> u64 {
        self.counts().0
    }

    pub fn idle(&self) -> bool {
        let c = self.counts();
        c.0 == c.1
    }
}
