//! One recorded event, as the tool wrote it and the reader returns it.
//!
//! A start event and its end event are joined into one [`Event`] whose `kind` is the *start*
//! event's number and which carries both timestamps. Point events (create, delete, alloc, free,
//! runtime shutdown) have `start_ns == end_ns`. Numbers the specification does not define are kept.
//!
//! Every other field is optional: runtimes fill what they know (GCC fills little), and the tool
//! records a field only when the runtime filled it with a meaningful value (`valid_bytes` covered
//! it, and it was not NULL, -1 or SIZE_MAX). Fields live in one array indexed by [`Field`], which
//! keeps the encoder, decoder and JSON dump as loops over one table instead of three hand-written
//! copies of 28 fields.

use accprof_abi::acc_event_t;

/// An index into the trace's string table (file names, function, variable and kernel names).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct StrId(pub u32);

/// How a field's 64-bit slot is to be read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldType {
    Unsigned,
    Signed,
    /// A [`StrId`].
    String,
    /// An address or opaque handle, shown in hex.
    Pointer,
}

macro_rules! fields {
    ($($variant:ident = $idx:literal, $name:literal, $ty:ident;)*) => {
        /// The optional fields of an [`Event`]. The order is the bit order of the on-disk change
        /// mask: fields that change from one event to the next come first, so they fit the first
        /// byte of the mask.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        #[repr(u8)]
        pub enum Field { $($variant = $idx,)* }

        impl Field {
            /// Every field, in index order.
            pub const ALL: [Field; FIELD_COUNT] = [$(Field::$variant,)*];

            /// The name the OpenACC specification gives the field (and `accprof dump` prints).
            pub const fn name(self) -> &'static str {
                match self { $(Field::$variant => $name,)* }
            }

            pub const fn field_type(self) -> FieldType {
                match self { $(Field::$variant => FieldType::$ty,)* }
            }
        }
    };
}

fields! {
    Thread = 0, "thread_id", Signed;
    Bytes = 1, "bytes", Unsigned;
    HostPtr = 2, "host_ptr", Pointer;
    DevicePtr = 3, "device_ptr", Pointer;
    VarName = 4, "var_name", String;
    KernelName = 5, "kernel_name", String;
    NumGangs = 6, "num_gangs", Unsigned;
    NumWorkers = 7, "num_workers", Unsigned;
    VectorLength = 8, "vector_length", Unsigned;
    Async = 9, "async", Signed;
    AsyncQueue = 10, "async_queue", Signed;
    SrcFile = 11, "src_file", String;
    FuncName = 12, "func_name", String;
    LineNo = 13, "line_no", Signed;
    EndLineNo = 14, "end_line_no", Signed;
    FuncLineNo = 15, "func_line_no", Signed;
    FuncEndLineNo = 16, "func_end_line_no", Signed;
    DeviceType = 17, "device_type", Signed;
    DeviceNumber = 18, "device_number", Signed;
    ParentConstruct = 19, "parent_construct", Signed;
    Implicit = 20, "implicit", Signed;
    DeviceApi = 21, "device_api", Signed;
    DeviceHandle = 22, "device_handle", Pointer;
    ContextHandle = 23, "context_handle", Pointer;
    AsyncHandle = 24, "async_handle", Pointer;
    ReturnAddress = 25, "return_address", Pointer;
    Version = 26, "version", Signed;
    Flags = 27, "flags", Unsigned;
    // Device records (kinds in [`device`]) only.
    CopyKind = 28, "copy_kind", Unsigned;
    CorrelationId = 29, "correlation_id", Unsigned;
    HostCallNs = 30, "host_call_ns", Unsigned;
    // Heap blocks (libaccprof's allocation hooks): the block `host_ptr` lay in when the event
    // happened. Indices 31+ make the change mask wider than 32 bits (it is a varint on disk).
    AllocSite = 31, "alloc_site", Pointer;
    AllocBase = 32, "alloc_base", Pointer;
    AllocBytes = 33, "alloc_bytes", Unsigned;
    // Kernel device records: the launch geometry CUPTI recorded ([`device::pack_dim3`]).
    GridDim = 34, "grid_dim", Unsigned;
    BlockDim = 35, "block_dim", Unsigned;
    Registers = 36, "registers_per_thread", Unsigned;
    // Static plus dynamic shared memory per block, in bytes.
    SharedMem = 37, "shared_mem_bytes", Unsigned;
    // [`device::PROPERTIES`] only: the device's limits as `key=value` lines.
    DeviceProperties = 38, "device_properties", String;
    // The program's NVTX annotations ([`nvtx`] kinds): the range's or mark's message, the
    // domain it was given in (absent: the default domain), its category, its colour (ARGB)
    // and its payload (as the program's 64 bits, with the NVTX payload type).
    NvtxMessage = 39, "nvtx_message", String;
    NvtxDomain = 40, "nvtx_domain", String;
    NvtxCategory = 41, "nvtx_category", Unsigned;
    NvtxColor = 42, "nvtx_color", Unsigned;
    NvtxPayload = 43, "nvtx_payload", Unsigned;
    NvtxPayloadType = 44, "nvtx_payload_type", Unsigned;
    // A push/pop range's instance number (on [`nvtx::RANGE`]), and the instance of the range
    // around it; on any other event, the innermost push/pop range open on its thread when it
    // started.
    NvtxRange = 45, "nvtx_range", Unsigned;
    NvtxParent = 46, "nvtx_parent", Unsigned;
    // Transfers, when libaccprof hashes their bytes (ACCPROF_CONTENT): a 64-bit hash of the
    // host bytes an upload carried or a synchronous download delivered.
    ContentHash = 47, "content_hash", Pointer;
}

