"""Folded profiles -> one self-contained, interactive SVG (flame graph, icicle, chart or diff).

The steps, each in its module: the stacks to draw (here: the off-CPU view, the chain and wall
marks) -> `layout` (merge, prune) -> the page's texts (`summary`) and its geometry
(`page`) -> the frames' markup (`drawing`) -> the stacks the page's views need (`stacks`, unless
the frames hold them all) -> the document (`document`: template, script, settings).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

from markupsafe import escape

from ..color import Highlighter, Painter, diff_color, label_fill, resolve_highlights, strip_annotation
from ..io.diagnostics import BadCounts, BadOption, NoSamples
from ..io.folded import check_total
from ..model import FoldedProfile
from .document import HERE, page_for, prepare, render_document
from .drawing import coordinate_divisor, draw, frame_details, weight_grain
from .facts import Table
from .layout import Columns, Layout, Rect, layout_stacks, min_weight_for, order_stacks
from .options import RenderOptions
from .page import XPAD, PageText
from .search import search_examples
from .stacks import Encoded, drawing_holds_stacks, drawn_leaf_weights, encode
from .summary import (
    by_function,
    change_text,
    diff_metadata_lines,
    legend_shares,
    metadata_lines,
    profile_facts,
    rank_self,
    table_amount,
    top_changes,
    top_self,
    views_line,
)
from .text import count_text, display_name, format_count, format_percent, format_signed

if TYPE_CHECKING:
    from .offcpu import OffCpuView

    Stacks = Mapping[str, float] | Sequence[tuple[str, float]]  # (text, weight) pairs, or a profile's counts


def render_svg(
    profile: FoldedProfile, options: RenderOptions, stacks: Sequence[tuple[str, float]] | None = None
) -> bytes:
    """The flame graph of `profile` (or, for a flame chart, of `stacks` in their time order)."""
    options.check()
    palette = options.palette_for(profile)
    by_thread = options.views is None or options.views.roots_kept  # --callers etc.: the roots are not threads
    view = _offcpu_view(profile, options) if stacks is None and by_thread else None
    source = _marked(palette, view.counts if view is not None else profile.counts if stacks is None else stacks)
    items = source.items() if isinstance(source, Mapping) else source  # (text, weight), not copied
    texts, weights = order_stacks(source, options.reverse, keep_order=options.flamechart)
    total = sum(weights)
    layout = _layout(texts, weights, total, options)
    painter = Painter(palette, options.hash, options.random, options.palette_map)
    rules = resolve_highlights(options.highlights, options.preset, palette)
    highlighter = Highlighter(rules) if rules else None
    name_fill = _name_fill(painter, highlighter)
    count_name = display_name(options.count_name_for(profile))  # in every title
    amounts_are = options.count_name is None and options.factor == 1
    durations = view is not None and amounts_are  # off-CPU µs: as a duration
    sizes = profile.unit == "bytes" and amounts_are  # bytes: KiB, MiB, GiB
    details = frame_details(total, count_name, options.factor, durations, sizes)
    grain = weight_grain(weights)
    may_hold = _may_hold_stacks(layout, grain, options)
    # The encoded stacks give the page's views and the table's leaf weights. A drawing that may hold every
    # stack (each of some weight) gives the weights instead; the stacks are then encoded only if it does not.
    encoded = encode(texts, weights) if not (may_hold and min(weights) > 0) else None
    ranked, table = _top_table(profile, options, view, encoded, layout, items, total, count_name)
    text = PageText(
        summary=_summary(profile, options, view, count_name, by_thread),
        legend=legend_shares(highlighter, items, total),
        table=table,
        facts=metadata_lines(profile),
        fact_tables=[view.thread_table(), *options.tables] if view is not None else list(options.tables),
    )
    page = page_for(options, layout, text)
    drawing = draw(layout, options, page, details, lambda _: painter.fill(""), name_fill, grain or 1, by_widths=True)
    drawn_colors = dict(painter.cache)  # the palette file keeps the drawn frames' colours, not every name's
    stacks_drawn = may_hold and drawing.apart  # no two frames alike: the page tells every frame apart
    if encoded is None and not stacks_drawn:
        encoded = encode(texts, weights)
    del texts, weights
    svg = render_document(
        options,
        page,
        drawing,
        options.title_for(profile),
        palette,
        count_name,
        diff=False,
        examples=search_examples([name for name, _ in ranked], view is not None),
        stacks=_stacks_data(encoded, layout, name_fill) if encoded is not None and not stacks_drawn else None,
        durations=durations,
        sizes=sizes,
        stacks_drawn=stacks_drawn,
    )
    if options.palette_map is not None:  # extended in memory; the caller saves it
        options.palette_map.update((name, color) for name, color in drawn_colors.items() if name)
    return svg


def _offcpu_view(profile: FoldedProfile, options: RenderOptions) -> OffCpuView | None:
    """Off-CPU microseconds drawn by thread: the view that sets idle threads aside (else None)."""
    if profile.unit != "microseconds":
        return None
    from .offcpu import offcpu_view  # imported here: an on-CPU graph needs none of the off-CPU analysis

    return offcpu_view(profile, options.show_idle)


def _marked(palette: str, source: Stacks) -> Stacks:
    """`--colors chain` and `wall` colour by a mark on the frames they apply to (others: the stacks as they are)."""
    if palette not in ("chain", "wall"):
        return source
    pairs = source.items() if isinstance(source, Mapping) else source
    mark = _chain if palette == "chain" else _wall
    return [(mark(text), weight) for text, weight in pairs]


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


def _layout(texts: list[str], weights: Sequence[float], total: float, options: RenderOptions) -> Layout:
    """The ordered stacks merged into frames, those under --minwidth pruned."""
    check_total(total, options.factor)
    if not total > 0:
        raise NoSamples("nothing to draw: the profile holds no samples")
    minimum = min_weight_for(options.min_width, total, options.width - 2 * XPAD)
    by_weight = options.order == "weight"
    return layout_stacks(texts, Columns(weights), minimum, ordered=not options.flamechart, by_weight=by_weight)


def _name_fill(painter: Painter, highlighter: Highlighter | None) -> Callable[[str], str]:
    """A frame's colour by its name: its highlight class's, else the palette's."""

    def name_fill(name: str) -> str:
        if highlighter is not None:
            index = highlighter.class_of(name)
            if index >= 0:
                return highlighter.fill(index, name)
        return painter.fill(name)

    return name_fill


