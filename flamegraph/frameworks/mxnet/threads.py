"""Which Linux thread is which profiler thread: recorded in the process, else learnt from the samples.

The in-process hook reads the exact map from the process's memory (pthreads.py) and leaves it in
the sidecar: `RecordedThreads` uses it, and a profiler thread it does not cover stays unmapped
(said). Only when the sidecar holds no map (an older hook, a failed scan, a process that never
reached its exit handler) is the map learnt statistically after the run, as follows, and said so.

MXNet's profiler names a thread by a 64-bit hash of its C++ thread id; perf by its Linux TID; and
MXNet names no thread (all are `python`). The evidence: the samples each TID takes inside
ThreadedEngine::ExecuteOprBlock (only threads that execute operators have any), and how many of
them fall inside each profiler thread's operator spans. The thread that ran the operators has
most of its samples inside them (the rest is the engine's and the profiler's own work between
two operators); any other thread only as many as the spans' share of the time allows, and a
thread running operators of its own at other times falls outside more often still.

Each profiler thread gets the TID with the highest share inside, one to one, if that share is at
least MIN_SHARE and leads every competitor (another TID for this thread, another thread for this
TID) by MIN_MARGIN; otherwise it stays unmapped and its operators are not drawn. The figures
behind each choice (share, the spans' share of the time as the chance level, the runner-up and
the lead) are kept for the report; the map's confidence is the smallest lead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .profile import SpanIndex

MIN_SAMPLES = 5  # fewer samples of a TID inside a thread's time range say nothing
MIN_SHARE = 0.5
MIN_MARGIN = 0.2


@dataclass(frozen=True)
class Candidate:
    tid: int
    samples: int  # the TID's samples inside the profiler thread's time range
    inside: int  # of those, inside one of its spans

    @property
    def share(self) -> float:
        return self.inside / self.samples if self.samples else 0.0


@dataclass(frozen=True)
class ThreadMatch:
    """The evidence for one profiler thread."""

    profiler_tid: int
    spans: int
    coverage: float  # share of its time range covered by spans: what chance alone would give
    best: Candidate | None
    runner_up: Candidate | None
    tid: int | None  # the Linux TID chosen, or None
    lead: float = 0.0  # share of the chosen TID minus that of its strongest competitor

    def describe(self) -> str:
        head = f"profiler thread {self.profiler_tid} ({self.spans:,} spans)"
        if self.best is None:
            return f"{head}: no TID with {MIN_SAMPLES}+ samples in ExecuteOprBlock in its time range: not mapped"
        b = self.best
        evidence = (
            f"TID {b.tid}: {b.inside:,} of {b.samples:,} samples in ExecuteOprBlock inside its spans "
            f"({100 * b.share:.1f} %; the spans cover {100 * self.coverage:.1f} % of the time)"
        )
        if self.runner_up is not None:
            r = self.runner_up
            evidence += f"; next TID {r.tid}: {100 * r.share:.1f} % of {r.samples:,}"
        if self.tid is None:
            rule = f"share below {100 * MIN_SHARE:.0f} % or lead below {100 * MIN_MARGIN:.0f} points"
            return f"{head} -> {evidence}: not mapped ({rule})"
        return f"{head} -> {evidence}: mapped, lead {100 * self.lead:.1f} points"


class ThreadMapping(Protocol):
    """What the join needs of a map: Linux TID -> profiler thread, and one line saying how it was made."""

    @property
    def by_tid(self) -> dict[int, int]: ...

    def describe(self) -> str: ...


@dataclass
class RecordedThreads:
    """The map the process recorded (profiler tid -> its Linux TIDs), limited to the trace's threads.
    A profiler thread can have been several Linux threads, one after the other (glibc gave a new
    thread the memory, so the pthread_t, of one that had ended): each of its TIDs is mapped to it."""

    recorded: dict[int, list[int]]
    spans: dict[int, int]  # profiler tid -> its spans in the trace

    @property
    def clashes(self) -> dict[int, list[int]]:
        """Linux TIDs recorded for several of the trace's threads (the kernel reused a TID): which of
        them a sample belongs to is not known, so none of them is mapped."""
        owners: dict[int, list[int]] = {}
        for profiler_tid in sorted(self.spans):
            for tid in self.recorded.get(profiler_tid, []):
                owners.setdefault(tid, []).append(profiler_tid)
        return {tid: ps for tid, ps in owners.items() if len(ps) > 1}

    @property
    def by_tid(self) -> dict[int, int]:
        clashes = self.clashes
        return {tid: p for p in self.spans for tid in self.recorded.get(p, []) if tid not in clashes}

    def describe(self) -> str:
        by_tid = self.by_tid
        mapped = sorted(set(by_tid.values()), key=lambda p: (-self.spans[p], p))
        text = f"{len(mapped)} profiler threads mapped exactly (recorded in the process)"
        if mapped:
            pairs = []
            for p in mapped:
                tids = ", ".join(str(tid) for tid in sorted(t for t, q in by_tid.items() if q == p))
                pairs.append(f"{p} -> TID {tids} ({self.spans[p]:,} spans)")
            text += ": " + ", ".join(pairs)
        missing = sorted((p for p in self.spans if not self.recorded.get(p)), key=lambda p: (-self.spans[p], p))
        if missing:
            listed = ", ".join(f"{p} ({self.spans[p]:,} spans)" for p in missing)
            text += f"; not in the recorded map (ended before the scan?), not mapped: {listed}"
        for tid, ps in sorted(self.clashes.items()):
            text += f"; TID {tid} recorded for {len(ps)} profiler threads ({', '.join(map(str, ps))}): not mapped"
        return text


@dataclass
class ThreadMap:
    """The map learnt from the samples; `why` says why no recorded map was used."""

    matches: list[ThreadMatch] = field(default_factory=list)
    why: str = ""

    @property
    def by_tid(self) -> dict[int, int]:
        """Linux TID -> profiler thread."""
        return {m.tid: m.profiler_tid for m in self.matches if m.tid is not None}

    @property
    def confidence(self) -> float:
        """The smallest lead among the mapped threads (share points, 0..1); 0.0 when none is mapped."""
        leads = [m.lead for m in self.matches if m.tid is not None]
        return min(leads) if leads else 0.0

    def describe(self) -> str:
        head = f"learnt from the samples after the run ({self.why}): " if self.why else ""
        mapped = [m for m in self.matches if m.tid is not None]
        if not mapped:
            return f"{head}no profiler thread could be matched to a Linux thread"
        pairs = ", ".join(
            f"{m.profiler_tid} -> TID {m.tid} ({100 * m.best.share:.1f} % inside)" for m in mapped if m.best
        )
        return (
            f"{head}{len(mapped)} of {len(self.matches)} profiler threads mapped: {pairs}; confidence: "
            f"each leads its strongest competitor by ≥ {100 * self.confidence:.1f} points"
        )


def union(index: SpanIndex) -> list[tuple[float, float]]:
    """The spans merged into disjoint intervals."""
    merged: list[tuple[float, float]] = []
    for start, end in zip(index.intervals.starts, index.intervals.ends, strict=True):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def count_inside(times: list[float], intervals: list[tuple[float, float]]) -> tuple[int, int]:
    """(times within [first start, last end], of those inside an interval); both lists sorted."""
    if not intervals:
        return 0, 0
    lo, hi = intervals[0][0], intervals[-1][1]
    samples = inside = 0
    j = 0
    for t in times:
        if t < lo:
            continue
        if t > hi:
            break
        samples += 1
        while j < len(intervals) and intervals[j][1] < t:
            j += 1
        if j < len(intervals) and intervals[j][0] <= t:
            inside += 1
    return samples, inside


def recorded_threads(threads: dict[int, SpanIndex], recorded: dict[int, list[int]]) -> RecordedThreads:
    return RecordedThreads(recorded, {p: len(index) for p, index in threads.items()})


def learn_thread_map(threads: dict[int, SpanIndex], samples: dict[int, list[float]], why: str = "") -> ThreadMap:
    """Match profiler threads to Linux TIDs; `samples` holds each TID's sample times (µs realtime, sorted);
    `why` says why the process's recorded map was not used."""
    evidence: dict[int, tuple[float, list[Candidate]]] = {}
    for profiler_tid, index in threads.items():
        intervals = union(index)
        length = intervals[-1][1] - intervals[0][0] if intervals else 0.0
        coverage = sum(end - start for start, end in intervals) / length if length > 0 else 1.0
        candidates = []
        for linux_tid, times in samples.items():
            n, inside = count_inside(times, intervals)
            if n >= MIN_SAMPLES:
                candidates.append(Candidate(linux_tid, n, inside))
        candidates.sort(key=lambda c: (-c.share, -c.inside, c.tid))
        evidence[profiler_tid] = (coverage, candidates)
    # One to one, the strongest evidence first; a choice must lead every competitor.
    share = {(p, c.tid): c.share for p, (_, cs) in evidence.items() for c in cs}
    order = sorted(share.items(), key=lambda item: (-item[1], item[0]))
    chosen: dict[int, tuple[int, float]] = {}
    taken: set[int] = set()
    for (profiler_tid, linux_tid), value in order:
        if profiler_tid in chosen or linux_tid in taken or value < MIN_SHARE:
            continue
        rivals = [v for (p, t), v in share.items() if (p == profiler_tid) != (t == linux_tid)]
        lead = value - max(rivals, default=0.0)
        if lead < MIN_MARGIN:
            continue
        chosen[profiler_tid] = (linux_tid, lead)
        taken.add(linux_tid)
    result = ThreadMap(why=why)
    for profiler_tid, (coverage, candidates) in sorted(evidence.items(), key=lambda item: -len(threads[item[0]])):
        tid: int | None = None
        lead = 0.0
        if profiler_tid in chosen:
            tid, lead = chosen[profiler_tid]
        best = next((c for c in candidates if c.tid == tid), candidates[0] if candidates else None)
        runner_up = next((c for c in candidates if best is None or c.tid != best.tid), None)
        result.matches.append(
            ThreadMatch(profiler_tid, len(threads[profiler_tid]), coverage, best, runner_up, tid, lead)
        )
    return result
