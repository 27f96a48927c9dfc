"""Read MXNet's profiler output (Chrome-trace JSON) into operator spans per profiler thread.

What MXNet 1.9 writes (`mx.profiler.dump()`), one event per object; `ts` is microseconds of
CLOCK_REALTIME, `tid` a 64-bit hash of the C++ thread id (not the Linux TID):
    {"name": "FullyConnected", "cat": "operator", "ph": "B", "ts": 1795356975007241, "pid": 0,
     "tid": 14697135246327494939}
    {"name": "FullyConnected", "cat": "operator", "ph": "E", "ts": 1795356975007402, ...}
    {"ph": "M", "args": {"name": "cpu/0"}, "pid": 0, "name": "process_name"}
Each operator is also written as an async pair ("ph": "b"/"e", same times): those are skipped,
as is metadata ("M"). Complete events ("ph": "X", "dur") are read too. With profile_memory=True the
storage's counters (bytes in use after each allocation and free, on the thread that made it) are kept
as the increases they show:
    {"name": "Memory: cpu/0", "cat": "Device Storage", "ph": "C", "ts": 1795722207591307,
     "args": {"Memory: cpu/0": 512}, "pid": 9785678402843609691, "tid": 8985424698992349153}

The file is read as a stream (events.py) and each event paired as it comes: memory holds the spans (~28
bytes each in arrays: intervals.py; ~300,000 in a 224 MB trace), not the file nor a dict per event. A file
cut short (the process was killed while dumping, or the trace reached its cap: inprocess.py) or garbled is
read as far as it goes: every complete event object is recovered and the damage is reported, never raised.
"""

from __future__ import annotations

import io
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .events import iter_events
from .intervals import Intervals, Labels

OPERATOR = "operator"
STORAGE = "Device Storage"


@dataclass(frozen=True, slots=True)
class Span:
    """One operator execution on one profiler thread, in microseconds of CLOCK_REALTIME."""

    start: float
    end: float
    name: str


class SpanIndex:
    """The spans of one thread, sorted (intervals.py: arrays, ~28 bytes a span), with the innermost span at a
    time found by bisection."""

    def __init__(self, spans: Iterable[Span] = (), intervals: Intervals | None = None) -> None:
        if intervals is None:
            intervals = Intervals(longest_first=True)
            for span in spans:
                intervals.add(span.start, span.end, span.name)
        intervals.seal()
        self.intervals = intervals

    def __len__(self) -> int:
        return len(self.intervals)

    def __iter__(self) -> Iterator[Span]:
        return (Span(start, end, name) for start, end, name in self.intervals)

    @property
    def spans(self) -> list[Span]:
        """Every span as an object (for a few: a long trace's thread is iterated instead)."""
        return list(self)

    def _span(self, i: int | None) -> Span | None:
        return None if i is None else Span(*self.intervals.triple(i))

    def at(self, t: float) -> Span | None:
        """The innermost (latest-starting) span with start <= t <= end, or None."""
        return self._span(next(self.intervals.containing(t), None))

    def ended_before(self, t: float) -> Span | None:
        """The span that ended last at or before t (one thread runs its operators one after another)."""
        return self._span(self.intervals.ended_before(t))

    @property
    def first(self) -> float:
        return self.intervals.starts[0] if len(self) else 0.0

    @property
    def last(self) -> float:
        return self.intervals.reach[-1] if len(self) else 0.0


@dataclass
class ProfilerTrace:
    """Operator spans per profiler thread, and what was wrong with the file."""

    threads: dict[int, SpanIndex] = field(default_factory=dict)
    events: int = 0  # event objects read
    storage: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # tid -> (ts, bytes more in use)
    problems: list[str] = field(default_factory=list)  # one line each, with figures

    @property
    def spans(self) -> int:
        return sum(len(index) for index in self.threads.values())

    def aggregate(self, start: float | None = None, end: float | None = None) -> dict[str, tuple[int, float]]:
        """name -> (calls, microseconds) of spans inside [start, end] (clipped at the edges): the
        profiler's own time per operator, as `mx.profiler.dumps()` sums it, over the same window."""
        spans = ((name, start, end) for index in self.threads.values() for start, end, name in index.intervals)
        return clipped_totals(spans, start, end)


def clipped_totals(
    intervals: Iterable[tuple[str, float, float]], start: float | None, end: float | None
) -> dict[str, tuple[int, float]]:
    """name -> (count, length) of the (name, start, end) intervals that overlap [start, end], clipped
    at its edges (None: open); an interval that only touches an edge does not count, an instant does."""
    lo = float("-inf") if start is None else start
    hi = float("inf") if end is None else end
    totals: dict[str, tuple[int, float]] = {}
    for name, first, last in intervals:
        length = min(last, hi) - max(first, lo)
        if length < 0 or (length == 0 and last != first):
            continue
        calls, time = totals.get(name, (0, 0.0))
        totals[name] = (calls + 1, time + length)
    return totals


def read_profile(path: str) -> ProfilerTrace:
    """The trace in `path`, read as a stream (memory: the spans, not the file); raises OSError only when
    the file cannot be read at all."""
    with open(path, "rb") as f:
        return read_trace(f)


def parse_profile(data: bytes) -> ProfilerTrace:
    return read_trace(io.BytesIO(data))


