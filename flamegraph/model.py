"""Types shared by every stage: a frame, a stack, and the folded profile (the contract between stages)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

Frame = str  # a function name; raw bytes survive as surrogate escapes
Stack = tuple[Frame, ...]  # root first

# How the folded text spells a Python function (collapse.tidy.python_frame writes it from perf's
# `py::QUALNAME:FILE`): `QUALNAME (FILE.py)` or `QUALNAME (<frozen x>)`. Part of the contract between
# stages: the interpreter folding (collapse.python) and the `python` palette and preset (color) read it.
PYTHON_FUNCTION = r"^[^ ;]+ \((?:[^()]*\.py|<[^()]*>)\)$"


@dataclass
class FoldedProfile:
    """Weight per distinct stack: the contract between collapse and render.

    `counts` maps the folded stack text ("root;child;leaf") to its weight. The text keeps the
    exact bytes of the input (decoded with surrogateescape), and ';' separates frames.
    """

    counts: dict[str, float] = field(default_factory=dict)
    unit: str = "samples"  # or "microseconds" for off-CPU time
    event: str | None = None  # e.g. "cpu-clock", "sched:sched_switch"
    metadata: dict[str, str] = field(default_factory=dict)  # capture facts: command, perf version, host...
    window_us: float | None = None  # the time the profile covers, when known (off-CPU: the recording window)

    @property
    def total(self) -> float:
        return sum(self.counts.values())

    def stacks(self) -> Iterator[tuple[Stack, float]]:
        for text, weight in self.counts.items():
            yield tuple(text.split(";")), weight

    def add(self, stack: str, weight: float) -> None:
        self.counts[stack] = self.counts.get(stack, 0) + weight
