#!/usr/bin/env python3
"""Decodes a Perfetto trace with Perfetto's own protos (perfetto_trace_pb2 from the `perfetto`
package on PyPI) the way trace_processor reads TrackEvent traces, checks the sequence rules,
and prints what it found as JSON: tracks, slices (with nesting depth), instants, counter values
and flows, with every interned string resolved.

Usage: decode_trace.py TRACE > summary.json
Exit status 2 with one line on stderr when the trace breaks a rule; 3 when the perfetto package
is missing.
"""

import json
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as err:  # pragma: no cover - depends on the machine
    print(f"perfetto_trace_pb2 unavailable ({err}); pip install perfetto", file=sys.stderr)
    sys.exit(3)

SEQ_INCREMENTAL_STATE_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
FIRST_SEQUENCE_CLOCK = 64


class TraceError(Exception):
    pass


class Sequence:
    def __init__(self):
        self.clear()
        self.valid = False  # until a packet clears the incremental state

    def clear(self):
        self.tables = {k: {} for k in ("names", "categories", "arg_names", "strings", "locations")}
        self.default_track = None
        self.default_counters = []
        self.default_clock = None
        self.incremental = {}  # clock id -> current value
        self.valid = True

    def define(self, table, iid, value, definitions):
        if iid == 0:
            raise TraceError(f"interned {table} with iid 0")
        if iid in self.tables[table]:
            definitions["redefined"] += 1
        self.tables[table][iid] = value
        definitions[table] += 1

    def lookup(self, table, iid):
        if iid not in self.tables[table]:
            raise TraceError(f"{table} iid {iid} used before its definition on its sequence")
        return self.tables[table][iid]


def annotation_value(ann, seq):
    kind = ann.WhichOneof("value")
    if kind == "string_value_iid":
        return seq.lookup("strings", ann.string_value_iid)
    if kind is None:
        raise TraceError("debug annotation without a value")
    return getattr(ann, kind)


