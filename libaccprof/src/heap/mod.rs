//! Heap block names: which allocation a transfer's host pointer lies in.
//!
//! GCC's runtime names no variable, and the symbol table names only global and static arrays.
//! For heap arrays, libaccprof (when LD_PRELOADed) is the program's malloc: [`crate::api::allocation`] pass
//! every call through to glibc and, for blocks of at least ACCPROF_HEAP_MIN_BYTES, queue the
//! block with its allocation site (the application's return address, [`crate::unwind`]) in a
//! static lock-free [`ring`]; frees of recorded blocks are queued too ([`filter`] tells which
//! cheaply). The collector drains the ring into a [`blocks::BlockMap`] before it writes events
//! and gives each event whose `host_ptr` lay in a block *at the event's time* the fields
//! `alloc_site`, `alloc_base`, `alloc_bytes`; readers turn the site into `heap@file.c:LINE`.
//!
//! If the ring overflows, records were lost, and a lost free could make a stale name: from then
//! on no block is named, the exit line says so and the trace holds a
//! [`accprof_trace::model::tool::HEAP_RECORDS_LOST`] event.

pub mod blocks;
pub mod filter;
pub mod ring;

use crate::config::{HeapConfig, Switch};
use accprof_trace::{Event, Field};
use ring::{Op, Pop, Record, Ring};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const RING_RECORDS: usize = 1 << 16;
const FILTER_BUCKETS: usize = 1 << 16;
/// Freed blocks kept for late events (CUPTI buffers): a few MB at most.
const FREED_KEPT: usize = 1 << 14;

/// The smallest block recorded; `usize::MAX` while not recording (before init, when off, or
/// after a loss), which makes every hook a pass-through.
static MIN_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
static RING: Ring<RING_RECORDS> = Ring::new();
static LIVE: filter::LiveFilter<FILTER_BUCKETS> = filter::LiveFilter::new();
/// Records that did not fit the ring.
static LOST: AtomicU64 = AtomicU64::new(0);
/// Blocks queued since load, for the exit line.
static RECORDED: AtomicU64 = AtomicU64::new(0);

const NOT_RECORDING: u8 = 0;
const RECORDING: u8 = 1;
static STATE: AtomicU8 = AtomicU8::new(NOT_RECORDING);

thread_local! {
    /// Set while this thread is recording a block (the unwinder may allocate) and on the
    /// collector thread (its own large buffers are no application arrays): allocations then
    /// pass through unrecorded. Const-initialised and without Drop: no lazy init, no
    /// allocation, no destructor registration.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Whether a block of `size` bytes is to be recorded (the hooks' only check on malloc).
#[inline(always)]
pub fn wants(size: usize) -> bool {
    size >= MIN_BYTES.load(Ordering::Relaxed)
}

/// Records a new block (hooks, for `wants(size)` only).
#[cold]
#[inline(never)]
pub fn on_alloc(p: *mut c_void, size: usize) {
    if p.is_null() {
        return;
    }
    let entered = BUSY.try_with(|b| !b.replace(true)).unwrap_or(false);
    if !entered {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        if let Some(site) = crate::unwind::heap_caller() {
            let r = Record {
                op: Op::Alloc,
                ptr: p as u64,
                size: size as u64,
                site,
                time: crate::clock::now(),
            };
            if RING.push(r) {
                LIVE.add(p as u64);
                RECORDED.fetch_add(1, Ordering::Relaxed);
            } else {
                lost();
            }
        }
    });
    let _ = BUSY.try_with(|b| b.set(false));
}

/// Queues the free of `p` if it may be a recorded block (hooks; call before glibc's free).
#[inline(always)]
pub fn on_free(p: *mut c_void) {
    if LIVE.may_hold(p as u64) {
        queue_free(p as u64);
    }
}

#[cold]
#[inline(never)]
fn queue_free(p: u64) {
    if !RING.push(Record {
        op: Op::Free,
        ptr: p,
        size: 0,
        site: 0,
        time: crate::clock::now(),
    }) {
        lost();
    }
}

fn lost() {
    LOST.fetch_add(1, Ordering::Relaxed);
    // Names are off for good: stop paying for the stack walks.
    MIN_BYTES.store(usize::MAX, Ordering::Relaxed);
}

/// Allocations on the calling thread are never recorded (the collector's thread).
pub fn ignore_this_thread() {
    let _ = BUSY.try_with(|b| b.set(true));
}

/// Whether blocks are being recorded (or were, before a loss).
pub fn active() -> bool {
    STATE.load(Ordering::Relaxed) == RECORDING
}

/// (blocks recorded, records lost), for the exit line.
pub fn counts() -> (u64, u64) {
    (
        RECORDED.load(Ordering::Relaxed),
        LOST.load(Ordering::Relaxed),
    )
}

