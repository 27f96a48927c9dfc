"""The time window: one `Window` (a span of perf's clock in seconds, either end open) with its one
parser and its formats, and the filter `fold --window` reads text through.

    Window.parse("1252.1,1255.3") -> Window(1252.1, 1255.3)      "5," -> Window(5.0, None)
    window.format() -> "1252.100–1255.300 s of perf's clock (3.200 s)"    (the capture facts)
    window.perf_time() -> "1252.100000,1255.300000"   (perf script --time)    window.ns() -> ns bounds

`--window` on `fold`, `record` and `offcpu` is parsed here and nowhere else; off-CPU's folder takes
the nanosecond bounds (`ns`), the on-CPU folders the records whose time is in the span (both ends
included, as `perf script --time` takes them), for text and perf.data alike.

A record is its header line and the lines after it up to the next header; the header's timestamp
decides for all of them. Headers it reads (the time is the first `<seconds>.<fraction>:`):
    python 19065/19130  1252.178187: cpu-clock:
    python  8869 [003]   680.060804: sched:sched_switch: prev_comm=python3 prev_pid=8869 ...
Lines before the first header (comments) are kept; a header without a time is dropped with its record.
"""

from __future__ import annotations

import re
from typing import IO, NamedTuple

from .folding.grammar import RECORD_TIME, is_detail

# Plain digits (no sign, exponent, inf or nan), at most 12 before the point: perf's clock in seconds.
SECONDS = re.compile(r"[0-9]{1,12}(?:\.[0-9]*)?|\.[0-9]+")
NO_END_NS = 2**62  # an open end in nanoseconds: later than any CLOCK_MONOTONIC time (146 years)


class Window(NamedTuple):
    """A span of perf's clock (CLOCK_MONOTONIC), seconds, both ends included; None leaves a side open."""

    start: float | None = None
    end: float | None = None

    @classmethod
    def parse(cls, text: str) -> Window:
        """'START,END' ('START,' or ',END' leave that side open); ValueError naming the text otherwise."""
        start, sep, end = text.partition(",")
        parts = [part.strip() for part in (start, end)]
        if sep and all(SECONDS.fullmatch(part) for part in parts if part):
            window = cls(*(float(part) if part else None for part in parts))
            if window.start is None or window.end is None or window.start <= window.end:
                return window
        raise ValueError(f"window {text!r}: expected START,END in seconds (0 <= START <= END)")

    def format(self) -> str:
        """'1252.175–1255.285 s of perf's clock (3.110 s)', 'from 1252.175 s ...', 'until ...'."""
        start, end = self
        if start is not None and end is not None:
            return f"{start:.3f}–{end:.3f} s of perf's clock ({end - start:.3f} s)"
        if start is not None:
            return f"from {start:.3f} s of perf's clock"
        return f"until {end:.3f} s of perf's clock" if end is not None else "the whole recording"

    def perf_time(self) -> str:
        """perf script's --time value: 'START,END' in seconds, microsecond precision, a side left open empty."""
        start, end = ("" if bound is None else f"{bound:.6f}" for bound in self)
        return f"{start},{end}"

    def ns(self) -> tuple[int, int]:
        """The bounds in nanoseconds (off-CPU's clock), an open side 0 or NO_END_NS."""
        start, end = self
        return (0 if start is None else round(start * 1e9), NO_END_NS if end is None else round(end * 1e9))

    def contains(self, seconds: float) -> bool:
        start, end = self
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
                self.keep = match is not None and self.window.contains(float(match.group(1)))
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
