//! Raw records: one event as the tool library's recording threads buffer it, with the
//! runtime's structures copied as the runtime filled them.
//!
//! A callback that read each field, tested it and packed it cost some 400 instructions; one
//! that copies the three structures (a few wide moves) and interns their strings costs about
//! a quarter of that. The fields are read from the copies later, here, by the writer thread
//! (and by a reader recovering a killed run's live file), with the same rules a callback
//! applied: a field is kept only when `valid_bytes` covered it and it was not NULL, -1 or
//! SIZE_MAX. A record is one event (a start joined with its end, or a point event), so a
//! buffer of records counts events as a buffer of packed events does (the live file's
//! slot-written records count them).
//!
//! Layout, in little-endian words (word 0 has its top bit set, which a packed event's kind word
//! never has):
//!
//! ```text
//! 0  TAG | flags << 40 | parts << 32 | start event number (as u32)
//! 1  start time          2  end time (the start's for a point event)
//! 3  source file id + 1 | function id + 1 << 32          (0: none)
//! 4  variable or kernel name id + 1 | the end's + 1 << 32 (0: none)
//! 5  the OS thread id (for runtimes that give none) | the innermost NVTX push/pop range open
//!    on the thread << 32 (0: none)
//! 6  the call site found on the stack (0: none)
//! 7  acc_prof_info (9 words)                              if PROF
//! .. acc_event_info of the start (7 words, 3 for acc_other_event_info)   if INFO
//! .. acc_api_info (5 words)                               if API
//! .. acc_event_info of the end (as the start's)           if END_INFO
//! .. the transfer's content hash (1 word)                 if HASH
//! ```
//!
//! A copied structure keeps its `valid_bytes`; bytes beyond them are zero.

use crate::model::{Event, EventFlags, Field};
use accprof_abi::read::{ApiView, EventView, ProfView};
use accprof_abi::{
    acc_api_info, acc_device_api, acc_event_info, acc_event_t, acc_prof_info, EventInfoKind,
};

/// Marks word 0 of a raw record.
pub const TAG: u64 = 1 << 63;
/// Parts present (bits 32-39 of word 0).
pub const PROF: u64 = 1 << 32;
pub const INFO: u64 = 1 << 33;
pub const API: u64 = 1 << 34;
pub const END_INFO: u64 = 1 << 35;
/// A transfer whose bytes were hashed (ACCPROF_CONTENT): the hash is the record's last word.
pub const HASH: u64 = 1 << 36;
/// Flags (bits 40-47 of word 0).
pub const NO_START: u64 = 1 << 40;
pub const NO_END: u64 = 1 << 41;

pub const HEADER_WORDS: usize = 7;
pub const PROF_WORDS: usize = std::mem::size_of::<acc_prof_info>() / 8;
/// The words of `acc_event_info` copied for an event of `kind`.
#[inline]
pub fn info_words(kind: acc_event_t) -> usize {
    match kind.info_kind() {
        EventInfoKind::Other => OTHER_INFO_WORDS,
        _ => FULL_INFO_WORDS,
    }
}
pub const API_WORDS: usize = std::mem::size_of::<acc_api_info>() / 8;
const FULL_INFO_WORDS: usize = std::mem::size_of::<acc_event_info>() / 8;
const OTHER_INFO_WORDS: usize = std::mem::size_of::<accprof_abi::acc_other_event_info>() / 8;
/// The most words a record takes.
pub const MAX_WORDS: usize = HEADER_WORDS + PROF_WORDS + 2 * FULL_INFO_WORDS + API_WORDS + 1;

/// Word indices of the header.
pub mod word {
    pub const HEAD: usize = 0;
    pub const START: usize = 1;
    pub const END: usize = 2;
    pub const FILE_FUNC: usize = 3;
    pub const NAMES: usize = 4;
    pub const OS_THREAD: usize = 5;
    pub const CALL_SITE: usize = 6;
}

/// The start event number of a record's word 0.
pub fn kind_of(head: u64) -> acc_event_t {
    acc_event_t(head as u32 as i32)
}

