"""The tool's own instruments in a `--mxnet` profile: marked, so they never pass for the program's work.

`record --mxnet` switches on MXNet's profiler, oneDNN's verbose log and our thread-map watcher
(pthreads.py); their work shows in both graphs. `mark` (the join's per-sample step, frames leaf
first) inserts one frame where the instrumented work begins, keeping the true stack below it:
    [instrumentation] MXNet profiler thread   below the thread name: every stack of MXNet's dump
                      thread (continuous_dump), identified exactly: the one thread outside Python
                      that runs Profiler::DumpProfile (MXNet calls it from its dump timer and from
                      the C API, i.e. a Python thread; recording.py)
    [instrumentation] flamegraph thread map   below the thread name: our watcher (its TID is in the sidecar)
    [instrumentation] MXNet profiler trace's drainer   below the thread name: the process that empties
                      the trace's pipe into its file (drain.py; its PID is in the sidecar)
    [instrumentation] MXNet profiler          above the outermost mxnet::profiler:: frame (timing
                      an operator on an engine thread, the final dump on the main thread)
    [instrumentation] oneDNN verbose log      above C stdout's print function called from libmxnet:
                      with --mxnet, C stdout is oneDNN's verbose log (inprocess.py), so those writes
                      (printf ... write, ext4) are the log's
`instrumentation_shares` reads the marks back from any folded profile (samples or microseconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...model import INSTRUMENTATION

PROFILER = INSTRUMENTATION + "MXNet profiler"
PROFILER_THREAD = INSTRUMENTATION + "MXNet profiler thread"
VERBOSE = INSTRUMENTATION + "oneDNN verbose log"
WATCH = INSTRUMENTATION + "flamegraph thread map"
TRACE_DRAIN = INSTRUMENTATION + "MXNet profiler trace's drainer"
PROFILER_FRAME = b"mxnet::profiler::"
DUMP_FRAME = b"mxnet::profiler::Profiler::DumpProfile"
# C stdout's print functions as perf names them (glibc 2.36: printf, the _chk variants, puts...).
STDOUT_PRINTS = frozenset(
    (b"printf", b"vprintf", b"__printf_chk", b"__vprintf_chk", b"puts", b"putchar", b"_IO_puts", b"_IO_printf")
)
LIBMXNET = (b"libmxnet.so", b"dnnl::", b"mkldnn::", b"mxnet::")  # a caller inside libmxnet (named or not)


def _encoded(text: str) -> bytes:
    return text.encode()


PROFILER_B, PROFILER_THREAD_B, VERBOSE_B, WATCH_B, TRACE_DRAIN_B = map(
    _encoded, (PROFILER, PROFILER_THREAD, VERBOSE, WATCH, TRACE_DRAIN)
)
THREAD_LABELS = {PROFILER_THREAD: PROFILER_THREAD_B, WATCH: WATCH_B, TRACE_DRAIN: TRACE_DRAIN_B}


def mark(frames: list[bytes], thread: bytes | None = None) -> list[bytes]:
    """`frames` (leaf first) with the instrumentation frame inserted; `thread` is the label of an
    instrument thread (every stack of it is marked at its root); unchanged when nothing is ours."""
    if thread is not None:
        return [*frames, thread]
    outermost: tuple[int, bytes] | None = None
    for i in range(len(frames) - 1, -1, -1):  # from the root: the first instrument met is where it began
        frame = frames[i]
        if frame.startswith(PROFILER_FRAME):
            outermost = (i, PROFILER_B)
            break
        if frame in STDOUT_PRINTS and i + 1 < len(frames) and frames[i + 1].startswith(LIBMXNET):
            outermost = (i, VERBOSE_B)
            break
    if outermost is None:
        return frames
    at, label = outermost
    return [*frames[: at + 1], label, *frames[at + 1 :]]


@dataclass(frozen=True)
class Shares:
    """Weight under each instrumentation frame, and the profile's total."""

    by_label: dict[str, float] = field(default_factory=dict)
    total: float = 0.0

    @property
    def weight(self) -> float:
        return sum(self.by_label.values())

    def percent(self, weight: float) -> float:
        return 100.0 * weight / self.total if self.total else 0.0

    def text(self, what: str) -> str:
        """`3.9 % of samples (MXNet profiler 2.7 %, oneDNN verbose log 1.2 %)`."""
        parts = ", ".join(
            f"{label.removeprefix(INSTRUMENTATION)} {self.percent(w):.1f} %"
            for label, w in sorted(self.by_label.items(), key=lambda item: (-item[1], item[0]))
        )
        return f"{self.percent(self.weight):.1f} % of {what}" + (f" ({parts})" if parts else "")


def instrumentation_shares(counts: Mapping[str, float]) -> Shares:
    """Folded stacks -> the weight under each [instrumentation] frame (the outermost one of a stack)."""
    found: dict[str, float] = {}
    total = 0.0
    for stack, weight in counts.items():
        total += weight
        at = stack.find(INSTRUMENTATION)
        if at < 0 or (at > 0 and stack[at - 1] != ";"):
            continue
        label = stack[at:].split(";", 1)[0]
        found[label] = found.get(label, 0.0) + weight
    return Shares(found, total)
