"""Clock alignment: perf's CLOCK_MONOTONIC sample times -> the profilers' CLOCK_REALTIME.

perf records with `-k CLOCK_MONOTONIC` (`perf inject --jit` needs it); MXNet's profiler and oneDNN's
verbose log stamp CLOCK_REALTIME. The in-process hook reads both clocks at start and at exit (the
pair with the shortest gap of several tries), and, when the run is joined as it goes (deferred.py), every
few seconds between them (the sidecar's "clocks"); the offset is interpolated between neighbouring
readings, so a time before the latest reading converts the same whatever readings come after it. The
residual error is what is left unknown: half the read gap of each reading plus the drift of the
offset over the run (NTP slewing CLOCK_REALTIME). `check_shift` then measures the alignment on the
data: the share of samples executing a primitive that fall in a verbose interval, at the measured
offset and shifted by whole fractions of a millisecond.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

TRIES = 16


@dataclass(frozen=True)
class ClockReading:
    """CLOCK_MONOTONIC and CLOCK_REALTIME read back to back (seconds); `gap` bounds the error."""

    monotonic: float
    realtime: float
    gap: float

    @property
    def offset(self) -> float:
        return self.realtime - self.monotonic

    def as_list(self) -> list[float]:
        return [self.monotonic, self.realtime, self.gap]

    @classmethod
    def from_list(cls, values: Sequence[float]) -> ClockReading:
        monotonic, realtime, gap = (float(v) for v in values)
        return cls(monotonic, realtime, gap)


def read_clocks(tries: int = TRIES) -> ClockReading:
    """The tightest of `tries` monotonic/realtime/monotonic triples."""
    best: ClockReading | None = None
    for _ in range(tries):
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        reading = ClockReading((before + after) / 2e9, real / 1e9, (after - before) / 1e9)
        if best is None or reading.gap < best.gap:
            best = reading
    assert best is not None
    return best


@dataclass(frozen=True)
class Alignment:
    """CLOCK_MONOTONIC -> CLOCK_REALTIME over one run."""

    start: ClockReading
    end: ClockReading | None = None  # None: the process did not reach its exit handler
    middle: tuple[ClockReading, ...] = ()  # readings between the two, in time order (the sidecar's "clocks")

    @property
    def readings(self) -> list[ClockReading]:
        """Start, middle and end: the points the offset is interpolated between (later ones than a point
        before them dropped)."""
        points = [self.start]
        for reading in (*self.middle, *((self.end,) if self.end is not None else ())):
            if reading.monotonic > points[-1].monotonic:
                points.append(reading)
        return points

    @property
    def latest(self) -> float:
        """The latest reading's CLOCK_MONOTONIC: a time before it converts as it will at the end."""
        return self.readings[-1].monotonic

    @property
    def drift(self) -> float:
        """Change of the offset between start and end (seconds)."""
        return 0.0 if self.end is None else self.end.offset - self.start.offset

    @property
    def residual(self) -> float:
        """Upper bound of the error left after interpolation (seconds)."""
        gaps = self.start.gap / 2 + (self.end.gap / 2 if self.end else 0.0)
        return gaps + abs(self.drift)

    def offset(self, monotonic: float) -> float:
        if not self.middle:  # (the common case: two readings at most)
            if self.end is None or self.end.monotonic <= self.start.monotonic:
                return self.start.offset
            share = (monotonic - self.start.monotonic) / (self.end.monotonic - self.start.monotonic)
            share = min(max(share, 0.0), 1.0)
            return self.start.offset + share * self.drift
        points = self._points
        at = bisect_right(points[0], monotonic)
        if at == 0:
            return points[1][0]
        if at == len(points[0]):
            return points[1][-1]
        (m0, m1), (o0, o1) = points[0][at - 1 : at + 1], points[1][at - 1 : at + 1]
        return o0 + (monotonic - m0) / (m1 - m0) * (o1 - o0)

    @cached_property
    def _points(self) -> tuple[list[float], list[float]]:
        readings = self.readings
        return [r.monotonic for r in readings], [r.offset for r in readings]

    def realtime_us(self, monotonic: float) -> float:
        """A perf sample time (seconds of CLOCK_MONOTONIC) in microseconds of CLOCK_REALTIME."""
        return (monotonic + self.offset(monotonic)) * 1e6

    def describe(self) -> str:
        measured = "at start and exit" if self.end is not None else "at start only (no exit reading)"
        return (
            f"CLOCK_REALTIME - CLOCK_MONOTONIC = {self.start.offset:.6f} s, measured {measured}: "
            f"drift {self.drift * 1e6:+.1f} µs, read gaps {self.start.gap * 1e6:.1f}"
            + (f"/{self.end.gap * 1e6:.1f}" if self.end else "")
            + f" µs; residual error ≤ {self.residual * 1e6:.1f} µs"
        )


SHIFTS_US = (-10_000.0, -5000.0, -2000.0, -1000.0, -500.0, -100.0, 0.0, 100.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0)
CLEARLY_BETTER = 0.05  # a shift that puts 5 more points of the samples inside: the clocks disagree


def check_shift(
    times: Sequence[float], inside: Callable[[float], bool], shifts: Sequence[float] = SHIFTS_US
) -> list[tuple[float, float]]:
    """(shift in µs, share of `times` for which inside(t + shift)) for each shift: if the clocks
    are aligned, the share peaks at 0 (a shift as large as the residual changes nothing)."""
    if not times:
        return []
    results = []
    for shift in shifts:
        hits = sum(1 for t in times if inside(t + shift))
        results.append((shift, hits / len(times)))
    return results


def clock_problems(
    alignment: Alignment, period_us: float | None, checks: dict[str, list[tuple[float, float]]]
) -> list[str]:
    """Disagreements larger than the sample period, with their figures (one line each)."""
    problems = []
    residual = alignment.residual * 1e6
    if period_us is not None and residual > period_us:
        problems.append(
            f"clock residual error {residual:,.0f} µs exceeds the sample period {period_us:,.0f} µs: "
            "frames of samples near an operator's edges may name its neighbour"
        )
    for what, check in checks.items():
        if not check:
            continue
        at_zero = next(share for shift, share in check if shift == 0)
        shift, best = max(check, key=lambda item: (item[1], -abs(item[0])))
        if best - at_zero > CLEARLY_BETTER and (period_us is None or abs(shift) >= period_us):
            problems.append(
                f"{what}: {100 * best:.1f} % fall inside when shifted by {shift:+,.0f} µs, {100 * at_zero:.1f} % "
                "at the measured offset: the clocks seem to disagree by more than the sample period"
            )
    return problems
