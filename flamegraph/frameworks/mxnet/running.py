"""`record --mxnet` streamed: the kept samples that the trace and the log already cover, joined while the run
goes, so that what is held is bounded by the distinct stacks and the last seconds, not by the run's length.

Called when the kept samples pass their budget (sample_log.SampleLog.watch), never before: a run that fits is
read and joined only at its end, as before. Then the segments' readers catch up with what the instruments
have written and pause (segment_reader.SegmentReaders.catch_up), the sidecar is read as the process last
wrote it (inprocess.Session.refresh: the clocks and the thread map as of its latest clock reading), and every
kept sample is joined that is **behind the horizon**, i.e. whose join the rest of the run cannot change:
- before the sidecar's latest clock reading: its time converts as it will at the end (clock.Alignment), and
  its thread, if it belongs to the process, is in the map;
- on a thread mapped to a profiler thread, before that thread's latest span end read: MXNet writes a thread's
  spans in the order they end (one queue per device, emptied in order at each dump; on real traces a thread's
  spans never came out of order, nor nested), and a thread runs one operator at a time, so every span that
  could contain or precede the sample's time is read;
- on any thread, LAG_S before the latest span end read on any (MXNet dumps every DUMP_PERIOD_S: another
  thread's spans, on another queue, came up to 0.92 s later in the file than the one read last; a span
  longer than LAG_S, still running, is the one case this cannot see);
- when its stack executes a primitive, LAG_S before the latest execution read (oneDNN prints an execution's
  line as it ends, each thread its own: lines of two threads can cross).
A sample after the instruments' cap needs none of that. Each joined sample is kept as what it found
(`join.Found`), counted by thread and stack; its time goes to its thread's first and last and to the clock
check's spread times (`join.Thinned`, which keeps the same values in any order). The thread's facts (is it an
instrument, an engine thread, mapped?) are applied only at the end (`settle`), from the whole run's
evidence, by the same code as a whole join: the profile is the one a whole join gives, stacks, counts and
tables.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .clock import Alignment, ClockReading
from .dnnl import VerboseLog
from .hook import capped_at, middle_readings, read_sidecars, recorded_map
from .inprocess import DUMP_PERIOD_S
from .join import Found, Joiner, Thinned
from .profile import ProfilerTrace, SpanIndex
from .sample_log import EXECUTES, PRIMITIVE, SampleLog, folded_key
from .segment_reader import CaughtUp
from .summary import Timed, time_spans
from .switches import off_cpu_intervals
from .threads import recorded_threads

JOIN_BYTES = "FLAMEGRAPH_MXNET_JOIN_BYTES"  # BYTES: the kept samples' budget (default: a share of --max-spool)
JOIN_SHARE = 16  # the kept samples' budget: --max-spool / this (256 MB: 16 MB, a million samples)
LAG_S = 3 * DUMP_PERIOD_S  # see the module docstring


def join_budget(max_spool: int | None) -> int | None:
    """The kept samples' budget in bytes: JOIN_BYTES when set to a positive number, else --max-spool's share;
    None (no join while the run goes) without either."""
    text = os.environ.get(JOIN_BYTES, "")
    try:
        budget = int(text) if text.isascii() else 0
    except ValueError:
        budget = 0
    if budget > 0:
        return budget
    return max_spool // JOIN_SHARE if max_spool else None


class Source(Protocol):
    """What the instruments have written so far, read and held still (segment_reader.SegmentReaders)."""

    def refreshed(self) -> bool: ...

    def catch_up(self) -> CaughtUp | None: ...

    def let_go(self) -> None: ...


@dataclass
class ThreadTimes:
    """One thread's joined samples' times (µs realtime): where a whole join's `Joiner.timed` takes them."""

    first: float = math.inf
    last: float = -math.inf
    executing: Thinned = field(default_factory=Thinned)  # samples in ExecuteOprBlock (operator clock check)
    primitive: Thinned = field(default_factory=Thinned)  # samples the log is looked up for (primitive clock check)


@dataclass
class View:
    """The run as read so far, for `Joiner.look`, and the horizons (µs realtime) behind which it is final."""

    joiner: Joiner
    until: float  # perf seconds: samples before it can be joined (the sidecar's latest clock reading)
    thread_horizon: dict[int, float]  # TID -> its mapped profiler thread's latest span end
    horizon: float  # any thread: LAG_S before the latest span end of all
    primitive_horizon: float  # a stack that executes a primitive: LAG_S before the latest execution's end
    pid: int  # the process's: its main thread is no instrument (its samples bound the coverage window)


