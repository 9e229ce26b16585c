//! The streaming writer: one `TracePacket` encoded at a time into a bounded buffer that is
//! flushed to the caller's `io::Write`.
//!
//! Layout of the output (what trace_processor and the Perfetto UI expect from a TrackEvent
//! producer):
//! - Track descriptors are written on sequence 1 as tracks are created.
//! - Every track that gets events has its own packet sequence (trusted_packet_sequence_id 2,
//!   3, ...). Its first packet clears the incremental state and sets the sequence's defaults:
//!   the track (so events carry no track uuid) and a sequence-scoped clock (id 64) that is
//!   delta-encoded, so each event carries the nanoseconds since the previous one on its track
//!   instead of an absolute time. A clock snapshot ties that clock to BOOTTIME, the trace
//!   clock.
//! - Event names, categories, argument names, string values and source locations are interned:
//!   each is written once per sequence, in the packet of the first event that uses it, and
//!   events refer to it by iid.
//! - Event packets carry no sequence flags: the incremental state they use is cleared by their
//!   sequence's first packet and never lost in a file written whole.

use std::io::{self, Write};

use prost::Message;

use crate::event::{ArgValue, CounterUnit, Event};
use crate::ids::{ArgNameId, CategoryId, FlowId, LocationId, NameId, StringId, TrackId};
use crate::intern::{LocationTable, Seen, StringTable};
use crate::protos::{
    self, clock_snapshot, counter_descriptor, debug_annotation, trace_packet, track_descriptor,
    track_event, ClockSnapshot, CounterDescriptor, DebugAnnotation, DebugAnnotationName,
    EventCategory, EventName, InternedData, InternedString, ProcessDescriptor, SourceLocation,
    ThreadDescriptor, TracePacket, TracePacketDefaults, TrackDescriptor, TrackEventDefaults,
};

/// The sequence that carries the track descriptors.
const DESCRIPTOR_SEQUENCE: u32 = 1;
/// Perfetto's first sequence-scoped clock id; the SDK uses it for its delta-encoded clock.
const INCREMENTAL_CLOCK: u32 = 64;
/// The trace clock: timestamps given to the writer are taken as nanoseconds on it.
const TRACE_CLOCK: u32 = protos::BuiltinClock::Boottime as u32;
/// Encoded packets are gathered up to this size before one write to the output.
const FLUSH_AT: usize = 256 * 1024;
/// Field number of `Trace.packet`, as a length-delimited key (field 1, wire type 2).
const TRACE_PACKET_KEY: u8 = (1 << 3) | 2;

/// What kind of track a [`TrackId`] names, which decides the events it accepts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TrackKind {
    Process,
    Slices,
    Counter,
}

/// The state of one packet sequence (one per track with events).
struct Sequence {
    id: u32,
    /// The counter tracks whose values an event carries without naming them, in this order
    /// (its `TrackEventDefaults.extra_counter_track_uuids`).
    counters: Vec<u64>,
    /// The time the delta-encoded clock stands at.
    last_ts: u64,
    names: Seen,
    categories: Seen,
    arg_names: Seen,
    strings: Seen,
    locations: Seen,
}

struct Track {
    kind: TrackKind,
    /// The process the track belongs to (its own uuid for a process).
    process: u64,
    sequence: Option<Sequence>,
    /// Ends of the slices given to [`PerfettoWriter::slice`] that are still open, innermost
    /// last.
    open_ends: Vec<u64>,
    /// For a process: its counter tracks, in the order they were made.
    counters: Vec<u64>,
}

/// Counts of what a writer has written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Track events (slice begins and ends, instants, counter values).
    pub events: u64,
    /// All packets, events and descriptors and sequence headers.
    pub packets: u64,
    /// Bytes handed to the output.
    pub bytes: u64,
}

