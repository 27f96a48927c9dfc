"""Read oneDNN's verbose log (DNNL_VERBOSE=1, DNNL_VERBOSE_TIMESTAMP=1) into primitive executions.

Lines it handles (oneDNN 2.4 inside MXNet 1.9; start in ms of CLOCK_REALTIME, duration in ms; the
memory descriptors are shortened here):
    dnnl_verbose,1795404596604.382080,exec,cpu,inner_product,x64:gemm:jit,forward_training,src_f32::\
blocked:ab:f0 wei_f32::blocked:ab:f0 bia_f32::blocked:a:f0 dst_f32::blocked:ab:f0,,,mb64ic784oc128,2.71191
    dnnl_verbose,1795404596608.541992,exec,cpu,eltwise,jit:avx512_common,forward_training,data_f32::\
blocked:ab:f0 diff_undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,64x128,0.00512695
    dnnl_verbose,info,oneDNN v2.4.4 (commit 5818c40f07bdb6307f9bc64e929836fe036da644)
oneDNN 3 spells the prefix `onednn_verbose` and may add a `primitive,` marker; both are read.
The lines carry no thread id: they are matched to samples by time (see join.py). A long log repeats a few
dozen primitives: an execution is kept as two times and a number for its texts (~28 bytes: intervals.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .intervals import Intervals
from .profile import clipped_totals

PREFIXES = (b"dnnl_verbose,", b"onednn_verbose,")


@dataclass(frozen=True, slots=True)
class Primitive:
    """One primitive execution; times in microseconds of CLOCK_REALTIME."""

    start: float
    end: float
    kind: str  # inner_product, eltwise, reorder, softmax...
    implementation: str  # x64:gemm:jit, jit:avx512_common, simple:any...
    propagation: str  # forward_training, backward_data, backward_weights, undef...
    shape: str  # mb64ic784oc128, 64x128...

    @property
    def frame(self) -> str:
        """The frame drawn above the code that executes it."""
        return f"[dnnl] {self.kind} {self.propagation} {self.shape} ({self.implementation})"


class VerboseLog:
    """Primitive executions sorted by (start, end) (intervals.py: arrays, ~28 bytes each; the label a tab-joined
    kind, implementation, propagation and shape), and what else the log held. `index` once all are in."""

    def __init__(self, primitives: Iterable[Primitive] = ()) -> None:
        self.intervals = Intervals(longest_first=False)
        self.version = ""  # 'oneDNN v2.4.4 (commit ...)'
        self.other_lines = 0  # the program's own C-level stdout, caught with the log
        self.problems: list[str] = []  # one line each, with figures
        for primitive in primitives:
            self.add(primitive)

    def add(self, primitive: Primitive) -> None:
        label = "\t".join((primitive.kind, primitive.implementation, primitive.propagation, primitive.shape))
        self.intervals.add(primitive.start, primitive.end, label)

    def __len__(self) -> int:
        return len(self.intervals)

    def __iter__(self) -> Iterator[Primitive]:
        return (_primitive(start, end, label) for start, end, label in self.intervals)

    @property
    def primitives(self) -> list[Primitive]:
        """Every execution as an object (for a few: a long log is iterated instead)."""
        return list(self)

    def index(self) -> None:
        self.intervals.seal()

    def at(self, t: float, within: tuple[float, float] | None = None) -> list[Primitive]:
        """The executions running at t (inside `within`, an operator span, when given)."""
        found = []
        for i in self.intervals.containing(t):
            start, end, label = self.intervals.triple(i)
            if within is None or within[0] <= start <= within[1]:
                found.append(_primitive(start, end, label))
        return found

    def aggregate(self, start: float | None = None, end: float | None = None) -> dict[str, tuple[int, float]]:
        """frame -> (executions, microseconds) inside [start, end], clipped at the edges."""
        return clipped_totals(((p.frame, p.start, p.end) for p in self), start, end)


def _primitive(start: float, end: float, label: str) -> Primitive:
    kind, implementation, propagation, shape = label.split("\t")
    return Primitive(start, end, kind, implementation, propagation, shape)


def read_verbose(path: str) -> VerboseLog:
    """The log in `path`; raises OSError only when it cannot be read at all."""
    with open(path, "rb") as f:
        return parse_verbose(f)


def parse_verbose(lines: Iterable[bytes], log: VerboseLog | None = None) -> VerboseLog:
    """The log's lines read into `log` (a new one by default: a caller's shows the executions held so far)."""
    log = log if log is not None else VerboseLog()
    garbled = 0
    first_garbled = ""
    for number, line in enumerate(lines, 1):
        if not line.startswith(PREFIXES):
            if line.strip():
                log.other_lines += 1
            continue
        parsed = parse_line(line.rstrip(b"\r\n"))
        if isinstance(parsed, Primitive):
            log.add(parsed)
        elif parsed:
            log.version = log.version or parsed
        elif parsed is None:
            garbled += 1
            first_garbled = first_garbled or f"line {number}"
    if garbled:
        log.problems.append(f"{garbled:,} verbose lines not understood (first: {first_garbled})")
    log.index()
    return log


def parse_line(line: bytes) -> Primitive | str | None:
    """A Primitive for an exec line; the version text for the version line; '' for other info
    lines (create, templates); None for a line we cannot read (cut short, garbled)."""
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return None
    if "\t" in text:
        return None  # never in oneDNN's lines (the log also catches the program's stdout); VerboseLog joins with it
    parts = text.split(",")
    if len(parts) < 3:
        return None
    if parts[1] == "info":
        return parts[2] if parts[2].startswith(("oneDNN v", "DNNL v")) else ""
    if "exec" not in parts[1:4]:
        return ""  # create lines (DNNL_VERBOSE=2) and the like
    at = parts.index("exec", 1)
    if at == 1 or (at == 2 and parts[1] == "primitive"):
        return None  # no timestamp: DNNL_VERBOSE_TIMESTAMP was not set
    fields = parts[at + 1 :]  # oneDNN 3 puts a "primitive," marker before "exec": skipped with it
    # engine, kind, implementation, propagation, memory descriptors, attributes, auxiliary, shape, ms
    if len(fields) < 9:
        return None
    try:
        start_ms, duration_ms = float(parts[1]), float(fields[-1])
    except ValueError:
        return None
    if duration_ms < 0:
        return None
    start = start_ms * 1000.0
    kind, implementation, propagation, shape = (sys.intern(fields[i]) for i in (1, 2, 3, -2))
    return Primitive(start, start + duration_ms * 1000.0, kind, implementation, propagation, shape)