/// Header keys describing how host memory can be named: the main thread's stack (readers
/// name stack arrays that transfers moved), the application's frames on it when this is the
/// main thread (where its functions' local arrays lie), and heap naming when it is on.
pub fn header_keys() -> Vec<(String, String)> {
    let stack = main_stack();
    let mut keys: Vec<(String, String)> = stack
        .map(|(lo, hi)| {
            (
                accprof_symbols::STACK_KEY.to_string(),
                format!("{lo:#x}-{hi:#x}"),
            )
        })
        .into_iter()
        .collect();
    let here = &keys as *const _ as u64;
    if stack.is_some_and(|(lo, hi)| lo <= here && here < hi) {
        let frames = crate::unwind::application_frames();
        if !frames.is_empty() {
            keys.push((
                accprof_symbols::STACK_FRAMES_KEY.to_string(),
                frames
                    .iter()
                    .map(|(ip, cfa)| format!("{ip:#x}@{cfa:#x}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ));
        }
    }
    if !active() {
        return keys;
    }
    keys.push((
        "heap_names".into(),
        format!(
            "blocks of at least {} bytes",
            MIN_BYTES_SET.load(Ordering::Relaxed)
        ),
    ));
    keys
}

/// The address range the main thread's stack can take: its mapping in /proc/self/maps, grown
/// down to its limit. Read once, when the trace is created, never on an event.
fn main_stack() -> Option<(u64, u64)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[stack]"))?;
    let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    let grown = if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
    {
        hi.saturating_sub(limit.rlim_cur)
    } else {
        lo
    };
    Some((grown.min(lo), hi))
}

/// The threshold init chose (MIN_BYTES drops to "off" after a loss).
static MIN_BYTES_SET: AtomicUsize = AtomicUsize::new(0);

/// What is wrong with the heap settings, read at load and said when recording starts: once
/// per recording process, and never by processes that load the library but use no OpenACC
/// (a shell or launcher that starts the program).
static PROBLEMS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The heap settings' problems, once.
pub fn take_problems() -> Vec<String> {
    PROBLEMS
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
}

/// Turns recording on per ACCPROF_HEAP. Runs at library load (below), before `main`.
fn init() {
    let (cfg, problems) = HeapConfig::from_env();
    if let Ok(mut said) = PROBLEMS.lock() {
        *said = problems;
    }
    if cfg.mode == Switch::Off || crate::config::disabled() {
        return;
    }
    if !hooks_are_the_process_malloc() {
        if cfg.mode == Switch::On {
            if let Ok(mut said) = PROBLEMS.lock() {
                said.push("ACCPROF_HEAP=on, but this process's malloc is not libaccprof's (it names heap blocks only when loaded with LD_PRELOAD); heap blocks are not named".into());
            }
        }
        return;
    }
    crate::clock::init();
    crate::unwind::set_heap_skip_ranges();
    MIN_BYTES_SET.store(cfg.min_bytes, Ordering::Relaxed);
    STATE.store(RECORDING, Ordering::Relaxed);
    MIN_BYTES.store(cfg.min_bytes, Ordering::Release);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn hooks_are_the_process_malloc() -> bool {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let resolved = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
    // Compared by module, not with `hooks::malloc as *const _`: inside this library that
    // reference itself goes through the GOT and resolves to whichever malloc wins, so it would
    // always be "equal". `on_load` is private, so its address is our own.
    let ours = crate::modules::module_range_of(on_load as *const c_void);
    !resolved.is_null() && ours.is_some() && crate::modules::module_range_of(resolved) == ours
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn hooks_are_the_process_malloc() -> bool {
    false
}

extern "C" fn on_load() {
    // The rlib is linked into tests and benchmarks too: there the hooks stay pass-through.
    let in_exe = crate::modules::loaded_modules()
        .first()
        .is_none_or(|m| m.contains(on_load as *const () as usize as u64));
    if !in_exe {
        let _ = std::panic::catch_unwind(init);
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// How long the drain waits for a writer that has claimed a slot but not yet filled it (a
/// few instructions, unless it was preempted) before treating the record as lost.
const BUSY_WAIT: Duration = Duration::from_millis(20);

/// The collector's side: the block map, fed from the ring.
#[derive(Debug)]
pub struct Namer {
    blocks: blocks::BlockMap,
    /// Losses already written to the trace.
    lost_reported: u64,
}

impl Default for Namer {
    fn default() -> Self {
        Self::new()
    }
}

impl Namer {
    pub fn new() -> Self {
        Self {
            blocks: blocks::BlockMap::new(FREED_KEPT),
            lost_reported: 0,
        }
    }

    /// Applies every queued record. Called before each batch is annotated and at each sweep.
    pub fn drain(&mut self, clock: &mut crate::clock::Converter) {
        if !active() {
            return;
        }
        let mut waiting_since: Option<Instant> = None;
        loop {
            match RING.pop() {
                Pop::Record(r) => {
                    waiting_since = None;
                    let ns = clock.to_ns(r.time);
                    match r.op {
                        Op::Alloc => self.blocks.alloc(r.ptr, r.size, r.site, ns),
                        Op::Free => {
                            if self.blocks.free(r.ptr, ns) {
                                LIVE.remove(r.ptr);
                            }
                        }
                    }
                }
                Pop::Empty => return,
                Pop::Busy => {
                    // A record behind this one may be a free that an event we are about to
                    // name depends on: wait for the writer rather than skip it.
                    let since = *waiting_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > BUSY_WAIT {
                        lost();
                        return;
                    }
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Whether names are still trustworthy (no record was ever lost).
    pub fn naming(&self) -> bool {
        active() && LOST.load(Ordering::Relaxed) == 0
    }

    /// Sets the alloc_* fields of `ev` from the block its host pointer lay in.
    #[inline]
    pub fn annotate(&self, ev: &mut Event) {
        if ev.get(Field::HostPtr).is_some() && self.naming() {
            self.blocks.annotate(ev);
        }
    }

    /// The alloc_* fields [`annotate`](Self::annotate) would set on `ev` (when naming).
    #[inline]
    pub fn name_of(&self, ev: &Event) -> Option<[(Field, u64); 3]> {
        self.blocks.name_of(ev)
    }

    /// A [`accprof_trace::model::tool::HEAP_RECORDS_LOST`] event when records were lost since the
    /// last call.
    pub fn loss_event(&mut self) -> Option<Event> {
        let lost = LOST.load(Ordering::Relaxed);
        if lost == self.lost_reported {
            return None;
        }
        self.lost_reported = lost;
        let mut e = Event::new(
            accprof_trace::model::tool::HEAP_RECORDS_LOST,
            crate::clock::monotonic_ns(),
        );
        e.set(Field::Bytes, lost);
        Some(e)
    }
}
