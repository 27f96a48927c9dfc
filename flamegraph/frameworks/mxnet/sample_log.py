"""The streamed `--mxnet`'s kept samples: per sample its perf time, TID and stack id (16 bytes), per thread its
context switches (9 bytes), and the evidence the join needs gathered as they come (deferred.py joins them at
the end, running.py behind the trace's horizons as the run goes; both read this log, which reads neither).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from ...folding.grammar import SWITCH_ANYWHERE, THREAD_TIME
from ...io.folded import decode
from .clock import Alignment
from .hook import EXECUTE_TEXT, NAIVE_TEXT, Evidence
from .instruments import DUMP_FRAME
from .join import SUBMITS, Joiner, Thinned, execute_at, jit_leaf, thread_of

SWITCH = b"PERF_RECORD_SWITCH"
SAMPLE_BYTES = 16  # a kept sample: its time (8), TID (4), stack id (4)
SWITCH_BYTES = 9  # a kept context switch: its time (8), in or out (1)
SHOW_SWITCHES = "--show-switch-events"
Key = tuple[bytes, tuple[bytes, ...]]  # (root frame, frames below it leaf first): a stack as the fold keys it


ENGINE, DUMP, EXECUTES, PRIMITIVE = 1, 2, 4, 8  # what a stack shows (SampleLog.flags)
CHECK_EVERY = 1024  # samples between two looks at the budget (at most: a quarter of it when smaller)


def stack_flags(frames: Sequence[bytes]) -> int:
    """ENGINE: a frame runs operators (the evidence's test: hook.parse_evidence); DUMP: MXNet's profiler dumps;
    EXECUTES: the joiner's own test of an operator executing (join.execute_at); PRIMITIVE: the joiner looks the
    verbose log up for it."""
    flags = ENGINE if any(EXECUTE_TEXT in f or NAIVE_TEXT in f for f in frames) else 0
    flags |= DUMP if any(DUMP_FRAME in f for f in frames) else 0
    flags |= EXECUTES if execute_at(frames) is not None else 0
    flags |= PRIMITIVE if any(s in frames for s in SUBMITS) or jit_leaf(frames) else 0
    return flags


class SampleLog:
    """The streamed fold's sample hook: per sample its perf time, TID and stack id, the frames returned as they
    are; a sample without a readable time counted by stack; the evidence gathered as they come. With a budget
    (`watch`), `on_full` is called when the samples kept pass it."""

    def __init__(self, root_of: Callable[[bytes], bytes]) -> None:
        self._root_of = root_of
        self._roots: dict[bytes, bytes] = {}  # the header before its time -> its root frame
        self.times = array("d")
        self.tids = array("i")
        self.ids = array("i")
        self.ids_of: dict[Key, int] = {}
        self.keys: list[Key] = []
        self.flags = bytearray()  # per stack id: ENGINE | DUMP | EXECUTES | PRIMITIVE
        self.no_time: Counter[int] = Counter()  # stack id -> samples without a readable time
        self.switches: dict[int, tuple[array[float], bytearray]] = {}  # TID -> (perf times, 1: out / 0: in)
        self.engine_seconds: dict[int, Thinned] = {}  # TID -> perf times of its samples that run operators
        self.dumpers: set[int] = set()  # TIDs seen in Profiler::DumpProfile
        self.latest = -math.inf  # perf time of the last engine sample or switch
        self.switched = -math.inf  # perf time of the last switch read (the fold's text is in time order)
        self.switch_count = 0  # switches kept
        self.budget: int | None = None  # bytes of kept samples that call `on_full`
        self.threshold = 0
        self.every = CHECK_EVERY  # samples between two looks
        self.on_full: Callable[[SampleLog], bool] | None = None  # True: joined (or could not), False: not yet
        self.peak = 0  # the most bytes held at a look

    def __len__(self) -> int:
        return len(self.ids) + self.no_time.total()

    def held(self) -> int:
        """Bytes the kept samples and switches take (times, TIDs, stack ids; times, directions)."""
        return len(self.ids) * SAMPLE_BYTES + self.switch_count * SWITCH_BYTES

    def watch(self, budget: int, on_full: Callable[[SampleLog], bool]) -> None:
        self.budget = self.threshold = budget
        self.every = max(1, min(CHECK_EVERY, budget // SAMPLE_BYTES // 4))
        self.on_full = on_full

    def __call__(self, header: bytes, frames: list[bytes]) -> list[bytes]:
        match = THREAD_TIME.search(header)
        if match is None:
            root, seconds, tid = self._root_of(header), math.nan, 0
        else:
            prefix = header[: match.start(3)]
            root = self._roots.get(prefix) or self._roots.setdefault(prefix, self._root_of(header))
            seconds, tid = float(match.group(3)), thread_of(match)
        key = (root, tuple(frames))
        found = self.ids_of.get(key)
        if found is None:
            found = self.ids_of[key] = len(self.keys)
            self.keys.append(key)
            self.flags.append(stack_flags(frames))
        if math.isnan(seconds):
            self.no_time[found] += 1
            return frames
        flags = self.flags[found]
        if flags & ENGINE:
            self.engine_seconds.setdefault(tid, Thinned()).add(seconds)
            self.latest = max(self.latest, seconds)
        if flags & DUMP:
            self.dumpers.add(tid)
        self.times.append(seconds)
        self.tids.append(tid)
        self.ids.append(found)
        if self.on_full is not None and not len(self.ids) % self.every:
            self._look()
        return frames

    def _look(self) -> None:
        held = self.held()
        self.peak = max(self.peak, held)  # (between two looks at most `every` samples more)
        if self.on_full is not None and self.budget is not None and held > self.threshold and self.on_full(self):
            # (what could not be joined yet is not tried again at every look: a quarter of the budget more first)
            self.threshold = max(self.budget, self.held() + self.budget // 4)

    def keep(self, kept: Sequence[int]) -> None:
        """Only the samples at these positions (ascending) are kept: the others were joined."""
        self.times = array("d", (self.times[i] for i in kept))
        self.tids = array("i", (self.tids[i] for i in kept))
        self.ids = array("i", (self.ids[i] for i in kept))

    def tap(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        """The blocks of `perf script` text as they are, their context-switch lines read on the way."""
        tail = b""  # the unfinished last line of the blocks so far
        for block in blocks:
            yield block
            first = block.find(b"\n")
            if first < 0:
                tail += block
                continue
            if SWITCH in (line := tail + block[:first]):
                self._switch(line)
            last = block.rfind(b"\n")
            at = block.find(SWITCH, first, last)
            while at >= 0:
                end = block.find(b"\n", at)
                self._switch(block[block.rfind(b"\n", 0, at) + 1 : end])
                at = block.find(SWITCH, end, last)
            tail = block[last + 1 :]
        if SWITCH in tail:
            self._switch(tail)

    def _switch(self, line: bytes) -> None:
        header, switch = THREAD_TIME.search(line), SWITCH_ANYWHERE.search(line)
        if header is None or switch is None:
            return
        times, outs = self.switches.setdefault(thread_of(header), (array("d"), bytearray()))
        seconds = float(header.group(3))
        times.append(seconds)
        outs.append(switch.group(1) == b"OUT")
        self.switch_count += 1
        self.latest = max(self.latest, seconds)
        self.switched = max(self.switched, seconds)

    def drop_switches(self, tid: int, before: float, realtime: Callable[[float], float]) -> None:
        """The thread's switches that can matter no more to a span from `before` (µs realtime) on: those up to its
        last switch back in before it (its off-CPU intervals after are then the same: switches.off_cpu_intervals)."""
        times, outs = self.switches.get(tid, (array("d"), bytearray()))
        events = sorted(zip(times, outs, strict=True))  # (as off_cpu_intervals orders them)
        cut = 0
        for i, (seconds, out) in enumerate(events):
            if realtime(seconds) >= before:
                break
            if not out:
                cut = i + 1
        if cut:
            self.switches[tid] = (array("d", (t for t, _ in events[cut:])), bytearray(o for _, o in events[cut:]))
            self.switch_count -= cut

    def evidence(self, alignment: Alignment) -> Evidence:
        """What the whole recording's first `perf script` pass reads (hook.parse_evidence), as gathered from the
        samples: the TIDs that sampled ExecuteOprBlock (or the naive engine's push) and when (at most
        join.KEEP_TIMES times each, spread: they only serve to learn a thread map no process recorded), the dump
        thread, the context switches."""
        evidence = Evidence()
        realtime = alignment.realtime_us
        for tid, seconds in self.engine_seconds.items():
            evidence.engine_times[tid] = sorted(realtime(s) for s in seconds.values)
        evidence.dumpers = set(self.dumpers)
        for tid, (times, outs) in self.switches.items():
            evidence.switches[tid] = [(realtime(seconds), bool(out)) for seconds, out in zip(times, outs, strict=True)]
        if self.latest > -math.inf:
            evidence.last = max(evidence.last, realtime(self.latest))
        return evidence

    def joined(self, joiner: Joiner, counts: dict[bytes, int] | None = None) -> dict[str, int]:
        """The folded stacks with the joiner's frames (added to `counts`), each kept sample joined in recording
        order."""
        counts = {} if counts is None else counts
        for found, n in self.no_time.items():
            root, frames = self.keys[found]
            joiner.counts.samples += n
            joiner.counts.no_time += n
            key = folded_key(root, frames)
            counts[key] = counts.get(key, 0) + n
        for seconds, tid, found in zip(self.times, self.tids, self.ids, strict=True):
            root, frames = self.keys[found]
            key = folded_key(root, joiner.join(tid, seconds, list(frames)))
            counts[key] = counts.get(key, 0) + 1
        return {decode(stack): count for stack, count in counts.items()}


def folded_key(root: bytes, names: Sequence[bytes]) -> bytes:
    """The folded stack of a root and its frames leaf first."""
    return root + b";" + b";".join(reversed(names)) if names else root