/// How many optional fields an event has.
pub const FIELD_COUNT: usize = 48;

/// Records about the tool itself, with kinds outside the specification's numbers.
pub mod tool {
    use accprof_abi::acc_event_t;

    /// A point event: the heap hooks' record queue overflowed and allocation records were lost;
    /// `bytes` holds how many (a count of records, not bytes). From then on the tool names no
    /// heap block, since a lost free could make a stale name.
    pub const HEAP_RECORDS_LOST: acc_event_t = acc_event_t(1100);
}

/// The program's own NVTX annotations, recorded through NVTX's tool interface (the program
/// and its libraries call nvtxRangePush/Pop, nvtxRangeStart/End, nvtxMark..., with the
/// header-only nvtx3 API). Kinds outside the specification's numbers; [`super::Field::Thread`]
/// is the thread that opened the range (the id its OpenACC events carry), and the NVTX fields
/// ([`super::Field::NvtxMessage`] ...) say what the program said.
pub mod nvtx {
    use accprof_abi::acc_event_t;

    /// A push/pop range: nested on its thread, `start_ns` at the push, `end_ns` at the pop.
    pub const RANGE: acc_event_t = acc_event_t(1201);
    /// A start/end range: not nested, possibly ended on another thread than it started on.
    pub const START_END: acc_event_t = acc_event_t(1202);
    /// A mark: one instant.
    pub const MARK: acc_event_t = acc_event_t(1203);
    /// A point event naming a category: [`super::Field::NvtxCategory`] (in
    /// [`super::Field::NvtxDomain`]) is called [`super::Field::NvtxMessage`].
    pub const CATEGORY_NAME: acc_event_t = acc_event_t(1204);
    /// A point event naming an OS thread: [`super::Field::Thread`] is called
    /// [`super::Field::NvtxMessage`].
    pub const THREAD_NAME: acc_event_t = acc_event_t(1205);

    /// Whether `kind` is one of the NVTX kinds.
    pub fn is_nvtx(kind: acc_event_t) -> bool {
        (RANGE.0..=THREAD_NAME.0).contains(&kind.0)
    }

    /// Whether `kind` names a category or a thread (no activity: timelines leave it out).
    pub fn is_name(kind: acc_event_t) -> bool {
        kind == CATEGORY_NAME || kind == THREAD_NAME
    }

    /// Whether `kind` is a range (push/pop or start/end).
    pub fn is_range(kind: acc_event_t) -> bool {
        kind == RANGE || kind == START_END
    }
}

