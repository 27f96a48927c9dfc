"""`record --mxnet` streamed: the samples kept compactly while the chunks are folded, the operators joined
after the run.

MXNet's profiler trace is complete only once the process has exited (its spans are written as they end,
the thread map at exit), so a chunk cannot be joined when it is folded. Each sample instead leaves its
time, its thread and the id of its stack (16 bytes; the stacks are the fold's distinct ones) and the
chunk's context switches their time (9 bytes each); perf's raw chunks are deleted as usual. After the
run the one `Joiner` of a whole recording runs over them in recording order, the evidence it would have
read in its first `perf script` pass taken from the same samples. Memory is therefore bounded by the
samples (about 16 MB per million), not by the raw data; the interval graphs of `--every` are drawn as
their chunks are folded, before any trace exists: they carry no operator frames.

    deferred = DeferredJoin(MxnetHook(directory / "mxnet", note=print), root_of)
    options = FoldOptions.with_all(sample_hook=deferred.log)       # the streamed fold's hook
    StreamedFold(..., fold_chunk=deferred.fold_chunk)             # with the chunks' context switches
    record(spec, data, hooks=[deferred.hook], spool=spool)
    deferred.join(profile, recording)                             # the operator frames, the tables

Lines the switch tap reads in the fold's text (`perf script --show-switch-events`):
    python 22378/22391 34114.850008: PERF_RECORD_SWITCH OUT preempt
    python 22378/22391 34114.853911: PERF_RECORD_SWITCH IN
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence

from ...folding.grammar import SWITCH_ANYWHERE, THREAD_TIME
from ...folding.perf import PerfCollapser
from ...folding.perf_blocks import fold_blocks, iter_blocks
from ...io.folded import decode
from ...io.inputs import open_stream
from ...model import FoldedProfile
from ...record.spec import Recording
from .clock import Alignment
from .hook import EXECUTE_TEXT, NAIVE_TEXT, Evidence, MxnetHook
from .instruments import DUMP_FRAME
from .join import Joiner, thread_of
from .segment_reader import SegmentReaders, memory_budget

SWITCH = b"PERF_RECORD_SWITCH"
SHOW_SWITCHES = "--show-switch-events"
Key = tuple[bytes, tuple[bytes, ...]]  # (root frame, frames below it leaf first): a stack as the fold keys it


class SampleLog:
    """The streamed fold's sample hook: per sample its perf time (NaN: none readable), TID and stack id,
    the frames returned as they are; and per thread its context switches, from the fold's text."""

    def __init__(self, root_of: Callable[[bytes], bytes]) -> None:
        self._root_of = root_of
        self._roots: dict[bytes, bytes] = {}  # the header before its time -> its root frame
        self.times = array("d")
        self.tids = array("i")
        self.ids = array("i")
        self.ids_of: dict[Key, int] = {}
        self.keys: list[Key] = []
        self.switches: dict[int, tuple[array[float], bytearray]] = {}  # TID -> (perf times, 1: out / 0: in)

    def __len__(self) -> int:
        return len(self.ids)

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
        self.times.append(seconds)
        self.tids.append(tid)
        self.ids.append(found)
        return frames

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
        times.append(float(header.group(3)))
        outs.append(switch.group(1) == b"OUT")

    def evidence(self, alignment: Alignment) -> Evidence:
        """What the whole recording's first `perf script` pass reads (hook.parse_evidence), from the samples
        kept: the TIDs that sampled ExecuteOprBlock (or the naive engine's push) and when, the dump thread,
        the context switches."""
        evidence = Evidence()
        engine = [any(EXECUTE_TEXT in f or NAIVE_TEXT in f for f in frames) for _, frames in self.keys]
        dumps = [any(DUMP_FRAME in f for f in frames) for _, frames in self.keys]
        realtime = alignment.realtime_us
        for seconds, tid, found in zip(self.times, self.tids, self.ids, strict=True):
            if math.isnan(seconds):
                continue
            if engine[found]:
                t = realtime(seconds)
                evidence.engine_times.setdefault(tid, []).append(t)
                evidence.last = max(evidence.last, t)
            if dumps[found]:
                evidence.dumpers.add(tid)
        for tid, (times, outs) in self.switches.items():
            events = [(realtime(seconds), bool(out)) for seconds, out in zip(times, outs, strict=True)]
            evidence.switches[tid] = events
            evidence.last = max([evidence.last, *(t for t, _ in events)])
        for values in evidence.engine_times.values():
            values.sort()
        return evidence

    def joined(self, joiner: Joiner) -> dict[str, int]:
        """The folded stacks with the joiner's frames, each sample joined in recording order."""
        counts: dict[bytes, int] = {}
        for seconds, tid, found in zip(self.times, self.tids, self.ids, strict=True):
            root, frames = self.keys[found]
            if math.isnan(seconds):
                joiner.counts.samples += 1
                joiner.counts.no_time += 1
                names: Sequence[bytes] = frames
            else:
                names = joiner.join(tid, seconds, list(frames))
            key = root + b";" + b";".join(reversed(names)) if names else root
            counts[key] = counts.get(key, 0) + 1
        return {decode(stack): count for stack, count in counts.items()}


class DeferredJoin:
    """The streamed `--mxnet`: the record hook, the fold's sample hook and chunk folder, the join at the end.
    With a budget (--max-spool), the instruments write segments read as the run goes (segment_reader.py)."""

    def __init__(self, hook: MxnetHook, root_of: Callable[[bytes], bytes]) -> None:
        self.hook = hook
        self.log = SampleLog(root_of)
        if hook.budget is not None and hook.segments is None:
            hook.segments = SegmentReaders(hook.directory, budget=memory_budget(hook.budget))  # (caps: by prepare)
            hook.segments.start()

    def stop(self) -> None:
        """The run was abandoned: the segments' readers end (the directory goes with the spool's)."""
        if self.hook.segments is not None:
            self.hook.segments.stop()

    def fold_chunk(self, collapser: PerfCollapser, path: str, script_args: Sequence[str]) -> None:
        """fold_input's path for a chunk (no window filter, no --jobs: a sample hook folds in order), with the
        context switches printed and tapped; they change no stack."""
        with open_stream(path, False, [*script_args, SHOW_SWITCHES]) as stream:
            fold_blocks(collapser, self.log.tap(iter_blocks(stream)), path)

    def join(self, profile: FoldedProfile, recording: Recording) -> None:
        """The whole run's profile gets its operator and primitive frames, the tables are said and go in
        its header; nothing to join (no trace, no sidecar: said by the hook): the profile stays as folded."""
        joiner = self.hook.joiner(recording, None, self.log.evidence)
        if joiner is None:
            return
        counts = self.log.joined(joiner)
        # Every folded sample passed the hook once, weighing 1 (the streamed fold prints no period).
        assert sum(counts.values()) == profile.total, f"{len(self.log):,} samples kept, {profile.total:,} folded"
        profile.counts = dict(counts)
        self.hook.report(joiner, profile)