/// Whether `head` is word 0 of a raw record.
pub fn is_raw(head: u64) -> bool {
    head & TAG != 0
}

/// The words of the record whose word 0 is `head`.
pub fn len(head: u64) -> usize {
    Layout::of(head).len
}

/// Where each part of a record lies: word indices, equal to the next part's when absent.
#[derive(Clone, Copy)]
struct Layout {
    prof: usize,
    info: usize,
    api: usize,
    end_info: usize,
    hash: usize,
    len: usize,
}

impl Layout {
    /// The layout of every combination of parts (bits 32-36 of word 0) for both sizes of
    /// event information, computed once: a record's layout is one load, not a dozen branches
    /// (the writer reads every record).
    const TABLE: [Layout; 64] = {
        let mut t = [Layout {
            prof: 0,
            info: 0,
            api: 0,
            end_info: 0,
            hash: 0,
            len: 0,
        }; 64];
        let mut i = 0;
        while i < 64 {
            let info_words = if i & 32 != 0 {
                FULL_INFO_WORDS
            } else {
                OTHER_INFO_WORDS
            };
            let prof = HEADER_WORDS;
            let info = prof + (i & 1) * PROF_WORDS;
            let api = info + (i >> 1 & 1) * info_words;
            let end_info = api + (i >> 2 & 1) * API_WORDS;
            let hash = end_info + (i >> 3 & 1) * info_words;
            t[i] = Layout {
                prof,
                info,
                api,
                end_info,
                hash,
                len: hash + (i >> 4 & 1),
            };
            i += 1;
        }
        t
    };

    #[inline(always)]
    fn of(head: u64) -> Self {
        let wide = usize::from(info_words(kind_of(head)) == FULL_INFO_WORDS);
        Self::TABLE[(head >> 32) as usize & 31 | wide << 5]
    }
}

/// The parts of a record.
struct Parts<'a> {
    prof: Option<&'a [u64; PROF_WORDS]>,
    info: Option<&'a [u64]>,
    api: Option<&'a [u64; API_WORDS]>,
    end_info: Option<&'a [u64]>,
    hash: Option<u64>,
}

// The record's `l.len` words are in `words`, and every part of a layout lies inside them, as
// long as the part says (Layout::TABLE: offsets grow by the parts' sizes up to `len`): each
// part is taken without a bounds check (the writer reads every record).
#[inline(always)]
fn parts(words: &[u64], head: u64) -> Option<(Parts<'_>, usize)> {
    let l = Layout::of(head);
    if words.len() < l.len {
        return None;
    }
    let at = words.as_ptr();
    let prof = (l.info > l.prof).then(|| {
        // SAFETY: PROF_WORDS words at `l.prof` inside the record (above).
        unsafe { &*(at.add(l.prof) as *const [u64; PROF_WORDS]) }
    });
    let api = (l.end_info > l.api).then(|| {
        // SAFETY: API_WORDS words at `l.api` inside the record (above).
        unsafe { &*(at.add(l.api) as *const [u64; API_WORDS]) }
    });
    // SAFETY: each range lies inside the record (above).
    let info = (l.api > l.info).then(|| unsafe { words.get_unchecked(l.info..l.api) });
    // SAFETY: as above.
    let end_info =
        (l.hash > l.end_info).then(|| unsafe { words.get_unchecked(l.end_info..l.hash) });
    // SAFETY: as above.
    let hash = (l.len > l.hash).then(|| unsafe { *words.get_unchecked(l.hash) });
    Some((
        Parts {
            prof,
            info,
            api,
            end_info,
            hash,
        },
        l.len,
    ))
}

/// Fields a data event's start usually carries; its end's information is copied (and read)
/// only when one of them is missing.
pub const DATA_FIELDS: u64 = mask(&[
    Field::Bytes,
    Field::HostPtr,
    Field::DevicePtr,
    Field::VarName,
]);
/// The same for launches.
pub const LAUNCH_FIELDS: u64 = mask(&[
    Field::KernelName,
    Field::NumGangs,
    Field::NumWorkers,
    Field::VectorLength,
]);

