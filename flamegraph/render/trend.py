"""The trend page of a recording cut in intervals (`record --every`): per function, its share in each.

A heat strip per function (rows: the functions with the most self time over the run; columns: the
intervals), each cell its self share in that interval, printed and shaded (white 0 % to red at the
busiest cell), its tooltip also the total (inclusive) share. Plain SVG, every name escaped (and shown
as the graph shows it: a byte that is not UTF-8 as `\\xNN`, render/text.py), readable
where no JavaScript runs; one line at the foot says how to compare two intervals (`flamegraph diff`).

    render_trend([(1, profile1), (2, profile2)], "train.py: on-CPU", "flamegraph diff ...") -> bytes
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..color import strip_annotation
from ..model import FoldedProfile
from .summary import self_weights
from .text import display_name, display_text

SEP = ";"
ROWS = 30
ROW_HEIGHT = 18
NAME_WIDTH = 420
FONT = 'font-family="Verdana, sans-serif"'


def total_weights(profile: FoldedProfile) -> dict[str, float]:
    """Total (inclusive) weight per function: each stack counted once per distinct function in it."""
    weights: dict[str, float] = {}
    for text, weight in profile.counts.items():
        for name in {strip_annotation(frame) if frame.endswith("]") else frame for frame in text.split(SEP)}:
            weights[name] = weights.get(name, 0) + weight
    return weights


def trend_rows(
    intervals: Sequence[tuple[int, FoldedProfile]], rows: int = ROWS
) -> list[tuple[str, list[float], list[float]]]:
    """(function, self share per interval, total share per interval), the most self time over the run
    first (ties by name); shares in [0, 1] of each interval's own total."""
    selfs = [self_weights(p.counts.items()) for _, p in intervals]
    totals = [total_weights(p) for _, p in intervals]
    sums = [p.total or 1.0 for _, p in intervals]
    overall: dict[str, float] = {}
    for weights, whole in zip(selfs, sums, strict=True):
        for name, weight in weights.items():
            overall[name] = overall.get(name, 0.0) + weight / whole
    ranked = sorted(overall.items(), key=lambda item: (-item[1], item[0]))[:rows]
    return [
        (
            name,
            [w.get(name, 0.0) / whole for w, whole in zip(selfs, sums, strict=True)],
            [t.get(name, 0.0) / whole for t, whole in zip(totals, sums, strict=True)],
        )
        for name, _ in ranked
    ]


def _shade(share: float, peak: float) -> str:
    """White at 0, red at the busiest cell of the page."""
    level = share / peak if peak > 0 else 0.0
    fade = round(255 * (1 - level))
    return f"rgb(255,{fade},{fade})"


def render_trend(
    intervals: Sequence[tuple[int, FoldedProfile]], title: str, hint: str | None, width: int = 1200, rows: int = ROWS
) -> bytes:
    """The page (see the module's doc); `hint`, the command that compares two intervals (None: there is
    only one, and the foot says so instead of comparing it with itself)."""
    table = trend_rows(intervals, rows)
    columns = max(len(intervals), 1)
    cell = max(min((width - NAME_WIDTH - 20) / columns, 80.0), 14.0)
    page_width = int(max(width, NAME_WIDTH + 20 + cell * columns))
    top = 70
    height = top + ROW_HEIGHT * (len(table) + 1) + 50
    peak = max((share for _, selfs, _ in table for share in selfs), default=0.0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{page_width}" height="{height}" '
        f'viewBox="0 0 {page_width} {height}">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{page_width / 2:.0f}" y="24" text-anchor="middle" {FONT} font-size="17">'
        f"{escape(display_text(title))}</text>",
        f'<text x="10" y="46" {FONT} font-size="12">Self time per function, as a share of each interval '
        f"(rows: the {len(table)} functions with the most self time over the run; hover: total share)</text>",
    ]
    y = top
    for i, (number, profile) in enumerate(intervals):
        x = NAME_WIDTH + i * cell
        samples = f"{profile.total:,.0f} {escape(display_text(profile.unit))}"
        out.append(
            f'<text x="{x + cell / 2:.1f}" y="{y + 13}" text-anchor="middle" {FONT} font-size="12">'
            f"<title>interval {number}: {samples}</title>{number:03d}</text>"
        )
    for row, (function, selfs, totals) in enumerate(table):
        y = top + ROW_HEIGHT * (row + 1)
        name = display_name(function)  # a byte that is not UTF-8 as `\xNN`, as the graph shows it
        label = name if len(name) <= 60 else name[:57] + "..."
        out.append(
            f'<text x="{NAME_WIDTH - 8}" y="{y + 13}" text-anchor="end" {FONT} font-size="12">'
            f"<title>{escape(name)}</title>{escape(label)}</text>"
        )
        for i, (share, total) in enumerate(zip(selfs, totals, strict=True)):
            x = NAME_WIDTH + i * cell
            number = intervals[i][0]
            tip = f"{escape(name)}: interval {number}: self {100 * share:.1f} %, total {100 * total:.1f} %"
            out.append(
                f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{cell - 1:.1f}" '
                f'height="{ROW_HEIGHT - 1}" fill="{_shade(share, peak)}" stroke="#dddddd"/>'
            )
            if cell >= 34:
                out.append(
                    f'<text x="{x + cell / 2:.1f}" y="{y + 13}" text-anchor="middle" {FONT} font-size="10">'
                    f"{100 * share:.1f}</text>"
                )
            out.append("</g>")
    foot = top + ROW_HEIGHT * (len(table) + 1) + 24
    if hint is not None:
        said = f"Compare two intervals: {escape(display_text(hint))}"
    else:
        said = "One interval: none to compare it with"
    out.append(f'<text x="10" y="{foot}" {FONT} font-size="12">{said}</text>')
    out.append("</svg>\n")
    return "\n".join(out).encode("utf-8")
