"""`fold --window START,END`: only the `perf script` records whose time is in the span (perf's clock,
seconds, both ends included, as `perf script --time` takes them), for text and perf.data alike.

A record is its header line and the lines after it up to the next header; the header's timestamp
decides for all of them. Headers it reads (the time is the first `<seconds>.<fraction>:`):
    python 19065/19130  1252.178187: cpu-clock:
    python  8869 [003]   680.060804: sched:sched_switch: prev_comm=python3 prev_pid=8869 ...
Lines before the first header (comments) are kept; a header without a time is dropped with its record.
"""

from __future__ import annotations

from typing import IO

from .collapse.script import RECORD_TIME, is_detail

Window = tuple[float | None, float | None]


def describe_window(window: Window) -> str:
    """'1252.175–1255.285 s (3.110 s)', 'from 1252.175 s', 'until 1255.285 s' (perf's clock)."""
    start, end = window
    if start is not None and end is not None:
        return f"{start:.3f}–{end:.3f} s of perf's clock ({end - start:.3f} s)"
    if start is not None:
        return f"from {start:.3f} s of perf's clock"
    return f"until {end:.3f} s of perf's clock" if end is not None else "the whole recording"


def in_window(seconds: float, window: Window) -> bool:
    start, end = window
    return (start is None or seconds >= start) and (end is None or seconds <= end)


class WindowFilter:
    """A readable stream of the records of `stream` that fall in `window` (what `iter_blocks` reads)."""

    def __init__(self, stream: IO[bytes], window: Window) -> None:
        self.lines = iter(stream)
        self.window = window
        self.keep = True  # before the first header: comments, kept
        self.pending = b""
        self.done = False
        self.records = 0  # headers seen
        self.kept = 0  # headers kept

    def _next_line(self) -> bytes | None:
        for line in self.lines:
            if line[:1] not in (b"\t", b" ", b"\n", b"\r", b"#", b"") and not (line[:1] == b"|" and is_detail(line)):
                self.records += 1
                match = RECORD_TIME.match(line)
                self.keep = match is not None and in_window(float(match.group(1)), self.window)
                self.kept += self.keep
            if self.keep:
                return line
        return None

    def read(self, size: int = -1) -> bytes:
        parts = [self.pending]
        have = len(self.pending)
        self.pending = b""
        while not self.done and (size < 0 or have < size):
            line = self._next_line()
            if line is None:
                self.done = True
                break
            parts.append(line)
            have += len(line)
        data = b"".join(parts)
        if size >= 0 and len(data) > size:
            data, self.pending = data[:size], data[size:]
        return data
