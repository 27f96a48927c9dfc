"""The instruments' files in segments: names, sizes and the setting (`record --mxnet` streamed).

With segments (FLAMEGRAPH_MXNET_SEGMENTS="TRACE_BYTES,LOG_BYTES", set by the hook from `--max-spool`), a
drainer (drain.py) writes its stream into numbered files instead of one, starting the next when one holds
its size; flamegraph reads each finished one as the run goes and deletes it (segment_reader.py), so what
sits on disk is what has not been read yet:
    profile-9708.json.000001  profile-9708.json.000002 ...     MXNet's trace, cut at any byte
    dnnl-verbose-9708.log.000001 ...                           oneDNN's verbose log, likewise
A segment is finished once the next one exists, or once its writer has ended. The caps (limit.py) then
bound the segments present together. flamegraph asks every hooked process to stop its instruments by
creating STOP_REQUEST in the directory (its readers' memory passed their budget: segment_reader.py); the
limits' watch looks for it. Standard library only (it runs in the profiled process too).
"""

from __future__ import annotations

import os
import re

SEGMENTS = "FLAMEGRAPH_MXNET_SEGMENTS"  # "TRACE_BYTES,LOG_BYTES"; "0": one file each, as without segments
PER_CAP = 8  # segments of a cap: the reader is at most a few seconds behind, the disk never holds more than the cap
DIGITS = 6
STOP_REQUEST = "stop-instruments"  # its presence is the request (the program may not read our files)
REFRESH_REQUEST = "refresh-sidecar"  # likewise: a clock reading and the thread map in the sidecar, then removed


def segment_name(base: str, number: int) -> str:
    """`base` (a file name) with the segment's number: profile-9708.json.000001."""
    return f"{base}.{number:0{DIGITS}d}"


def segment_pattern(base: str) -> re.Pattern[str]:
    return re.compile(re.escape(base) + r"\.(\d{" + str(DIGITS) + r"})$")


def parse_byte_pair(text: str | None) -> tuple[int, int] | None:
    """(trace, log) bytes from a variable's "TRACE,LOG" (CAPS, SEGMENTS); None when unset, "0" or unreadable
    (no caps; one file each)."""
    try:
        trace, log = (int(part) for part in (text or "").split(","))
    except ValueError:
        return None
    return (trace, log) if trace > 0 and log > 0 else None


def split_segments(caps: tuple[int, int]) -> tuple[int, int]:
    """Segment sizes for the (trace, log) caps."""
    return tuple(max(cap // PER_CAP, 1) for cap in caps)  # type: ignore[return-value]


def present(directory: str, base: str) -> list[tuple[int, str]]:
    """(number, name) of the segments of `base` in `directory`, in order."""
    pattern = segment_pattern(base)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted((int(found.group(1)), name) for name in names if (found := pattern.match(name)))


def present_bytes(directory: str, base: str) -> int:
    """Bytes of the segments of `base` still on disk (a segment read and deleted meanwhile counts nothing)."""
    total = 0
    for _, name in present(directory, base):
        try:
            total += os.stat(os.path.join(directory, name)).st_size
        except OSError:
            continue
    return total
