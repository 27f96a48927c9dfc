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
from dataclasses import dataclass, field

from ...folding.grammar import THREAD_TIME
from .clock import Alignment
from .dnnl import VerboseLog
from .instruments import mark
from .profile import ProfilerTrace, Span
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


def execute_at(frames: list[bytes]) -> int | None:
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
    """At most `limit` values spread evenly over all that were added (every 2**k-th one)."""

    def __init__(self, limit: int = KEEP_TIMES) -> None:
        self.values: list[float] = []
        self.limit, self.stride, self.seen = limit, 1, 0

    def add(self, value: float) -> None:
        self.seen += 1
        if self.seen % self.stride:
            return
        self.values.append(value)
        if len(self.values) >= self.limit:
            del self.values[1::2]
            self.stride *= 2


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


class Joiner:
    """The per-sample hook; see the module docstring."""

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
        counts = self.counts
        counts.samples += 1
        if (instrument := self.instrument_threads.get(tid)) is not None:
            return mark(frames, instrument)
        if self.until is not None and seconds > self.until:
            counts.after_cap += 1  # no span, no execution recorded after it: nothing to name, nothing guessed
            return mark(frames)
        t = self.alignment.realtime_us(seconds)
        counts.first = min(counts.first, t)
        counts.last = max(counts.last, t)
        index = self.by_tid.get(tid)
        execute = execute_at(frames)
        has_execute = execute is not None
        submit = next((s for s in SUBMITS if s in frames), None)
        jit_leaf = bool(frames) and frames[0].endswith(JIT_SUFFIX)
        if index is None and not has_execute and submit is None and not jit_leaf:
            return mark(frames)
        span = index.at(t) if index is not None else None
        inserts: list[tuple[int, bytes]] = []
        if index is not None or has_execute:
            op = self._op(frames, tid, span, index is not None, execute, t)
            if op is not None:
                inserts.append(op)
            if op is not None or tid in self.engine_tids:  # (inside ExecuteOprBlock, op is never None)
                counts.engine += 1
        if (submit is not None or jit_leaf) and self.verbose is not None:
            inserts.append(self._primitive(frames, span, submit, jit_leaf, t))
        if not inserts:
            return mark(frames)
        joined = list(frames)
        for position, name in sorted(inserts, key=lambda item: -item[0]):
            joined.insert(position, name)
        return mark(joined)

    def _completed(self, tid: int, t: float) -> Span | None:
        span = self.by_tid[tid].ended_before(t)
        return span if span is not None and t - span.end <= COMPLETION_LIMIT_US else None

    def _op(
        self, frames: list[bytes], tid: int, span: Span | None, mapped: bool, execute: int | None, t: float
    ) -> tuple[int, bytes] | None:
        if execute is not None:
            if mapped:
                self.operator_times.add(t)
            if not mapped:
                text = OP_UNMAPPED
            elif span is not None:
                text = op_frame(span.name)
            elif COMPLETE in frames and (done := self._completed(tid, t)) is not None:
                text = op_frame(done.name)
                self.counts.completions += 1
            else:
                text = OP_NONE
            self.counts.ops[text] += 1
            return execute, self.name(text)
        if span is None or (frames and frames[-1] in THREAD_ROOTS):
            # Outside any operator (idle, or the engine's own work); or a complete stack that does not
            # pass through ExecuteOprBlock although the thread is inside a span: nothing to say.
            return None
        text = op_frame(span.name)
        self.counts.ops[text] += 1
        return len(frames), self.name(text)  # the stack stops before ExecuteOprBlock: below the root

    def _primitive(
        self, frames: list[bytes], span: Span | None, submit: bytes | None, jit_leaf: bool, t: float
    ) -> tuple[int, bytes]:
        assert self.verbose is not None
        running = self.verbose.at(t, (span.start, span.end) if span is not None else None)
        if len(running) == 1:
            text = running[0].frame
        elif running:
            text = f"[dnnl] (ambiguous: {len(running)} primitives at once)"
        else:
            text = DNNL_NONE
        self.counts.primitives[text] += 1
        self.primitive_times.add(t)
        if jit_leaf:
            self.counts.jit += 1
            self.counts.jit_named += len(running) == 1
        if submit is not None:
            return frames.index(submit), self.name(text)
        depth = 0
        while depth < len(frames) and frames[depth].endswith(JIT_SUFFIX):
            depth += 1
        return depth, self.name(text)