const fn mask(fields: &[Field]) -> u64 {
    let mut m = 0;
    let mut i = 0;
    while i < fields.len() {
        m |= 1 << fields[i] as u64;
        i += 1;
    }
    m
}

/// Reads the record at the start of `words` into `e`; returns the words it took, or `None`
/// when they are not a whole raw record.
pub fn decode(words: &[u64], e: &mut Event) -> Option<usize> {
    decode_into(words, e, &mut Memo::default())
}

/// Where a record's fields go as they are read: an [`Event`], or the writer's encoder, which
/// compares each field with the previous event's as it arrives (crate::encode::FieldEncoder).
/// Every field is set at most once per event.
pub(crate) trait Sink {
    /// Starts an event of `kind` at `start..end` with no field set.
    fn begin(&mut self, kind: acc_event_t, start: u64, end: u64);
    fn set(&mut self, f: Field, v: u64);
    /// The fields set since [`begin`](Self::begin).
    fn present(&self) -> u64;
    /// The fields of `mask` are set again to the values this sink was last given for them
    /// (their slots still hold them: see [`Memo`]).
    fn keep(&mut self, mask: u64);
}

impl Sink for Event {
    #[inline(always)]
    fn begin(&mut self, kind: acc_event_t, start: u64, end: u64) {
        self.reset(kind, start, end);
    }
    #[inline(always)]
    fn set(&mut self, f: Field, v: u64) {
        Event::set(self, f, v);
    }
    #[inline(always)]
    fn present(&self) -> u64 {
        self.present_mask()
    }
    #[inline(always)]
    fn keep(&mut self, mask: u64) {
        *self.parts_mut().0 |= mask;
    }
}

/// The `acc_prof_info` and `acc_api_info` of the record decoded last into one sink, and the
/// fields they gave. A thread's records nearly always repeat both (the same thread, device,
/// queue and source position; GCC's for a whole run), so a decoder that finds them unchanged
/// keeps their fields instead of reading them again: a comparison of 16 words instead of the
/// field-by-field rules below. Valid only while nothing but this decoder sets those fields in
/// the sink (whose slots keep the values); [`forget`](Self::forget) otherwise.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memo {
    prof: Option<MemoPart<PROF_WORDS>>,
    api: Option<MemoPart<API_WORDS>>,
}

#[derive(Clone, Copy, Debug)]
struct MemoPart<const N: usize> {
    /// The part's words and the header words its fields also depend on.
    words: [u64; N],
    extra: [u64; 2],
    /// The fields the part set, and the flags it raised.
    fields: u64,
    flags: u64,
}

impl Memo {
    /// The sink's slots were written by something else: nothing is known any more.
    pub(crate) fn forget(&mut self) {
        self.prof = None;
        self.api = None;
    }

    /// The fields whose slots the memo relies on.
    pub(crate) fn fields(&self) -> u64 {
        self.prof.map_or(0, |m| m.fields) | self.api.map_or(0, |m| m.fields)
    }
}

/// Whether `a` and `b` differ, but for the bits `ignore` of their first words. No early exit
/// per word: on x86-64, 16 bytes at a time.
#[inline(always)]
fn differs<const N: usize>(a: &[u64; N], b: &[u64; N], ignore: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64; every load reads two words inside `a` or `b`.
        unsafe {
            let load =
                |p: &[u64; N], i: usize| _mm_loadu_si128(p.as_ptr().add(i) as *const __m128i);
            let keep = _mm_set_epi64x(-1, !ignore as i64);
            let mut acc = _mm_and_si128(_mm_xor_si128(load(a, 0), load(b, 0)), keep);
            let mut i = 2;
            while i + 2 <= N {
                acc = _mm_or_si128(acc, _mm_xor_si128(load(a, i), load(b, i)));
                i += 2;
            }
            let mut d = _mm_cvtsi128_si64(acc) | _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
            if N % 2 == 1 {
                d |= (a[N - 1] ^ b[N - 1]) as i64;
            }
            d != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut d = (a[0] ^ b[0]) & !ignore;
        for i in 1..N {
            d |= a[i] ^ b[i];
        }
        d != 0
    }
}

