"""Samples in time order, for the one export that needs them (Chrome's Trace Event Format).

Folded text has no time, so this reads `perf script` text itself: each record's thread, time and
stack, with frames named by the folder's own `name_frame` (same names as `fold`, kernel
and JIT annotations and `[unknown]` grouping included). On-CPU, a sample stands for the time until
the thread's next sample, at most one sampling interval (from the `frequency` capture fact, from
the period of a clock event, else the lower decile of the gaps between a thread's samples), so idle
time stays empty. Off-CPU waits (folding.perf_sched) are spans of their own: switch-out to switch-in.

Records it reads (one sample per record; the first event in the text, as `fold` does):
    python 19065/19130  1252.176183: cpu-clock:
    \t         13a364b mxnet::engine::ThreadedEngine::ExecuteOprBlock (/venv/mxnet/libmxnet.so)
    python 4242  100.000001:     1001001 cpu-clock:  7f12 PyEval_Eval+0x3 (/usr/bin/python3)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..folding.grammar import is_detail, is_header, is_header_frame, is_non_sample, read_header
from ..folding.perf import FoldOptions, name_frame
from ..folding.perf_sched import OffCpuOptions, SchedCollapser
from ..io.diagnostics import Diagnostics
from ..io.folded import decode, encode

CLOCK_EVENTS = (b"cpu-clock", b"task-clock")
CONTIGUOUS = 1.5  # a gap up to 1.5 sampling intervals is the next sample, longer means the thread was off


class Span(NamedTuple):
    """One thread in one stack from `start` to `end` (perf's clock, ns)."""

    start: int
    end: int
    pid: int
    tid: int
    stack: tuple[str, ...]  # root first: comm-PID/TID (comm-TID off-CPU), as `fold --tid` writes it


@dataclass
class Timeline:
    """Spans of every thread, time ordered per thread, with the names of threads and processes."""

    spans: list[Span] = field(default_factory=list)
    threads: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, tid) -> comm
    processes: dict[int, str] = field(default_factory=dict)  # pid -> comm
    unit: str = "samples"  # what a span counts: samples (on-CPU), or microseconds (off-CPU waits)
    event: str | None = None
    interval_ns: int | None = None  # on-CPU: the sampling interval a sample stands for
    metadata: dict[str, str] = field(default_factory=dict)


class _Sample(NamedTuple):
    ns: int
    pid: int
    tid: int
    stack: tuple[str, ...]


class _Reader:
    """One pass over `perf script` text: the record being read, and the samples so far."""

    def __init__(self, path: str, options: FoldOptions, diagnostics: Diagnostics) -> None:
        self.path, self.diagnostics = path, diagnostics
        self.options = options  # frames named exactly as `fold` names them
        self.names: dict[bytes, str | None] = {}  # raw frame line -> name; '' dropped, None malformed
        self.timeline = Timeline()
        self.samples: list[_Sample] = []
        self.periods: list[int] = []
        # -e/--event's, else the first event seen: the one we read
        self.event: bytes | None = encode(options.event_filter) if options.event_filter else None
        self.current: tuple[int, int, int] | None = None  # (ns, pid, tid) of the record being read
        self.root = ""
        self.frames: list[str] = []
        self.java = False
        self.bad = False

    def finish(self) -> None:
        if self.current is not None and not self.bad:
            self.samples.append(_Sample(*self.current, (self.root, *reversed(self.frames))))
        elif self.current is not None:
            self.diagnostics.skipped_records += 1  # once per record, however many of its lines were bad
        self.frames.clear()
        self.current, self.bad = None, False

    def frame(self, number: int, line: bytes) -> None:
        if self.current is None:
            return  # a frame of a record we skip (another event, a bad header)
        name = self.names.get(line, "?")
        if name == "?":
            raw = name_frame(line.strip(), self.options, self.java)
            name = self.names[line] = decode(raw) if raw is not None else None
        if name is None:
            self.diagnostics.report(self.path, number, "bad-frame-line", decode(line))
            self.bad = True
        elif name:
            self.frames.append(name)

    def header(self, number: int, line: bytes) -> None:
        self.finish()
        self.diagnostics.records += 1
        header = read_header(line)
        if header is None or header.time_ns is None or header.event is None:
            self.diagnostics.report(self.path, number, "bad-header", decode(line))
            self.diagnostics.skipped_records += 1
            return
        event = header.event
        self.event = self.event or event
        if event != self.event:
            return
        comm, pid_text = header.comm, header.pid or b"?"
        pid, tid = int(header.pid or 0), int(header.tid)
        self.root = decode(comm.replace(b" ", b"_") + b"-" + pid_text + b"/" + str(tid).encode())
        self.timeline.threads.setdefault((pid, tid), decode(comm))
        if pid == tid or pid not in self.timeline.processes:
            self.timeline.processes[pid] = decode(comm)
        self.current = (header.time_ns, pid, tid)
        self.java = comm.startswith(b"java")
        if header.period and event in CLOCK_EVENTS:
            self.periods.append(int(header.period))  # a clock event's period is in ns
        rest = header.rest.strip()
        if rest and is_header_frame(rest):  # sampled without -g: the one frame is on the header
            raw = name_frame(rest, self.options, self.java)
            if raw:
                self.frames.append(decode(raw))


