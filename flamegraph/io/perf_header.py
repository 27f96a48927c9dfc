"""The event attributes a perf.data file holds, read from its header (no perf process: ~0.1 ms).

`perf script`'s default fields depend on the event type, and a tracepoint's frames are printed only
while no `-F` names the tracepoint type (perf adds ip,sym,symoff,dso to a tracepoint's fields when its
samples have call chains and the user set none): what fold asks perf for must know both.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO, NamedTuple

PERF_TYPE_TRACEPOINT = 2  # linux/perf_event.h: kprobes and uprobes made by `perf probe` are tracepoints
PERF_SAMPLE_CALLCHAIN = 1 << 5
RECORD_HEADER_ATTR, RECORD_HEADER_FEATURE = 64, 80  # a pipe-mode file's header records (tools/perf)
FILE_HEADER_SIZE = 104  # perf_file_header: magic, size, attr_size, attrs, data, event_types, features
PIPE_HEADER_SIZE = 16  # magic, size: `perf record -o -` writes its attributes as records
MAX_ATTR_TABLE = 1 << 24  # bytes of the attribute table read at most (an attribute is ~136 bytes)
MAX_PIPE_RECORDS = 4096  # header records read before giving up on a pipe-mode file's attributes


class EventAttr(NamedTuple):
    type: int
    sample_type: int


def read_event_attrs(path: str) -> list[EventAttr]:
    """Each event's type and sample_type, in the file's order; [] for a file that is no perf.data or is
    cut short (perf script then says what is wrong)."""
    try:
        with open(path, "rb") as data:
            head = data.read(FILE_HEADER_SIZE)
            order = {b"PERFILE2": "<", b"2ELIFREP": ">"}.get(head[:8])
            if order is None or len(head) < PIPE_HEADER_SIZE:
                return []
            size = struct.unpack_from(order + "Q", head, 8)[0]
            if size == PIPE_HEADER_SIZE:
                data.seek(PIPE_HEADER_SIZE)
                return _pipe_attrs(data, order)
            if len(head) < 40:
                return []
            attr_size, offset, length = struct.unpack_from(order + "QQQ", head, 16)
            # A damaged or hostile header: offsets past the file (2**63 cannot even be sought), a table larger
            # than its bound: no attribute read, perf script then says what is wrong with the file.
            if attr_size < 32 or length > MAX_ATTR_TABLE or offset + length > os.fstat(data.fileno()).st_size:
                return []
            data.seek(offset)
            table = data.read(length)
    except (OSError, ValueError, struct.error):
        return []
    return [_attr(table, at, order) for at in range(0, len(table) - attr_size + 1, attr_size)]


def _pipe_attrs(data: BinaryIO, order: str) -> list[EventAttr]:
    """The attributes of `perf record -o -` output: HEADER_ATTR records after the feature records."""
    attrs = []
    for _ in range(MAX_PIPE_RECORDS):
        head = data.read(8)
        if len(head) < 8:
            break
        kind, _misc, size = struct.unpack(order + "IHH", head)
        if kind not in (RECORD_HEADER_ATTR, RECORD_HEADER_FEATURE) or size < 8:
            break  # the tracing data, the first sample: no attribute comes after them
        body = data.read(size - 8)
        if kind == RECORD_HEADER_ATTR and len(body) >= 32:
            attrs.append(_attr(body, 0, order))
    return attrs


def _attr(table: bytes, at: int, order: str) -> EventAttr:
    kind = struct.unpack_from(order + "I", table, at)[0]  # perf_event_attr: type, size, config, period,
    sample_type = struct.unpack_from(order + "Q", table, at + 24)[0]  # then sample_type
    return EventAttr(kind, sample_type)


def tracepoints_with_callchains(path: str) -> bool:
    """Has the file a tracepoint event (sched:sched_switch, syscalls:*, probe:*) recorded with -g?"""
    return any(
        attr.type == PERF_TYPE_TRACEPOINT and attr.sample_type & PERF_SAMPLE_CALLCHAIN
        for attr in read_event_attrs(path)
    )