def _summary(
    profile: FoldedProfile, options: RenderOptions, view: OffCpuView | None, count_name: str, by_thread: bool
) -> list[str]:
    """The lines under the title: the profile's facts, the views applied, the off-CPU threads set aside."""
    drawn = FoldedProfile(view.counts, profile.unit, profile.event, window_us=profile.window_us) if view else profile
    summary = [profile_facts(drawn, count_name, options.factor, by_thread)]
    if options.views is not None:
        summary.append(views_line(options.views, count_name, options.factor, profile.unit))
    if view is not None:
        summary += view.summary()
    return summary


def _top_table(
    profile: FoldedProfile,
    options: RenderOptions,
    view: OffCpuView | None,
    encoded: Encoded | None,
    layout: Layout,
    items: Iterable[tuple[str, float]],
    total: float,
    count_name: str,
) -> tuple[list[tuple[str, float]], Table | None]:
    """The functions with the most self time (off-CPU: those that blocked), ranked, and their table."""
    if view is not None:
        from ..analysis.offcpu_threads import is_wall
        from .offcpu import blocked_in

        ranked = blocked_in(view.counts, options.top, is_wall(profile.event))
        heading = f"Top {len(ranked)} functions that blocked, by off-CPU time (the caller of the wait; its state)"
    else:
        if options.reverse:  # reversed stacks end in their roots
            ranked = top_self(items, options.top)
        else:  # the leaves' weights, added up by the encoding or read from the frames
            leaves = encoded.leaf_weights if encoded is not None else drawn_leaf_weights(layout)
            ranked = rank_self(by_function(leaves), options.top)
        heading = f"Top {len(ranked)} functions by self {count_name}"
    rows = [
        (f"{format_percent(weight, total)}%", table_amount(weight * options.factor, profile, options), name)
        for name, weight in ranked
    ]
    return ranked, Table(heading, rows=rows) if rows else None


def _may_hold_stacks(layout: Layout, grain: int, options: RenderOptions) -> bool:
    """The drawing may hold every stack, exactly (integer coordinates, no frame pruned): the page then
    reads them back from it if no two frames are drawn alike (`Drawing.apart`), and nothing more is embedded."""
    return (
        grain > 0
        and coordinate_divisor(layout.total, grain) == grain  # the drawing's divisor
        and not options.flamechart
        and drawing_holds_stacks(layout)
    )


_name = itemgetter(0)  # Rect.name, in C


def _stacks_data(encoded: Encoded, layout: Layout, name_fill: Callable[[str], str]) -> dict[str, object]:
    """The stacks embedded for the page's views; a name the drawing shows is written as where it shows it."""
    names = list(map(_name, layout.frames))
    # frame -> the first drawn frame showing it: the page reads its name there. Last to first, so that a
    # name's first frame is the one kept, and the root (index 0, last) left out by the shorter range; in C.
    shown_at = dict(zip(reversed(names), range(len(names) - 1, 0, -1), strict=False))
    return encoded.data(strip_annotation, name_fill, shown_at)


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
    from .diff import diff_info, diff_legend, diff_shares, diff_stacks

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

    legend = diff_legend(options.negate)
    if rules:
        legend += diff_shares(Highlighter(rules), before, after)
    rows = [
        (change_text(old * factor, new * factor), f"{format_count(old * factor)} -> {format_count(new * factor)}", name)
        for name, old, new in top_changes(before.counts.items(), after.counts.items(), stacks.scale, options.top)
    ]
    heading = f"Largest changes of self {count_name} (before -> after)"
    text = PageText(
        summary=diff_info(before, after, stacks, count_name, factor, options),
        legend=legend,
        table=Table(heading, rows=rows) if rows else None,
        facts=diff_metadata_lines(before, after),
        fact_tables=list(options.tables),
    )
    page = page_for(options, layout, text)
    drawing = draw(layout, options, page, details, fill=fill, label_fill=label_fill)  # deep blue: white text
    examples = search_examples([row[2] for row in rows], False)
    title_text = options.title_for(after, diff=True)
    return render_document(options, page, drawing, title_text, "hot", count_name, diff=True, examples=examples)


__all__ = ["HERE", "RenderOptions", "prepare", "render_diff", "render_svg"]
