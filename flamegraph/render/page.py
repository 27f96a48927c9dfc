"""Where everything outside the frames goes, top to bottom, in pixels:

    title (controls on its line: capture facts, reset zoom, the search box)
    subtitle
    details line: what the pointer rests on (the script fills it; under the title, where the eye is)
    summary: one line (off-CPU: a second one naming the idle stacks not drawn)
    legend: the highlight classes and their shares, side by side
    the graph
    the self-time table
    capture facts: metadata lines and tables (the script folds them into a block the reader opens)

Positions are computed here, so the template only places what it is given and the static view
(no JavaScript: GitHub, issue trackers, PNG) is complete: there, the facts are simply below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .facts import Table
from .text import fit_label, text_width, wrap

XPAD = 10  # left and right margin, as flamegraph.pl
COLUMN_GAP = 14


@dataclass(frozen=True)
class Line:
    x: float
    y: float
    text: str
    anchor: str = "start"
    kind: str = ""  # "heading", "columns": how the template styles it


@dataclass(frozen=True)
class Swatch:
    x: float
    y: float
    size: float
    fill: str
    label: Line
    tooltip: str = ""


@dataclass(frozen=True)
class LegendItem:
    fill: str
    text: str  # "oneDNN JIT kernels 15.3 % (self 15.3 %)"
    tooltip: str = ""  # the class's regular expression


@dataclass
class Page:
    width: int
    height: float = 0.0
    font_size: float = 12.0
    title_y: float = 0.0
    subtitle_y: float = 0.0
    details_y: float = 0.0
    summary: list[Line] = field(default_factory=list)
    legend: list[Swatch] = field(default_factory=list)
    graph_top: float = 0.0
    graph_height: float = 0.0
    below_top: float = 0.0  # where the content under the graph starts
    table: list[Line] = field(default_factory=list)
    facts_top: float = 0.0  # where the capture facts start (== height when there are none)
    facts: list[Line] = field(default_factory=list)

    @property
    def plot_width(self) -> float:
        return self.width - 2 * XPAD


@dataclass
class PageText:
    """Everything outside the frames, escaped for display, before it is laid out."""

    summary: list[str]
    legend: list[LegendItem]
    table: Table | None
    facts: list[str]  # "key: value" lines
    fact_tables: list[Table]


def build_page(width: int, font_size: float, has_subtitle: bool, text: PageText, graph_height: float) -> Page:
    """Lay out the page from top to bottom; every text is wrapped or cut to the image width."""
    page = Page(width=width, font_size=font_size)
    small = font_size - 1
    step = font_size + 4
    y = font_size * 2
    page.title_y = y
    if has_subtitle:
        y += font_size * 1.6
        page.subtitle_y = y
    y += step + 2
    page.details_y = y
    for summary in text.summary:
        for piece in wrap(summary, page.plot_width, small):
            y += step
            page.summary.append(Line(XPAD, y, piece))
    y = _legend(page, text.legend, y, small, step)
    page.graph_top = y + font_size * 0.8
    page.graph_height = graph_height
    y = page.graph_top + graph_height
    page.below_top = y
    if text.table is not None and text.table.rows:
        y = _table(page.table, text.table, y + font_size * 0.6, small, step, width)
    page.facts_top = y + font_size * 0.6
    if text.facts or text.fact_tables:
        y = _facts(page, text, page.facts_top, small, step)
    page.height = round(y + font_size, 1)
    if not page.facts:
        page.facts_top = page.height
    return page


def _legend(page: Page, legend: list[LegendItem], y: float, size: float, step: float) -> float:
    """Swatch and label side by side, a new row when the next one does not fit."""
    if not legend:
        return y
    box = page.font_size
    y += step + 2
    x = float(XPAD)
    for item in legend:
        room = page.plot_width - box - 6
        label = fit_label(item.text, room, size) or item.text[:1]
        used = box + 6 + text_width(label, size) + 12
        if x > XPAD and x + used > XPAD + page.plot_width:
            x = float(XPAD)
            y += step + 2
        page.legend.append(Swatch(x, y - box + 2, box, item.fill, Line(x + box + 6, y, label), item.tooltip))
        x += used
    return y


def _facts(page: Page, text: PageText, y: float, size: float, step: float) -> float:
    y += step
    page.facts.append(Line(XPAD, y, "Capture facts", kind="heading"))
    for fact in text.facts:
        for piece in wrap(fact, page.plot_width, size):
            y += step
            page.facts.append(Line(XPAD, y, piece))
    for table in text.fact_tables:
        y = _table(page.facts, table, y + 4, size, step, page.width)
    return y


def _table(lines: list[Line], table: Table, y: float, size: float, step: float, width: int) -> float:
    """A heading, then columns: numbers right-aligned, the last one (a name) cut to the page width."""
    y += step
    lines.append(Line(XPAD, y, table.heading, kind="heading"))
    align = table.alignment()
    columns = len(align)
    rows = [tuple(row) + ("",) * (columns - len(row)) for row in table.rows]
    titles = tuple(table.columns) + ("",) * (columns - len(table.columns)) if table.columns else None
    widths = [
        max([text_width(row[c], size) for row in rows] + ([text_width(titles[c], size)] if titles else []))
        for c in range(columns)
    ]
    starts = []
    x = float(XPAD)
    for c in range(columns):
        starts.append(x)
        x += widths[c] + COLUMN_GAP
    for row, kind in ([(titles, "columns")] if titles else []) + [(row, "") for row in rows]:
        y += step
        for c, cell in enumerate(row):
            if not cell:
                continue
            if c == columns - 1 and align[c] == "start":
                cell = fit_label(cell, width - XPAD - starts[c], size)
            anchor = align[c]
            lines.append(Line(starts[c] + widths[c] if anchor == "end" else starts[c], y, cell, anchor, kind))
    return y
