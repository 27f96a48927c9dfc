"""What a graph looks like: flamegraph.pl's options plus ours, checked once before rendering."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..color import PALETTES, HighlightRule
from ..io.diagnostics import BadOption
from ..model import FoldedProfile
from .facts import Table

if TYPE_CHECKING:  # the views and off-CPU analyses are imported by the commands that use them
    from ..analysis.views import Applied

DEFAULT_TITLE = "Flame Graph"
MIN_WIDTH = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)%?$")
DIFF_WIDTHS = ("max", "after", "before")
ORDERS = ("name", "weight")  # siblings left to right: by name (flamegraph.pl's), or widest first (left-heavy)


def check_order(order: str, flamechart: bool) -> None:
    if order not in ORDERS:
        raise BadOption(f"--order {order!r}: choose one of {', '.join(ORDERS)}")
    if order == "weight" and flamechart:
        raise BadOption("--order weight: a flame chart keeps time order (draw one or the other)")


@dataclass
class RenderOptions:
    """Options of `render_svg` / `render_diff`; names follow flamegraph.pl's flags."""

    title: str = DEFAULT_TITLE
    subtitle: str | None = None
    width: int = 1200  # pixels, whole image
    frame_height: int = 16
    font_size: float = 12
    font_type: str = "Verdana"
    min_width: str | float = "0.1"  # pixels ("0.1"), or a share of the total ("0.5%")
    count_name: str | None = None  # default: the profile's unit
    name_type: str = "Function:"
    colors: str | None = None  # a palette; default "hot", "io" for off-CPU time (microseconds), "mem" for bytes
    hash: bool = False  # colour by a hash of the name (--hash)
    random: bool = False  # random colours (--random; seeded, so still reproducible)
    # Consistent colours across graphs (--cp): name -> '#rrggbb', used first and extended in place with
    # every colour render_svg picks (inferno's palette map; the CLI loads and saves palette.map).
    palette_map: dict[str, str] | None = None
    inverted: bool = False  # icicle graph
    reverse: bool = False  # stacks reversed: merge from the leaf
    flamechart: bool = False  # keep input order, merge only neighbours
    negate: bool = False  # diff: swap red and blue
    factor: float = 1.0  # multiply displayed counts
    notes: str = ""  # stored in the SVG's <desc>
    highlights: list[str | HighlightRule] = field(default_factory=list)  # REGEX[=COLOUR][:LABEL]
    preset: str | None = None  # "onednn"
    normalize: bool = False  # diff: scale BEFORE to AFTER's total
    top: int = 10  # rows of the self-time table
    diff_width: str = "max"  # diff: frame widths from max(before, after) per stack, or one side
    show_idle: bool = False  # off-CPU: draw idle threads' idle stacks (else one line says whose; other waits: drawn)
    tables: list[Table] = field(default_factory=list)  # more tables for the capture facts (after the metadata)
    order: str = "name"  # siblings by name, or by weight (widest on the left)
    views: Applied | None = None  # what flamegraph.analysis.views did to the profile: the header says it

    def __post_init__(self) -> None:
        if isinstance(self.font_size, float) and self.font_size.is_integer():
            self.font_size = int(self.font_size)  # --fontsize 12 draws what the default 12 draws, byte for byte

    def check(self) -> None:
        """Raise `BadOption` for values we cannot draw."""
        if self.width < 200:
            raise BadOption(f"--width {self.width}: at least 200 pixels")
        if not 4 <= self.frame_height <= 200:
            raise BadOption(f"--height {self.frame_height}: 4 to 200 pixels")
        if not 1 <= self.font_size <= 100:
            raise BadOption(f"--fontsize {self.font_size}: 1 to 100")
        if not MIN_WIDTH.match(str(self.min_width).strip()):
            raise BadOption(f"--minwidth {self.min_width!r}: a number of pixels, or a percentage like 0.5%")
        if self.colors is not None and self.colors not in PALETTES:
            raise BadOption(f"--colors {self.colors!r}: choose one of {', '.join(PALETTES)}")
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise BadOption(f"--factor {self.factor}: must be a positive, finite number")
        if self.top < 0:
            raise BadOption(f"--top {self.top}: must be zero or more")
        check_order(self.order, self.flamechart)
        if self.diff_width not in DIFF_WIDTHS:
            raise BadOption(f"--diff-width {self.diff_width!r}: choose one of {', '.join(DIFF_WIDTHS)}")

    def palette_for(self, profile: FoldedProfile) -> str:
        if self.colors is not None:
            return self.colors
        if profile.unit == "bytes":
            return "mem"
        if profile.unit != "microseconds":
            return "hot"
        # offcpu --wakers: the waker's frames (after `--`) in their own colour, as flamegraph.pl's chain graphs
        if any(";--;" in stack for stack in profile.counts):
            return "chain"
        # record --wall: on-CPU stacks (no [STATE] leaf) beside the waits: on-CPU warm, waits cold
        from ..analysis.offcpu_threads import is_wall

        return "wall" if is_wall(profile.event) else "io"

    def count_name_for(self, profile: FoldedProfile) -> str:
        # '(' would end the frame name in titles: the script finds the name before the last " (".
        name = self.count_name if self.count_name is not None else profile.unit
        return name.replace("(", "[").replace(")", "]")

    def title_for(self, profile: FoldedProfile, diff: bool = False) -> str:
        if self.title != DEFAULT_TITLE:
            return self.title
        for kind, title in (("callers", "Callers of"), ("callees", "Callees of")):
            pattern = self.views.pattern_of(kind) if self.views is not None else None
            if pattern is not None:
                return f"{title} {pattern}"
        if diff:
            return "Differential Flame Graph"
        if self.flamechart:
            return "Flame Chart"
        if self.inverted:
            return "Icicle Graph"
        if profile.unit == "microseconds":
            return "Off-CPU Time Flame Graph"
        if profile.unit == "bytes":
            return "Memory Flame Graph"
        return DEFAULT_TITLE
