//! The program's NVTX annotations: libaccprof is an NVTX tool.
//!
//! Programs and libraries mark their phases with NVTX (nvtxRangePushA/Pop, nvtxRangeStartEx/End,
//! nvtxMarkA, domains, registered strings), usually through NVIDIA's header-only nvtx3 API.
//! Its first call in a module looks for a tool: the library named by NVTX_INJECTION64_PATH,
//! whose `InitializeInjectionNvtx2` it calls with its function tables (one call per module
//! that includes the headers). libaccprof sets that variable to itself when it is loaded and
//! the variable is unset (registration), exports the function (crate::api), and fills the
//! tables with the functions here: no rebuild, nothing for the user to set.
//!
//! What is recorded (accprof_trace::nvtx): push/pop ranges on the thread's own stack, start/end
//! ranges through a table shared by all threads (they may end on another thread), marks, and
//! the names given to categories and OS threads. A range's attributes (message, domain,
//! category, colour, payload) go into the event; the OpenACC events recorded inside a push/pop
//! range carry its instance number, so that a report can add up the OpenACC time and
//! transfers of each range. Every function here returns without recording while accprof is
//! not recording (no OpenACC runtime registered, a fork pending, disabled), and never panics
//! into the program.

use crate::record::callback::with_recording_thread;
use crate::record::nvtx::{Message, NvtxAttrs};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Mutex;

/// `nvtxEventAttributes_t` (version 2 and 3, 48 bytes); `size` says how much the program
/// filled.
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_void,
}

const COLOR_ARGB: i32 = 1;
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_UNICODE: i32 = 2;
const MESSAGE_REGISTERED: i32 = 3;

type FnPtr = *const c_void;
type GetModuleFunctionTable = unsafe extern "C" fn(c_int, *mut *mut *mut FnPtr, *mut u32) -> c_int;
type GetExportTable = unsafe extern "C" fn(u32) -> *const c_void;

#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: Option<GetModuleFunctionTable>,
}

#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: Option<unsafe extern "C" fn(u32)>,
}

const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;
const MODULE_CORE: c_int = 1;
const MODULE_CORE2: c_int = 5;

/// The variable nvtx3 reads for a tool to load.
const INJECTION_VAR: &CStr = c"NVTX_INJECTION64_PATH";

/// At load (LD_PRELOAD, ACC_PROFLIB, `accprof run`): names this library as the program's NVTX
/// tool, unless the variable names another tool already (then that one gets the program's
/// NVTX calls, as its user asked).
pub fn offer_to_program() {
    // SAFETY: getenv with a NUL-terminated name, at load time (no other thread changes the
    // environment yet).
    if !unsafe { libc::getenv(INJECTION_VAR.as_ptr()) }.is_null() {
        return;
    }
    let Some(path) = own_path() else { return };
    // SAFETY: setenv copies both strings; overwrite 0 keeps a value set meanwhile.
    unsafe { libc::setenv(INJECTION_VAR.as_ptr(), path.as_ptr(), 0) };
}