def decode(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())

    sequences = {}
    tracks = {}
    open_slices = {}  # track uuid -> stack of slice indices
    slices = []
    counters = {}
    definitions = {k: 0 for k in ("names", "categories", "arg_names", "strings", "locations", "redefined")}
    track_events = 0
    carried = 0  # counter values carried by other events

    for packet in trace.packet:
        if not packet.HasField("trusted_packet_sequence_id"):
            raise TraceError("packet without trusted_packet_sequence_id")
        seq_id = packet.trusted_packet_sequence_id
        seq = sequences.setdefault(seq_id, Sequence())
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq.clear()
        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.default_clock = d.timestamp_clock_id
            if d.HasField("track_event_defaults"):
                e = d.track_event_defaults
                if e.HasField("track_uuid"):
                    seq.default_track = e.track_uuid
                seq.default_counters = list(e.extra_counter_track_uuids)
        if packet.sequence_flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
            raise TraceError(f"packet on sequence {seq_id} needs incremental state that was never cleared")
        if packet.HasField("interned_data"):
            # trace_processor reads interned data whatever the packet's flags.
            if not seq.valid:
                raise TraceError(f"interned data on sequence {seq_id} before its state was cleared")
            i = packet.interned_data
            for e in i.event_names:
                seq.define("names", e.iid, e.name, definitions)
            for e in i.event_categories:
                seq.define("categories", e.iid, e.name, definitions)
            for e in i.debug_annotation_names:
                seq.define("arg_names", e.iid, e.name, definitions)
            for e in i.debug_annotation_string_values:
                seq.define("strings", e.iid, e.str.decode("utf-8"), definitions)
            for e in i.source_locations:
                seq.define("locations", e.iid, f"{e.file_name}:{e.function_name}:{e.line_number}", definitions)

        if packet.HasField("clock_snapshot"):
            for clock in packet.clock_snapshot.clocks:
                if clock.is_incremental:
                    if clock.clock_id < FIRST_SEQUENCE_CLOCK:
                        raise TraceError("an incremental clock must be sequence-scoped (id >= 64)")
                    if clock.unit_multiplier_ns != 1:
                        raise TraceError(f"unexpected unit_multiplier_ns {clock.unit_multiplier_ns}")
                    seq.incremental[clock.clock_id] = clock.timestamp
            continue

        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.uuid in tracks:
                raise TraceError(f"track {d.uuid} described twice")
            t = {"uuid": d.uuid, "parent": d.parent_uuid if d.HasField("parent_uuid") else None}
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid, name=d.process.process_name,
                         labels=list(d.process.process_labels))
            elif d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid, name=d.thread.thread_name)
            elif d.HasField("counter"):
                # trace_processor adds up an incremental counter's values only on the sequence
                # that described it.
                t.update(kind="counter", name=d.name,
                         unit=pb.CounterDescriptor.Unit.Name(d.counter.unit),
                         incremental=d.counter.is_incremental, sequence=seq_id)
            else:
                t.update(kind="track", name=d.name)
            if t["parent"] is not None and t["parent"] not in tracks:
                raise TraceError(f"track {d.uuid} has parent {t['parent']} not described before it")
            tracks[d.uuid] = t
            continue

        if not packet.HasField("track_event"):
            raise TraceError("packet with nothing accprof writes")
        track_events += 1
        # SEQ_NEEDS_INCREMENTAL_STATE only makes trace_processor drop the packet when its
        # sequence's state is invalid; accprof's writer clears every sequence first and leaves
        # the flag out, so an event on a sequence never cleared breaks its rule.
        if not seq.valid:
            raise TraceError(f"track event on sequence {seq_id} before its state was cleared")

        # Timestamp: the packet's own clock, else the sequence default.
        clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else seq.default_clock
        if clock in seq.incremental:
            seq.incremental[clock] += packet.timestamp
            ts = seq.incremental[clock]
        elif clock is None or clock < FIRST_SEQUENCE_CLOCK:
            ts = packet.timestamp
        else:
            raise TraceError(f"timestamp on sequence clock {clock} without a clock snapshot")

        ev = packet.track_event
        track = ev.track_uuid if ev.HasField("track_uuid") else seq.default_track
        if track not in tracks:
            raise TraceError(f"event on track {track}, which has no descriptor")
        kind = pb.TrackEvent.Type.Name(ev.type)

        def count(uuid, value):
            t = tracks.get(uuid)
            if t is None or t["kind"] != "counter":
                raise TraceError(f"counter value on track {uuid}, which is no counter track")
            series = counters.setdefault(str(uuid), [])
            if t["incremental"]:
                if t["sequence"] != seq_id:
                    raise TraceError(f"incremental counter {uuid} given a value on sequence {seq_id}, "
                                     f"not on the sequence that described it ({t['sequence']}): "
                                     "trace_processor drops it")
                # trace_processor adds up an incremental counter's values in sequence order.
                value += series[-1][1] if series else 0
            series.append([ts, value])

        # Counter values carried by any event (extra_counter_values), for the packet's counter
        # tracks or else the sequence's.
        extra = list(ev.extra_counter_values)
        carried += len(extra)
        if extra:
            uuids = list(ev.extra_counter_track_uuids) or seq.default_counters
            if len(extra) > len(uuids):
                raise TraceError("more extra_counter_values than extra_counter_track_uuids")
            for uuid, value in zip(uuids, extra):
                count(uuid, value)

        if kind == "TYPE_COUNTER":
            which = ev.WhichOneof("counter_value_field")
            count(track, getattr(ev, which))
            continue
        if kind == "TYPE_SLICE_END":
            stack = open_slices.get(track)
            if not stack:
                raise TraceError(f"slice end at {ts} on track {track} with no open slice")
            s = slices[stack.pop()]
            if ts < s["start"]:
                raise TraceError(f"slice {s['name']} ends at {ts} before its start {s['start']}")
            s["end"] = ts
            continue
        if kind not in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT"):
            raise TraceError(f"unexpected event type {kind}")

        if ev.WhichOneof("name_field") == "name_iid":
            name = seq.lookup("names", ev.name_iid)
        else:
            name = ev.name
        cats = [seq.lookup("categories", c) for c in ev.category_iids] + list(ev.categories)
        loc = None
        if ev.WhichOneof("source_location_field") == "source_location_iid":
            loc = seq.lookup("locations", ev.source_location_iid)
        args = {}
        for ann in ev.debug_annotations:
            key = seq.lookup("arg_names", ann.name_iid) if ann.WhichOneof("name_field") == "name_iid" else ann.name
            args[key] = annotation_value(ann, seq)
        stack = open_slices.setdefault(track, [])
        s = {
            "track": track,
            "name": name,
            "category": ",".join(cats),
            "location": loc,
            "start": ts,
            "end": ts if kind == "TYPE_INSTANT" else None,
            "depth": len(stack),
            "instant": kind == "TYPE_INSTANT",
            "args": args,
            "flows_out": list(ev.flow_ids),
            "flows_in": list(ev.terminating_flow_ids),
        }
        if stack:
            parent = slices[stack[-1]]
            if ts < parent["start"]:
                raise TraceError(f"slice {name} at {ts} starts before its parent {parent['name']}")
        slices.append(s)
        if kind == "TYPE_SLICE_BEGIN":
            stack.append(len(slices) - 1)

    for track, stack in open_slices.items():
        if stack:
            raise TraceError(f"{len(stack)} slices never ended on track {track}")
    for uuid, series in counters.items():
        # trace_processor sorts every value by time; two at one time on one track is ambiguous.
        series.sort(key=lambda v: v[0])
        for a, b in zip(series, series[1:]):
            if a[0] == b[0]:
                raise TraceError(f"counter {uuid} has two values at {a[0]}")

    starts, ends = {}, {}
    for index, s in enumerate(slices):
        for f in s["flows_out"]:
            if f in starts:
                raise TraceError(f"flow {f} starts twice")
            starts[f] = index
        for f in s["flows_in"]:
            if f in ends:
                raise TraceError(f"flow {f} ends twice")
            ends[f] = index
    if set(starts) != set(ends):
        raise TraceError(f"flows with one end only: {sorted(set(starts) ^ set(ends))[:5]}")
    flows = [[f, starts[f], ends[f]] for f in sorted(starts)]
    for s in slices:
        del s["flows_out"], s["flows_in"]

    return {
        "packets": len(trace.packet),
        "track_events": track_events,
        "sequences": len(sequences),
        "definitions": definitions,
        "tracks": list(tracks.values()),
        "slices": slices,
        "counters": counters,
        "carried_counter_values": carried,
        "flows": flows,
    }


def main():
    if len(sys.argv) != 2:
        print("usage: decode_trace.py TRACE", file=sys.stderr)
        sys.exit(1)
    try:
        summary = decode(sys.argv[1])
    except TraceError as err:
        print(f"decode_trace.py: {err}", file=sys.stderr)
        sys.exit(2)
    json.dump(summary, sys.stdout)


if __name__ == "__main__":
    main()
