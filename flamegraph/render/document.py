"""The drawn frames and the page around them -> the SVG document's bytes.

The template is autoescaped; the script and stylesheet are inlined verbatim from `assets/`; what
the script needs to know is one JSON object (the settings).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from ..color import SEARCH_COLOR, background
from .drawing import ALL_SELF, LABEL_MIN_PX, Drawing, labels_markup
from .facts import Table
from .layout import Layout, min_weight_for
from .options import RenderOptions
from .page import XPAD, LegendItem, Page, PageText, build_page
from .text import MIN_PREFIX, SINGULAR, display_name, display_text, format_number

if TYPE_CHECKING:
    from .precompiled import Renderable

HERE = Path(__file__).parent  # templates/ and assets/ (read as files: importlib.resources costs an import)


@cache
def _template() -> Renderable:
    from . import precompiled  # not at import: `python -m flamegraph.render.precompiled` makes it

    return precompiled.load()


@cache
def _asset(name: str) -> str:
    """The script or the stylesheet, inlined verbatim (house style: a reader of the file in a bug report
    sees the source as it is, comments included)."""
    text = (HERE / "assets" / name).read_text("utf-8")
    assert "]]>" not in text, f"{name} must not contain ']]>' (it is inlined in CDATA)"
    return text


def prepare() -> None:
    """Load ahead of a first render what every render reads (the template, the script, the stylesheet):
    `convert` does it while its fold's workers run."""
    _template()
    _asset("flamegraph.css")
    _asset("flamegraph.js")


def page_for(options: RenderOptions, layout: Layout, text: PageText) -> Page:
    """The page around the frames, its texts escaped (display_text) before they are measured and cut."""
    escaped = PageText(
        summary=[display_text(line) for line in text.summary],
        legend=[LegendItem(item.fill, display_text(item.text), display_text(item.tooltip)) for item in text.legend],
        table=_escape_table(text.table) if text.table is not None else None,
        facts=[display_text(line) for line in text.facts],
        fact_tables=[_escape_table(table) for table in text.fact_tables],
    )
    graph_height = (layout.max_depth + 1) * options.frame_height
    return build_page(options.width, options.font_size, bool(options.subtitle), escaped, graph_height)


def _escape_table(table: Table) -> Table:
    return Table(
        display_text(table.heading),
        tuple(display_text(title) for title in table.columns),
        [tuple(display_name(cell) for cell in row) for row in table.rows],
        table.align,
    )


def _settings(
    options: RenderOptions,
    page: Page,
    drawing: Drawing,
    count_name: str,
    diff: bool,
    examples: list[str],
    views: bool,
    durations: bool = False,
    sizes: bool = False,
    stacks_drawn: bool = False,
) -> dict[str, object]:
    """The one JSON object the script reads."""
    return {
        "nameType": display_name(options.name_type),
        "countName": count_name,  # escaped where it was made
        "factor": options.factor,
        "xpad": XPAD,
        "plotWidth": page.plot_width,
        "graphTop": page.graph_top,
        "frameHeight": options.frame_height,
        "fontSize": options.font_size,
        "fontType": options.font_type,
        "inverted": options.inverted,
        "maxDepth": drawing.max_depth,
        "searchColor": SEARCH_COLOR,
        "diff": diff,
        "coordinateDivisor": drawing.divisor,
        "width": page.width,
        "height": page.height,
        "titleY": page.title_y,
        "detailsY": page.details_y,
        "belowTop": page.below_top,
        "factsTop": page.facts_top,
        "minPrefix": MIN_PREFIX,
        "searchExamples": [display_name(example) for example in examples],
        "views": views,  # the stacks are embedded (#stacks) or drawn: callers, focus, ignore, order, recursion
        "stacksDrawn": stacks_drawn,  # no #stacks: the page reads every stack back from the frames
        "flamechart": options.flamechart,  # time order: no order-by-weight toggle
        "drawnByWeight": options.order == "weight",  # the static drawing's order, the toggle's start
        "labelMinPx": LABEL_MIN_PX,
        "allSelf": ALL_SELF,
        # The views prune as the static drawing does: frames under this many pixels are not drawn.
        "minWidthPx": min_weight_for(options.min_width, drawing.total, page.plot_width)
        * page.plot_width
        / drawing.total,
        "durations": durations,  # amounts are microseconds shown as durations (off-CPU)
        "countSingular": SINGULAR.get(count_name, count_name),
    } | ({"sizes": True} if sizes else {})  # amounts are bytes shown in KiB, MiB, GiB (memory); absent: false


def render_document(
    options: RenderOptions,
    page: Page,
    drawing: Drawing,
    title: str,
    palette: str,
    count_name: str,
    diff: bool,
    examples: list[str],
    stacks: dict[str, object] | None = None,
    durations: bool = False,
    sizes: bool = False,
    stacks_drawn: bool = False,
) -> bytes:
    shown = replace(
        options,
        subtitle=display_text(options.subtitle) if options.subtitle else options.subtitle,
        notes=display_text(options.notes),
        font_type=display_text(options.font_type),
    )
    context = {
        "options": shown,  # the render options, their text made safe to show
        "page": page,
        "title": display_text(title),
        "drawing": drawing,
        "rect_height": options.frame_height - 1,
        "background": background(palette) if not diff else ("#eeeeee", "#eeeeee"),
        "settings": _settings(
            options,
            page,
            drawing,
            count_name,
            diff,
            examples,
            stacks is not None or stacks_drawn,
            durations,
            sizes,
            stacks_drawn,
        ),
        "stacks": stacks,
        "css": _asset("flamegraph.css"),
        "js": _asset("flamegraph.js"),
        "XPAD": XPAD,
        "view_width": format_number(drawing.total / drawing.divisor),
        "frames_markup": Markup(drawing.frames),  # escaped in drawing.draw
        "labels_markup": labels_markup(drawing),
        "diff": diff,
    }
    text = _template().render(context)
    # Every text was escaped where it was made (names in drawing.draw, the rest in page_for and here), not
    # in one pass over the document: a regex over megabytes of frames costs more than the frames themselves.
    return text.encode("utf-8", "backslashreplace")
