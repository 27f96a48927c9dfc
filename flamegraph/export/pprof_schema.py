"""The pprof messages (package perftools.profiles, proto3), built with the protobuf library.

The message and field names and numbers are those of pprof's published `profile.proto`; only the
fields we write are declared (a decoder skips what it does not know, and every field here keeps its
published number, so any pprof client reads what we write). Declaring them through
`descriptor_pb2` needs no protoc and no generated module; the protobuf runtime does all encoding.

    Profile  sample_type=1 sample=2 mapping=3 location=4 function=5 string_table=6 time_nanos=9
             duration_nanos=10 period_type=11 period=12 comment=13 default_sample_type=14
    ValueType type=1 unit=2          Sample location_id=1 value=2 label=3
    Label key=1 str=2 num=3 num_unit=4
    Mapping id=1 memory_start=2 memory_limit=3 file_offset=4 filename=5 build_id=6
            has_functions=7 has_filenames=8 has_line_numbers=9 has_inline_frames=10
    Location id=1 mapping_id=2 address=3 line=4 is_folded=5     Line function_id=1 line=2
    Function id=1 name=2 system_name=3 filename=4 start_line=5
"""

from __future__ import annotations

from functools import cache
from typing import Any

PACKAGE = "perftools.profiles"

# (message, [(field, number, type, label, message type)]); type: int64, uint64, bool, string, or a message
MESSAGES: list[tuple[str, list[tuple[str, int, str, str]]]] = [
    ("Profile", [
        ("sample_type", 1, "ValueType", "repeated"), ("sample", 2, "Sample", "repeated"),
        ("mapping", 3, "Mapping", "repeated"), ("location", 4, "Location", "repeated"),
        ("function", 5, "Function", "repeated"), ("string_table", 6, "string", "repeated"),
        ("drop_frames", 7, "int64", "optional"), ("keep_frames", 8, "int64", "optional"),
        ("time_nanos", 9, "int64", "optional"), ("duration_nanos", 10, "int64", "optional"),
        ("period_type", 11, "ValueType", "optional"), ("period", 12, "int64", "optional"),
        ("comment", 13, "int64", "repeated"), ("default_sample_type", 14, "int64", "optional"),
    ]),
    ("ValueType", [("type", 1, "int64", "optional"), ("unit", 2, "int64", "optional")]),
    ("Sample", [
        ("location_id", 1, "uint64", "repeated"), ("value", 2, "int64", "repeated"),
        ("label", 3, "Label", "repeated"),
    ]),
    ("Label", [
        ("key", 1, "int64", "optional"), ("str", 2, "int64", "optional"), ("num", 3, "int64", "optional"),
        ("num_unit", 4, "int64", "optional"),
    ]),
    ("Mapping", [
        ("id", 1, "uint64", "optional"), ("memory_start", 2, "uint64", "optional"),
        ("memory_limit", 3, "uint64", "optional"), ("file_offset", 4, "uint64", "optional"),
        ("filename", 5, "int64", "optional"), ("build_id", 6, "int64", "optional"),
        ("has_functions", 7, "bool", "optional"), ("has_filenames", 8, "bool", "optional"),
        ("has_line_numbers", 9, "bool", "optional"), ("has_inline_frames", 10, "bool", "optional"),
    ]),
    ("Location", [
        ("id", 1, "uint64", "optional"), ("mapping_id", 2, "uint64", "optional"),
        ("address", 3, "uint64", "optional"), ("line", 4, "Line", "repeated"),
        ("is_folded", 5, "bool", "optional"),
    ]),
    ("Line", [("function_id", 1, "uint64", "optional"), ("line", 2, "int64", "optional")]),
    ("Function", [
        ("id", 1, "uint64", "optional"), ("name", 2, "int64", "optional"),
        ("system_name", 3, "int64", "optional"), ("filename", 4, "int64", "optional"),
        ("start_line", 5, "int64", "optional"),
    ]),
]  # fmt: skip


@cache
def message_classes() -> dict[str, Any]:
    """Message name -> generated class (Profile, Sample, ...); built once, on first use."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    scalars = {"int64": field.TYPE_INT64, "uint64": field.TYPE_UINT64, "bool": field.TYPE_BOOL,
               "string": field.TYPE_STRING}  # fmt: skip
    labels = {"optional": field.LABEL_OPTIONAL, "repeated": field.LABEL_REPEATED}
    proto = descriptor_pb2.FileDescriptorProto(name="flamegraph/pprof_profile.proto", package=PACKAGE, syntax="proto3")
    for message, fields in MESSAGES:
        described = proto.message_type.add(name=message)
        for name, number, kind, label in fields:
            entry = described.field.add(name=name, number=number, label=labels[label])
            if kind in scalars:
                entry.type = scalars[kind]
            else:
                entry.type = field.TYPE_MESSAGE
                entry.type_name = f".{PACKAGE}.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        message: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{message}"))
        for message, _ in MESSAGES
    }