/// Device records: what the device did (from CUPTI's activity API), with device timestamps.
///
/// Their kinds lie outside the OpenACC specification's numbers. `start_ns`/`end_ns` are when the
/// device ran the operation, converted to CLOCK_MONOTONIC; [`Field::HostCallNs`] is when the host
/// thread [`Field::Thread`] issued the driver call, which ties the record to the construct open on
/// that thread then. [`Field::AsyncHandle`] is the CUDA stream id, [`Field::CorrelationId`]
/// CUPTI's id of the driver call.
pub mod device {
    use accprof_abi::acc_event_t;

    /// A kernel's execution: `kernel_name` (the device function's name).
    pub const KERNEL: acc_event_t = acc_event_t(1001);
    /// A copy: `bytes`, [`super::Field::CopyKind`], and `host_ptr` when the driver call named one.
    pub const MEMCPY: acc_event_t = acc_event_t(1002);
    /// A memset: `bytes`.
    pub const MEMSET: acc_event_t = acc_event_t(1003);
    /// A point event, once per device the records ran on: `device_number` (the CUDA ordinal
    /// that kernel records name) and [`super::Field::DeviceProperties`], the device's limits
    /// as `key=value` lines ([`PROPERTY_KEYS`]).
    pub const PROPERTIES: acc_event_t = acc_event_t(1004);

    /// The keys of a [`PROPERTIES`] event's text, in the order libaccprof writes them (each is
    /// the CUDA device attribute of that meaning, in bytes for memory; `name` is the device's
    /// name). Readers skip keys they do not know.
    pub const PROPERTY_KEYS: [&str; 13] = [
        "compute_capability",
        "multiprocessors",
        "warp_size",
        "max_threads_per_block",
        "max_threads_per_multiprocessor",
        "max_blocks_per_multiprocessor",
        "registers_per_block",
        "registers_per_multiprocessor",
        "shared_memory_per_block",
        "shared_memory_per_block_optin",
        "shared_memory_per_multiprocessor",
        "reserved_shared_memory_per_block",
        "name",
    ];

    /// Packs a launch's x, y and z extents into one [`super::Field::GridDim`] or
    /// [`super::Field::BlockDim`] value: x in bits 0-31, y in 32-47, z in 48-63 (CUDA's grid
    /// limits are 2^31-1, 65535 and 65535; a block's are smaller). Larger values are cut.
    pub const fn pack_dim3(x: u64, y: u64, z: u64) -> u64 {
        (x & 0xffff_ffff) | (y & 0xffff) << 32 | (z & 0xffff) << 48
    }

    /// `(x, y, z)` of a packed [`pack_dim3`] value.
    pub const fn split_dim3(v: u64) -> (u64, u64, u64) {
        (v & 0xffff_ffff, (v >> 32) & 0xffff, v >> 48)
    }

    /// Whether `kind` is a device record.
    pub fn is_device_record(kind: acc_event_t) -> bool {
        matches!(kind, KERNEL | MEMCPY | MEMSET)
    }

    /// The copy direction in the low byte of [`super::Field::CopyKind`] (CUPTI's
    /// `CUpti_ActivityMemcpyKind`); bits 8-15 and 16-23 hold the source and destination memory
    /// kinds ([`MEM_PAGEABLE`], [`MEM_PINNED`], [`MEM_DEVICE`], ...).
    pub const COPY_HTOD: u64 = 1;
    pub const COPY_DTOH: u64 = 2;
    pub const COPY_DTOD: u64 = 8;
    pub const COPY_HTOH: u64 = 9;
    pub const COPY_PTOP: u64 = 10;
    pub const MEM_PAGEABLE: u64 = 1;
    pub const MEM_PINNED: u64 = 2;
    pub const MEM_DEVICE: u64 = 3;

    /// Packs a copy's direction and memory kinds into the [`super::Field::CopyKind`] value.
    pub const fn copy_kind(direction: u8, src_mem: u8, dst_mem: u8) -> u64 {
        direction as u64 | (src_mem as u64) << 8 | (dst_mem as u64) << 16
    }

    /// `(direction, src_mem, dst_mem)` of a [`super::Field::CopyKind`] value.
    pub const fn split_copy_kind(v: u64) -> (u64, u64, u64) {
        (v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff)
    }
}

/// Facts about how an event was recorded, kept in [`Field::Flags`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct EventFlags(pub u64);

