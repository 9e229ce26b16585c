//! An optional timeline of each staged upload (`ACCSHIM_STAGE_TRACE=1`, for measuring only):
//! when each staging thread took its first piece and how long its copies took, when each
//! chunk's DMA was issued, and when the device finished it. One line per upload on stderr.
//!
//! It answers what a bandwidth figure cannot: whether an upload waits for its threads to wake,
//! for the host copy, or for the link (docs/performance/shim.md). Device times come
//! from timing events recorded after each chunk's copy, relative to one recorded on the
//! queue's stream when the upload starts; host times are from the upload's entry. Tracing
//! synchronises at the end of each upload, so bandwidths measured with it on are not the
//! pipeline's.

use cudarc::driver::sys::{self, CUevent, CUresult, CUstream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Whether `ACCSHIM_STAGE_TRACE` asks for the timeline (read once per process).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("ACCSHIM_STAGE_TRACE").is_ok_and(|v| v.trim() == "1"))
}

/// Host and device times of one upload. Slots are written by the staging threads (relaxed
/// atomics: the report runs after every thread is done).
pub struct UploadTrace {
    t0: Instant,
    bytes: usize,
    start: Option<CUevent>,
    /// Offset of each chunk in the transfer, for finding a chunk from its DMA's offset.
    chunk_offs: Vec<usize>,
    /// One timing event per chunk, recorded after its copy (None where creation failed).
    done: Vec<Option<CUevent>>,
    issue_ns: Vec<AtomicU64>,
    /// Per worker (0 = the calling thread): first piece taken, last piece finished, total ns
    /// spent copying, pieces copied.
    first_ns: Vec<AtomicU64>,
    last_ns: Vec<AtomicU64>,
    copy_ns: Vec<AtomicU64>,
    pieces: Vec<AtomicU64>,
    /// Waits for a buffer's previous DMA: how many, and their total ns.
    waits: AtomicU64,
    wait_ns: AtomicU64,
}

// SAFETY: CUDA events are handles that any thread of the process may use; the other fields are
// atomics or read-only after construction.
unsafe impl Send for UploadTrace {}
// SAFETY: shared access only records into or reads the events (the driver is thread-safe) and
// updates atomics; nothing is mutated through `&self` without synchronization.
unsafe impl Sync for UploadTrace {}

fn timing_event() -> Option<CUevent> {
    let mut e: CUevent = std::ptr::null_mut();
    // SAFETY: creates an event in the current context (flags 0: with timing).
    (unsafe { sys::cuEventCreate(&mut e, 0) } == CUresult::CUDA_SUCCESS).then_some(e)
}

