"""Two profiles -> one ordered set of stacks with BEFORE, AFTER and the width to draw, and what the
differential graph says of them beside the frames (its summary line, its legend).

Every stack of either profile is kept, so frames that vanished in AFTER (or are new in it) still
get width: by default a stack is drawn as wide as max(BEFORE, AFTER). `--normalize` scales BEFORE
to AFTER's total first, so the colours show a change of share rather than of volume.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..color import Highlighter
from ..model import FoldedProfile
from .layout import Columns, reverse_stack
from .options import RenderOptions
from .page import LegendItem
from .summary import class_shares, views_line
from .text import count_text, display_name, format_percent


@dataclass(frozen=True)
class DiffStacks:
    texts: list[str]  # sorted
    columns: Columns
    total_before: float  # after normalisation
    total_after: float
    scale: float  # factor applied to BEFORE (1.0 without --normalize)
    max_delta: float  # largest |AFTER - BEFORE| of one stack: the colour scale's end


def diff_stacks(
    before: FoldedProfile, after: FoldedProfile, normalize: bool, width_from: str, reverse: bool
) -> DiffStacks:
    raw_before = before.total
    scale = after.total / raw_before if normalize and raw_before > 0 else 1.0
    pairs: dict[str, list[float]] = {}
    for text, weight in before.counts.items():
        old = pairs.setdefault(reverse_stack(text) if reverse else text, [0.0, 0.0])
        old[0] += weight * scale
    for text, weight in after.counts.items():
        new = pairs.setdefault(reverse_stack(text) if reverse else text, [0.0, 0.0])
        new[1] += weight
    texts = sorted(pairs)
    befores = [pairs[text][0] for text in texts]
    afters = [pairs[text][1] for text in texts]
    if width_from == "after":
        widths = afters
    elif width_from == "before":
        widths = befores
    else:
        widths = [max(b, a) for b, a in zip(befores, afters, strict=True)]
    max_delta = max((abs(a - b) for b, a in zip(befores, afters, strict=True)), default=0.0)
    return DiffStacks(texts, Columns(widths, befores, afters), sum(befores), sum(afters), scale, max_delta)


def events_differ(before: FoldedProfile, after: FoldedProfile) -> str | None:
    """The note for two sides that count different events (known on both), else None."""
    if before.event is None or after.event is None or before.event == after.event:
        return None
    return f"note: BEFORE counts {before.event}, AFTER {after.event}: the graph compares different events"


def diff_info(
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
    if events_differ(before, after):
        event = f"{before.event} -> {after.event}"  # each side's: the graph compares different counters
    before_name = count_name if before.unit == after.unit else display_name(options.count_name_for(before))
    lines = [
        f"{event} · BEFORE {count_text(before.total * factor, before_name)} -> AFTER "
        f"{count_text(after.total * factor, count_name)}{normalized} · width: {widths} per stack · "
        f"colour: change of self {count_name}"
    ]
    if options.views is not None:
        lines.append(views_line(options.views, count_name, factor, after.unit))
    return lines


def diff_legend(negate: bool) -> list[LegendItem]:
    grew, shrank = ("#ff0000", "#0000ff") if not negate else ("#0000ff", "#ff0000")
    return [
        LegendItem(grew, "grew: more self time in AFTER", "deeper colour: larger change"),
        LegendItem(shrank, "shrank or gone in AFTER", "a frame gone in AFTER is still drawn, at its BEFORE width"),
    ]


def diff_shares(highlighter: Highlighter, before: FoldedProfile, after: FoldedProfile) -> list[LegendItem]:
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