/// Decodes a part, whose words are `words` and which also depends on `extra`, with `read`,
/// unless the memo holds the same words, in which case the sink keeps the fields the part
/// gave last time. The bits `ignore` of its first word decide none of its fields.
#[inline(always)]
fn memoized<S: Sink, const N: usize>(
    memo: &mut Option<MemoPart<N>>,
    (words, ignore, extra): (&[u64; N], u64, [u64; 2]),
    sink: &mut S,
    flags: &mut EventFlags,
    read: impl FnOnce(&mut S, &mut EventFlags),
) {
    if let Some(m) = memo {
        let extra_differs = (m.extra[0] ^ extra[0]) | (m.extra[1] ^ extra[1]) != 0;
        if !extra_differs && !differs(&m.words, words, ignore) {
            sink.keep(m.fields);
            *flags = flags.union(EventFlags(m.flags));
            return;
        }
    }
    let (before, mut raised) = (sink.present(), EventFlags(0));
    read(sink, &mut raised);
    *flags = flags.union(raised);
    *memo = Some(MemoPart {
        words: *words,
        extra,
        fields: sink.present() & !before,
        flags: raised.0,
    });
}

/// [`decode`] into any sink, keeping in `memo` what the next record may repeat.
#[inline(always)]
pub(crate) fn decode_into<S: Sink>(words: &[u64], e: &mut S, memo: &mut Memo) -> Option<usize> {
    let head = *words.first()?;
    if !is_raw(head) {
        return None;
    }
    let (p, len) = parts(words, head)?;
    let kind = kind_of(head);
    e.begin(kind, words[word::START], words[word::END]);
    let id = |v: u64| (v != 0).then(|| v - 1);
    let file_func = words[word::FILE_FUNC];
    let names = words[word::NAMES];
    let os_thread = words[word::OS_THREAD] & 0xffff_ffff;
    let (name, end_name) = (id(names & 0xffff_ffff), id(names >> 32));
    let mut flags = EventFlags(0);
    match p.prof {
        Some(prof) => {
            // The event type (low half of the first word) decides none of the fields; the
            // string ids and the OS thread id do.
            let part = (prof, 0xffff_ffff, [file_func, os_thread]);
            memoized(&mut memo.prof, part, e, &mut flags, |e, flags| {
                // SAFETY: `prof` holds PROF_WORDS words, the size of acc_prof_info, 8-byte
                // aligned, copied with the runtime's valid_bytes (which the view respects) and
                // zeros after.
                let prof = unsafe { ProfView::new(prof.as_ptr() as *const acc_prof_info) };
                if let Some(prof) = prof {
                    let (src, func) = (id(file_func & 0xffff_ffff), id(file_func >> 32));
                    fill_prof(e, &prof, os_thread, flags, src, func);
                }
            });
        }
        None => memo.prof = None,
    }
    match p.api {
        Some(api) => {
            memoized(&mut memo.api, (api, 0, [0, 0]), e, &mut flags, |e, _| {
                // SAFETY: as above, for acc_api_info.
                if let Some(a) = unsafe { ApiView::new(api.as_ptr() as *const acc_api_info) } {
                    fill_api(e, &a);
                }
            });
        }
        None => memo.api = None,
    }
    if let Some(info) = p.info {
        // SAFETY: as above, for the start's acc_event_info (as many words as its member).
        if let Some(i) = unsafe { EventView::new(info.as_ptr() as *const acc_event_info, kind) } {
            fill_info(e, &i, name, &mut flags, false);
        }
    }
    if let Some(info) = p.end_info {
        let wanted = match kind.info_kind() {
            EventInfoKind::Data => DATA_FIELDS,
            EventInfoKind::Launch => LAUNCH_FIELDS,
            EventInfoKind::Other => 0,
        };
        // Some runtimes fill a field only at the end (bytes of a download): what the start
        // lacked, the end gives.
        if e.present() & wanted != wanted {
            let end = info.as_ptr() as *const acc_event_info;
            // SAFETY: as above, for the end's acc_event_info.
            if let Some(i) = unsafe { EventView::new(end, kind.partner()) } {
                fill_info(e, &i, end_name, &mut flags, true);
            }
        }
    }
    let nvtx_range = words[word::OS_THREAD] >> 32;
    if nvtx_range != 0 {
        e.set(Field::NvtxRange, nvtx_range);
    }
    let call_site = words[word::CALL_SITE];
    if call_site != 0 {
        e.set(Field::ReturnAddress, call_site);
    }
    if let Some(h) = p.hash {
        e.set(Field::ContentHash, h);
    }
    if head & NO_START != 0 {
        flags = flags.union(EventFlags::NO_START);
    }
    if head & NO_END != 0 {
        flags = flags.union(EventFlags::NO_END);
    }
    if flags.0 != 0 {
        e.set(Field::Flags, flags.0);
    }
    Some(len)
}