impl EventFlags {
    /// An end event arrived with no start event before it on its thread; `start_ns == end_ns`.
    pub const NO_START: Self = Self(1);
    /// A start event never saw its end (the program ended or was killed inside the construct);
    /// `end_ns` is when the tool gave up waiting.
    pub const NO_END: Self = Self(1 << 1);
    /// The runtime gave no thread id (-1); [`Field::Thread`] holds the OS thread id instead.
    pub const OS_THREAD_ID: Self = Self(1 << 2);
    /// The event arrived after the tool had written its final summary at exit.
    pub const AFTER_SHUTDOWN: Self = Self(1 << 3);
    /// The runtime passed bytes = SIZE_MAX (libgomp does on free): size unknown.
    pub const BYTES_UNKNOWN: Self = Self(1 << 4);
    /// `src_file`, `line_no` and `func_name` were not reported by the runtime but attributed by
    /// accprof from the application's return address and its debug information.
    pub const ATTRIBUTED_LOCATION: Self = Self(1 << 5);
    /// `var_name` was not reported by the runtime but read by accprof from the symbol table:
    /// `host_ptr` lies inside that global or static variable.
    pub const ATTRIBUTED_NAME: Self = Self(1 << 6);
    /// A device record timed with CUDA events that the tool recorded on the runtime's stream
    /// around the operation (no CUPTI): no `correlation_id`; the span is what the stream did
    /// between the operation's enqueue start and end.
    pub const FROM_CUDA_EVENTS: Self = Self(1 << 7);

    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The flag names, for dumps.
    pub fn names(self) -> Vec<&'static str> {
        let all = [
            (Self::NO_START, "no_start"),
            (Self::NO_END, "no_end"),
            (Self::OS_THREAD_ID, "os_thread_id"),
            (Self::AFTER_SHUTDOWN, "after_shutdown"),
            (Self::BYTES_UNKNOWN, "bytes_unknown"),
            (Self::ATTRIBUTED_LOCATION, "attributed_location"),
            (Self::ATTRIBUTED_NAME, "attributed_name"),
            (Self::FROM_CUDA_EVENTS, "from_cuda_events"),
        ];
        all.iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// One recorded event. Plain data, `Copy`, no heap: the tool library fills these on the hot path.
///
/// Only the fields in the present mask have a value; the slots of the others hold whatever an
/// earlier use of the event left there (so that [`Event::reset`] costs the same whatever was
/// set), and equality and `Debug` ignore them.
#[derive(Clone, Copy)]
pub struct Event {
    /// The event number; for a joined pair, the start event's.
    pub kind: acc_event_t,
    /// Monotonic clock (CLOCK_MONOTONIC) nanoseconds at the start event.
    pub start_ns: u64,
    /// Monotonic clock nanoseconds at the end event; equals `start_ns` for point events.
    pub end_ns: u64,
    present: u64,
    values: [u64; FIELD_COUNT],
}

impl Default for Event {
    fn default() -> Self {
        Self::new(acc_event_t::NONE, 0)
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, self.start_ns, self.end_ns, self.present)
            == (other.kind, other.start_ns, other.end_ns, other.present)
            && self.set_values().eq(other.set_values())
    }
}

impl Eq for Event {}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: Vec<(Field, u64)> = Field::ALL
            .iter()
            .filter_map(|&fd| self.get(fd).map(|v| (fd, v)))
            .collect();
        f.debug_struct("Event")
            .field("kind", &self.kind)
            .field("start_ns", &self.start_ns)
            .field("end_ns", &self.end_ns)
            .field("fields", &fields)
            .finish()
    }
}

impl Event {
    /// An event of `kind` at `start_ns` with no optional field set.
    pub const fn new(kind: acc_event_t, start_ns: u64) -> Self {
        Self {
            kind,
            start_ns,
            end_ns: start_ns,
            present: 0,
            values: [0; FIELD_COUNT],
        }
    }

    /// The raw 64-bit slot of `field`, if recorded.
    #[inline]
    pub fn get(&self, field: Field) -> Option<u64> {
        let i = field as usize;
        (self.present & (1 << i) != 0).then(|| self.values[i])
    }