fn zeros(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

impl UploadTrace {
    /// Starts the timeline of an upload of `bytes` in chunks at `chunk_offs`, by `workers`
    /// threads, on the queue's stream `s`.
    pub fn start(s: CUstream, bytes: usize, chunk_offs: Vec<usize>, workers: usize) -> UploadTrace {
        // The events first, so that their creation is not counted as the upload's time.
        let done = chunk_offs.iter().map(|_| timing_event()).collect();
        let start = timing_event();
        if let Some(e) = start {
            // SAFETY: an event of the current context on a stream of it.
            unsafe { sys::cuEventRecord(e, s) };
        }
        let n = chunk_offs.len();
        UploadTrace {
            t0: Instant::now(),
            bytes,
            start,
            done,
            chunk_offs,
            issue_ns: zeros(n),
            first_ns: zeros(workers),
            last_ns: zeros(workers),
            copy_ns: zeros(workers),
            pieces: zeros(workers),
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        }
    }

    fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Worker `w` copied a piece between host times `from` and `to` (from `now_ns`).
    fn piece(&self, w: usize, from: u64, to: u64) {
        if self.pieces[w].fetch_add(1, Ordering::Relaxed) == 0 {
            self.first_ns[w].store(from, Ordering::Relaxed);
        }
        self.last_ns[w].store(to, Ordering::Relaxed);
        self.copy_ns[w].fetch_add(to - from, Ordering::Relaxed);
    }

    /// Times `copy` as worker `w`'s piece.
    pub fn timed(&self, w: usize, copy: impl FnOnce()) {
        let from = self.now_ns();
        copy();
        self.piece(w, from, self.now_ns());
    }

    /// Times `wait`, a wait for a buffer's previous DMA.
    pub fn timed_wait(&self, wait: impl FnOnce() -> bool) -> bool {
        let from = self.now_ns();
        let ok = wait();
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_ns
            .fetch_add(self.now_ns() - from, Ordering::Relaxed);
        ok
    }

    /// The DMA of the chunk at transfer offset `off` was just issued on `cs`.
    pub fn issued(&self, off: usize, cs: CUstream) {
        let c = chunk_at(&self.chunk_offs, off);
        self.issue_ns[c].store(self.now_ns(), Ordering::Relaxed);
        if let Some(e) = self.done[c] {
            // SAFETY: an event of the current context, recorded after the chunk's copy.
            unsafe { sys::cuEventRecord(e, cs) };
        }
    }

    /// Waits for the device and prints the timeline (microseconds):
    /// `accshim stage trace: <MiB> host <us> dma_end <us> waits <n>/<us> workers <first-last:copy_us/pieces ...> chunks <issue/done ...>`.
    pub fn report(&self) {
        let host_us = self.now_ns() as f64 / 1e3;
        let us = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e3;
        let device_us = |e: Option<CUevent>| -> f64 {
            let (Some(start), Some(e)) = (self.start, e) else {
                return f64::NAN;
            };
            let mut ms = 0f32;
            // SAFETY: events of the current context, both recorded.
            unsafe {
                sys::cuEventSynchronize(e);
                sys::cuEventElapsedTime(&mut ms, start, e);
            }
            ms as f64 * 1e3
        };
        let workers: Vec<String> = (0..self.first_ns.len())
            .map(|w| {
                format!(
                    "{:.0}-{:.0}:{:.0}/{}",
                    us(&self.first_ns[w]),
                    us(&self.last_ns[w]),
                    us(&self.copy_ns[w]),
                    self.pieces[w].load(Ordering::Relaxed)
                )
            })
            .collect();
        let chunks: Vec<String> = (0..self.done.len())
            .map(|c| {
                format!(
                    "{:.0}/{:.0}",
                    us(&self.issue_ns[c]),
                    device_us(self.done[c])
                )
            })
            .collect();
        let dma_end = self.done.iter().map(|&e| device_us(e)).fold(0f64, f64::max);
        eprintln!(
            "accshim stage trace: {} MiB host {host_us:.0} dma_end {dma_end:.0} waits {}/{:.0} workers {} chunks {}",
            self.bytes >> 20,
            self.waits.load(Ordering::Relaxed),
            us(&self.wait_ns),
            workers.join(" "),
            chunks.join(" ")
        );
    }
}

/// The chunk holding transfer offset `off`, given each chunk's first offset in order.
fn chunk_at(chunk_offs: &[usize], off: usize) -> usize {
    chunk_offs.partition_point(|&o| o <= off).saturating_sub(1)
}

impl Drop for UploadTrace {
    fn drop(&mut self) {
        // SAFETY: our events; destroying one whose work is pending is allowed (CUDA releases it
        // when the work completes).
        unsafe {
            for &e in self.start.iter().chain(self.done.iter().flatten()) {
                sys::cuEventDestroy_v2(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_at;

    #[test]
    fn a_dma_is_matched_to_its_chunk_by_offset() {
        let offs = [0, 64, 192, 448];
        assert_eq!(chunk_at(&offs, 0), 0);
        assert_eq!(chunk_at(&offs, 63), 0);
        assert_eq!(chunk_at(&offs, 64), 1);
        assert_eq!(chunk_at(&offs, 447), 2);
        assert_eq!(chunk_at(&offs, 448), 3);
        assert_eq!(chunk_at(&offs, 10_000), 3);
    }
}
