#!/usr/bin/env python3
"""Checks the vendored protos (accprof-perfetto/proto) against Perfetto's own descriptors (from
perfetto_trace_pb2, the `perfetto` package on PyPI): every message, enum, field and enum value
kept must exist upstream with the same number, type and label, so what prost encodes from them
is what Perfetto decodes.

Usage: check_protos.py PROTO_DIR
Prints one line per mismatch and exits 2 when there is any; exit 3 when the perfetto package is
missing.
"""

import pathlib
import re
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as err:  # pragma: no cover - depends on the machine
    print(f"perfetto_trace_pb2 unavailable ({err}); pip install perfetto", file=sys.stderr)
    sys.exit(3)

from google.protobuf.descriptor import FieldDescriptor

SCALARS = {
    "double": FieldDescriptor.TYPE_DOUBLE, "float": FieldDescriptor.TYPE_FLOAT,
    "int64": FieldDescriptor.TYPE_INT64, "uint64": FieldDescriptor.TYPE_UINT64,
    "int32": FieldDescriptor.TYPE_INT32, "fixed64": FieldDescriptor.TYPE_FIXED64,
    "fixed32": FieldDescriptor.TYPE_FIXED32, "bool": FieldDescriptor.TYPE_BOOL,
    "string": FieldDescriptor.TYPE_STRING, "bytes": FieldDescriptor.TYPE_BYTES,
    "uint32": FieldDescriptor.TYPE_UINT32, "sint32": FieldDescriptor.TYPE_SINT32,
    "sint64": FieldDescriptor.TYPE_SINT64,
}

FIELD = re.compile(r"^(optional|repeated|required)?\s*([\w.]+)\s+(\w+)\s*=\s*(\d+)")
ENUM_VALUE = re.compile(r"^(\w+)\s*=\s*(-?\d+)")


def parse(text):
    """Yields ('field', scope, label, type, name, number) and ('value', scope, name, number)."""
    text = re.sub(r"//.*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    scope = []  # (kind, name)
    for raw in re.split(r"([{};])", text):
        token = raw.strip()
        if token == "{" or token == ";" or not token:
            continue
        if token == "}":
            scope.pop()
            continue
        head = token.split()
        if head[0] in ("message", "enum", "oneof"):
            scope.append((head[0], head[1]))
            continue
        if head[0] in ("syntax", "package", "import", "reserved", "extensions", "option"):
            continue
        names = [n for kind, n in scope if kind != "oneof"]
        if scope and scope[-1][0] == "enum":
            m = ENUM_VALUE.match(token)
            if m:
                yield ("value", names, m.group(1), int(m.group(2)))
            continue
        m = FIELD.match(token)
        if m:
            label, typ, name, number = m.groups()
            in_oneof = bool(scope) and scope[-1][0] == "oneof"
            yield ("field", names, label, typ, name, int(number), in_oneof)


def is_repeated(field):
    # protobuf 6 replaced `label` by `is_repeated`.
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED


def lookup(names):
    pool = pb.DESCRIPTOR.pool
    full = "perfetto.protos." + ".".join(names)
    try:
        return pool.FindMessageTypeByName(full)
    except KeyError:
        pass
    try:
        return pool.FindEnumTypeByName(full)
    except KeyError:
        return None


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    checked = 0
    for path in sorted(root.rglob("*.proto")):
        for item in parse(path.read_text()):
            where = f"{path.relative_to(root)}: {'.'.join(item[1])}"
            upstream = lookup(item[1])
            if upstream is None:
                problems.append(f"{where}: no such message or enum upstream")
                continue
            if item[0] == "value":
                _, _, name, number = item
                value = upstream.values_by_name.get(name)
                if value is None or value.number != number:
                    problems.append(f"{where}.{name} = {number}: upstream has {value.number if value else 'no such value'}")
                checked += 1
                continue
            _, _, label, typ, name, number, in_oneof = item
            field = upstream.fields_by_name.get(name)
            checked += 1
            if field is None:
                problems.append(f"{where}.{name}: no such field upstream")
                continue
            if field.number != number:
                problems.append(f"{where}.{name} = {number}: upstream number {field.number}")
            want_repeated = label == "repeated"
            if is_repeated(field) != want_repeated:
                problems.append(f"{where}.{name}: repeated differs from upstream")
            if in_oneof != (field.containing_oneof is not None):
                problems.append(f"{where}.{name}: oneof membership differs from upstream")
            if typ in SCALARS:
                if field.type != SCALARS[typ]:
                    problems.append(f"{where}.{name}: type {typ}, upstream type {field.type}")
            else:
                target = field.message_type or field.enum_type
                if target is None or target.name != typ.split(".")[-1]:
                    problems.append(f"{where}.{name}: type {typ}, upstream {target.full_name if target else field.type}")
    if checked == 0:
        problems.append(f"no fields found under {root}")
    for p in problems:
        print(p)
    if problems:
        sys.exit(2)
    print(f"{checked} fields and enum values match Perfetto's descriptors")


if __name__ == "__main__":
    main()