    /// A signed field (lines, device number, async...).
    #[inline]
    pub fn get_i64(&self, field: Field) -> Option<i64> {
        self.get(field).map(|v| v as i64)
    }

    /// A string field.
    #[inline]
    pub fn get_str(&self, field: Field) -> Option<StrId> {
        self.get(field).map(|v| StrId(v as u32))
    }

    #[inline]
    pub fn set(&mut self, field: Field, value: u64) {
        let i = field as usize;
        self.present |= 1 << i;
        self.values[i] = value;
    }

    #[inline]
    pub fn set_i64(&mut self, field: Field, value: i64) {
        self.set(field, value as u64);
    }

    #[inline]
    pub fn clear(&mut self, field: Field) {
        self.present &= !(1 << field as usize);
    }

    /// Makes this an event of `kind` at `start_ns..end_ns` with no field set, without touching
    /// the field slots (cheaper than a new event when reusing one).
    #[inline]
    pub fn reset(&mut self, kind: acc_event_t, start_ns: u64, end_ns: u64) {
        (self.kind, self.start_ns, self.end_ns, self.present) = (kind, start_ns, end_ns, 0);
    }

    /// Every field's slot, indexed by [`Field`]. Only the slots of the fields in
    /// [`present_mask`](Self::present_mask) hold values; the others are stale.
    #[inline]
    pub fn values(&self) -> &[u64; FIELD_COUNT] {
        &self.values
    }

