"""Where everything outside the frames goes: header, legend, graph area, details line, top table.

Positions are computed here, in pixels, so the template only places what it is given and the
static view (no JavaScript: GitHub, issue trackers, PNG) is complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import fit_label, text_width, wrap

XPAD = 10  # left and right margin, as flamegraph.pl


@dataclass(frozen=True)
class Line:
    x: float
    y: float
    text: str
    anchor: str = "start"


@dataclass(frozen=True)
class Swatch:
    x: float
    y: float
    size: float
    fill: str
    label: Line


@dataclass
class Page:
    width: int
    height: float = 0.0
    font_size: float = 12.0
    title_y: float = 0.0
    subtitle_y: float = 0.0
    info: list[Line] = field(default_factory=list)
    legend: list[Swatch] = field(default_factory=list)
    graph_top: float = 0.0
    graph_height: float = 0.0
    details_y: float = 0.0
    table: list[Line] = field(default_factory=list)

    @property
    def plot_width(self) -> float:
        return self.width - 2 * XPAD


def build_page(
    width: int,
    font_size: float,
    has_subtitle: bool,
    info_lines: list[str],
    legend: list[tuple[str, str]],
    graph_height: float,
    table_heading: str,
    table_rows: list[tuple[str, str, str]],
) -> Page:
    """Lay out the page from top to bottom; every text is wrapped or cut to the image width."""
    page = Page(width=width, font_size=font_size)
    small = font_size - 1
    step = font_size + 4
    y = font_size * 2
    page.title_y = y
    if has_subtitle:
        y += font_size * 1.8
        page.subtitle_y = y
    y += font_size * 0.6
    for text in info_lines:
        for piece in wrap(text, page.plot_width, small):
            y += step
            page.info.append(Line(XPAD, y, piece))
    for fill, text in legend:
        y += step + 2
        size = font_size
        label = fit_label(text, page.plot_width - size - 6, small) or text[:1]
        page.legend.append(Swatch(XPAD, y - size + 2, size, fill, Line(XPAD + size + 6, y, label)))
    page.graph_top = y + font_size
    page.graph_height = graph_height
    y = page.graph_top + graph_height + font_size * 1.6
    page.details_y = y
    if table_rows:
        y += font_size * 2
        page.table.append(Line(XPAD, y, table_heading))
        y = _table(page, table_rows, y, small, step)
    page.height = round(y + font_size, 1)
    return page


def _table(page: Page, rows: list[tuple[str, str, str]], y: float, size: float, step: float) -> float:
    """Two right-aligned number columns, then the name, cut to the remaining width."""
    first = max(text_width(row[0], size) for row in rows) + XPAD
    second = first + 12 + max(text_width(row[1], size) for row in rows)
    name_x = second + 12
    for left, middle, name in rows:
        y += step
        page.table.append(Line(first, y, left, "end"))
        page.table.append(Line(second, y, middle, "end"))
        page.table.append(Line(name_x, y, fit_label(name, page.width - XPAD - name_x, size)))
    return y
