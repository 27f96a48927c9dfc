"""Timed intervals with a label, stored compactly and kept sorted as they come: the operator spans of a profiler
thread (profile.py) and oneDNN's primitive executions (dnnl.py).

A long run holds hundreds of thousands of them: as objects (a frozen dataclass, two floats) each took ~130
bytes in memory; here each is a start and an end in `array('d')`s and a label number in an `array('I')` into
a list of the distinct labels (a trace repeats a few dozen operator names): ~28 bytes with the reach below
(measured: bench/mxnet_segments.py --held). Objects are made only for a lookup's answer.

Order: by start, then by end (`longest_first`: the outer of two spans starting together first). They arrive
nearly in order (a thread's events in time order; oneDNN's lines as executions end), so one that does not
belongs a few places from the end and is inserted there; one further back marks the arrays unsorted, sorted
once at `seal`. `seal` also computes `reach` (the latest end up to each position): an interval before i can
contain t only if reach[i] >= t.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import accumulate

NEAR_END = 64  # an interval out of order this close to the end is inserted; further back: sorted at seal


class Labels(list[str]):
    """Distinct labels numbered in the order first seen; one may be shared by several `Intervals` (every
    thread of a trace numbers its operator names in one)."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[str, int] = {}

    def number(self, label: str) -> int:
        found = self.numbers.get(label)
        if found is None:
            found = self.numbers[label] = len(self)
            self.append(label)
        return found


class Intervals:
    """(start, end, label) triples; `add` as they come, `seal` once all are in, then `at` and `ended_before`."""

    def __init__(self, longest_first: bool, labels: Labels | None = None) -> None:
        self.longest_first = longest_first
        self.starts, self.ends, self.ids = array("d"), array("d"), array("I")
        self.labels = labels if labels is not None else Labels()
        self.reach = array("d")
        self.in_order = True

    def __len__(self) -> int:
        return len(self.starts)

    def _before(self, start: float, end: float, i: int) -> bool:
        """Whether (start, end) sorts before the interval at i."""
        other = self.starts[i]
        if start != other:
            return start < other
        return end > self.ends[i] if self.longest_first else end < self.ends[i]

    def add(self, start: float, end: float, label: str) -> None:
        number = self.labels.number(label)
        count = len(self.starts)
        if not count or not self._before(start, end, count - 1):
            position = count  # in order: the common case
        else:
            position = bisect_left(self.starts, start, max(count - NEAR_END, 0))
            while position < count and not self._before(start, end, position):
                position += 1
            if position == max(count - NEAR_END, 0) and position > 0 and self._before(start, end, position - 1):
                self.in_order = False  # further back than NEAR_END: appended, sorted at seal
                position = count
        self.starts.insert(position, start)
        self.ends.insert(position, end)
        self.ids.insert(position, number)

    def seal(self) -> None:
        """All intervals are in: sorted if they came too far out of order, and the reach computed."""
        if not self.in_order:
            order = sorted(range(len(self.starts)), key=self.ends.__getitem__, reverse=self.longest_first)
            order.sort(key=self.starts.__getitem__)  # (stable: ends break ties of starts)
            self.starts = array("d", (self.starts[i] for i in order))
            self.ends = array("d", (self.ends[i] for i in order))
            self.ids = array("I", (self.ids[i] for i in order))
            self.in_order = True
        self.reach = array("d", accumulate(self.ends, max))

    def triple(self, i: int) -> tuple[float, float, str]:
        return self.starts[i], self.ends[i], self.labels[self.ids[i]]

    def __iter__(self) -> Iterator[tuple[float, float, str]]:
        labels = self.labels
        return zip(self.starts, self.ends, (labels[number] for number in self.ids), strict=True)

    def containing(self, t: float) -> Iterator[int]:
        """Positions of the intervals with start <= t <= end, latest start first."""
        i = bisect_right(self.starts, t) - 1
        reach, ends = self.reach, self.ends
        while i >= 0 and reach[i] >= t:
            if ends[i] >= t:
                yield i
            i -= 1

    def ended_before(self, t: float) -> int | None:
        """The position of the interval that ended last at or before t, among those started by t (one thread
        runs its operators one after another), or None."""
        i = bisect_right(self.starts, t) - 1
        ends = self.ends
        while i >= 0:
            if ends[i] <= t:
                return i
            i -= 1
        return None