fn fill_api<S: Sink>(e: &mut S, a: &ApiView<'_>) {
    if let Some(d) = a.device_api().filter(|&d| d != acc_device_api::NONE) {
        e.set(Field::DeviceApi, i64::from(d.0) as u64);
        set_ptr(e, Field::DeviceHandle, a.device_handle());
        set_ptr(e, Field::ContextHandle, a.context_handle());
        set_ptr(e, Field::AsyncHandle, a.async_handle());
    }
}

#[inline(always)]
fn fill_prof<S: Sink>(
    e: &mut S,
    p: &ProfView<'_>,
    os_thread: u64,
    flags: &mut EventFlags,
    src: Option<u64>,
    func: Option<u64>,
) {
    match p.thread_id() {
        Some(t) if t >= 0 => e.set(Field::Thread, i64::from(t) as u64),
        _ => {
            e.set(Field::Thread, os_thread);
            *flags = flags.union(EventFlags::OS_THREAD_ID);
        }
    }
    if let Some(v) = p.version() {
        e.set(Field::Version, i64::from(v) as u64);
    }
    if let Some(v) = p.device_type() {
        e.set(Field::DeviceType, i64::from(v.0) as u64);
    }
    if let Some(v) = p.device_number() {
        e.set(Field::DeviceNumber, i64::from(v) as u64);
    }
    if let Some(v) = p.async_() {
        e.set(Field::Async, v as i64 as u64);
    }
    if let Some(v) = p.async_queue() {
        e.set(Field::AsyncQueue, v as i64 as u64);
    }
    // Runtimes say "unknown line" with -1 (GCC) or 0.
    for (f, v) in [
        (Field::LineNo, p.line_no()),
        (Field::EndLineNo, p.end_line_no()),
        (Field::FuncLineNo, p.func_line_no()),
        (Field::FuncEndLineNo, p.func_end_line_no()),
    ] {
        if let Some(l) = v.filter(|&l| l > 0) {
            e.set(f, i64::from(l) as u64);
        }
    }
    // The strings were interned where the callback read them (their pointers mean nothing
    // now); an id is there when the runtime passed a string and valid_bytes covered it.
    if let Some(s) = src.filter(|_| p.src_file().is_some()) {
        e.set(Field::SrcFile, s);
    }
    if let Some(s) = func.filter(|_| p.func_name().is_some()) {
        e.set(Field::FuncName, s);
    }
}