/// This library's absolute path (what dlopen finds again from any working directory).
fn own_path() -> Option<std::ffi::CString> {
    // SAFETY: `Dl_info` is a C struct of pointers and integers, for which all-zero bytes (NULL
    // pointers) are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside this library.
    if unsafe { libc::dladdr(offer_to_program as *const c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_str().ok()?;
    let abs = std::fs::canonicalize(name).ok()?;
    std::ffi::CString::new(abs.into_os_string().into_encoded_bytes()).ok()
}

/// `InitializeInjectionNvtx2`: one module's NVTX tables, filled with our functions. Nonzero
/// for success, as nvtx3 expects.
///
/// # Safety
/// `get` is the module's nvtxGetExportTable, as nvtx3 passes it.
pub unsafe fn attach(get: Option<GetExportTable>) -> c_int {
    let Some(get) = get else { return 0 };
    // SAFETY: nvtxGetExportTable returns a pointer to its static table or NULL.
    let callbacks = unsafe { get(ETID_CALLBACKS) } as *const ExportTableCallbacks;
    if callbacks.is_null() {
        return 0;
    }
    // SAFETY: a non-null callbacks table; struct_size says how much of it there is.
    let table = unsafe { &*callbacks };
    if table.struct_size < std::mem::size_of::<ExportTableCallbacks>() {
        return 0;
    }
    let Some(get_table) = table.get_module_function_table else {
        return 0;
    };
    // SAFETY: as above, for the version table (optional).
    let version = unsafe { get(ETID_VERSIONINFO) } as *const ExportTableVersionInfo;
    if !version.is_null() {
        // SAFETY: non-null, and checked for its size before its function is read.
        let v = unsafe { &*version };
        if v.struct_size >= std::mem::size_of::<ExportTableVersionInfo>() {
            if let Some(set) = v.set_injection_nvtx_version {
                // SAFETY: the module's own function, taking the tool's NVTX version.
                unsafe { set(2) };
            }
        }
    }
    // SAFETY: the module's GetModuleFunctionTable; the functions have the types nvtx3 calls.
    unsafe {
        fill(get_table, MODULE_CORE, &core_functions());
        fill(get_table, MODULE_CORE2, &core2_functions());
    }
    1
}

/// Stores our functions into a module's table: entry `id` of the table points at the slot of
/// function `id` (nvtx3's layout; entry 0 is unused).
unsafe fn fill(get_table: GetModuleFunctionTable, module: c_int, fns: &[(usize, FnPtr)]) {
    let mut table: *mut *mut FnPtr = std::ptr::null_mut();
    let mut size: u32 = 0;
    // SAFETY: nvtx3's GetModuleFunctionTable writes the table and its size.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return;
    }
    for &(id, f) in fns {
        if id > size as usize {
            continue;
        }
        // SAFETY: `id` is within the table (size is its last index).
        let slot = unsafe { *table.add(id) };
        if !slot.is_null() {
            // SAFETY: the slot is the module's function pointer for `id`.
            unsafe { *slot = f };
        }
    }
}

/// The CORE module's functions by callback id (nvtx3's NvtxCallbackIdCore).
fn core_functions() -> [(usize, FnPtr); 15] {
    [
        (1, mark_ex as FnPtr),
        (2, mark_a as FnPtr),
        (3, mark_w as FnPtr),
        (4, range_start_ex as FnPtr),
        (5, range_start_a as FnPtr),
        (6, range_start_w as FnPtr),
        (7, range_end as FnPtr),
        (8, range_push_ex as FnPtr),
        (9, range_push_a as FnPtr),
        (10, range_push_w as FnPtr),
        (11, range_pop as FnPtr),
        (12, name_category_a as FnPtr),
        (13, name_category_w as FnPtr),
        (14, name_os_thread_a as FnPtr),
        (15, name_os_thread_w as FnPtr),
    ]
}

/// The CORE2 module's (domains) by callback id (NvtxCallbackIdCore2); resources and sync are
/// left to nvtx3's no-ops.
fn core2_functions() -> [(usize, FnPtr); 11] {
    [
        (1, domain_mark_ex as FnPtr),
        (2, domain_range_start_ex as FnPtr),
        (3, domain_range_end as FnPtr),
        (4, domain_range_push_ex as FnPtr),
        (5, domain_range_pop as FnPtr),
        (8, domain_name_category_a as FnPtr),
        (9, domain_name_category_w as FnPtr),
        (10, domain_register_string_a as FnPtr),
        (11, domain_register_string_w as FnPtr),
        (12, domain_create_a as FnPtr),
        (13, domain_create_w as FnPtr),
    ]
}

// ---- domains and strings ---------------------------------------------------------------

/// A domain handle is the id of the domain's name (+1: never NULL); a registered string's
/// handle is its id (+1). Both ids are the trace's string ids, defined once.
fn handle_of(id: accprof_trace::StrId) -> *const c_void {
    (u64::from(id.0) + 1) as usize as *const c_void
}

fn id_of_handle(h: *const c_void) -> Option<u32> {
    (h as usize as u64)
        .checked_sub(1)
        .and_then(|v| u32::try_from(v).ok())
}

/// A NUL-terminated C string, at most 4 KiB of it.
unsafe fn c_text(p: *const c_char) -> Option<Vec<u8>> {
    if p.is_null() {
        return None;
    }
    let mut out = Vec::new();
    for i in 0..4096 {
        // SAFETY: the caller's NUL-terminated string; we stop at the terminator.
        let b = unsafe { *p.add(i) } as u8;
        if b == 0 {
            break;
        }
        out.push(b);
    }
    Some(out)
}

/// A NUL-terminated wide (UTF-32 on Linux) string as UTF-8, at most 4096 characters.
unsafe fn wide_text(p: *const libc::wchar_t) -> Option<Vec<u8>> {
    if p.is_null() {
        return None;
    }
    let mut s = String::new();
    for i in 0..4096 {
        // SAFETY: the caller's NUL-terminated wide string; we stop at the terminator.
        let c = unsafe { *p.add(i) };
        if c == 0 {
            break;
        }
        s.push(char::from_u32(c as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    Some(s.into_bytes())
}

fn define(bytes: Option<Vec<u8>>) -> *const c_void {
    bytes.map_or(std::ptr::null(), |b| {
        handle_of(crate::strings::define_text(&b))
    })
}

// ---- names given to categories and threads, written by the writer thread ------------------

/// Category and thread names the program gave, waiting for the writer (rare: at start-up).
static NAMES: Mutex<Vec<accprof_trace::Event>> = Mutex::new(Vec::new());

/// The names given since the last call, as point events (writer thread).
pub fn take_names() -> Vec<accprof_trace::Event> {
    NAMES
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

fn name(kind: accprof_abi::acc_event_t, domain: Option<u32>, key: u64, text: Option<Vec<u8>>) {
    let _ = std::panic::catch_unwind(|| name_unguarded(kind, domain, key, text));
}

fn name_unguarded(
    kind: accprof_abi::acc_event_t,
    domain: Option<u32>,
    key: u64,
    text: Option<Vec<u8>>,
) {
    use accprof_trace::Field;
    let Some(text) = text else { return };
    let id = crate::strings::define_text(&text);
    let mut e = accprof_trace::Event::new(kind, crate::clock::monotonic_ns());
    if kind == accprof_trace::nvtx::THREAD_NAME {
        e.set(Field::Thread, key);
    } else {
        e.set(Field::NvtxCategory, key);
    }
    e.set(Field::NvtxMessage, u64::from(id.0));
    if let Some(d) = domain {
        e.set(Field::NvtxDomain, u64::from(d));
    }
    if let Ok(mut v) = NAMES.lock() {
        v.push(e);
    }
}

// ---- attributes -------------------------------------------------------------------------

/// The attributes an `nvtxEventAttributes_t` gives, as far as its `size` covers them.
///
/// # Safety
/// `a` is NULL or the program's attributes, live during its NVTX call.
unsafe fn attrs_of(a: *const EventAttributes, domain: Option<u32>) -> Option<NvtxAttrs> {
    if a.is_null() {
        return None;
    }
    // SAFETY: the program's attributes; `size` (bytes 2-3) says how much it filled.
    let size = usize::from(unsafe { (*a).size });
    let covers = |offset: usize, len: usize| size >= offset + len;
    use std::mem::offset_of;
    let category = if covers(offset_of!(EventAttributes, category), 4) {
        // SAFETY: the field lies within the `size` bytes the program filled.
        unsafe { (*a).category }
    } else {
        0
    };
    let color = if covers(offset_of!(EventAttributes, color), 4) {
        // SAFETY: the fields lie within the `size` bytes the program filled.
        let (t, c) = unsafe { ((*a).color_type, (*a).color) };
        (t == COLOR_ARGB).then_some(c)
    } else {
        None
    };
    let payload = if covers(offset_of!(EventAttributes, payload), 8) {
        // SAFETY: the fields lie within the `size` bytes the program filled.
        let (t, v) = unsafe { ((*a).payload_type, (*a).payload) };
        (t > 0).then_some((v, t as u32))
    } else {
        None
    };
    let message = if covers(offset_of!(EventAttributes, message), 8) {
        // SAFETY: the fields lie within the `size` bytes the program filled.
        let (t, m) = unsafe { ((*a).message_type, (*a).message) };
        // SAFETY: as the program's NVTX call promises for each message type.
        unsafe { message_of(t, m) }
    } else {
        Message::None
    };
    Some(NvtxAttrs {
        message,
        domain,
        category,
        color,
        payload,
    })
}

/// A message as the attributes give it.
///
/// # Safety
/// `m` is what the program passed for message type `t`.
unsafe fn message_of(t: i32, m: *const c_void) -> Message {
    match t {
        MESSAGE_ASCII if !m.is_null() => Message::Ascii(m as *const c_char),
        // SAFETY: a NUL-terminated wide string of the program's.
        MESSAGE_UNICODE => define_id(unsafe { wide_text(m as *const libc::wchar_t) }),
        MESSAGE_REGISTERED => id_of_handle(m).map_or(Message::None, Message::Id),
        _ => Message::None,
    }
}

fn define_id(bytes: Option<Vec<u8>>) -> Message {
    bytes.map_or(Message::None, |b| {
        Message::Id(crate::strings::define_text(&b).0)
    })
}

fn domain_of(d: *const c_void) -> Option<u32> {
    // The default domain is NULL.
    id_of_handle(d)
}

// ---- the functions nvtx3 calls ----------------------------------------------------------
//
// Each catches panics (none may reach the program) and does nothing while accprof is not
// recording.

fn push(attrs: Option<NvtxAttrs>) -> c_int {
    let Some(attrs) = attrs else { return -1 };
    std::panic::catch_unwind(|| {
        with_recording_thread(|st, rec, now| st.nvtx_push(rec, now, &attrs)).unwrap_or(0)
    })
    .unwrap_or(-1)
}

fn pop(domain: Option<u32>) -> c_int {
    std::panic::catch_unwind(|| {
        with_recording_thread(|st, rec, now| st.nvtx_pop(rec, now, domain)).unwrap_or(-1)
    })
    .unwrap_or(-1)
}

fn mark(attrs: Option<NvtxAttrs>) {
    let Some(attrs) = attrs else { return };
    let _ = std::panic::catch_unwind(|| {
        with_recording_thread(|st, rec, now| st.nvtx_mark(rec, now, &attrs))
    });
}

fn start(attrs: Option<NvtxAttrs>) -> u64 {
    let Some(attrs) = attrs else { return 0 };
    std::panic::catch_unwind(|| {
        with_recording_thread(|st, _, now| st.nvtx_start(now, &attrs)).unwrap_or(0)
    })
    .unwrap_or(0)
}

fn end(id: u64) {
    let _ = std::panic::catch_unwind(|| {
        with_recording_thread(|st, rec, now| st.nvtx_end(rec, now, id))
    });
}

fn ascii(m: *const c_char) -> Option<NvtxAttrs> {
    (!m.is_null()).then(|| NvtxAttrs::message(Message::Ascii(m)))
}

fn wide(m: *const libc::wchar_t) -> Option<NvtxAttrs> {
    // SAFETY: the program's NUL-terminated wide string.
    let bytes = unsafe { wide_text(m) }?;
    Some(NvtxAttrs::message(define_id(Some(bytes))))
}

unsafe extern "C" fn mark_ex(a: *const EventAttributes) {
    // SAFETY: nvtx3 passes the program's attributes.
    mark(unsafe { attrs_of(a, None) });
}
unsafe extern "C" fn mark_a(m: *const c_char) {
    mark(ascii(m));
}
unsafe extern "C" fn mark_w(m: *const libc::wchar_t) {
    mark(wide(m));
}
unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> u64 {
    // SAFETY: as above.
    start(unsafe { attrs_of(a, None) })
}
unsafe extern "C" fn range_start_a(m: *const c_char) -> u64 {
    start(ascii(m))
}
unsafe extern "C" fn range_start_w(m: *const libc::wchar_t) -> u64 {
    start(wide(m))
}
unsafe extern "C" fn range_end(id: u64) {
    end(id);
}
unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    // SAFETY: as above.
    push(unsafe { attrs_of(a, None) })
}
unsafe extern "C" fn range_push_a(m: *const c_char) -> c_int {
    push(ascii(m))
}
unsafe extern "C" fn range_push_w(m: *const libc::wchar_t) -> c_int {
    push(wide(m))
}
unsafe extern "C" fn range_pop() -> c_int {
    pop(None)
}
unsafe extern "C" fn name_category_a(category: u32, n: *const c_char) {
    // SAFETY: the program's NUL-terminated string.
    let text = unsafe { c_text(n) };
    name(
        accprof_trace::nvtx::CATEGORY_NAME,
        None,
        u64::from(category),
        text,
    );
}
unsafe extern "C" fn name_category_w(category: u32, n: *const libc::wchar_t) {
    // SAFETY: the program's NUL-terminated wide string.
    let text = unsafe { wide_text(n) };
    name(
        accprof_trace::nvtx::CATEGORY_NAME,
        None,
        u64::from(category),
        text,
    );
}
unsafe extern "C" fn name_os_thread_a(thread: u32, n: *const c_char) {
    // SAFETY: as above.
    let text = unsafe { c_text(n) };
    name(
        accprof_trace::nvtx::THREAD_NAME,
        None,
        u64::from(thread),
        text,
    );
}
unsafe extern "C" fn name_os_thread_w(thread: u32, n: *const libc::wchar_t) {
    // SAFETY: as above.
    let text = unsafe { wide_text(n) };
    name(
        accprof_trace::nvtx::THREAD_NAME,
        None,
        u64::from(thread),
        text,
    );
}
unsafe extern "C" fn domain_mark_ex(d: *const c_void, a: *const EventAttributes) {
    // SAFETY: as above.
    mark(unsafe { attrs_of(a, domain_of(d)) });
}
unsafe extern "C" fn domain_range_start_ex(d: *const c_void, a: *const EventAttributes) -> u64 {
    // SAFETY: as above.
    start(unsafe { attrs_of(a, domain_of(d)) })
}
unsafe extern "C" fn domain_range_end(_d: *const c_void, id: u64) {
    end(id);
}
unsafe extern "C" fn domain_range_push_ex(d: *const c_void, a: *const EventAttributes) -> c_int {
    // SAFETY: as above.
    push(unsafe { attrs_of(a, domain_of(d)) })
}
unsafe extern "C" fn domain_range_pop(d: *const c_void) -> c_int {
    pop(domain_of(d))
}
unsafe extern "C" fn domain_name_category_a(d: *const c_void, category: u32, n: *const c_char) {
    // SAFETY: as above.
    let text = unsafe { c_text(n) };
    name(
        accprof_trace::nvtx::CATEGORY_NAME,
        domain_of(d),
        u64::from(category),
        text,
    );
}
unsafe extern "C" fn domain_name_category_w(
    d: *const c_void,
    category: u32,
    n: *const libc::wchar_t,
) {
    // SAFETY: as above.
    let text = unsafe { wide_text(n) };
    name(
        accprof_trace::nvtx::CATEGORY_NAME,
        domain_of(d),
        u64::from(category),
        text,
    );
}
unsafe extern "C" fn domain_register_string_a(
    _d: *const c_void,
    s: *const c_char,
) -> *const c_void {
    // SAFETY: as above.
    let text = unsafe { c_text(s) };
    std::panic::catch_unwind(|| define(text)).unwrap_or(std::ptr::null())
}
unsafe extern "C" fn domain_register_string_w(
    _d: *const c_void,
    s: *const libc::wchar_t,
) -> *const c_void {
    // SAFETY: as above.
    let text = unsafe { wide_text(s) };
    std::panic::catch_unwind(|| define(text)).unwrap_or(std::ptr::null())
}
unsafe extern "C" fn domain_create_a(n: *const c_char) -> *const c_void {
    // SAFETY: as above.
    let text = unsafe { c_text(n) };
    std::panic::catch_unwind(|| define(text)).unwrap_or(std::ptr::null())
}
unsafe extern "C" fn domain_create_w(n: *const libc::wchar_t) -> *const c_void {
    // SAFETY: as above.
    let text = unsafe { wide_text(n) };
    std::panic::catch_unwind(|| define(text)).unwrap_or(std::ptr::null())
}
