//! [`CompactEvent`]: the part of an [`Event`] a timeline view needs, in 88 bytes.
//!
//! A full [`Event`] is ~300 bytes (every optional field has a slot). Holding or sorting a million
//! of them would cost a quarter of a gigabyte, so views keep this instead: times, the track, and
//! the handful of fields that go into a name or a tooltip. The layout ([`crate::layout`]) holds
//! these in its windows and hands them out placed.

use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{device, Event, EventFlags, Field, StrId};

/// "Not recorded" for the 32-bit string and number slots below.
pub const NONE_U32: u32 = u32::MAX;
/// "Not recorded" for the string slots below. Not `u32::MAX`: the reader numbers the strings it
/// adds (resolved file names, variables named from the symbol table) down from `u32::MAX`,
/// while the ids a trace defines stay far below 2^31; the first added string would read as
/// absent.
pub const NO_STRING: u32 = 1 << 31;
/// "Not recorded" for the 32-bit signed slots below.
pub const NONE_I32: i32 = i32::MIN;

/// One event, ready to be placed on a track and drawn or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactEvent {
    /// Nanoseconds on the view's clock (the export's is the wall clock, so that ranks line up).
    pub start: u64,
    pub end: u64,
    /// Bytes transferred, allocated or freed; `u64::MAX` when not recorded.
    pub bytes: u64,
    /// Index of the track in the view's table of [`crate::TrackKey`]s.
    pub track: u32,
    /// Which lane of its track the slice landed on (0 unless it crossed another slice), and
    /// how many slices of that lane it is nested in ([`crate::lanes`]).
    pub lane: u16,
    pub depth: u16,
    /// Index of the trace (rank) it came from, for its string table.
    pub trace: u16,
    pub kind: i32,
    /// `var_name` for data events, `kernel_name` for launches, as a raw [`StrId`] ([`NO_STRING`]
    /// when absent, as for `src_file` and `func`).
    pub name: u32,
    pub src_file: u32,
    pub func: u32,
    pub line: i32,
    pub end_line: i32,
    pub num_gangs: u32,
    pub num_workers: u32,
    pub vector_length: u32,
    pub async_: i32,
    pub async_queue: i32,
    pub construct: i32,
    pub implicit: bool,
    /// [`EventFlags`] bits (they all fit in a byte).
    pub flags: u8,
    /// Index into the view's table of device-record details for a device record, else
    /// [`NONE_U32`]. It fits in what would be padding, so the struct does not grow.
    pub device: u32,
}

impl CompactEvent {
    /// The compact form of `ev`, whose times are moved to the common clock by `clock`.
    pub fn from_event(ev: &Event, trace: u16, track: u32, clock: impl Fn(u64) -> u64) -> Self {
        let i32_or_none = |f: Field| ev.get_i64(f).map_or(NONE_I32, clamp_i32);
        let u32_or_none = |f: Field| {
            ev.get(f)
                .map_or(NONE_U32, |v| v.min(u64::from(NONE_U32 - 1)) as u32)
        };
        let [name, src_file, func] =
            Self::strings_named(ev).map(|id| id.map_or(NO_STRING, |s| s.0));
        let bytes = if ev.flags().contains(EventFlags::BYTES_UNKNOWN) {
            None
        } else {
            ev.bytes()
        };
        CompactEvent {
            start: clock(ev.start_ns),
            end: clock(ev.end_ns.max(ev.start_ns)),
            bytes: bytes.unwrap_or(u64::MAX),
            track,
            lane: 0,
            depth: 0,
            trace,
            kind: ev.kind.0,
            name,
            src_file,
            func,
            line: i32_or_none(Field::LineNo),
            end_line: i32_or_none(Field::EndLineNo),
            num_gangs: u32_or_none(Field::NumGangs),
            num_workers: u32_or_none(Field::NumWorkers),
            vector_length: u32_or_none(Field::VectorLength),
            async_: i32_or_none(Field::Async),
            async_queue: i32_or_none(Field::AsyncQueue),
            construct: i32_or_none(Field::ParentConstruct),
            implicit: ev.implicit(),
            flags: ev.flags().0 as u8,
            device: NONE_U32,
        }
    }

    /// The strings the compact form of `ev` names: its name (`var_name` for data events,
    /// `kernel_name` for launches and kernels), source file and function.
    pub fn strings_named(ev: &Event) -> [Option<StrId>; 3] {
        let name = if ev.kind == acc_event_t::ENQUEUE_LAUNCH_START || ev.kind == device::KERNEL {
            Field::KernelName
        } else if accprof_trace::nvtx::is_nvtx(ev.kind) {
            Field::NvtxMessage
        } else {
            Field::VarName
        };
        [name, Field::SrcFile, Field::FuncName].map(|f| ev.get_str(f))
    }

    pub fn event(&self) -> acc_event_t {
        acc_event_t(self.kind)
    }

    pub fn duration(&self) -> u64 {
        self.end - self.start
    }

    pub fn bytes(&self) -> Option<u64> {
        (self.bytes != u64::MAX).then_some(self.bytes)
    }

    pub fn name_id(&self) -> Option<StrId> {
        opt_str(self.name)
    }

    pub fn src_file_id(&self) -> Option<StrId> {
        opt_str(self.src_file)
    }

    pub fn func_id(&self) -> Option<StrId> {
        opt_str(self.func)
    }

    pub fn construct(&self) -> Option<acc_construct_t> {
        (self.construct != NONE_I32).then_some(acc_construct_t(self.construct))
    }

    /// A device record (kernel, memcpy, memset measured on the device): its index in the
    /// view's device table.
    pub fn device_index(&self) -> Option<usize> {
        (self.device != NONE_U32).then_some(self.device as usize)
    }

    /// A point event (create, delete, alloc, free, runtime shutdown): an instant, not a slice.
    pub fn is_point(&self) -> bool {
        crate::taxonomy::is_point(self.event())
    }

    /// Where the event's time goes.
    pub fn category(&self) -> crate::Category {
        crate::Category::of(self.event())
    }
}

impl crate::device::Span for CompactEvent {
    fn start(&self) -> u64 {
        self.start
    }
    fn end(&self) -> u64 {
        self.end
    }
    fn is_point(&self) -> bool {
        CompactEvent::is_point(self)
    }
}

fn opt_str(raw: u32) -> Option<StrId> {
    (raw != NO_STRING).then_some(StrId(raw))
}

fn clamp_i32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN + 1), i64::from(i32::MAX)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use accprof_trace::StringTable;

    #[test]
    fn the_device_index_fits_in_what_was_padding() {
        // 3 x u64, 14 x 32-bit, 3 x u16, 2 bytes: 88 bytes.
        assert_eq!(std::mem::size_of::<CompactEvent>(), 88);
    }

    #[test]
    fn strings_the_reader_added_stay_present() {
        // The first string a reader adds gets id u32::MAX.
        let mut strings = StringTable::default();
        let file = strings.intern("/src/laplace.c");
        let mut ev = Event::new(acc_event_t::COMPUTE_CONSTRUCT_START, 1);
        ev.set(Field::SrcFile, u64::from(file.0));
        let s = CompactEvent::from_event(&ev, 0, 0, |t| t);
        assert_eq!(strings.resolve(s.src_file_id()), Some("/src/laplace.c"));
        assert_eq!(s.func_id(), None);
    }
}