def read_timeline(
    lines: Iterable[bytes],
    path: str,
    options: FoldOptions | None = None,
    diagnostics: Diagnostics | None = None,
    interval_ns: int | None = None,
) -> Timeline:
    """On-CPU samples of `perf script` text as spans; `interval_ns` when the sampling rate is known."""
    reader = _Reader(path, options or FoldOptions(), diagnostics or Diagnostics())
    for number, line in enumerate(lines, 1):
        first = line[:1]
        if first in (b"\t", b" ", b"|") and is_detail(line):
            continue  # a source line, the instruction or source code (-F +srcline, +insn, +srccode)
        if first == b"\t" or (first == b" " and line.strip() and not is_header(line.strip())):
            if not is_non_sample(line):
                reader.frame(number, line)
                continue
        if first == b"#":
            continue  # perf's header comments
        if not line.strip() or is_non_sample(line):
            reader.finish()  # a blank line, or a record that is no sample (--show-*-events)
        else:
            reader.header(number, line)
    reader.finish()
    timeline = reader.timeline
    timeline.event = decode(reader.event) if reader.event is not None else None
    timeline.interval_ns = interval_ns or _median(reader.periods) or _gap_decile(reader.samples)
    timeline.spans = _spans(reader.samples, timeline.interval_ns)
    return timeline


def _median(values: list[int]) -> int | None:
    return sorted(values)[len(values) // 2] if values else None


def _gap_decile(samples: list[_Sample]) -> int | None:
    """The lower decile of the gaps between a thread's consecutive samples: its sampling interval."""
    last: dict[int, int] = {}
    gaps = []
    for sample in sorted(samples, key=lambda s: (s.tid, s.ns)):
        before = last.get(sample.tid)
        if before is not None and sample.ns > before:
            gaps.append(sample.ns - before)
        last[sample.tid] = sample.ns
    return sorted(gaps)[len(gaps) // 10] if gaps else None


def _spans(samples: list[_Sample], interval: int | None) -> list[Span]:
    """Each sample lasts until its thread's next sample, or one interval when the thread went off-CPU."""
    step = max(interval or 0, 1000)  # at least 1 µs (the trace's resolution), so every sample is drawn
    spans = []
    ordered = sorted(samples, key=lambda s: (s.pid, s.tid, s.ns))
    for i, sample in enumerate(ordered):
        after = ordered[i + 1] if i + 1 < len(ordered) else None
        gap = after.ns - sample.ns if after is not None and after.tid == sample.tid else None
        length = gap if gap is not None and 0 < gap <= CONTIGUOUS * step else step
        spans.append(Span(sample.ns, sample.ns + length, sample.pid, sample.tid, sample.stack))
    return spans


def read_offcpu_timeline(
    lines: Iterable[bytes],
    path: str,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    pid: int = 0,
) -> Timeline:
    """Off-CPU waits of sched_switch `perf script` text as spans (switch-out to switch-in), µs."""
    options = options or OffCpuOptions()
    collapser = SchedCollapser(options, diagnostics or Diagnostics())
    timeline = Timeline(unit="microseconds", event="sched:sched_switch")
    # What the off-CPU folder (folding.sched_totals.OffCpuFolder) keeps, the trace draws.
    states = {state.encode() for state in options.states} if options.states else None
    first, last = options.window.ns() if options.window else (0, 2**63)
    untimed = 0
    for wait in collapser.iter_waits(lines, path):
        if not wait.end:
            untimed += 1  # spans the whole recording, time unknown: counted, not drawn
            continue
        start, end = max(wait.end - wait.ns, first), min(wait.end, last)
        if end <= start or (states is not None and wait.state not in states) or end - start < options.min_us * 1000:
            continue
        comm, _, tid_text = decode(wait.thread).rpartition("-")
        tid = int(tid_text) if tid_text.isdigit() else 0
        timeline.threads.setdefault((pid, tid), comm)
        timeline.spans.append(Span(start, end, pid, tid, tuple(decode(wait.stack).split(";"))))
    timeline.processes.setdefault(pid, "off-CPU")
    if untimed:
        timeline.metadata["waits without a time (not drawn)"] = str(untimed)
    timeline.spans.sort(key=lambda s: (s.pid, s.tid, s.start))
    return timeline
