"""Types shared by every stage: a frame, a stack, and the folded profile (the contract between stages)."""

from __future__ import annotations

from collections.abc import Iterator

Frame = str  # a function name; raw bytes survive as surrogate escapes
Stack = tuple[Frame, ...]  # root first

# How the folded text spells a Python function (collapse.tidy.python_frame writes it from perf's
# `py::QUALNAME:FILE`): `QUALNAME (FILE.py)` or `QUALNAME (<frozen x>)`. Part of the contract between
# stages: the interpreter folding (collapse.python) and the `python` palette and preset (color) read it.
PYTHON_FUNCTION = r"^[^ ;]+ \((?:[^()]*\.py|<[^()]*>)\)$"

# The tool's own instruments (frameworks/mxnet/instruments.py) are drawn under frames so named; an
# instrument *thread*'s label goes first, right below the thread name, where its thread root would be:
# the attribution report looks past it (analysis.report).
INSTRUMENTATION = "[instrumentation] "

# perf's period, summed, as `perf script` text weighs samples by it (stackcollapse-perf.pl does): a clock
# event's period is nanoseconds of CPU time, any other's a number of its events.
CLOCK_EVENTS = frozenset({"cpu-clock", "task-clock"})


def period_unit(event: str | None) -> str:
    """The unit of summed periods of `event` ('cpu-clock:u' is a clock event)."""
    return "nanoseconds" if (event or "").split(":")[0] in CLOCK_EVENTS else "events"


class FoldedProfile:
    """Weight per distinct stack: the contract between collapse and render.

    `counts` maps the folded stack text ("root;child;leaf") to its weight. The text keeps the
    exact bytes of the input (decoded with surrogateescape), and ';' separates frames. A plain class
    (not a dataclass, whose module imports `inspect`: a fifth of `fold`'s start-up).
    """

    def __init__(
        self,
        counts: dict[str, float] | None = None,
        unit: str = "samples",  # "microseconds" off-CPU; `period_unit` for text weighed by perf's period
        event: str | None = None,  # e.g. "cpu-clock", "sched:sched_switch"
        metadata: dict[str, str] | None = None,  # capture facts: command, perf version, host...
        window_us: float | None = None,  # the time the profile covers, when known (off-CPU: the recording window)
    ) -> None:
        self.counts: dict[str, float] = {} if counts is None else counts
        self.unit = unit
        self.event = event
        self.metadata: dict[str, str] = {} if metadata is None else metadata
        self.window_us = window_us

    def _fields(self) -> tuple[object, ...]:
        return self.counts, self.unit, self.event, self.metadata, self.window_us

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FoldedProfile) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        return f"FoldedProfile(counts={self.counts!r}, unit={self.unit!r}, event={self.event!r}, " + (
            f"metadata={self.metadata!r}, window_us={self.window_us!r})"
        )

    @property
    def total(self) -> float:
        return sum(self.counts.values())

    def stacks(self) -> Iterator[tuple[Stack, float]]:
        for text, weight in self.counts.items():
            yield tuple(text.split(";")), weight

    def add(self, stack: str, weight: float) -> None:
        self.counts[stack] = self.counts.get(stack, 0) + weight