/// Writes a Perfetto trace (a `perfetto.protos.Trace`: one `TracePacket` after another) to any
/// `io::Write`, one packet at a time.
///
/// Memory stays bounded: a 256 KiB output buffer, one reused event, and tables that grow with
/// the distinct strings, tracks and slice nesting depth, never with the number of events.
///
/// Events on one track should come in time order (each track's timestamps are delta-encoded;
/// an earlier time is still written correctly, as an absolute timestamp, at a few bytes more).
/// Tracks may be interleaved in any order: trace_processor sorts the whole trace.
pub struct PerfettoWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    tracks: Vec<Track>,
    pids: Vec<i32>,
    names: StringTable,
    categories: StringTable,
    arg_names: StringTable,
    strings: StringTable,
    locations: LocationTable,
    next_sequence: u32,
    next_flow: u64,
    /// The packet every event is written from, reused in place so that writing one allocates
    /// and moves nothing; its `data` is always a track event.
    event_packet: TracePacket,
    /// Interned data being gathered for the next event; moved into `event_packet` only when
    /// an event defines something.
    interned: InternedData,
    stats: Stats,
}

impl<W: Write> std::fmt::Debug for PerfettoWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfettoWriter")
            .field("tracks", &self.tracks.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer that writes to `out`. Nothing is written until the first track is created.
    pub fn new(out: W) -> Self {
        PerfettoWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            tracks: Vec::new(),
            pids: Vec::new(),
            names: StringTable::default(),
            categories: StringTable::default(),
            arg_names: StringTable::default(),
            strings: StringTable::default(),
            locations: LocationTable::default(),
            next_sequence: DESCRIPTOR_SEQUENCE + 1,
            next_flow: 1,
            event_packet: TracePacket {
                data: Some(trace_packet::Data::TrackEvent(protos::TrackEvent::default())),
                // No `SEQ_NEEDS_INCREMENTAL_STATE`: that flag only tells trace_processor to
                // drop a packet whose sequence lost its incremental state (a ring buffer that
                // overwrote the clearing packet); a file written whole loses nothing, every
                // sequence is cleared by its first packet, and interned names and the
                // delta-encoded clock resolve without it. 2 bytes less on every event.
                sequence_flags: None,
                ..Default::default()
            },
            interned: InternedData::default(),
            stats: Stats::default(),
        }
    }

    // ---- interning -------------------------------------------------------------------------

    /// The handle of an event name.
    pub fn name(&mut self, name: &str) -> NameId {
        NameId(self.names.intern(name))
    }

    /// The handle of a category.
    pub fn category(&mut self, category: &str) -> CategoryId {
        CategoryId(self.categories.intern(category))
    }

    /// The handle of a source location.
    pub fn location(&mut self, file: &str, function: &str, line: u32) -> LocationId {
        LocationId(self.locations.intern(file, function, line))
    }

    /// The handle of an argument name.
    pub fn arg_name(&mut self, name: &str) -> ArgNameId {
        ArgNameId(self.arg_names.intern(name))
    }

    /// The handle of a string argument value.
    pub fn string(&mut self, value: &str) -> StringId {
        StringId(self.strings.intern(value))
    }

    /// A flow id not given out before by this writer.
    pub fn new_flow(&mut self) -> FlowId {
        let id = FlowId(self.next_flow);
        self.next_flow += 1;
        id
    }

    // ---- tracks ----------------------------------------------------------------------------

    /// A process: one per MPI rank (or per traced program). `pid` must differ between the
    /// processes of one trace, since Perfetto merges tracks by pid; `labels` are shown beside
    /// its name (for example `rank 1`).
    pub fn process(&mut self, pid: i32, name: &str, labels: &[&str]) -> io::Result<TrackId> {
        if self.pids.contains(&pid) {
            return Err(invalid(format!(
                "pid {pid} is already used by another process of this trace; give each rank a distinct pid"
            )));
        }
        self.pids.push(pid);
        let uuid = self.new_track(TrackKind::Process, None);
        self.write_descriptor(TrackDescriptor {
            uuid: Some(uuid),
            process: Some(ProcessDescriptor {
                pid: Some(pid),
                process_name: Some(name.to_owned()),
                process_labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        Ok(TrackId(uuid))
    }

    /// A host thread of `process`.
    pub fn thread(&mut self, process: TrackId, tid: i64, name: &str) -> io::Result<TrackId> {
        let pid = self.process_pid(process)?;
        let uuid = self.new_track(TrackKind::Slices, Some(process.0));
        self.write_descriptor(TrackDescriptor {
            uuid: Some(uuid),
            thread: Some(ThreadDescriptor {
                pid: Some(pid),
                tid: Some(tid),
                thread_name: Some(name.to_owned()),
            }),
            ..Default::default()
        })?;
        Ok(TrackId(uuid))
    }

    /// A named track of slices under `parent` (a process, a thread, or a group of tracks).
    pub fn slice_track(&mut self, parent: TrackId, name: &str) -> io::Result<TrackId> {
        let parent_track = self.track(parent)?;
        if parent_track.kind == TrackKind::Counter {
            return Err(invalid(format!(
                "track {} is a counter track and cannot hold other tracks",
                parent.0
            )));
        }
        let process = parent_track.process;
        let uuid = self.new_track(TrackKind::Slices, Some(process));
        self.write_descriptor(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent.0),
            static_or_dynamic_name: Some(track_descriptor::StaticOrDynamicName::Name(
                name.to_owned(),
            )),
            ..Default::default()
        })?;
        Ok(TrackId(uuid))
    }

    /// A counter track under `parent` (for example `bytes moved` or `device memory in use`).
    /// Its values are absolute: written by [`counter`](Self::counter) on its own sequence, or
    /// carried by a slice or instant of any track at the same time ([`Event::counters`]).
    pub fn counter_track(
        &mut self,
        parent: TrackId,
        name: &str,
        unit: CounterUnit,
    ) -> io::Result<TrackId> {
        self.new_counter_track(parent, name, unit)
    }

    fn new_counter_track(
        &mut self,
        parent: TrackId,
        name: &str,
        unit: CounterUnit,
    ) -> io::Result<TrackId> {
        let parent_track = self.track(parent)?;
        if parent_track.kind == TrackKind::Counter {
            return Err(invalid(format!(
                "track {} is a counter track and cannot hold other tracks",
                parent.0
            )));
        }
        let process = parent_track.process;
        let uuid = self.new_track(TrackKind::Counter, Some(process));
        self.tracks[process as usize - 1].counters.push(uuid);
        let unit = match unit {
            CounterUnit::Bytes => counter_descriptor::Unit::SizeBytes,
            CounterUnit::Count => counter_descriptor::Unit::Count,
            CounterUnit::TimeNs => counter_descriptor::Unit::TimeNs,
        };
        self.write_descriptor(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent.0),
            static_or_dynamic_name: Some(track_descriptor::StaticOrDynamicName::Name(
                name.to_owned(),
            )),
            counter: Some(CounterDescriptor {
                unit: Some(unit as i32),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        Ok(TrackId(uuid))
    }

    // ---- events ----------------------------------------------------------------------------

    /// A slice from `start` to `end` on `track`, nested in the slices given before it that are
    /// still open. Give each track's slices in start order, the enclosing one first when two
    /// start together; the writer writes the ends when their time comes (or at
    /// [`finish`](Self::finish)). A slice that would end after the slice enclosing it is
    /// refused, since Perfetto slices on one track must nest.
    pub fn slice(
        &mut self,
        track: TrackId,
        start: u64,
        end: u64,
        event: &Event<'_>,
    ) -> io::Result<()> {
        let index = self.slice_track_index(track)?;
        if end < start {
            return Err(invalid(format!(
                "slice on track {} ends ({end}) before it starts ({start})",
                track.0
            )));
        }
        self.close_until(index, start)?;
        if let Some(&enclosing_end) = self.tracks[index].open_ends.last() {
            if end > enclosing_end {
                return Err(invalid(format!(
                    "slice {start}..{end} on track {} overlaps the slice enclosing it (ending at {enclosing_end}); put it on a track of its own",
                    track.0
                )));
            }
        }
        self.emit(
            index,
            start,
            track_event::Type::SliceBegin,
            Some(event),
            None,
        )?;
        self.tracks[index].open_ends.push(end);
        Ok(())
    }

    /// An instant event (a point in time) on `track`.
    pub fn instant(&mut self, track: TrackId, ts: u64, event: &Event<'_>) -> io::Result<()> {
        let index = self.slice_track_index(track)?;
        self.close_until(index, ts)?;
        self.emit(index, ts, track_event::Type::Instant, Some(event), None)
    }

    /// The value of a counter track from `ts` on.
    pub fn counter(&mut self, track: TrackId, ts: u64, value: i64) -> io::Result<()> {
        let index = self.counter_track_index(track)?;
        self.emit(
            index,
            ts,
            track_event::Type::Counter,
            None,
            Some(track_event::CounterValueField::CounterValue(value)),
        )
    }

    /// What has been written so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Writes the ends of the slices still open, flushes everything to the output, and gives
    /// the output back with the final counts.
    pub fn finish(mut self) -> io::Result<(W, Stats)> {
        for index in 0..self.tracks.len() {
            self.close_until(index, u64::MAX)?;
        }
        self.flush_buf()?;
        self.out.flush()?;
        Ok((self.out, self.stats))
    }

    // ---- internals -------------------------------------------------------------------------

    fn new_track(&mut self, kind: TrackKind, process: Option<u64>) -> u64 {
        let uuid = self.tracks.len() as u64 + 1;
        self.tracks.push(Track {
            kind,
            process: process.unwrap_or(uuid),
            sequence: None,
            open_ends: Vec::new(),
            counters: Vec::new(),
        });
        uuid
    }

    fn track(&self, track: TrackId) -> io::Result<&Track> {
        usize::try_from(track.0)
            .ok()
            .and_then(|uuid| uuid.checked_sub(1))
            .and_then(|index| self.tracks.get(index))
            .ok_or_else(|| invalid(format!("track {} was not made by this writer", track.0)))
    }

    fn track_index_of_kind(&self, track: TrackId, kind: TrackKind) -> io::Result<usize> {
        let found = self.track(track)?;
        if found.kind != kind {
            let describe = |kind| match kind {
                TrackKind::Process => "a process",
                TrackKind::Slices => "a slice track (thread, queue, device or stream)",
                TrackKind::Counter => "a counter track",
            };
            return Err(invalid(format!(
                "track {} is {}, but this needs {}",
                track.0,
                describe(found.kind),
                describe(kind)
            )));
        }
        Ok(track.0 as usize - 1)
    }

    fn slice_track_index(&self, track: TrackId) -> io::Result<usize> {
        self.track_index_of_kind(track, TrackKind::Slices)
    }

    fn counter_track_index(&self, track: TrackId) -> io::Result<usize> {
        self.track_index_of_kind(track, TrackKind::Counter)
    }

    fn process_pid(&self, process: TrackId) -> io::Result<i32> {
        let index = self.track_index_of_kind(process, TrackKind::Process)?;
        // Processes are numbered in creation order among tracks; find this one's pid.
        let ordinal = self.tracks[..index]
            .iter()
            .filter(|t| t.kind == TrackKind::Process)
            .count();
        Ok(self.pids[ordinal])
    }

    /// Writes the ends of the open slices of track `index` that end at or before `ts`.
    fn close_until(&mut self, index: usize, ts: u64) -> io::Result<()> {
        while let Some(&end) = self.tracks[index].open_ends.last() {
            if end > ts {
                break;
            }
            self.tracks[index].open_ends.pop();
            self.emit(index, end, track_event::Type::SliceEnd, None, None)?;
        }
        Ok(())
    }

    fn write_descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        let packet = TracePacket {
            data: Some(trace_packet::Data::TrackDescriptor(descriptor)),
            optional_trusted_packet_sequence_id: Some(
                trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(
                    DESCRIPTOR_SEQUENCE,
                ),
            ),
            ..Default::default()
        };
        self.write_packet(&packet)
    }

    /// The first packet of a track's sequence: clears the incremental state, makes the track,
    /// the delta-encoded clock and (on a slice track) its process's counter tracks made so far
    /// the sequence's defaults, and starts that clock at `ts`.
    fn start_sequence(&mut self, index: usize, ts: u64) -> io::Result<()> {
        let id = self.next_sequence;
        self.next_sequence += 1;
        let counters = match self.tracks[index].kind {
            TrackKind::Slices => self.tracks[self.tracks[index].process as usize - 1]
                .counters
                .clone(),
            _ => Vec::new(),
        };
        let packet = TracePacket {
            data: Some(trace_packet::Data::ClockSnapshot(ClockSnapshot {
                clocks: vec![
                    clock_snapshot::Clock {
                        clock_id: Some(TRACE_CLOCK),
                        timestamp: Some(ts),
                        ..Default::default()
                    },
                    clock_snapshot::Clock {
                        clock_id: Some(INCREMENTAL_CLOCK),
                        timestamp: Some(ts),
                        is_incremental: Some(true),
                        unit_multiplier_ns: Some(1),
                    },
                ],
                primary_trace_clock: None,
            })),
            optional_trusted_packet_sequence_id: Some(
                trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id),
            ),
            sequence_flags: Some(trace_packet::SequenceFlags::SeqIncrementalStateCleared as u32),
            trace_packet_defaults: Some(TracePacketDefaults {
                timestamp_clock_id: Some(INCREMENTAL_CLOCK),
                track_event_defaults: Some(TrackEventDefaults {
                    track_uuid: Some(index as u64 + 1),
                    extra_counter_track_uuids: counters.clone(),
                }),
            }),
            first_packet_on_sequence: Some(true),
            ..Default::default()
        };
        self.write_packet(&packet)?;
        self.tracks[index].sequence = Some(Sequence {
            id,
            counters,
            last_ts: ts,
            names: Seen::default(),
            categories: Seen::default(),
            arg_names: Seen::default(),
            strings: Seen::default(),
            locations: Seen::default(),
        });
        Ok(())
    }

    /// Writes one track event on track `index`'s sequence, with the interned data it is the
    /// first on that sequence to use.
    fn emit(
        &mut self,
        index: usize,
        ts: u64,
        kind: track_event::Type,
        event: Option<&Event<'_>>,
        counter: Option<track_event::CounterValueField>,
    ) -> io::Result<()> {
        if let Some(event) = event {
            // Checked before anything is marked as defined, so a refused event leaves no
            // half-gathered interned data behind.
            self.check_handles(event)?;
        }
        if self.tracks[index].sequence.is_none() {
            self.start_sequence(index, ts)?;
        }
        let Some(sequence) = self.tracks[index].sequence.as_mut() else {
            unreachable!("the sequence was started above");
        };
        let packet = &mut self.event_packet;
        let Some(trace_packet::Data::TrackEvent(te)) = packet.data.as_mut() else {
            unreachable!("the event packet always holds a track event");
        };
        let interned = &mut self.interned;
        te.r#type = Some(kind as i32);
        te.name_field = None;
        te.category_iids.clear();
        te.source_location_field = None;
        te.debug_annotations.clear();
        te.flow_ids.clear();
        te.terminating_flow_ids.clear();
        te.extra_counter_track_uuids.clear();
        te.extra_counter_values.clear();
        te.counter_value_field = counter;

        if let Some(event) = event {
            let iid = event.name.0;
            let name = self
                .names
                .get(iid)
                .ok_or_else(|| unknown("event name", iid))?;
            if sequence.names.insert(iid) {
                interned.event_names.push(EventName {
                    iid: Some(iid),
                    name: Some(name.to_owned()),
                });
            }
            te.name_field = Some(track_event::NameField::NameIid(iid));
            if let Some(CategoryId(iid)) = event.category {
                let category = self.categories.get(iid).unwrap_or_default();
                if sequence.categories.insert(iid) {
                    interned.event_categories.push(EventCategory {
                        iid: Some(iid),
                        name: Some(category.to_owned()),
                    });
                }
                te.category_iids.push(iid);
            }
            if let Some(LocationId(iid)) = event.location {
                if let (Some(location), true) =
                    (self.locations.get(iid), sequence.locations.insert(iid))
                {
                    interned.source_locations.push(SourceLocation {
                        iid: Some(iid),
                        file_name: Some(location.file.to_string()),
                        function_name: Some(location.function.to_string()),
                        line_number: Some(location.line),
                    });
                }
                te.source_location_field =
                    Some(track_event::SourceLocationField::SourceLocationIid(iid));
            }
            for arg in event.args {
                let iid = arg.name.0;
                let arg_name = self.arg_names.get(iid).unwrap_or_default();
                if sequence.arg_names.insert(iid) {
                    interned.debug_annotation_names.push(DebugAnnotationName {
                        iid: Some(iid),
                        name: Some(arg_name.to_owned()),
                    });
                }
                let value = match arg.value {
                    ArgValue::Uint(v) => debug_annotation::Value::UintValue(v),
                    ArgValue::Int(v) => debug_annotation::Value::IntValue(v),
                    ArgValue::Float(v) => debug_annotation::Value::DoubleValue(v),
                    ArgValue::Bool(v) => debug_annotation::Value::BoolValue(v),
                    ArgValue::Pointer(v) => debug_annotation::Value::PointerValue(v),
                    ArgValue::Str(s) => debug_annotation::Value::StringValue(s.to_owned()),
                    ArgValue::Interned(StringId(iid)) => {
                        let value = self
                            .strings
                            .get(iid)
                            .ok_or_else(|| unknown("string", iid))?;
                        if sequence.strings.insert(iid) {
                            interned
                                .debug_annotation_string_values
                                .push(InternedString {
                                    iid: Some(iid),
                                    str: Some(value.as_bytes().to_vec()),
                                });
                        }
                        debug_annotation::Value::StringValueIid(iid)
                    }
                };
                te.debug_annotations.push(DebugAnnotation {
                    name_field: Some(debug_annotation::NameField::NameIid(iid)),
                    value: Some(value),
                });
            }
            te.flow_ids.extend(event.flows_out.iter().map(|f| f.0));
            te.terminating_flow_ids
                .extend(event.flows_in.iter().map(|f| f.0));
            // The sequence's default counter tracks go unnamed when the event's are the first
            // of them, in order.
            let named = event.counters.len() > sequence.counters.len()
                || event
                    .counters
                    .iter()
                    .zip(&sequence.counters)
                    .any(|(c, &d)| c.track.0 != d);
            for c in event.counters {
                if named {
                    te.extra_counter_track_uuids.push(c.track.0);
                }
                te.extra_counter_values.push(c.value);
            }
        }

        // Delta-encoded on the sequence's clock; a time before the last one on this track is
        // written absolute on the trace clock, as Perfetto's SDK does.
        if ts >= sequence.last_ts {
            packet.timestamp = Some(ts - sequence.last_ts);
            packet.timestamp_clock_id = None;
            sequence.last_ts = ts;
        } else {
            packet.timestamp = Some(ts);
            packet.timestamp_clock_id = Some(TRACE_CLOCK);
        }
        packet.optional_trusted_packet_sequence_id = Some(
            trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(sequence.id),
        );
        let defines = !(interned.event_names.is_empty()
            && interned.event_categories.is_empty()
            && interned.source_locations.is_empty()
            && interned.debug_annotation_names.is_empty()
            && interned.debug_annotation_string_values.is_empty());
        if defines {
            packet.interned_data = Some(std::mem::take(interned));
        }
        let encoded = encode_packet(&mut self.buf, packet);
        if let Some(mut used) = packet.interned_data.take() {
            used.event_names.clear();
            used.event_categories.clear();
            used.source_locations.clear();
            used.debug_annotation_names.clear();
            used.debug_annotation_string_values.clear();
            self.interned = used;
        }
        encoded?;
        self.stats.packets += 1;
        self.stats.events += 1;
        self.flush_if_full()
    }

    /// Refuses an event naming a handle this writer did not give out (from another writer).
    fn check_handles(&self, event: &Event<'_>) -> io::Result<()> {
        let NameId(iid) = event.name;
        self.names
            .get(iid)
            .ok_or_else(|| unknown("event name", iid))?;
        if let Some(CategoryId(iid)) = event.category {
            self.categories
                .get(iid)
                .ok_or_else(|| unknown("category", iid))?;
        }
        if let Some(LocationId(iid)) = event.location {
            self.locations
                .get(iid)
                .ok_or_else(|| unknown("source location", iid))?;
        }
        for arg in event.args {
            let ArgNameId(iid) = arg.name;
            self.arg_names
                .get(iid)
                .ok_or_else(|| unknown("argument name", iid))?;
            if let ArgValue::Interned(StringId(iid)) = arg.value {
                self.strings
                    .get(iid)
                    .ok_or_else(|| unknown("string", iid))?;
            }
        }
        for c in event.counters {
            self.counter_track_index(c.track)?;
        }
        Ok(())
    }

    fn write_packet(&mut self, packet: &TracePacket) -> io::Result<()> {
        encode_packet(&mut self.buf, packet)?;
        self.stats.packets += 1;
        self.flush_if_full()
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.stats.bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

/// Appends `packet` to `buf` as one `Trace.packet` field.
fn encode_packet(buf: &mut Vec<u8>, packet: &TracePacket) -> io::Result<()> {
    buf.push(TRACE_PACKET_KEY);
    packet
        .encode_length_delimited(buf)
        .map_err(|e| io::Error::other(format!("encoding a trace packet: {e}")))
}

fn unknown(what: &str, iid: u64) -> io::Error {
    invalid(format!("{what} {iid} was not made by this writer"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Arg;

    fn message(err: io::Error) -> String {
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        err.to_string()
    }

    #[test]
    fn a_slice_that_outlives_its_enclosing_slice_is_refused_and_the_writer_goes_on() {
        let mut w = PerfettoWriter::new(Vec::new());
        let p = w.process(1, "p", &[]).unwrap();
        let t = w.thread(p, 1, "main").unwrap();
        let n = w.name("n");
        w.slice(t, 10, 100, &Event::named(n)).unwrap();
        let err = w.slice(t, 20, 150, &Event::named(n)).unwrap_err();
        assert!(message(err).contains("overlaps the slice enclosing it"));
        w.slice(t, 20, 100, &Event::named(n)).unwrap();
        let err = w.slice(t, 30, 25, &Event::named(n)).unwrap_err();
        assert!(message(err).contains("ends (25) before it starts (30)"));
        // After the enclosing slice ended, a later slice is a sibling again.
        w.slice(t, 200, 300, &Event::named(n)).unwrap();
        let (_, stats) = w.finish().unwrap();
        assert_eq!(stats.events, 6);
    }

    #[test]
    fn tracks_and_handles_from_elsewhere_are_refused() {
        let mut other = PerfettoWriter::new(Vec::new());
        let op = other.process(1, "p", &[]).unwrap();
        let ot = other.thread(op, 1, "t").unwrap();
        let foreign_name = (0..5).map(|i| other.name(&i.to_string())).last().unwrap();

        let mut w = PerfettoWriter::new(Vec::new());
        let n = w.name("n");
        let err = w.slice(ot, 1, 2, &Event::named(n)).unwrap_err();
        assert!(message(err).contains("was not made by this writer"));
        let p = w.process(1, "p", &[]).unwrap();
        let t = w.thread(p, 1, "t").unwrap();
        let good = w.name("good");
        let key = w.arg_name("k");
        let args = [Arg {
            name: key,
            value: ArgValue::Interned(StringId(9)),
        }];
        let err = w
            .instant(t, 1, &Event::named(good).args(&args))
            .unwrap_err();
        assert!(message(err).contains("string 9 was not made by this writer"));
        let err = w.instant(t, 1, &Event::named(foreign_name)).unwrap_err();
        assert!(message(err).contains("event name 5 was not made by this writer"));

        // The refused events left nothing behind: the next event defines exactly its own name.
        let q = w.slice_track(p, "async queue 1").unwrap();
        w.instant(q, 2, &Event::named(good)).unwrap();
        let (bytes, _) = w.finish().unwrap();
        let trace = protos::Trace::decode(bytes.as_slice()).unwrap();
        let defined: Vec<_> = trace
            .packet
            .iter()
            .filter_map(|p| p.interned_data.as_ref())
            .collect();
        assert_eq!(defined.len(), 1);
        assert_eq!(defined[0].event_names.len(), 1);
        assert_eq!(defined[0].event_names[0].name.as_deref(), Some("good"));
        assert!(defined[0].debug_annotation_names.is_empty());
    }

    #[test]
    fn each_track_takes_only_its_kind_of_event() {
        let mut w = PerfettoWriter::new(Vec::new());
        let p = w.process(1, "p", &[]).unwrap();
        let t = w.thread(p, 1, "t").unwrap();
        let c = w.counter_track(p, "bytes", CounterUnit::Bytes).unwrap();
        let n = w.name("n");
        let needs = |err, is: &str, needs: &str| {
            let text = message(err);
            assert!(text.contains(&format!("is {is}")), "{text}");
            assert!(text.contains(&format!("needs {needs}")), "{text}");
        };
        needs(
            w.counter(t, 1, 5).unwrap_err(),
            "a slice track",
            "a counter",
        );
        needs(
            w.slice(c, 1, 2, &Event::named(n)).unwrap_err(),
            "a counter",
            "a slice",
        );
        needs(
            w.instant(p, 1, &Event::named(n)).unwrap_err(),
            "a process",
            "a slice",
        );
        needs(
            w.thread(t, 2, "x").unwrap_err(),
            "a slice track",
            "a process",
        );
        assert!(message(w.slice_track(c, "x").unwrap_err()).contains("cannot hold"));
    }

    #[test]
    fn two_processes_with_one_pid_are_refused() {
        let mut w = PerfettoWriter::new(Vec::new());
        w.process(7, "rank 0", &[]).unwrap();
        let err = w.process(7, "rank 1", &[]).unwrap_err();
        assert!(message(err).contains("pid 7 is already used"));
        let second = w.process(8, "rank 1", &[]).unwrap();
        // Threads take their process's pid.
        assert!(w.thread(second, 80, "main").is_ok());
        assert_eq!(w.process_pid(second).unwrap(), 8);
    }

    #[test]
    fn counter_values_ride_on_events_and_name_their_tracks_only_off_the_sequence_defaults() {
        use crate::event::CounterValue;
        let mut w = PerfettoWriter::new(Vec::new());
        let p = w.process(1, "p", &[]).unwrap();
        let moved = w
            .counter_track(p, "bytes moved", CounterUnit::Bytes)
            .unwrap();
        let memory = w
            .counter_track(p, "device memory in use", CounterUnit::Bytes)
            .unwrap();
        let t = w.thread(p, 1, "t").unwrap();
        let n = w.name("n");
        let at = |track, value| CounterValue { track, value };
        w.slice(t, 10, 20, &Event::named(n).counters(&[at(moved, 5)]))
            .unwrap();
        w.instant(t, 30, &Event::named(n).counters(&[at(memory, 7)]))
            .unwrap();
        w.instant(
            t,
            35,
            &Event::named(n).counters(&[at(moved, 9), at(memory, 3)]),
        )
        .unwrap();
        let err = w
            .instant(t, 40, &Event::named(n).counters(&[at(t, 1)]))
            .unwrap_err();
        assert!(message(err).contains("needs a counter track"));
        let (bytes, _) = w.finish().unwrap();
        let trace = protos::Trace::decode(bytes.as_slice()).unwrap();
        let defaults = trace
            .packet
            .iter()
            .find_map(|p| {
                p.trace_packet_defaults
                    .as_ref()?
                    .track_event_defaults
                    .clone()
            })
            .unwrap();
        assert_eq!(defaults.extra_counter_track_uuids, [moved.0, memory.0]);
        let carried: Vec<_> = trace
            .packet
            .iter()
            .filter_map(|p| match &p.data {
                Some(trace_packet::Data::TrackEvent(te)) if !te.extra_counter_values.is_empty() => {
                    Some((
                        te.extra_counter_track_uuids.clone(),
                        te.extra_counter_values.clone(),
                    ))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            carried,
            [
                (vec![], vec![5]),
                (vec![memory.0], vec![7]),
                (vec![], vec![9, 3]),
            ]
        );
    }

    /// Counts what reaches the output, to show the trace is streamed rather than held.
    struct Counting(u64);
    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_output_is_streamed_with_bounded_buffers() {
        let mut w = PerfettoWriter::new(Counting(0));
        let p = w.process(1, "p", &[]).unwrap();
        let t = w.thread(p, 1, "t").unwrap();
        let names: Vec<_> = (0..10).map(|i| w.name(&format!("n{i}"))).collect();
        for i in 0..200_000u64 {
            let s = i * 100;
            w.slice(t, s, s + 90, &Event::named(names[(i % 10) as usize]))
                .unwrap();
            w.slice(t, s + 10, s + 20, &Event::named(names[0])).unwrap();
        }
        let pending = w.buf.len();
        assert!(pending < FLUSH_AT, "at most one buffer is held back");
        assert!(w.buf.capacity() <= FLUSH_AT + 4096 + 1024);
        assert!(w.tracks[t.0 as usize - 1].open_ends.len() <= 2);
        assert!(w.out.0 > 0, "written before finish");
        assert_eq!(w.out.0, w.stats().bytes);
        let (out, stats) = w.finish().unwrap();
        assert_eq!(out.0, stats.bytes);
        assert!(stats.bytes > 4 * FLUSH_AT as u64);
        assert_eq!(stats.events, 800_000);
    }
}
