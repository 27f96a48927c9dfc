"""Insert MXNet operator and oneDNN primitive frames into each sample, from its time and thread.

A `Joiner` is the fold's per-sample hook (`FoldOptions.sample_hook`): it gets the sample's header
line and its folded frames (leaf first) and returns them with, where they belong:
    [op] NAME       just above ThreadedEngine::ExecuteOprBlock (everything under it is the operator's
                    cost; the innermost one when the engine runs an operator inside the completion
                    callback of another), or NaiveEngine::PushAsync (MXNET_ENGINE_TYPE=NaiveEngine runs
                    each operator inside the push, on the thread that pushed it: the Python frames
                    that did are then the stack's own callers); NAME is the span of the sample's
                    profiler thread at its time
                    ... or inside the completion callback (ThreadedEngine::OnCompleteStatic) of
                    the operator whose span ended last on that thread: the profiler stops its
                    clock first thing in that callback, then records the span and the engine
                    releases the operator's variables, all before the thread can start another
    [op] (none)     an engine thread inside ExecuteOprBlock but in no operator span and not in a
                    completion callback (the engine's own work before an operator starts)
    [op] (no profiler thread)   inside ExecuteOprBlock on a thread no profiler thread was mapped to
    [segment] A,B   a bulk segment (MXNet timed several operators as one span)
    [segment] (ImperativeBulk: ...)   the engine's bulk: MXNet does not record which operators ran
    [dnnl] KIND PROPAGATION SHAPE (IMPL)   just above MKLDNNStream::Submit, or below the JIT
                    frames of a stack cut short inside JIT code: the one primitive execution of the
                    verbose log running at the sample's time (within the thread's operator span)
    [dnnl] (none) / [dnnl] (ambiguous: N primitives at once)   when no / several executions fit
    [instrumentation] ...   the tool's own instruments (MXNet's profiler, oneDNN's verbose log,
                    our thread-map watcher), where their work begins: instruments.py
Nothing is guessed: a sample with no span or no execution at its time says so; a sample after the
instruments were stopped at their files' cap (`until`: limit.py) gets no [op]/[dnnl] frame at all. A sample of an
engine thread inside a span whose stack stops before ExecuteOprBlock (unwinding cut short: its
outermost frame is no thread root) gets its [op] frame just below the thread's root.

Sample headers it reads (perf script -F comm,pid,tid,time,...):
    python 14835/14964   459.672705: cpu-clock:
    python 14964 [001] 459.672705:     2004008 cpu-clock:
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...folding.grammar import THREAD_TIME
from .clock import Alignment
from .dnnl import VerboseLog
from .instruments import mark
from .profile import ProfilerTrace
from .switches import OffCpu
from .threads import ThreadMapping

EXECUTE = b"mxnet::engine::ThreadedEngine::ExecuteOprBlock"
NAIVE_EXECUTE = b"mxnet::engine::NaiveEngine::PushAsync"  # the naive engine runs the operator in the push
COMPLETE = b"mxnet::engine::ThreadedEngine::OnCompleteStatic"
COMPLETION_LIMIT_US = 10_000.0  # a completion this long after the span ended: something is off, say (none)
SUBMITS = (b"mxnet::MKLDNNStream::Submit", b"mxnet::DNNLStream::Submit")  # MXNet 1.x, 2.x
JIT_SUFFIX = b"_[j]"
THREAD_ROOTS = frozenset((b"start_thread", b"clone3", b"clone", b"_start", b"__libc_start_main"))
OP_NONE = "[op] (none)"
# The engine's own bulk (a Gluon CachedOp's pass under MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD/_BWD):
# the profiler records the bulk, not its operators.
ENGINE_BULK = "ImperativeBulk"
OP_ENGINE_BULK = "[segment] (ImperativeBulk: operators not recorded by MXNet)"
OP_UNMAPPED = "[op] (no profiler thread)"
DNNL_NONE = "[dnnl] (none)"
KEEP_TIMES = 50_000  # sample times kept for the clock check (every k-th beyond this)


def thread_of(header: re.Match[bytes]) -> int:
    """The TID of a THREAD_TIME match (collapse/script.py): the id after '/', or the only one printed."""
    return int(header.group(2) or header.group(1))


def execute_at(frames: Sequence[bytes]) -> int | None:
    """The index of the innermost frame that executes an operator (either engine's), or None."""
    found = [frames.index(anchor) for anchor in (EXECUTE, NAIVE_EXECUTE) if anchor in frames]
    return min(found) if found else None


def op_frame(name: str) -> str:
    """The frame of a span: `[op] NAME`, or `[segment] A,B,...` for a bulk segment (MXNet names it
    "[A,B,...]" and cuts long names short, closing bracket included: then the frame ends in "...")."""
    if name == ENGINE_BULK:
        return OP_ENGINE_BULK
    if name.startswith("["):
        return f"[segment] {name[1:-1]}" if name.endswith("]") else f"[segment] {name[1:]}..."
    return f"[op] {name}"


def _encode(text: str) -> bytes:
    return text.replace(";", ":").encode("utf-8", "surrogateescape")


class Thinned:
    """At most `limit` values spread over all that were added: those whose hash is a multiple of a power of two
    (raised as they come), so that the values kept depend on which were added, not in what order (a run joined
    in parts keeps what its whole join keeps: deferred.py)."""

    def __init__(self, limit: int = KEEP_TIMES) -> None:
        self.values: list[float] = []
        self.limit, self.stride = limit, 1

    def add(self, value: float) -> None:
        if _spread(value) % self.stride:
            return
        self.values.append(value)
        if len(self.values) >= self.limit:
            self._thin()

    def merge(self, other: Thinned) -> None:
        """The values of both, as if all had been added to this one."""
        self.stride = max(self.stride, other.stride)
        self.values = [v for v in (*self.values, *other.values) if not _spread(v) % self.stride]
        if len(self.values) >= self.limit:
            self._thin()

    def _thin(self) -> None:
        while len(self.values) >= self.limit:
            self.stride *= 2
            self.values = [v for v in self.values if not _spread(v) % self.stride]


def _spread(value: float) -> int:
    """A hash of a time, its low bits evenly spread (Fibonacci hashing of Python's float hash)."""
    return ((hash(value) * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)) >> 32


@dataclass
class JoinCounts:
    """What the joiner saw, for the coverage figures and the tables."""

    samples: int = 0
    no_time: int = 0  # headers without a time we could read
    engine: int = 0  # samples inside ExecuteOprBlock, or under an [op] frame, or of an engine thread
    ops: Counter[str] = field(default_factory=Counter)  # [op]/[segment] frame -> engine samples
    completions: int = 0  # ... of them in an operator's completion callback, after its span
    jit: int = 0  # samples whose leaf is JIT code
    jit_named: int = 0  # ... under exactly one [dnnl] primitive
    primitives: Counter[str] = field(default_factory=Counter)  # [dnnl] frame -> samples
    after_cap: int = 0  # samples after the instruments were stopped at a cap (limit.py): not joined
    first: float = float("inf")  # µs realtime of the first and last sample seen
    last: float = float("-inf")


@dataclass(frozen=True, slots=True)
class Found:
    """What the trace and the verbose log say of one sample, from its thread and time alone (`Joiner.look`):
    all that a join needs besides the thread's facts, which `Joiner.settle` applies. Hashable: samples that
    found the same are counted together (deferred.py)."""

    after: bool = False  # after the instruments were stopped at their cap
    span: str | None = None  # the name of the thread's innermost span at the time
    done: str | None = None  # in a completion callback outside any span: the span that ended last, if recent
    primitive: str | None = None  # the [dnnl] frame (or why none), for a stack that executes one


class Joiner:
    """The per-sample hook; see the module docstring. A sample is joined in two steps: `look` (its time
    against the trace and the log) and `settle` (the frames, from what was found and the thread's facts)."""

    def __init__(self, trace: ProfilerTrace, verbose: VerboseLog | None, alignment: Alignment, threads: ThreadMapping):
        self.trace, self.verbose, self.alignment, self.threads = trace, verbose, alignment, threads
        self.by_tid = {tid: trace.threads[p] for tid, p in threads.by_tid.items() if p in trace.threads}
        self.counts = JoinCounts()
        self.primitive_times = Thinned()  # samples executing a primitive (for the clock check)
        self.operator_times = Thinned()  # samples inside ExecuteOprBlock on a mapped thread
        self._names: dict[str, bytes] = {}
        self.off_cpu: dict[int, OffCpu] = {}  # Linux TID -> when it was off the CPU (--switch-events)
        self.period_us: float | None = None  # the sampling period, for CPU time from sample counts
        # Mapped threads all of whose samples count as engine-thread samples: those that execute
        # operators (recording.py: sampled in ExecuteOprBlock), not a Python thread with a few spans.
        self.engine_tids: set[int] = set(self.by_tid)
        # Threads that are the tool's instruments (TID -> their [instrumentation] frame): instruments.py.
        self.instrument_threads: dict[int, bytes] = {}
        # perf's time (s) the instruments were stopped at their files' cap (limit.py): nothing is named after it.
        self.until: float | None = None
        # TID -> (profiler thread, spans, frame -> [calls, µs, on-CPU µs]): its first spans timed while the run
        # went (running.py), for summary.operator_times to go on from.
        self.spans_timed: dict[int, tuple[int, int, dict[str, list[float]]]] = {}

    def name(self, text: str) -> bytes:
        found = self._names.get(text)
        if found is None:
            found = self._names[text] = _encode(text)
        return found

    def __call__(self, header: bytes, frames: list[bytes]) -> list[bytes]:
        match = THREAD_TIME.search(header)
        if match is None:
            self.counts.samples += 1
            self.counts.no_time += 1
            return frames
        return self.join(thread_of(match), float(match.group(3)), frames)

    def join(self, tid: int, seconds: float, frames: list[bytes]) -> list[bytes]:
        """The frames of the sample of thread `tid` at `seconds` of perf's clock (a sample recorded while
        the fold ran and joined after the run, when the trace exists: deferred.py)."""
        if tid in self.instrument_threads:
            return self.settle(tid, frames, NOTHING)
        found = self.look(tid, seconds, frames)
        if not found.after:
            self.timed(tid, self.alignment.realtime_us(seconds), frames)
        return self.settle(tid, frames, found)

    def look(self, tid: int, seconds: float, frames: Sequence[bytes]) -> Found:
        """What the trace and the log hold at the sample's time, on its thread (nothing of the counts)."""
        if self.until is not None and seconds > self.until:
            return AFTER  # no span, no execution recorded after it: nothing to name, nothing guessed
        t = self.alignment.realtime_us(seconds)
        index = self.by_tid.get(tid)
        span = index.at(t) if index is not None else None
        done = None
        if span is None and index is not None and COMPLETE in frames and execute_at(frames) is not None:
            ended = index.ended_before(t)
            done = ended.name if ended is not None and t - ended.end <= COMPLETION_LIMIT_US else None
        primitive = None
        if self.verbose is not None and (any(s in frames for s in SUBMITS) or jit_leaf(frames)):
            running = self.verbose.at(t, (span.start, span.end) if span is not None else None)
            if len(running) == 1:
                primitive = running[0].frame
            else:
                primitive = f"[dnnl] (ambiguous: {len(running)} primitives at once)" if running else DNNL_NONE
        if span is None and done is None and primitive is None:
            return NOTHING
        return Found(False, span.name if span is not None else None, done, primitive)

    def timed(self, tid: int, t: float, frames: Sequence[bytes]) -> None:
        """The sample's time (µs realtime) where the coverage window and the clock check take it; for a thread
        that is no instrument, a sample before any cap."""
        counts = self.counts
        counts.first = min(counts.first, t)
        counts.last = max(counts.last, t)
        if tid in self.by_tid and execute_at(frames) is not None:
            self.operator_times.add(t)
        if self.verbose is not None and (any(s in frames for s in SUBMITS) or jit_leaf(frames)):
            self.primitive_times.add(t)

    def settle(self, tid: int, frames: list[bytes], found: Found, weight: int = 1) -> list[bytes]:
        """The frames with this tool's frames inserted, from what `look` found; `weight` samples counted."""
        counts = self.counts
        counts.samples += weight
        if (instrument := self.instrument_threads.get(tid)) is not None:
            return mark(frames, instrument)
        if found.after:
            counts.after_cap += weight
            return mark(frames)
        mapped = tid in self.by_tid
        execute = execute_at(frames)
        submit = next((s for s in SUBMITS if s in frames), None)
        jit = jit_leaf(frames)
        if not mapped and execute is None and submit is None and not jit:
            return mark(frames)
        inserts: list[tuple[int, bytes]] = []
        if mapped or execute is not None:
            op = self._op(frames, found, mapped, execute, weight)
            if op is not None:
                inserts.append(op)
            if op is not None or tid in self.engine_tids:  # (inside ExecuteOprBlock, op is never None)
                counts.engine += weight
        if (submit is not None or jit) and self.verbose is not None:
            inserts.append(self._primitive(frames, found, submit, jit, weight))
        if not inserts:
            return mark(frames)
        joined = list(frames)
        for position, name in sorted(inserts, key=lambda item: -item[0]):
            joined.insert(position, name)
        return mark(joined)

    def _op(
        self, frames: list[bytes], found: Found, mapped: bool, execute: int | None, weight: int
    ) -> tuple[int, bytes] | None:
        if execute is not None:
            if not mapped:
                text = OP_UNMAPPED
            elif found.span is not None:
                text = op_frame(found.span)
            elif found.done is not None:
                text = op_frame(found.done)
                self.counts.completions += weight
            else:
                text = OP_NONE
            self.counts.ops[text] += weight
            return execute, self.name(text)
        if found.span is None or (frames and frames[-1] in THREAD_ROOTS):
            # Outside any operator (idle, or the engine's own work); or a complete stack that does not
            # pass through ExecuteOprBlock although the thread is inside a span: nothing to say.
            return None
        text = op_frame(found.span)
        self.counts.ops[text] += weight
        return len(frames), self.name(text)  # the stack stops before ExecuteOprBlock: below the root

    def _primitive(
        self, frames: list[bytes], found: Found, submit: bytes | None, jit: bool, weight: int
    ) -> tuple[int, bytes]:
        text = found.primitive or DNNL_NONE
        self.counts.primitives[text] += weight
        if jit:
            self.counts.jit += weight
            self.counts.jit_named += weight if not is_unnamed_primitive(text) else 0
        if submit is not None:
            return frames.index(submit), self.name(text)
        depth = 0
        while depth < len(frames) and frames[depth].endswith(JIT_SUFFIX):
            depth += 1
        return depth, self.name(text)


NOTHING = Found()
AFTER = Found(after=True)


def jit_leaf(frames: Sequence[bytes]) -> bool:
    return bool(frames) and frames[0].endswith(JIT_SUFFIX)


def is_unnamed_primitive(text: str) -> bool:
    """`[dnnl] (none)`, `[dnnl] (ambiguous: ...)`: no single execution fits."""
    return text.startswith("[dnnl] (")