/// The event information's fields; with `only_missing` (an end completing its start), those
/// the event lacks.
#[inline(always)]
fn fill_info<S: Sink>(
    e: &mut S,
    i: &EventView<'_>,
    name: Option<u64>,
    flags: &mut EventFlags,
    only_missing: bool,
) {
    let missing = |e: &S, f: Field| !only_missing || e.present() & (1 << f as u64) == 0;
    if missing(e, Field::ParentConstruct) {
        if let Some(v) = i.parent_construct() {
            e.set(Field::ParentConstruct, i64::from(v.0) as u64);
        }
    }
    if missing(e, Field::Implicit) {
        if let Some(v) = i.implicit() {
            e.set(Field::Implicit, i64::from(v) as u64);
        }
    }
    if let Some(d) = i.data() {
        if missing(e, Field::VarName) {
            if let Some(n) = name.filter(|_| d.var_name().is_some()) {
                e.set(Field::VarName, n);
            }
        }
        if missing(e, Field::Bytes) {
            match d.bytes() {
                // libgomp passes SIZE_MAX on free: the size is not known.
                Some(usize::MAX) => *flags = flags.union(EventFlags::BYTES_UNKNOWN),
                Some(b) => e.set(Field::Bytes, b as u64),
                None => {}
            }
        }
        if missing(e, Field::HostPtr) {
            set_ptr(e, Field::HostPtr, d.host_ptr());
        }
        if missing(e, Field::DevicePtr) {
            set_ptr(e, Field::DevicePtr, d.device_ptr());
        }
    } else if let Some(l) = i.launch() {
        if missing(e, Field::KernelName) {
            if let Some(n) = name.filter(|_| l.kernel_name().is_some()) {
                e.set(Field::KernelName, n);
            }
        }
        for (f, v) in [
            (Field::NumGangs, l.num_gangs()),
            (Field::NumWorkers, l.num_workers()),
            (Field::VectorLength, l.vector_length()),
        ] {
            if let Some(v) = v.filter(|&v| v != usize::MAX) {
                if missing(e, f) {
                    e.set(f, v as u64);
                }
            }
        }
    }
}

