"""Folded profiles -> one self-contained, interactive SVG (flame graph, icicle, chart or diff).

Frames live in a nested <svg> whose viewBox is in the profile's unit: a rect's x and width are
exact sample counts, zooming is one viewBox change, and the checks can read counts back from the
geometry. Labels, header, legend and the top table are in pixels outside it. The template is
autoescaped; the script and stylesheet are inlined verbatim from `assets/`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from ..color import (
    SEARCH_COLOR,
    Highlighter,
    Painter,
    background,
    diff_color,
    resolve_highlights,
    strip_annotation,
)
from ..io.diagnostics import BadCounts, BadOption, NoSamples
from ..io.folded import check_total
from ..model import FoldedProfile
from .facts import Table
from .layout import Columns, Layout, Rect, layout_stacks, min_weight_for, order_stacks
from .options import RenderOptions
from .page import XPAD, LegendItem, Page, PageText, build_page
from .search import search_examples
from .stacks import drawing_holds_stacks, encode
from .summary import (
    by_function,
    change_text,
    class_shares,
    diff_metadata_lines,
    metadata_lines,
    profile_facts,
    rank_self,
    top_changes,
    top_self,
    views_line,
)
from .text import (
    MIN_PREFIX,
    SINGULAR,
    count_text,
    display_name,
    display_text,
    fit_label,
    format_bytes,
    format_count,
    format_duration_us,
    format_number,
    format_percent,
    format_signed,
)

if TYPE_CHECKING:
    from .diff import DiffStacks
    from .precompiled import Renderable

LABEL_MIN_PX = 12  # narrower frames get no label
# Browsers clamp SVG coordinates near 2**25 (Chromium draws a 5e9-wide rect 7 px wide), so large
# totals (off-CPU microseconds) are drawn in units of 10**k; sample counts below this stay exact.
MAX_COORDINATE = 1e7


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


ROOT_TITLE = "all"
# How a title says that all of a frame's time is its own (a leaf: 2 frames in 5): flamegraph.js writes
# "; self N samples, P%)" back for the reader, copying the numbers before it.
ALL_SELF = "; all self)"
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


@dataclass
class Drawing:
    """Frames as markup (one `<g>` each: title, rect), their count, and labels (x, y, text)."""

    frames: str
    count: int
    labels: list[tuple[float, float, str]]
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


def _draw(
    layout: Layout,
    options: RenderOptions,
    page: Page,
    details: Callable[[Rect], str],
    fill: Callable[[Rect], str] | None = None,
    name_fill: Callable[[str], str] | None = None,
    grain: int = 1,
    by_widths: bool = False,
) -> Drawing:
    """Each frame's markup: its title (the name escaped, then `details` of the frame, escaped: " (N
    samples, P%)"), exact coordinates (in the profile's unit), colour (`name_fill` of its name, or
    `fill` of the frame), and labels cut to fit. Escaping and colours are looked up once per name;
    `by_widths`: the details depend on the width and self width only, so they are made once per pair
    (the root's say 100% exactly, so it is never shared). One pass, no call per frame in the usual case."""
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
                labels.append((round(XPAD + start * scale + 3, 2), round(graph_top + rows[depth] + text_dy, 2), label))
    apart = len({(shown, color) for shown, _, color in names.values()}) == len(names)
    return Drawing("".join(lines), len(lines), labels, layout.total, layout.max_depth, divisor, apart)


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


def _document(
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
        "frames_markup": Markup(drawing.frames),  # escaped in _draw
        "labels_markup": _labels_markup(drawing),
        "diff": diff,
    }
    text = _template().render(context)
    # Every text was escaped where it was made (names in _draw, the rest in _page and here), not in one
    # pass over the document: a regex over megabytes of frames costs more than the frames themselves.
    return text.encode("utf-8", "backslashreplace")


def _labels_markup(drawing: Drawing) -> Markup:
    return Markup("".join(f'<text x="{x}" y="{y}">{escape(text)}</text>\n' for x, y, text in drawing.labels))


def _legend_shares(
    highlighter: Highlighter | None, stacks: Iterable[tuple[str, float]], total: float
) -> list[LegendItem]:
    """Each class that matches something: its name and shares; its regular expression in the tooltip."""
    if highlighter is None:
        return []
    legend = []
    shares = class_shares(stacks, highlighter)
    for index, (rule, (inclusive, own)) in enumerate(zip(highlighter.rules, shares, strict=True)):
        if not inclusive:
            continue  # a class that matches nothing says nothing
        text = f"{rule.label} {format_percent(inclusive, total)} % (self {format_percent(own, total)} %)"
        tooltip = (
            f"{rule.label}: /{rule.pattern}/ · {format_percent(inclusive, total)} % of all (stacks through a "
            f"matching frame), {format_percent(own, total)} % self (stacks ending in one)"
        )
        legend.append(LegendItem(highlighter.swatch(index), text, tooltip))
    return legend


def _chain(text: str) -> str:
    """`--colors chain`: frames after the first '--' (the waker's stack) get _[w]."""
    frames = text.split(";")
    if "--" not in frames:
        return text
    cut = frames.index("--") + 1
    return ";".join(frames[:cut] + [f if f == "--" else f + "_[w]" for f in frames[cut:]])


def _wall(text: str) -> str:
    """`--colors wall`: the frames of an off-CPU stack (it ends with its state, [S], [R]...) get _[o]."""
    from ..analysis.offcpu_threads import is_state

    frames = text.split(";")
    if len(frames) < 2 or not is_state(frames[-1]):
        return text
    return ";".join([frames[0], *(f + "_[o]" for f in frames[1:])])


def render_svg(
    profile: FoldedProfile, options: RenderOptions, stacks: Sequence[tuple[str, float]] | None = None
) -> bytes:
    """The flame graph of `profile` (or, for a flame chart, of `stacks` in their time order)."""
    options.check()
    palette = options.palette_for(profile)
    source: Mapping[str, float] | Sequence[tuple[str, float]] = profile.counts if stacks is None else stacks
    by_thread = options.views is None or options.views.roots_kept  # --callers etc.: the roots are not threads
    off_cpu = profile.unit == "microseconds" and stacks is None and by_thread
    view = None
    if off_cpu:  # imported here: an on-CPU graph needs none of the off-CPU analysis
        from .offcpu import offcpu_view

        view = offcpu_view(profile, options.show_idle)
    if view is not None:
        source = view.counts
    if palette in ("chain", "wall"):
        pairs = source.items() if isinstance(source, Mapping) else source
        mark = _chain if palette == "chain" else _wall
        source = [(mark(text), weight) for text, weight in pairs]
    items = source.items() if isinstance(source, Mapping) else source  # (text, weight), not copied
    texts, weights = order_stacks(source, options.reverse, keep_order=options.flamechart)
    total = sum(weights)
    check_total(total, options.factor)
    if not total > 0:
        raise NoSamples("nothing to draw: the profile holds no samples")
    plot_width = options.width - 2 * XPAD
    minimum = min_weight_for(options.min_width, total, plot_width)
    by_weight = options.order == "weight"
    layout = layout_stacks(texts, Columns(weights), minimum, ordered=not options.flamechart, by_weight=by_weight)
    painter = Painter(palette, options.hash, options.random, options.palette_map)
    rules = resolve_highlights(options.highlights, options.preset, palette)
    highlighter = Highlighter(rules) if rules else None
    count_name = display_name(options.count_name_for(profile))  # in every title
    factor = options.factor

    def name_fill(name: str) -> str:
        if highlighter is not None:
            index = highlighter.class_of(name)
            if index >= 0:
                return highlighter.fill(index, name)
        return painter.fill(name)

    durations = view is not None and options.count_name is None and factor == 1  # off-CPU µs: as a duration
    sizes = profile.unit == "bytes" and options.count_name is None and factor == 1  # bytes: KiB, MiB, GiB

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

    def details(frame: Rect) -> str:  # made once per (width, self width): _draw's by_widths
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

    encoded = encode(texts, weights)  # the page's views; the leaves' weights for the table
    grain = weight_grain(weights)
    del texts, weights
    drawn = FoldedProfile(view.counts, profile.unit, profile.event, window_us=profile.window_us) if view else profile
    summary = [profile_facts(drawn, count_name, factor, by_thread)]
    if options.views is not None:
        summary.append(views_line(options.views, count_name, factor, profile.unit))
    tables = list(options.tables)
    if view is not None:
        summary += view.summary()
        tables.insert(0, view.thread_table())
        from ..analysis.offcpu_threads import is_wall
        from .offcpu import blocked_in

        ranked = blocked_in(view.counts, options.top, is_wall(profile.event))
        heading = f"Top {len(ranked)} functions that blocked, by off-CPU time (the caller of the wait; its state)"
    else:  # the leaves' weights, added up by the encoding (reversed stacks end in their roots)
        leaves = encoded.leaf_weights if not options.reverse else None
        ranked = rank_self(by_function(leaves), options.top) if leaves is not None else top_self(items, options.top)
        heading = f"Top {len(ranked)} functions by self {count_name}"
    rows = [
        (f"{format_percent(weight, total)}%", _amount(weight * factor, profile, options), name)
        for name, weight in ranked
    ]
    text = PageText(
        summary=summary,
        legend=_legend_shares(highlighter, items, total),
        table=Table(heading, rows=rows) if rows else None,
        facts=metadata_lines(profile),
        fact_tables=tables,
    )
    page = _page(options, layout, text)
    drawing = _draw(layout, options, page, details, lambda _: painter.fill(""), name_fill, grain or 1, by_widths=True)
    drawn_colors = dict(painter.cache)  # the palette file keeps the drawn frames' colours, not every name's
    # The drawing holds every stack, exactly (integer coordinates, no frame pruned, no two frames alike):
    # the page reads them back from it, and nothing more is embedded.
    stacks_drawn = (
        grain > 0
        and drawing.divisor == grain
        and not options.flamechart
        and drawing_holds_stacks(layout)
        and drawing.apart
    )
    stacks_data = None
    if not stacks_drawn:
        shown_at: dict[str, int] = {}  # frame -> the first drawn frame showing it: the page reads its name there
        for index, frame in enumerate(layout.frames):
            if frame.depth and frame.name not in shown_at:
                shown_at[frame.name] = index
        stacks_data = encoded.data(strip_annotation, name_fill, shown_at)
    examples = search_examples([name for name, _ in ranked], view is not None)
    title_text = options.title_for(profile)
    svg = _document(
        options,
        page,
        drawing,
        title_text,
        palette,
        count_name,
        diff=False,
        examples=examples,
        stacks=stacks_data,
        durations=durations,
        sizes=sizes,
        stacks_drawn=stacks_drawn,
    )
    if options.palette_map is not None:  # extended in memory; the caller saves it
        options.palette_map.update((name, color) for name, color in drawn_colors.items() if name)
    return svg


def _amount(value: float, profile: FoldedProfile, options: RenderOptions) -> str:
    """A table's amount: a duration for off-CPU microseconds, else the count."""
    if profile.unit == "microseconds" and options.count_name is None and options.factor == 1:
        return format_duration_us(value)
    if profile.unit == "bytes" and options.count_name is None and options.factor == 1:
        return format_bytes(value)
    return format_count(value)


def _page(options: RenderOptions, layout: Layout, text: PageText) -> Page:
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


def render_diff(before: FoldedProfile, after: FoldedProfile, options: RenderOptions) -> bytes:
    """Differential flame graph: red frames grew from BEFORE to AFTER, blue ones shrank."""
    options.check()
    if before.unit != after.unit and not options.normalize:
        raise BadOption(
            f"BEFORE counts {before.unit} and AFTER {after.unit}: their totals do not compare; "
            "--normalize compares shares instead"
        )
    for side in (before, after):
        check_total(side.total, options.factor)
    from .diff import diff_stacks

    stacks = diff_stacks(before, after, options.normalize, options.diff_width, options.reverse)
    if not math.isfinite(stacks.scale):
        raise BadCounts(f"--normalize: BEFORE's total ({before.total:g}) is too small to scale to AFTER's")
    check_total(stacks.total_before, options.factor)  # scaled: the header shows it
    total = sum(stacks.columns.width)
    check_total(total, options.factor)
    if not total > 0:
        if before.total > 0 or after.total > 0:  # the side that sets the widths is the empty one
            raise NoSamples(f"nothing to draw: --diff-width {options.diff_width}, and that profile is empty")
        raise NoSamples("nothing to draw: both profiles are empty")
    minimum = min_weight_for(options.min_width, total, options.width - 2 * XPAD)
    layout = layout_stacks(stacks.texts, stacks.columns, minimum, by_weight=options.order == "weight")
    count_name = display_name(options.count_name_for(after))  # in every title
    factor = options.factor
    sign = -1.0 if options.negate else 1.0
    rules = resolve_highlights(options.highlights, options.preset, "hot")

    def fill(frame: Rect) -> str:
        return diff_color(sign * frame.self_delta, stacks.max_delta)

    def details(frame: Rect) -> str:
        old, new = frame.before * factor, frame.after * factor
        rest = (
            f" (before {format_count(old)}, after {count_text(new, count_name)}:"
            f" {change_text(old, new, parens=False)}; self {format_signed(frame.self_delta * factor)};"
            f" {format_percent(frame.after, stacks.total_after)}% of after)"
        )
        return str(escape(rest))

    legend = _diff_legend(options.negate)
    if rules:
        legend += _diff_shares(Highlighter(rules), before, after)
    rows = [
        (change_text(old * factor, new * factor), f"{format_count(old * factor)} -> {format_count(new * factor)}", name)
        for name, old, new in top_changes(before.counts.items(), after.counts.items(), stacks.scale, options.top)
    ]
    heading = f"Largest changes of self {count_name} (before -> after)"
    text = PageText(
        summary=_diff_info(before, after, stacks, count_name, factor, options),
        legend=legend,
        table=Table(heading, rows=rows) if rows else None,
        facts=diff_metadata_lines(before, after),
        fact_tables=list(options.tables),
    )
    page = _page(options, layout, text)
    drawing = _draw(layout, options, page, details, fill=fill)
    examples = search_examples([row[2] for row in rows], False)
    title_text = options.title_for(after, diff=True)
    return _document(options, page, drawing, title_text, "hot", count_name, diff=True, examples=examples)


def _diff_info(
    before: FoldedProfile,
    after: FoldedProfile,
    stacks: DiffStacks,
    count_name: str,
    factor: float,
    options: RenderOptions,
) -> list[str]:
    """One line: both totals, what the width and the colour mean."""
    normalized = f" (BEFORE normalized x{stacks.scale:.4g} to AFTER's total)" if options.normalize else ""
    widths = {"max": "max(before, after)", "after": "AFTER", "before": "BEFORE"}[options.diff_width]
    event = after.event or before.event or "event not recorded"
    before_name = count_name if before.unit == after.unit else display_name(options.count_name_for(before))
    lines = [
        f"{event} · BEFORE {count_text(before.total * factor, before_name)} -> AFTER "
        f"{count_text(after.total * factor, count_name)}{normalized} · width: {widths} per stack · "
        f"colour: change of self {count_name}"
    ]
    if options.views is not None:
        lines.append(views_line(options.views, count_name, factor, after.unit))
    return lines


def _diff_legend(negate: bool) -> list[LegendItem]:
    grew, shrank = ("#ff0000", "#0000ff") if not negate else ("#0000ff", "#ff0000")
    return [
        LegendItem(grew, "grew: more self time in AFTER", "deeper colour: larger change"),
        LegendItem(shrank, "shrank or gone in AFTER", "a frame gone in AFTER is still drawn, at its BEFORE width"),
    ]


def _diff_shares(highlighter: Highlighter, before: FoldedProfile, after: FoldedProfile) -> list[LegendItem]:
    old = class_shares(before.counts.items(), highlighter)
    new = class_shares(after.counts.items(), highlighter)
    legend = []
    for index, rule in enumerate(highlighter.rules):
        if not (old[index][0] or new[index][0]):
            continue
        shares = f"{format_percent(old[index][0], before.total)} % -> {format_percent(new[index][0], after.total)} %"
        tooltip = f"{rule.label}: /{rule.pattern}/"
        legend.append(LegendItem(highlighter.swatch(index), f"{rule.label} {shares}", tooltip))
    return legend


__all__ = ["RenderOptions", "render_diff", "render_svg"]