class RunningJoin:
    """The joins while the run goes (`__call__`, the log's `on_full`) and their counts, settled at the end."""

    def __init__(self, directory: Path, source: Source) -> None:
        self.directory, self.source = directory, source
        self.found: Counter[tuple[int, int, Found]] = Counter()  # (TID, stack id, what it found) -> samples
        self.times: dict[int, ThreadTimes] = {}
        self.looked_up: dict[int, int] = {}  # TID -> the profiler thread its samples were looked up on
        self.spans_timed: dict[int, tuple[int, int, Timed]] = {}  # as Joiner.spans_timed
        self.joins = 0  # joins that joined samples
        self.samples = 0  # samples they joined
        self.missed: Counter[str] = Counter()  # why a join joined nothing -> times

    def __call__(self, log: SampleLog) -> bool:
        """A join, once the sidecar has been refreshed (False before: asked, the log calls again at its next
        look; the fold never waits for the process)."""
        if not self.source.refreshed():
            return False
        caught = self.source.catch_up()
        if caught is None:
            self.missed["the readers were busy"] += 1
            return True
        try:
            view = self.view(caught)
            if view is None:
                self.missed["nothing to join against yet"] += 1
            elif not self.join(log, view):
                self.missed["no sample behind the horizon"] += 1
        finally:
            self.source.let_go()
        return True

    def view(self, caught: CaughtUp) -> View | None:
        """The joiner of the run so far, or None when nothing can be joined yet (one process hooked, with its
        thread map, clocks and trace written)."""
        sidecars = [facts for facts in read_sidecars(self.directory) if isinstance(facts.get("segments"), dict)]
        if len(sidecars) != 1:
            return None
        facts = sidecars[0]
        alignment = _alignment(facts)
        recorded, _ = recorded_map(facts)
        spans = caught.spans.get(os.path.basename(str(facts.get("profile"))))
        if alignment is None or recorded is None or not spans:
            return None
        trace = ProfilerTrace(threads={p: SpanIndex(intervals=iv) for p, iv in list(spans.items()) if len(iv)})
        if not trace.threads:
            return None
        log: VerboseLog | None = caught.logs.get(os.path.basename(str(facts.get("verbose"))))
        if log is not None:
            log.index()
        joiner = Joiner(trace, log, alignment, recorded_threads(trace.threads, recorded))
        joiner.until = capped_at(facts)
        ends = {p: index.last for p, index in trace.threads.items()}
        lag = LAG_S * 1e6
        executed = log.intervals.reach[-1] - lag if log is not None and len(log) else -math.inf
        return View(
            joiner,
            alignment.latest,
            {tid: ends[p] for tid, p in joiner.threads.by_tid.items()},
            max(ends.values()) - lag,
            executed if log is not None else math.inf,
            int(facts["pid"]),
        )

    def join(self, log: SampleLog, view: View) -> int:
        """The kept samples behind the horizons joined (counted as found) and dropped from the log; how many."""
        joiner, until, cap = view.joiner, view.until, view.joiner.until
        realtime = joiner.alignment.realtime_us
        kept: list[int] = []
        joined = 0
        for i, (seconds, tid, stack) in enumerate(zip(log.times, log.tids, log.ids, strict=True)):
            if seconds >= until:
                kept.append(i)
                continue
            after = cap is not None and seconds > cap
            t = realtime(seconds)
            if not after:
                horizon = max(view.horizon, view.thread_horizon.get(tid, -math.inf))
                if t >= horizon or (log.flags[stack] & PRIMITIVE and t >= view.primitive_horizon):
                    kept.append(i)
                    continue
            frames = log.keys[stack][1]
            found = joiner.look(tid, seconds, frames)
            self.found[(tid, stack, found)] += 1
            if (p := joiner.threads.by_tid.get(tid)) is not None and tid in joiner.by_tid:
                self.looked_up[tid] = p
            if not found.after:
                times = self.times.get(tid) or self.times.setdefault(tid, ThreadTimes())
                times.first, times.last = min(times.first, t), max(times.last, t)
                if log.flags[stack] & EXECUTES:
                    times.executing.add(t)
                if log.flags[stack] & PRIMITIVE:
                    times.primitive.add(t)
            joined += 1
        if joined:
            log.keep(kept)
            self.joins += 1
            self.samples += joined
        if log.switches:
            self.time_spans(log, view)
        return joined

    def time_spans(self, log: SampleLog, view: View) -> None:
        """Each mapped thread's spans whose on-CPU time is final now, timed as summary.operator_times would (its
        first spans, in order, while they lie between two joined samples of the main thread, whose times bound
        the coverage window, and end before the last switch read and the clocks' latest reading); then its
        switches before its next span dropped, and any other thread's before the horizon less LAG_S (a span
        yet to be read started no earlier)."""
        joiner = view.joiner
        realtime = joiner.alignment.realtime_us
        main = self.times.get(view.pid)
        lowest = main.first if main is not None else math.inf
        highest = min(main.last, realtime(min(log.switched, view.until))) if main is not None else -math.inf
        for tid, p in joiner.threads.by_tid.items():
            index = joiner.by_tid.get(tid)
            state = self.spans_timed.get(tid, (p, 0, {}))
            if index is None or state[0] != p:
                continue
            spans, done = index.intervals, state[1]
            stop = done
            while stop < len(spans) and spans.starts[stop] >= lowest and spans.ends[stop] < highest:
                stop += 1
            if stop > done:
                times, outs = log.switches.get(tid, ((), b""))
                events = [(realtime(seconds), bool(out)) for seconds, out in zip(times, outs, strict=True)]
                off = off_cpu_intervals({tid: events}, math.inf).get(tid)
                time_spans(spans, done, stop, off, True, -math.inf, math.inf, state[2])
                self.spans_timed[tid] = (p, stop, state[2])
            log.drop_switches(tid, spans.starts[stop] if stop < len(spans) else index.last, realtime)
        for tid in list(log.switches):
            if tid not in joiner.by_tid:
                log.drop_switches(tid, view.horizon - LAG_S * 1e6, realtime)

    def settle(self, log: SampleLog, joiner: Joiner) -> tuple[dict[bytes, int], list[str]]:
        """At the end, with the whole run's joiner: the joined samples' folded stacks (bytes -> count), their
        times where a whole join puts them; and what does not match (one line each: a thread whose map changed
        after its samples were joined)."""
        counts: dict[bytes, int] = {}
        for (tid, stack, found), n in self.found.items():
            root, frames = log.keys[stack]
            key = folded_key(root, joiner.settle(tid, list(frames), found, n))
            counts[key] = counts.get(key, 0) + n
        for tid, times in self.times.items():
            if tid in joiner.instrument_threads:
                continue
            joiner.counts.first = min(joiner.counts.first, times.first)
            joiner.counts.last = max(joiner.counts.last, times.last)
            if tid in joiner.by_tid:
                joiner.operator_times.merge(times.executing)
            if joiner.verbose is not None:
                joiner.primitive_times.merge(times.primitive)
        joiner.spans_timed = dict(self.spans_timed)
        changed = sorted({
            tid for tid, p in [*self.looked_up.items(), *((t, s[0]) for t, s in self.spans_timed.items())]
            if joiner.threads.by_tid.get(tid) != p
        })  # fmt: skip
        problems = []
        if changed:
            problems.append(
                f"TIDs {', '.join(map(str, changed))}: joined while the run went on a profiler thread the final "
                "thread map no longer gives them (a TID the kernel reused?): their operators may be misnamed"
            )
        return counts, problems

    def text(self, log: SampleLog) -> str:
        """What the joins while the run went did (for the header and the CLI)."""
        budget = _size(log.budget or 0)
        missed = "; ".join(f"{why}: {n}" for why, n in sorted(self.missed.items()))
        if not self.joins and not missed:
            return f"none: the kept samples ({_size(log.peak)} at most) stayed within their {budget} budget"
        if not self.joins:
            return f"none: the kept samples reached {_size(log.peak)}, over their {budget} budget ({missed})"
        return (
            f"{self.samples:,} samples in {self.joins} joins while the run went; kept samples at most "
            f"{_size(log.peak)} (budget {budget}), {len(self.found):,} distinct (thread, stack, what was found) counts"
        )


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count / 1e3:.1f} kB"


def _alignment(facts: dict[str, Any]) -> Alignment | None:
    try:
        start = ClockReading.from_list(facts["clock_start"])
        end = ClockReading.from_list(facts["clock_end"]) if facts.get("clock_end") else None
    except (KeyError, TypeError, ValueError):
        return None
    return Alignment(start, end, middle_readings(facts))
