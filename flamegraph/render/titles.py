"""What a frame's title and the top table say of an amount: counts, durations (off-CPU) or sizes (memory).

A title reads "name (N samples, P%; self M, Q%)"; the page completes the short forms the file
keeps (ALL_SELF, a self count without its unit) when it shows one.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import escape

from ..model import FoldedProfile
from .layout import Rect
from .options import RenderOptions
from .text import count_text, format_bytes, format_count, format_duration_us, format_percent

# How a title says that all of a frame's time is its own (a leaf: 2 frames in 5): flamegraph.js writes
# "; self N samples, P%)" back for the reader, copying the numbers before it.
ALL_SELF = "; all self)"


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

    def details(frame: Rect) -> str:  # made once per (width, self width): drawing.draw's by_widths
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


def table_amount(value: float, profile: FoldedProfile, options: RenderOptions) -> str:
    """A table's amount: a duration for off-CPU microseconds, else the count."""
    if profile.unit == "microseconds" and options.count_name is None and options.factor == 1:
        return format_duration_us(value)
    if profile.unit == "bytes" and options.count_name is None and options.factor == 1:
        return format_bytes(value)
    return format_count(value)