    /// The values of the set fields, in field order.
    fn set_values(&self) -> impl Iterator<Item = u64> + '_ {
        let mut bits = self.present;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.values[i]
            })
        })
    }

    /// Becomes `ev` where the fields in `changed` (and the kind and times) differ from this
    /// event; every other present field already holds `ev`'s value (the encoder's delta base).
    #[inline]
    pub(crate) fn take_changed(&mut self, ev: &Event, changed: u64) {
        self.kind = ev.kind;
        self.start_ns = ev.start_ns;
        self.end_ns = ev.end_ns;
        self.present = ev.present;
        let mut bits = changed & ev.present;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            self.values[i] = ev.values[i];
        }
    }

    /// Which fields are set, as a bit mask indexed by [`Field`].
    #[inline]
    pub fn present_mask(&self) -> u64 {
        self.present
    }

    /// The presence mask and the slots, for a decoder that diffs each field against the
    /// previous event's value as it sets it (crate::encode::FieldEncoder).
    #[inline(always)]
    pub(crate) fn parts_mut(&mut self) -> (&mut u64, &mut [u64; FIELD_COUNT]) {
        (&mut self.present, &mut self.values)
    }

    pub fn flags(&self) -> EventFlags {
        EventFlags(self.get(Field::Flags).unwrap_or(0))
    }

    pub fn add_flags(&mut self, flags: EventFlags) {
        let f = self.flags().union(flags);
        self.set(Field::Flags, f.0);
    }

    /// `end_ns - start_ns`, never negative.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Convenience accessors for the fields every consumer reads.
    pub fn thread(&self) -> Option<i64> {
        self.get_i64(Field::Thread)
    }
    pub fn bytes(&self) -> Option<u64> {
        self.get(Field::Bytes)
    }
    pub fn line_no(&self) -> Option<i64> {
        self.get_i64(Field::LineNo)
    }
    pub fn src_file(&self) -> Option<StrId> {
        self.get_str(Field::SrcFile)
    }
    pub fn func_name(&self) -> Option<StrId> {
        self.get_str(Field::FuncName)
    }
    pub fn var_name(&self) -> Option<StrId> {
        self.get_str(Field::VarName)
    }
    pub fn kernel_name(&self) -> Option<StrId> {
        self.get_str(Field::KernelName)
    }
    pub fn async_queue(&self) -> Option<i64> {
        self.get_i64(Field::AsyncQueue)
    }
    pub fn implicit(&self) -> bool {
        self.get_i64(Field::Implicit).is_some_and(|v| v != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_forgets_fields_and_equality_ignores_stale_slots() {
        let mut a = Event::new(acc_event_t(16), 1);
        a.set(Field::LineNo, 7);
        a.set(Field::Bytes, 9);
        a.reset(acc_event_t(18), 2, 3);
        assert_eq!((a.get(Field::LineNo), a.get(Field::Bytes)), (None, None));
        let mut b = Event::new(acc_event_t(18), 2);
        b.end_ns = 3;
        assert_eq!(a, b, "the stale slots of LineNo and Bytes do not count");
        a.set(Field::Bytes, 5);
        b.set(Field::Bytes, 5);
        assert_eq!(a, b);
        b.set(Field::Bytes, 6);
        assert_ne!(a, b);
        b.clear(Field::Bytes);
        assert_ne!(a, b);
        assert!(
            !format!("{a:?}").contains("LineNo"),
            "Debug shows set fields only: {a:?}"
        );
    }

    #[test]
    fn field_table_is_dense_and_fits_the_mask() {
        for (i, f) in Field::ALL.iter().enumerate() {
            assert_eq!(*f as usize, i);
        }
        // The presence and change masks are u64: checked at compile time.
        const _: () = assert!(FIELD_COUNT <= 64);
    }

    #[test]
    fn copy_kind_packs_and_splits() {
        let v = device::copy_kind(
            device::COPY_DTOH as u8,
            device::MEM_DEVICE as u8,
            device::MEM_PAGEABLE as u8,
        );
        assert_eq!(
            device::split_copy_kind(v),
            (device::COPY_DTOH, device::MEM_DEVICE, device::MEM_PAGEABLE)
        );
        assert!(device::is_device_record(device::MEMCPY));
        assert!(
            !device::is_device_record(device::PROPERTIES),
            "the device's limits are no activity"
        );
        assert!(!device::is_device_record(acc_event_t::ENQUEUE_UPLOAD_START));
    }

    #[test]
    fn launch_dimensions_pack_and_split() {
        let v = device::pack_dim3((1 << 31) - 1, 65_535, 7);
        assert_eq!(device::split_dim3(v), ((1 << 31) - 1, 65_535, 7));
        assert_eq!(
            device::split_dim3(device::pack_dim3(128, 1, 1)),
            (128, 1, 1)
        );
    }

    #[test]
    fn set_get_clear() {
        let mut e = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 5);
        assert_eq!(e.bytes(), None);
        e.set(Field::Bytes, 64);
        e.set_i64(Field::LineNo, -7);
        assert_eq!(e.bytes(), Some(64));
        assert_eq!(e.line_no(), Some(-7));
        e.clear(Field::Bytes);
        assert_eq!(e.bytes(), None);
        e.add_flags(EventFlags::NO_END);
        e.add_flags(EventFlags::OS_THREAD_ID);
        assert_eq!(e.flags().names(), ["no_end", "os_thread_id"]);
    }

    #[test]
    fn fields_past_bit_31_round_trip_through_the_encoder() {
        use crate::encode::{EventDecoder, EventEncoder};
        let mut e = Event::new(acc_event_t::ENQUEUE_UPLOAD_START, 10);
        e.set(Field::HostPtr, 0x7f00_0000_1000);
        e.set(Field::AllocSite, 0x5555_0000_1234);
        e.set(Field::AllocBase, 0x7f00_0000_0000);
        e.set(Field::AllocBytes, 1 << 20);
        let mut plain = e;
        plain.clear(Field::AllocSite);
        plain.clear(Field::AllocBase);
        plain.clear(Field::AllocBytes);
        let mut kernel = Event::new(device::KERNEL, 20);
        kernel.set(Field::GridDim, device::pack_dim3(4, 1, 1));
        kernel.set(Field::BlockDim, device::pack_dim3(32, 4, 1));
        kernel.set(Field::Registers, 40);
        kernel.set(Field::SharedMem, 1024);
        let mut limits = Event::new(device::PROPERTIES, 30);
        limits.set_i64(Field::DeviceNumber, 0);
        limits.set(Field::DeviceProperties, 3);
        let evs = [e, plain, e, kernel, limits, kernel];
        let mut enc = EventEncoder::new();
        let mut buf = Vec::new();
        for ev in &evs {
            enc.encode(ev, &mut buf);
        }
        let mut dec = EventDecoder::new();
        let mut cur = crate::varint::Cursor::new(&buf);
        for ev in &evs {
            assert_eq!(&dec.decode(&mut cur).unwrap(), ev);
        }
    }
}
