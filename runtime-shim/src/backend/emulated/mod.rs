//! The emulated discrete device: for machines without a GPU, with the same semantics as one.
//!
//! - Device memory is separate host memory (64-byte aligned blocks, memory.rs), so a program that
//!   forgets a copy sees stale data, as it would on a GPU. Copies are real `memcpy`s.
//! - A capacity (default: half the machine's RAM, or `ACCSHIM_EMU_MEMORY` bytes) makes
//!   "out of device memory" reachable.
//! - Kernels are host functions, split over the machine's cores when the loop is long enough.
//! - Async queues run their jobs in order on a bounded set of worker threads (queue q on worker
//!   (q + 1) mod the number of workers; see queues.rs); the synchronous queue runs work on the
//!   calling thread, once the async queues' work queued before it has run.

mod memory;
mod queues;

use crate::backend::deferred::Deferred;
use crate::backend::*;
use crate::check::hooks as check;
use crate::error::AccError;
use memory::{Block, Memory};
use queues::{AsyncQueues, Job, Queue};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Async uploads up to this size read the host's bytes when they are queued (see upload).
const SNAPSHOT_MAX: usize = 64 * 1024;

/// Loops shorter than this run on one thread: splitting costs more than it saves.
const SPLIT_MIN_WORK: usize = 1 << 15;

pub struct Emulated {
    blocks: Mutex<BTreeMap<u64, Block>>,
    /// Where the blocks come from; shared with the queue jobs that free blocks.
    memory: Arc<Memory>,
    used: AtomicUsize,
    capacity: usize,
    queues: AsyncQueues,
    threads: usize,
    /// Reduction results held in "device memory" until [`Backend::flush_reduction`] enqueues
    /// the store that moves each into the runtime's slot, oldest first, as the CUDA backend
    /// does: the same events on both devices (the store is reported as a launch).
    pending_red: Mutex<Vec<PendingRed>>,
    /// Released blocks that work queued before their release may still use.
    released: Deferred<(Arc<Queue>, u64), (SendPtr, Block)>,
}

struct PendingRed {
    q: QueueId,
    /// The result's bits, written by the kernel's job.
    cell: Arc<std::sync::atomic::AtomicU64>,
    slot: RedSlot,
}

fn physical_memory() -> usize {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        pages as usize * size as usize
    } else {
        8 << 30
    }
}

impl Emulated {
    pub fn new() -> Emulated {
        let capacity =
            crate::env::size("ACCSHIM_EMU_MEMORY").unwrap_or_else(|| physical_memory() / 2);
        let threads = crate::env::count("ACCSHIM_EMU_THREADS")
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        Emulated {
            blocks: Mutex::new(BTreeMap::new()),
            memory: Arc::default(),
            used: AtomicUsize::new(0),
            capacity,
            queues: AsyncQueues::new(),
            pending_red: Mutex::new(Vec::new()),
            released: Deferred::default(),
            threads,
        }
    }

    /// Gives back the released blocks whose queued work has all run.
    fn reap(&self) {
        for (_, (p, block)) in self.released.ready(|(q, target)| q.reached(*target)) {
            // SAFETY: allocated as this block, removed from the table once, and no job queued
            // before its release is left to use it.
            unsafe { self.memory.free(p.0 as *mut u8, block) }
        }
    }

    /// Runs `job` in order on an async queue, or now on the synchronous queue once the work
    /// queued so far on every async queue has run: the synchronous queue is CUDA's legacy
    /// default stream to libgomp on a GPU, where its copies and kernels wait for the async
    /// queues' streams, and programs that read results without the wait the specification asks
    /// for (a data region's copyout right after async kernels) get those results there.
    fn run(&self, q: QueueId, job: Job) -> Result<()> {
        if q == SYNC {
            self.queues.join_all();
            job();
            Ok(())
        } else {
            self.queues.submit(q, job)
        }
    }

    fn check_block(&self, dev: u64, bytes: usize) -> Result<()> {
        // Device addresses come from the present table or acc_malloc, so a range outside every
        // block means the caller passed garbage: refuse instead of corrupting host memory.
        if bytes == 0 {
            return Ok(());
        }
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let block = blocks
            .range(..=dev)
            .next_back()
            .map(|(&start, b)| (start, b.size() as u64));
        match block {
            Some((start, size)) if dev < start + size => {
                if dev
                    .checked_add(bytes as u64)
                    .is_some_and(|end| end <= start + size)
                {
                    Ok(())
                } else {
                    Err(AccError::InvalidArgument(format!(
                        "[{dev:#x},+{bytes}] runs past the end of its device allocation [{start:#x},+{size}]"
                    )))
                }
            }
            _ => Err(AccError::InvalidArgument(format!(
                "[{dev:#x},+{bytes}] is not device memory"
            ))),
        }
    }
}

