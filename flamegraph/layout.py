"""Folded stacks -> the frames of a flame graph: merge stacks into a tree, prune narrow frames.

The stacks are ordered (sorted, or kept in input order for a flame chart) so that every frame's
stacks form one contiguous run; a frame is then a run of stacks sharing a prefix, found with a
binary search on the sorted keys. Only frames at least `min_weight` wide are visited, so time and
memory grow with the frames drawn, not with all the nodes of the merged tree.

Keys are the stack text plus a final ';' ("a;b" -> "a;b;"), which makes the stacks through one
frame a contiguous run in code-point order even when one name is a prefix of another
("a", "a+b;x", "a;y" sort to "a+b;x;", "a;", "a;y;").
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from .model import FoldedProfile, Rect

ROOT_NAME = "all"
SEP = ";"
AFTER_SEP = chr(ord(SEP) + 1)  # '<': the smallest character greater than ';'


class Frame(NamedTuple):
    """One drawn frame; `start` and `width` are in the profile's unit (samples, microseconds...)."""

    name: str
    depth: int  # 0 is the root ("all")
    start: float
    width: float
    self_width: float
    before: float = 0.0  # differential graphs: the BEFORE and AFTER weights through this frame
    after: float = 0.0
    self_delta: float = 0.0  # AFTER - BEFORE of the stacks ending in this frame


@dataclass
class Layout:
    """The frames of a graph in depth-first order (a frame's descendants follow it)."""

    frames: list[Frame]
    total: float
    max_depth: int
    stacks: int

    def rects(self) -> list[Rect]:
        """The frames as the shared `Rect` type (for callers outside the renderer)."""
        return [
            Rect(f.name, f.depth, f.start, f.width, f.self_width, f.after - f.before if f.after or f.before else None)
            for f in self.frames
        ]


@dataclass(frozen=True)
class Columns:
    """Weights per stack, in the same order as the keys: the width, and for diffs BEFORE and AFTER."""

    width: Sequence[float]
    before: Sequence[float] | None = None
    after: Sequence[float] | None = None


def stack_key(text: str, reverse: bool = False) -> str:
    if reverse:
        return SEP.join(reversed(text.split(SEP))) + SEP
    return text + SEP


def order_stacks(
    items: Iterable[tuple[str, float]], reverse: bool = False, keep_order: bool = False
) -> tuple[list[str], list[float]]:
    """Keys and weights, sorted by key (or in input order for a flame chart)."""
    texts: list[str] = []
    weights: list[float] = []
    for text, weight in items:
        texts.append(text)
        weights.append(weight)
    if reverse:
        keys = [stack_key(text, True) for text in texts]
    else:
        keys = [text + SEP for text in texts]
    if keep_order:
        return keys, weights
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [keys[i] for i in order], [weights[i] for i in order]


def min_weight_for(min_width: str | float, total: float, plot_width: float) -> float:
    """flamegraph.pl's --minwidth: pixels ("0.1"), or a percentage of the total ("0.5%")."""
    text = str(min_width).strip()
    if text.endswith("%"):
        return total * float(text[:-1]) / 100
    return float(text) * total / plot_width if plot_width > 0 else 0.0


def layout_profile(
    profile: FoldedProfile,
    min_weight: float = 0.0,
    reverse: bool = False,
) -> Layout:
    keys, weights = order_stacks(profile.counts.items(), reverse=reverse)
    return layout_keys(keys, Columns(weights), min_weight)


def layout_keys(keys: list[str], columns: Columns, min_weight: float = 0.0, ordered: bool = True) -> Layout:
    """Merge the stacks of `keys` (see `order_stacks`) into frames at least `min_weight` wide.

    `ordered=False` is the flame chart: only neighbouring stacks merge, and a key may repeat.
    """
    cum = list(accumulate(columns.width, initial=0.0))
    cum_before = list(accumulate(columns.before, initial=0.0)) if columns.before is not None else None
    cum_after = list(accumulate(columns.after, initial=0.0)) if columns.after is not None else None
    widths = columns.width
    frames: list[Frame] = []
    max_depth = 0
    # Work list of frames to visit: (first stack, end, prefix length, depth, name); children are
    # pushed in reverse so the leftmost is visited next and the output is depth-first.
    todo: list[tuple[int, int, int, int, str]] = [(0, len(keys), 0, 0, ROOT_NAME)]
    while todo:
        lo, hi, plen, depth, name = todo.pop()
        self_width = 0.0
        self_stacks: list[int] = []
        children: list[tuple[int, int, int, int, str]] = []
        k = lo
        while k < hi:
            key = keys[k]
            if len(key) == plen:  # this stack ends in this frame
                self_width += widths[k]
                self_stacks.append(k)
                k += 1
                continue
            sep = key.index(SEP, plen)
            prefix = key[: sep + 1]
            if ordered:
                end = bisect_left(keys, key[:sep] + AFTER_SEP, k + 1, hi)
            else:
                end = k + 1
                while end < hi and keys[end].startswith(prefix):
                    end += 1
            weight = cum[end] - cum[k]
            if weight > 0 and weight >= min_weight:
                children.append((k, end, sep + 1, depth + 1, key[plen:sep]))
            k = end
        before = after = self_delta = 0.0
        if cum_before is not None and cum_after is not None:
            before = cum_before[hi] - cum_before[lo]
            after = cum_after[hi] - cum_after[lo]
            self_delta = sum(
                (cum_after[i + 1] - cum_after[i]) - (cum_before[i + 1] - cum_before[i]) for i in self_stacks
            )
        frames.append(Frame(name, depth, cum[lo], cum[hi] - cum[lo], self_width, before, after, self_delta))
        if depth > max_depth:
            max_depth = depth
        children.reverse()
        todo.extend(children)
    return Layout(frames, cum[-1], max_depth, len(keys))
