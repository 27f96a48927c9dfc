"""A layout -> the frames' markup: one `<g>` each (title, rect) in exact coordinates, and their labels.

Frames live in a nested <svg> whose viewBox is in the profile's unit: a rect's x and width are
exact sample counts (over `divisor`), zooming is one viewBox change, and the checks can read
counts back from the geometry. Labels are in pixels, outside it. A title reads "name (N samples,
P%; self M, Q%)"; the page completes the short forms the file keeps (ALL_SELF, a self count
without its unit) when it shows one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from ..color import strip_annotation
from .layout import Layout, Rect
from .options import RenderOptions
from .page import XPAD, Page
from .text import (
    MIN_PREFIX,
    count_text,
    display_name,
    fit_label,
    format_bytes,
    format_count,
    format_duration_us,
    format_number,
    format_percent,
)

LABEL_MIN_PX = 12  # narrower frames get no label
# Browsers clamp SVG coordinates near 2**25 (Chromium draws a 5e9-wide rect 7 px wide), so large
# totals (off-CPU microseconds) are drawn in units of 10**k; sample counts below this stay exact.
MAX_COORDINATE = 1e7
ROOT_TITLE = "all"
# How a title says that all of a frame's time is its own (a leaf: 2 frames in 5): flamegraph.js writes
# "; self N samples, P%)" back for the reader, copying the numbers before it.
ALL_SELF = "; all self)"


def coordinate_divisor(total: float, grain: int = 1) -> int:
    """grain * 10**k such that total / divisor <= MAX_COORDINATE. `grain` divides every weight (a
    recording weighted by a fixed period, 1001001 ns a sample): coordinates are then short integers."""
    divisor = grain
    while total / divisor > MAX_COORDINATE:
        divisor *= 10
    return divisor


def weight_grain(weights: Sequence[float]) -> int:
    """The greatest common divisor of integer weights (0 if any is fractional): one pass in C."""
    if not all(map(float.is_integer, map(float, weights))):
        return 0
    return math.gcd(*map(int, weights)) or 1


def frame_details(total: float, count_name: str, factor: float, durations: bool, sizes: bool) -> Callable[[Rect], str]:
    """A frame's title after its name: its amount and share, then its self amount and share.
    `durations`: amounts are off-CPU microseconds, said as durations; `sizes`: bytes, said in KiB..."""

    def amount(weight: float) -> str:
        if sizes:
            return format_bytes(weight)
        return format_duration_us(weight) if durations else count_text(weight * factor, count_name)

    def own_amount(weight: float) -> str:
        """A count's unit is said once per title, with the total: the page adds it back to the self count."""
        if sizes or durations:
            return amount(weight)
        value = weight * factor
        text = format_count(value)
        return text if (text == "1") == (value == 1) else count_text(value, count_name)  # the page: "1" is singular

    def details(frame: Rect) -> str:  # made once per (width, self width): draw's by_widths
        """Escaped: the count's name may hold '&' or '<'. The file stays small: no self time is not said
        (the page says "self 0"), all of it (a leaf) is said as ALL_SELF (the page spells it out), and
        the self count has no unit (the page adds it)."""
        width, self_width = frame.width, frame.self_width
        percent = "100" if frame.depth == 0 else format_percent(width, total)
        if not self_width:
            return str(escape(f" ({amount(width)}, {percent}%)"))
        if self_width == width and frame.depth:
            return str(escape(f" ({amount(width)}, {percent}%{ALL_SELF}"))
        own = f"self {own_amount(self_width)}, {format_percent(self_width, total)}%"
        return str(escape(f" ({amount(width)}, {percent}%; {own})"))

    return details


@dataclass
class Drawing:
    """Frames as markup (one `<g>` each: title, rect), their count, and labels (x, y, text, and their
    text colour where not the page's black)."""

    frames: str
    count: int
    labels: list[tuple[float, float, str, str | None]]
    total: float
    max_depth: int
    divisor: int  # coordinates are weights / divisor
    apart: bool = True  # no two frames as written are drawn alike (the same name in the same fill)