def read_trace(stream: BinaryIO, pairing: Pairing | None = None) -> ProfilerTrace:
    """The events paired as they are read (events.py): no event is kept but the storage counters'. A
    `pairing` of the caller's shows the spans held so far (`Pairing.held`) while the stream is read."""
    trace = ProfilerTrace()
    pairing = pairing if pairing is not None else Pairing()
    for event in iter_events(stream, trace.problems):
        trace.events += 1
        pairing.add(event)
    pairing.finish(trace)
    trace.storage = storage_increases(pairing.counters)
    return trace


class Counters:
    """The storage counters' values as they come (profile_memory=True: one event per allocation), compactly:
    arrays of ts, value, name number and tid (~28 bytes each, as a span), no event kept."""

    def __init__(self) -> None:
        self.ts, self.values, self.names, self.tids = array("d"), array("d"), array("I"), array("Q")
        self.labels = Labels()

    def __len__(self) -> int:
        return len(self.ts)

    def add(self, event: dict[str, Any]) -> None:
        name, args, tid, ts = event.get("name"), event.get("args"), event.get("tid"), event.get("ts")
        value = args.get(name) if isinstance(args, dict) and isinstance(name, str) else None
        if not isinstance(name, str) or not _number(value) or not _number(ts) or not isinstance(tid, int):
            return
        if not 0 <= tid < 1 << 64:
            return  # not a profiler tid (a 64-bit hash)
        self.ts.append(float(ts))  # type: ignore[arg-type]
        self.values.append(float(value))  # type: ignore[arg-type]
        self.names.append(self.labels.number(name))
        self.tids.append(tid)


def storage_increases(counters: Counters) -> dict[int, list[tuple[float, float]]]:
    """tid -> (ts, increase) of each storage counter event that rose (each counter by itself, in time order)."""
    before: dict[int, float] = {}
    rises: dict[int, list[tuple[float, float]]] = {}
    for i in sorted(range(len(counters)), key=counters.ts.__getitem__):
        name, value = counters.names[i], counters.values[i]
        rise = value - before.get(name, 0.0)
        before[name] = value
        if rise > 0:
            rises.setdefault(counters.tids[i], []).append((counters.ts[i], rise))
    return rises


def _number(value: object) -> bool:
    return isinstance(value, int | float)


class Pairing:
    """B/E pairs (nested properly per thread) and X events -> spans, one event at a time; the rest counted
    as problems. Names are interned: a long trace repeats a few dozen operator names."""

    def __init__(self) -> None:
        self.open_spans: dict[int, list[tuple[str, float]]] = {}
        self.names = Labels()  # every thread's spans number their names in this one
        self.spans: dict[int, Intervals] = {}
        self.counters = Counters()  # the storage counters' values (profile_memory)
        self.unmatched_end = self.crossed = self.bad = 0

    def held(self) -> int:
        """Spans and counter values held so far, each about a span's bytes (read from another thread while
        this one reads: a length per thread)."""
        return sum(len(intervals) for intervals in list(self.spans.values())) + len(self.counters)

    def add(self, event: dict[str, Any]) -> None:
        phase = event.get("ph")
        if phase == "C" and event.get("cat") == STORAGE:
            self.counters.add(event)
            return
        if phase not in ("B", "E", "X") or event.get("cat") != OPERATOR:
            return
        tid, ts, name = event.get("tid"), event.get("ts"), event.get("name")
        if not isinstance(tid, int) or not isinstance(ts, int | float) or not isinstance(name, str):
            self.bad += 1
            return
        if phase == "X":
            dur = event.get("dur")
            if not isinstance(dur, int | float) or dur < 0:
                self.bad += 1
                return
            self._thread(tid).add(float(ts), float(ts + dur), name)
            return
        stack = self.open_spans.setdefault(tid, [])
        if phase == "B":
            stack.append((sys.intern(name), float(ts)))
            return
        if not stack:
            self.unmatched_end += 1
            return
        if stack[-1][0] != name:
            self.crossed += 1  # an end that does not close the innermost open span: impossible nesting
            if not any(open_name == name for open_name, _ in stack):
                return
            while stack[-1][0] != name:
                stack.pop()
        open_name, start = stack.pop()
        if ts < start:
            self.bad += 1
            return
        self._thread(tid).add(start, float(ts), open_name)

    def _thread(self, tid: int) -> Intervals:
        found = self.spans.get(tid)
        if found is None:
            found = self.spans[tid] = Intervals(longest_first=True, labels=self.names)
        return found

    def finish(self, trace: ProfilerTrace) -> None:
        never_ended = sum(len(stack) for stack in self.open_spans.values())
        trace.threads = {tid: SpanIndex(intervals=intervals) for tid, intervals in self.spans.items()}
        self.spans = {}
        for count, what in (
            (never_ended, "operator spans never ended (cut short?)"),
            (self.unmatched_end, "span ends without a begin"),
            (self.crossed, "span ends that cross another open span on the same thread (impossible overlap)"),
            (self.bad, "operator events without a usable name, thread or time"),
        ):
            if count:
                trace.problems.append(f"{count:,} {what}")
        trace.problems.extend(_overlaps(trace.threads))


def _overlaps(threads: dict[int, SpanIndex]) -> Iterator[str]:
    """Spans on one thread that overlap without nesting: one thread cannot run two operators."""
    for tid, index in threads.items():
        count, worst = 0, 0.0
        starts, ends = index.intervals.starts, index.intervals.ends
        for i in range(1, len(starts)):
            if starts[i - 1] < starts[i] < ends[i - 1] < ends[i]:
                count += 1
                worst = max(worst, ends[i - 1] - starts[i])
        if count:
            yield f"profiler thread {tid}: {count:,} spans overlap without nesting (up to {worst:,.0f} µs)"