impl Default for Emulated {
    fn default() -> Self {
        Self::new()
    }
}

struct SendPtr(usize);

thread_local! {
    /// This thread is running a kernel of the emulated device: code here is "device code", and
    /// acc_on_device must answer as the device would (kernels are host functions, so without
    /// this they would see the host).
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running an emulated device's kernel (acc_on_device).
pub fn in_kernel() -> bool {
    IN_KERNEL.with(Cell::get)
}

/// Runs one part of a kernel with [`in_kernel`] true on this thread (restored after, also if
/// the kernel panics).
fn call_as_device(host: &HostKernel, r: Range<usize>, args: &[Val]) -> f64 {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_KERNEL.with(|f| f.set(self.0));
        }
    }
    let _restore = Restore(IN_KERNEL.with(|f| f.replace(true)));
    host.call(r, args)
}

/// Runs a host kernel over `0..work`, on several threads when it is long enough.
pub fn run_kernel(
    host: &HostKernel,
    work: usize,
    args: &[Val],
    red: Option<RedOp>,
    threads: usize,
) -> f64 {
    let identity = red.map_or(0.0, RedOp::identity);
    if work < SPLIT_MIN_WORK || threads <= 1 {
        let v = call_as_device(host, 0..work, args);
        return red.map_or(0.0, |op| op.combine(identity, v));
    }
    let parts = chunks(work, threads);
    let partials: Vec<f64> = std::thread::scope(|s| {
        // A part whose thread cannot start (the system is out of threads) runs on this thread
        // after its own part: slower, but no panic and no error.
        let mut here = vec![parts[0].clone()];
        let mut handles = Vec::with_capacity(parts.len() - 1);
        for r in &parts[1..] {
            let part = r.clone();
            match std::thread::Builder::new()
                .spawn_scoped(s, move || call_as_device(host, part, args))
            {
                Ok(h) => handles.push(h),
                Err(_) => here.push(r.clone()),
            }
        }
        let mut v: Vec<f64> = here
            .into_iter()
            .map(|r| call_as_device(host, r, args))
            .collect();
        for h in handles {
            match h.join() {
                Ok(x) => v.push(x),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        v
    });
    match red {
        Some(op) => partials.into_iter().fold(identity, |a, b| op.combine(a, b)),
        None => 0.0,
    }
}

impl Backend for Emulated {
    fn device_type(&self) -> acc_device_t {
        ACC_DEVICE_EMULATED
    }

    fn describe(&self) -> String {
        format!(
            "emulated device (separate host memory, {} capacity, kernels on {} thread(s))",
            crate::env::human_bytes(self.capacity),
            self.threads
        )
    }

    fn properties(&self) -> Properties {
        Properties {
            memory: self.capacity,
            free_memory: self
                .capacity
                .saturating_sub(self.used.load(Ordering::Relaxed)),
            name: "accshim emulated device".into(),
            vendor: "accshim".into(),
            driver: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn device_memory_is_host_readable(&self) -> bool {
        true
    }

    fn handles(&self, q: Option<QueueId>) -> ApiHandles {
        // No native API: device_api_none, like GCC's host device. The async handle is the
        // queue number + 3 so that it is non-null and distinct per queue (sync is 1).
        ApiHandles {
            device_api: accprof_abi::acc_device_api::NONE,
            device: std::ptr::null(),
            context: std::ptr::null(),
            stream: q.map_or(std::ptr::null(), |q| (q + 3) as usize as *const c_void),
        }
    }

    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.reap();
        let size = bytes.max(1);
        if self.used.load(Ordering::Relaxed) + size > self.capacity {
            return Err(AccError::OutOfMemory { bytes });
        }
        let (p, block) = self
            .memory
            .alloc(size)
            .ok_or(AccError::OutOfMemory { bytes })?;
        self.used.fetch_add(size, Ordering::Relaxed);
        self.blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(p as u64, block);
        Ok(p as u64)
    }

    fn free(&self, _q: QueueId, dev: u64) -> Result<()> {
        let block = self
            .blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&dev)
            .ok_or_else(|| {
                AccError::InvalidArgument(format!("{dev:#x} is not an allocated device address"))
            })?;
        self.used.fetch_sub(block.size(), Ordering::Relaxed);
        // Work queued on any queue before this release may still use the block (the
        // synchronous queue's is done): it is given back once that work has run.
        let busy = self.queues.busy();
        if busy.is_empty() {
            // SAFETY: allocated as this block, removed from the table once, and unused.
            unsafe { self.memory.free(dev as usize as *mut u8, block) };
        } else {
            self.released.push(busy, (SendPtr(dev as usize), block));
        }
        self.reap();
        Ok(())
    }

    fn check_device_range(&self, dev: u64, bytes: usize) -> Result<()> {
        self.check_block(dev, bytes)
    }

    fn allocation_size(&self, dev: u64) -> Option<usize> {
        self.blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&dev)
            .map(Block::size)
    }

    // The host range is valid for `bytes` (the Backend::upload contract the runtime keeps).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn upload(&self, q: QueueId, dev: u64, host: *const u8, bytes: usize) -> Result<()> {
        self.check_block(dev, bytes)?;
        let checked = crate::check::hooks::on().then(crate::loc::call_site);
        if q != SYNC && bytes <= SNAPSHOT_MAX {
            let window = checked.map(|site| check::before_upload(host as usize, dev, bytes, site));
            // Small uploads on an async queue read the host bytes now: GCC's compute constructs
            // map their scalars (loop bounds, firstprivate values) from the caller's stack,
            // which changes before the queue runs the copy (libgomp copies them at once too).
            // SAFETY: the caller's host range, valid for the call.
            let copy = unsafe { std::slice::from_raw_parts(host, bytes) }.to_vec();
            drop(window);
            let d = SendPtr(dev as usize);
            let h = host as usize;
            return self.run(
                q,
                Box::new(move || {
                    let d = d;
                    // SAFETY: dev range checked above; the copy is ours.
                    unsafe {
                        std::ptr::copy_nonoverlapping(copy.as_ptr(), d.0 as *mut u8, copy.len())
                    }
                    if let Some(site) = checked {
                        check::after_upload(h, d.0 as u64, bytes, site, true);
                    }
                }),
            );
        }
        let (d, h) = (SendPtr(dev as usize), SendPtr(host as usize));
        self.run(
            q,
            Box::new(move || {
                let (d, h) = (d, h);
                let window = checked.map(|site| check::before_upload(h.0, d.0 as u64, bytes, site));
                // SAFETY: dev range checked; the host range is the caller's, valid until the
                // copy completes (the specification's rule for async copies).
                unsafe { std::ptr::copy_nonoverlapping(h.0 as *const u8, d.0 as *mut u8, bytes) }
                drop(window);
                if let Some(site) = checked {
                    check::after_upload(h.0, d.0 as u64, bytes, site, false);
                }
            }),
        )
    }

    fn download(&self, q: QueueId, host: *mut u8, dev: u64, bytes: usize) -> Result<()> {
        self.check_block(dev, bytes)?;
        let (d, h) = (SendPtr(dev as usize), SendPtr(host as usize));
        let checked = crate::check::hooks::on().then(check::copy_site);
        self.run(
            q,
            Box::new(move || {
                let (d, h) = (d, h);
                let window =
                    checked.map(|site| check::before_download(h.0, d.0 as u64, bytes, site));
                // SAFETY: as in upload.
                unsafe { std::ptr::copy_nonoverlapping(d.0 as *const u8, h.0 as *mut u8, bytes) }
                drop(window);
                if checked.is_some() {
                    check::after_download(h.0, d.0 as u64, bytes);
                }
            }),
        )?;
        // An async copy into pageable memory (all of the host's, here) is done when the call
        // returns on CUDA: a program that writes the memory next, or whose stack frame holding
        // it returns, keeps what it wrote.
        if let Some(queue) = (q != SYNC).then(|| self.queues.get(q)).flatten() {
            queue.wait_for(queue.submitted());
        }
        Ok(())
    }

    fn copy_d2d(&self, q: QueueId, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.check_block(dst, bytes)?;
        self.check_block(src, bytes)?;
        let (d, s) = (SendPtr(dst as usize), SendPtr(src as usize));
        self.run(
            q,
            Box::new(move || {
                let (d, s) = (d, s);
                // SAFETY: both ranges are device blocks; memmove semantics for overlap.
                unsafe { std::ptr::copy(s.0 as *const u8, d.0 as *mut u8, bytes) }
            }),
        )
    }

    fn launch(&self, q: QueueId, k: &LaunchSpec, slot: Option<RedSlot>) -> Result<Option<u64>> {
        let Some(host) = k.host.clone() else {
            return Err(AccError::InvalidArgument(format!(
                "kernel {} has no host implementation for the emulated device",
                k.name.to_string_lossy()
            )));
        };
        // The inline values live as long as the job; their words are the kernel's to write
        // (a firstprivate copy), and moving the box into the job keeps its heap block in place.
        let mut values: Box<[u64]> = k.inline.iter().map(|&(_, v)| v).collect();
        let mut args = k.args.clone();
        for (j, &(i, _)) in k.inline.iter().enumerate() {
            args[i] = Val(values[j..].as_mut_ptr() as u64);
        }
        // A serial construct (one gang) runs on one thread, like on the device.
        let threads = if k.gangs > 1 { self.threads } else { 1 };
        let (work, red) = (k.work, k.reduction);
        let cell = slot.map(|_| Arc::new(std::sync::atomic::AtomicU64::new(0)));
        let kernel_cell = cell.clone();
        let checked = crate::check::hooks::on().then(crate::loc::call_site);
        self.run(
            q,
            Box::new(move || {
                let _values = &values;
                let checking = checked.map(|site| {
                    let addrs: Vec<u64> = args.iter().map(|a| a.0).collect();
                    let before = check::kernel_starts(&addrs, site);
                    (addrs, site, before)
                });
                // A kernel whose upload is watched access by access runs on one thread.
                let threads = match &checking {
                    Some((_, _, before)) if before.serial() => 1,
                    _ => threads,
                };
                let v = run_kernel(&host, work, &args, red, threads);
                if let Some((addrs, site, before)) = checking {
                    check::kernel_ends(&addrs, site, before);
                }
                if let Some(c) = kernel_cell {
                    c.store(v.to_bits(), Ordering::Release);
                }
            }),
        )?;
        // The cell is this device's memory for the result: its address is the download's source.
        let cell_addr = cell.as_ref().map(|c| Arc::as_ptr(c) as u64);
        if let (Some(cell), Some(slot)) = (cell, slot) {
            self.pending_red
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(PendingRed { q, cell, slot });
        }
        Ok(cell_addr)
    }

    fn reduction_store_kernel(&self) -> Option<&'static CStr> {
        Some(STORE_KERNEL)
    }

    fn flush_reduction(&self, q: QueueId) -> Result<()> {
        let Some(p) = take_oldest(&self.pending_red, |p| p.q == q) else {
            return Ok(());
        };
        let (cell, slot) = (p.cell, p.slot);
        self.run(
            q,
            Box::new(move || {
                let slot = slot;
                // SAFETY: the runtime keeps the slot alive until the jobs queued after this
                // one (its copy back) have run.
                unsafe { slot.0.write(f64::from_bits(cell.load(Ordering::Acquire))) }
            }),
        )
    }

    fn host_fn(&self, q: QueueId, job: HostJob) -> Result<()> {
        self.run(q, job)
    }

    fn host_fn_after_all(&self, q: QueueId, job: HostJob) -> Result<()> {
        if q == SYNC {
            // After every queue's work already (see run).
            return self.run(q, job);
        }
        // The queues busy now and their counts, as free() takes them. Every job counted is in
        // its worker's channel before this one (queues::Queue::push), so on a worker they
        // share this job comes after them: no worker waits for a job queued behind its own.
        let busy = self.queues.busy();
        self.run(
            q,
            Box::new(move || {
                for (queue, target) in busy {
                    queue.wait_for(target);
                }
                job()
            }),
        )
    }

    fn wait(&self, q: QueueId) -> Result<()> {
        if q == SYNC {
            return Ok(());
        }
        if let Some(queue) = self.queues.get(q) {
            queue.wait_for(queue.submitted());
        }
        self.reap();
        Ok(())
    }

    fn test(&self, q: QueueId) -> bool {
        self.queues.get(q).is_none_or(|q| q.idle())
    }

    fn queues(&self) -> Vec<QueueId> {
        self.queues.ids()
    }

    fn queue_wait(&self, waiter: QueueId, on: QueueId) -> Result<()> {
        if waiter == on {
            return Ok(());
        }
        let Some(target_queue) = self.queues.get(on) else {
            return Ok(());
        };
        // Every job counted here is already in its worker's channel (see queues::Queue::push),
        // so the wait job below comes after them on a worker they share: no worker waits for a
        // job queued behind its own.
        let target = target_queue.submitted();
        if waiter == SYNC {
            target_queue.wait_for(target);
            return Ok(());
        }
        self.queues
            .submit(waiter, Box::new(move || target_queue.wait_for(target)))
    }

    fn native_stream(&self, _q: QueueId) -> *mut c_void {
        std::ptr::null_mut()
    }

    fn set_native_stream(&self, _q: QueueId, _stream: *mut c_void) -> bool {
        false
    }

    fn after_fork_in_child(&self) {
        self.queues.forget_workers();
    }

    fn shutdown(&self) {
        for q in self.queues() {
            let _ = self.wait(q);
        }
        // No thread outlives its device (runtime-shim/tests/lifecycle.rs counts them).
        self.queues.shut_down();
        for (_, (p, block)) in self.released.take_all() {
            // SAFETY: released once; the queues have run everything and are gone.
            unsafe { self.memory.free(p.0 as *mut u8, block) };
        }
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        for (p, block) in std::mem::take(&mut *blocks) {
            // SAFETY: every block was allocated as recorded and is freed once.
            unsafe { self.memory.free(p as *mut u8, block) };
        }
        self.memory.release_cached();
        self.used.store(0, Ordering::Relaxed);
    }
}