def _rows(layout: Layout, options: RenderOptions) -> list[float]:
    """Rect y per depth, inside the graph area (root at the bottom unless inverted)."""
    height = options.frame_height
    if options.inverted:
        return [depth * height for depth in range(layout.max_depth + 1)]
    return [(layout.max_depth - depth) * height + 1 for depth in range(layout.max_depth + 1)]


def draw(
    layout: Layout,
    options: RenderOptions,
    page: Page,
    details: Callable[[Rect], str],
    fill: Callable[[Rect], str] | None = None,
    name_fill: Callable[[str], str] | None = None,
    grain: int = 1,
    by_widths: bool = False,
    label_fill: Callable[[str], str | None] | None = None,
) -> Drawing:
    """Each frame's markup: its title (the name escaped, then `details` of the frame, escaped: " (N
    samples, P%)"), exact coordinates (in the profile's unit), colour (`name_fill` of its name, or
    `fill` of the frame), and labels cut to fit. Escaping and colours are looked up once per name;
    `by_widths`: the details depend on the width and self width only, so they are made once per pair
    (the root's say 100% exactly, so it is never shared). One pass, no call per frame in the usual case.
    `label_fill`: a label's text colour on its frame's fill (None: black)."""
    rows = _rows(layout, options)
    row_texts = [str(y) for y in rows]
    scale = page.plot_width / layout.total
    divisor = coordinate_divisor(layout.total, grain)
    text_dy = (options.frame_height - 1) / 2 + options.font_size * 0.35
    graph_top = page.graph_top
    font_size = options.font_size
    tail = f'" height="{options.frame_height - 1}" fill="'
    lines: list[str] = []
    labels = []
    names: dict[str, tuple[str, str, str]] = {}  # frame -> (shown name, escaped, fill): once per name
    numbers: dict[float, str] = {}  # coordinate -> text: widths (and many starts) repeat
    texts: dict[tuple[float, float], str] = {}  # (width, self width) -> details, with by_widths
    emit, name_of, number_of, text_of = lines.append, names.get, numbers.get, texts.get
    for frame in layout.frames:
        key, depth, start, width, own, _, _, _ = frame
        known = name_of(key) if depth else None
        if known is None:
            shown = ROOT_TITLE if not depth else display_name(strip_annotation(key))
            known = (shown, str(escape(shown)), name_fill(key) if name_fill is not None and depth else "")
            if depth:
                names[key] = known
        name, escaped, color = known
        x = number_of(start) or numbers.setdefault(start, format_number(start / divisor))
        w = number_of(width) or numbers.setdefault(width, format_number(width / divisor))
        if not color:
            color = fill(frame) if fill is not None else ""
        if by_widths and depth:
            text = text_of((width, own))
            if text is None:
                text = texts[width, own] = details(frame)
        else:
            text = details(frame)
        emit(f'<g><title>{escaped}{text}</title><rect x="{x}" y="{row_texts[depth]}" width="{w}{tail}{color}"/></g>\n')
        pixels = width * scale
        if pixels >= LABEL_MIN_PX:
            label = fit_label(name, pixels - 6, font_size, MIN_PREFIX)
            if label:
                ink = label_fill(color) if label_fill is not None else None
                labels.append(
                    (round(XPAD + start * scale + 3, 2), round(graph_top + rows[depth] + text_dy, 2), label, ink)
                )
    apart = len({(shown, color) for shown, _, color in names.values()}) == len(names)
    return Drawing("".join(lines), len(lines), labels, layout.total, layout.max_depth, divisor, apart)


def labels_markup(drawing: Drawing) -> Markup:
    """The labels; a light one carries its colour as an attribute (the static view, without CSS) and as
    the class the page's CSS colours (CSS outranks an attribute: `text { fill: #000 }`)."""
    return Markup(
        "".join(
            f'<text x="{x}" y="{y}">{escape(text)}</text>\n'
            if ink is None
            else f'<text x="{x}" y="{y}" class="light" fill="{ink}">{escape(text)}</text>\n'
            for x, y, text, ink in drawing.labels
        )
    )
