//! The vocabulary every accprof view shares, so that one trace means the same thing in
//! `accprof report`, `advise`, `diff`, `export`, `plot`, `dump` and the TUI.
//!
//! The crates stack as abi -> trace -> symbols -> **timeline** -> analysis -> cli, tui. Events
//! come from `accprof_symbols::ResolvingReader` (one streaming reader that resolves call sites
//! and names unnamed host data as it goes); this crate says what each event is:
//!
//! - [`taxonomy`]: the [`Category`] of an event (kernels, data, wait, init, host), its
//!   [`EventClass`] for views that nest operations in constructs ([`ConstructKind`],
//!   [`ChildKind`]), the [`Direction`] of a transfer, whether it is asynchronous ([`is_async`],
//!   with the `ACC_ASYNC_*` values of [`accprof_abi`]), whether it enqueues device work or is
//!   an instant.
//! - [`track`]: the [`TrackKind`] an event goes on (host thread, a thread's synchronous device
//!   work, async queue, CUDA stream), the [`TrackKey`] of a track of one trace, its one name
//!   ([`TrackKind::name`]) and the [`TrackTable`] of a layout's tracks.
//! - [`device`]: what a device record says ([`DeviceRecord`], [`DeviceOp`]), the words CUDA's
//!   tools name copies and memory with, and the one rule that ties a record to the slice that
//!   issued it ([`DeviceRecord::issuer_search`], [`device::issuer_among`]), with
//!   [`by_name`] for kernel records that name no call.
//! - [`compact`]: [`CompactEvent`], an event in 88 bytes, as a layout holds and places it.
//! - [`order`]: slices in start order from the end order a trace holds them in, through a
//!   bounded window per track ([`order::StartWindow`]).
//! - [`lanes`]: the one rule that stacks a track's slices into lanes and depths.
//! - [`issuers`]: the recent slices a late device record may have been issued by.
//! - [`layout`]: the streaming [`Layout`] of traces that export and plot draw ([`Sink`]); the
//!   TUI, which keeps every event, applies the same rules whole.
//! - [`title`]: a slice's one [`Title`] ("upload 8 MiB A", "parallel"), the same in every view.
//! - [`mod@format`]: durations, bytes and rates for people, the same in every view.
//!
//! ```
//! use accprof_abi::acc_event_t;
//! use accprof_timeline::{format, Category, TrackKind};
//! use accprof_trace::{Event, Field};
//! let mut ev = Event::new(acc_event_t::ENQUEUE_LAUNCH_START, 1_000);
//! ev.end_ns = 13_300;
//! ev.set_i64(Field::Thread, 1);
//! assert_eq!(Category::of(ev.kind), Category::Kernels);
//! assert_eq!(TrackKind::of_event(&ev), TrackKind::DeviceSync { thread: Some(1) });
//! assert_eq!(format::duration(ev.duration_ns()), "12.3 us");
//! ```

#![warn(clippy::undocumented_unsafe_blocks)]

//! # For a view
//!
//! A view reads with `accprof_symbols::ResolvingReader` (`advance`/`event` in a loop, or
//! `for_each_batch` to decode on a second thread; `chunk_index` and `ChunkReader::open_at` to
//! read a part again) and hands each event to a [`Layout`], whose [`Sink`] it is: it gets every
//! slice placed (track, lane, depth), in each track's start order, device records with their
//! issuer and flow. It colours or sums by [`Category::of`], nests constructs with
//! [`EventClass::of`], names tracks with [`TrackTable::name`] and prints numbers with
//! [`mod@format`]. Its tests can check it agrees with the report, export and plot through
//! `accprof_testkit::consistency`.

pub mod by_name;
pub mod compact;
pub mod device;
pub mod format;
pub mod issuers;
pub mod lanes;
pub mod layout;
pub mod order;
pub mod taxonomy;
pub mod title;
pub mod track;

pub use compact::CompactEvent;
pub use device::{DeviceOp, DeviceRecord};
pub use layout::{DeviceSlice, Flow, Late, Layout, LayoutConfig, LayoutStats, Sink};
pub use taxonomy::{
    is_async, is_enqueue, is_point, Category, ChildKind, ConstructKind, Direction, EventClass,
};
pub use title::Title;
pub use track::{NameStyle, TrackId, TrackKey, TrackKind, TrackTable};
