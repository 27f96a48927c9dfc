"""Tables of the SVG: the self-time table under the graph and the ones in the capture-facts block.

A `Table` is what any stage hands the renderer to show beside the graph (`RenderOptions.tables`):
a heading, column titles and rows of text cells, already formatted. Columns are right-aligned
("end") for numbers, left-aligned ("start") for names; the last column is cut to the page width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Table:
    heading: str
    columns: tuple[str, ...] = ()  # titles; () draws no title row
    rows: Sequence[tuple[str, ...]] = field(default_factory=list)
    align: tuple[str, ...] = ()  # "end" or "start" per column; default: all "end" but the last

    def alignment(self) -> tuple[str, ...]:
        width = max((len(row) for row in self.rows), default=len(self.columns))
        if self.align:
            return self.align
        return tuple("end" for _ in range(width - 1)) + ("start",)