#[inline(always)]
fn set_ptr<S: Sink>(e: &mut S, f: Field, p: Option<*const std::ffi::c_void>) {
    if let Some(p) = p.filter(|p| !p.is_null()) {
        e.set(f, p as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_abi::*;

    fn words_of<T>(t: &T) -> Vec<u64> {
        let n = std::mem::size_of::<T>() / 8;
        // SAFETY: `t` is a plain C structure of `n` whole words (checked by the callers'
        // sizes), read as words.
        unsafe { std::slice::from_raw_parts(t as *const T as *const u64, n) }.to_vec()
    }

    fn prof(kind: acc_event_t) -> acc_prof_info {
        acc_prof_info {
            event_type: kind,
            valid_bytes: valid_bytes::PROF_INFO,
            version: 201711,
            device_type: acc_device_t(5),
            device_number: 0,
            thread_id: -1,
            async_: -2,
            async_queue: -2,
            src_file: std::ptr::null(),
            func_name: std::ptr::null(),
            line_no: -1,
            end_line_no: -1,
            func_line_no: -1,
            func_end_line_no: -1,
        }
    }

    fn data(kind: acc_event_t, bytes: usize, host: usize) -> acc_event_info {
        acc_event_info {
            data_event: acc_data_event_info {
                event_type: kind,
                valid_bytes: valid_bytes::DATA_EVENT_INFO,
                parent_construct: acc_construct_t::PARALLEL,
                implicit: 1,
                tool_info: std::ptr::null_mut(),
                var_name: std::ptr::null(),
                bytes,
                host_ptr: host as *const std::ffi::c_void,
                device_ptr: 0x7000 as *const std::ffi::c_void,
            },
        }
    }

    fn record(kind: acc_event_t, head_bits: u64, ids: [u64; 2], parts: &[Vec<u64>]) -> Vec<u64> {
        let mut w = vec![
            TAG | head_bits | u64::from(kind.0 as u32),
            100,
            250,
            ids[0],
            ids[1],
            4242,
            0,
        ];
        for p in parts {
            w.extend_from_slice(p);
        }
        w
    }

    #[test]
    fn a_gcc_download_reads_as_the_callback_would_have_read_it() {
        let kind = acc_event_t::ENQUEUE_DOWNLOAD_START;
        let api = acc_api_info {
            device_api: acc_device_api::CUDA,
            valid_bytes: valid_bytes::API_INFO,
            device_type: acc_device_t(5),
            vendor: 0,
            device_handle: std::ptr::null(),
            context_handle: 0x55 as *const std::ffi::c_void,
            async_handle: std::ptr::null(),
        };
        // The start has no byte count (SIZE_MAX); the end gives it.
        let w = record(
            kind,
            PROF | INFO | API | END_INFO,
            [0, 0],
            &[
                words_of(&prof(kind)),
                words_of(&data(kind, usize::MAX, 0x1000)),
                words_of(&api),
                words_of(&data(kind.partner(), 4096, 0x1000)),
            ],
        );
        let mut e = Event::default();
        assert_eq!(decode(&w, &mut e), Some(w.len()));
        assert_eq!((e.kind, e.start_ns, e.end_ns), (kind, 100, 250));
        assert_eq!(e.thread(), Some(4242));
        assert!(e.flags().contains(EventFlags::OS_THREAD_ID));
        assert_eq!(e.bytes(), Some(4096), "the end's byte count");
        assert!(
            e.flags().contains(EventFlags::BYTES_UNKNOWN),
            "the start said it did not know"
        );
        assert_eq!(e.get(Field::HostPtr), Some(0x1000));
        assert_eq!(e.line_no(), None, "-1 is no line");
        assert_eq!(e.get(Field::SrcFile), None);
        assert_eq!(e.get_i64(Field::Async), Some(-2));
        assert_eq!(e.get(Field::ContextHandle), Some(0x55));
        assert_eq!(e.get(Field::AsyncHandle), None, "NULL is no handle");
        assert_eq!(e.get(Field::VarName), None);
    }

    #[test]
    fn strings_come_from_the_ids_and_valid_bytes_bound_every_field() {
        let kind = acc_event_t::COMPUTE_CONSTRUCT_START;
        let mut p = prof(kind);
        p.src_file = c"laplace.c".as_ptr();
        p.func_name = c"main".as_ptr();
        p.line_no = 62;
        p.thread_id = 3;
        let mut full = words_of(&p);
        let w = record(kind, PROF, [(1 + 7) | ((1 + 8) << 32), 0], &[full.clone()]);
        let mut e = Event::default();
        decode(&w, &mut e).unwrap();
        assert_eq!(
            (e.src_file(), e.func_name()),
            (Some(crate::StrId(7)), Some(crate::StrId(8)))
        );
        assert_eq!((e.line_no(), e.thread()), (Some(62), Some(3)));
        // A runtime that filled only up to thread_id: nothing after it is read.
        let cut = std::mem::offset_of!(acc_prof_info, async_);
        full[0] = (kind.0 as u32 as u64) | (cut as u64) << 32;
        let w = record(kind, PROF, [(1 + 7) | ((1 + 8) << 32), 0], &[full]);
        decode(&w, &mut e).unwrap();
        assert_eq!(e.thread(), Some(3));
        assert_eq!(
            (e.line_no(), e.src_file(), e.get(Field::Async)),
            (None, None, None)
        );
    }

    #[test]
    fn flags_and_call_sites_survive_and_short_words_do_not_decode() {
        let kind = acc_event_t::ENTER_DATA_START;
        let mut w = record(kind, PROF | NO_END, [0, 0], &[words_of(&prof(kind))]);
        w[word::CALL_SITE] = 0x40_1234;
        let mut e = Event::default();
        assert_eq!(decode(&w, &mut e), Some(HEADER_WORDS + PROF_WORDS));
        assert!(e.flags().contains(EventFlags::NO_END));
        assert_eq!(e.get(Field::ReturnAddress), Some(0x40_1234));
        assert_eq!(decode(&w[..w.len() - 1], &mut e), None, "cut short");
        assert_eq!(e.get(Field::ContentHash), None);
        // A hashed transfer: the hash is the last word, after every copied structure.
        let kind = acc_event_t::ENQUEUE_UPLOAD_START;
        let mut w = record(
            kind,
            PROF | INFO | HASH,
            [0, 0],
            &[words_of(&prof(kind)), words_of(&data(kind, 64, 0x1000))],
        );
        w.push(0xfeed_beef);
        assert_eq!(decode(&w, &mut e), Some(w.len()));
        assert_eq!(e.get(Field::ContentHash), Some(0xfeed_beef));
        assert_eq!(e.bytes(), Some(64));
        assert_eq!(
            decode(&w[..w.len() - 1], &mut e),
            None,
            "the hash word missing"
        );
        assert_eq!(
            decode(&[5, 0, 0, 0], &mut e),
            None,
            "a packed event is not a raw record"
        );
    }
}
