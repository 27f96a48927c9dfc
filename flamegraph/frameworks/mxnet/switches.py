"""When each thread was off the CPU, from perf's context-switch records (`--switch-events`).

MXNet's profiler times wall-clock spans; perf's samples count CPU time. An operator that waits or
is preempted inside its span (WaitForVar wakes the main thread, which then takes the CPU on a
2-vCPU machine) has far more profiler time than samples. With the thread's switches the profiler's
time can be split into on-CPU and off-CPU parts, so the per-operator table compares like with like.

Records it reads (`perf script -F tid,time,... --show-switch-events`):
     6092  1144.087359: PERF_RECORD_SWITCH OUT
     6092  1144.090164: PERF_RECORD_SWITCH IN
     6092  1144.087359: PERF_RECORD_SWITCH OUT preempt
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable


class OffCpu:
    """One thread's off-CPU intervals (µs of CLOCK_REALTIME), sorted and disjoint."""

    def __init__(self, intervals: Iterable[tuple[float, float]]) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        for start, end in sorted(intervals):
            if end <= start:
                continue
            if self.ends and start <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], end)
                continue
            self.starts.append(start)
            self.ends.append(end)

    def off_between(self, start: float, end: float) -> float:
        """Off-CPU microseconds inside [start, end], summed from the intervals there alone (the same figure
        whatever intervals before them were dropped: running.py keeps only those still needed)."""
        if end <= start or not self.starts:
            return 0.0
        total = 0.0
        for i in range(bisect_right(self.ends, start), bisect_left(self.starts, end)):
            total += min(self.ends[i], end) - max(self.starts[i], start)
        return max(total, 0.0)


def off_cpu_intervals(switches: dict[int, list[tuple[float, bool]]], until: float) -> dict[int, OffCpu]:
    """Per TID, (time, switched out?) records -> off-CPU intervals; a thread still out at the end
    of the recording is off until `until`."""
    result = {}
    for tid, events in switches.items():
        intervals = []
        out_at: float | None = None
        for t, out in sorted(events):
            if out:
                out_at = t if out_at is None else out_at
            elif out_at is not None:
                intervals.append((out_at, t))
                out_at = None
        if out_at is not None and until > out_at:
            intervals.append((out_at, until))
        result[tid] = OffCpu(intervals)
    return result
