"""Folded stacks -> the frames of a flame graph: merge stacks into a tree, prune narrow frames.

The stacks are sorted as plain text (or kept in input order for a flame chart). The stacks through
frame "a;b" are then the stack "a;b" itself plus one contiguous run of "a;b;..." found by binary
search, and only frames at least `min_weight` wide are visited: time and memory beyond the input
grow with the frames drawn, not with all the nodes of the merged tree. Stack strings are never copied.

A stack may sit apart from its run when a sibling's name extends its own with a character below ';'
("a", "a b;x", "a;y" sort in that order): such a run is remembered and skipped when reached, so
"a" is still one frame (flamegraph.pl, merging neighbouring lines, draws it twice).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import NamedTuple

ROOT_NAME = "all"
SEP = ";"
AFTER_SEP = chr(ord(SEP) + 1)  # '<': the smallest character greater than ';'


class Rect(NamedTuple):
    """One drawn frame's rectangle; `start` and `width` are in the profile's unit (samples, microseconds...)."""

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

    frames: list[Rect]
    total: float
    max_depth: int
    stacks: int


@dataclass(frozen=True)
class Columns:
    """Weights per stack, in the same order as the stacks: the width, and for diffs BEFORE and AFTER."""

    width: Sequence[float]
    before: Sequence[float] | None = None
    after: Sequence[float] | None = None


def reverse_stack(text: str) -> str:
    return SEP.join(reversed(text.split(SEP)))


def order_stacks(
    stacks: Mapping[str, float] | Sequence[tuple[str, float]], reverse: bool = False, keep_order: bool = False
) -> tuple[list[str], list[float]]:
    """Stack texts sorted (or in input order for a flame chart) and their weights.

    A mapping (a profile's counts) is used as it is; a sequence may repeat stacks: a flame chart
    keeps the repeats apart, otherwise they are added up.
    """
    if keep_order:
        pairs = list(stacks.items()) if isinstance(stacks, Mapping) else list(stacks)
        texts = [reverse_stack(text) if reverse else text for text, _ in pairs]
        return texts, [weight for _, weight in pairs]
    counts: Mapping[str, float]
    if isinstance(stacks, Mapping) and not reverse:
        counts = stacks
    else:
        merged: dict[str, float] = {}
        for text, weight in stacks.items() if isinstance(stacks, Mapping) else stacks:
            key = reverse_stack(text) if reverse else text
            merged[key] = merged.get(key, 0) + weight
        counts = merged
    texts = sorted(counts)
    return texts, list(map(counts.__getitem__, texts))  # a loop in C, not in Python


def min_weight_for(min_width: str | float, total: float, plot_width: float) -> float:
    """flamegraph.pl's --minwidth: pixels ("0.1"), or a percentage of the total ("0.5%")."""
    text = str(min_width).strip()
    if text.endswith("%"):
        return total * float(text[:-1]) / 100
    return float(text) * total / plot_width if plot_width > 0 else 0.0


def layout_stacks(
    texts: list[str], columns: Columns, min_weight: float = 0.0, ordered: bool = True, by_weight: bool = False
) -> Layout:
    """Merge the stacks (as `order_stacks` gives them) into frames at least `min_weight` wide.

    `ordered=False` is the flame chart: only neighbouring stacks merge, and a stack may repeat.
    `by_weight` places siblings widest first (left-heavy), a frame's self weight after its children;
    by default siblings are in name order, the self weight first.
    """
    merge = _Merge(texts, columns, min_weight, ordered)
    if by_weight:
        if not ordered:
            raise ValueError("a flame chart keeps time order: siblings cannot be ordered by weight")
        merge.by_weight = True
    frames: list[Rect] = []
    # Frames to visit: (run start, run end, index of the stack ending here or -1, length of the
    # frame's prefix "a;b", depth, name, x). Children are pushed in reverse: depth-first output.
    todo: list[_Visit] = [(0, len(texts), -1, -1, 0, ROOT_NAME, 0.0)]
    pop, push, add, visit = todo.pop, todo.extend, frames.append, merge.visit  # one step per frame drawn
    while todo:
        frame, children = visit(pop())
        add(frame)
        children.reverse()
        push(children)
    return Layout(frames, merge.cum[-1], max(map(_depth_of, frames)), len(texts))


_Visit = tuple[int, int, int, int, int, str, float]
_new_tuple = tuple.__new__
_depth_of = itemgetter(1)  # Rect.depth, in C
_NONE_HELD: list[tuple[int, int]] = []  # never appended to: a frame with no run out of place allocates none


class _Merge:
    """One frame at a time: its weights, and its children wide enough to draw."""

    def __init__(self, texts: list[str], columns: Columns, min_weight: float, ordered: bool) -> None:
        self.texts = texts
        self.widths = columns.width
        self.cum = list(accumulate(columns.width, initial=0.0))
        self.before = list(accumulate(columns.before, initial=0.0)) if columns.before is not None else None
        self.after = list(accumulate(columns.after, initial=0.0)) if columns.after is not None else None
        self.min_weight = min_weight
        self.ordered = ordered
        self.by_weight = False

    def visit(self, visit: _Visit) -> tuple[Rect, list[_Visit]]:
        lo, hi, exact, plen, depth, name, x = visit
        texts, widths, cum, ordered, min_weight = self.texts, self.widths, self.cum, self.ordered, self.min_weight
        ends = [exact] if exact >= 0 else []  # stacks ending in this frame
        offset = x + (widths[exact] if exact >= 0 else 0.0)
        children: list[_Visit] = []
        held: list[tuple[int, int]] = _NONE_HELD  # runs found ahead of their place, nearest last
        first = plen + 1  # where the children's names start
        k = lo
        while k < hi:
            if held and k == held[-1][0]:
                k = held.pop()[1]
                continue
            text = texts[k]
            if len(text) == plen:  # flame chart: this stack ends here, between children
                ends.append(k)
                offset += widths[k]
                k += 1
                continue
            sep = text.find(SEP, first)
            if sep >= 0 and ordered:  # the usual child, inlined: "a;b;c;..." is a run, nothing ends at "a;b;c"
                child_exact, start = -1, k
                end = resume = bisect_left(texts, text[:sep] + AFTER_SEP, k + 1, hi)
                weight = 0.0 + (cum[end] - cum[start])
            else:
                child_exact, start, end, resume = self._child(text, k, hi, sep)
                if start > k + 1:
                    if held is _NONE_HELD:
                        held = []
                    held.append((start, end))
                # the run's width first: (w + cum[end]) - cum[start] rounds, and overflows near a float's limit
                weight = (widths[child_exact] if child_exact >= 0 else 0.0) + (cum[end] - cum[start])
            if weight > 0 and weight >= min_weight:
                children.append((start, end, child_exact, sep if sep >= 0 else len(text), depth + 1,
                                 text[first:sep] if sep >= 0 else text[first:], offset))  # fmt: skip
            offset += weight
            k = resume
        if self.by_weight and children:
            children = self._widest_first(children, x)
        if self.before is None and len(ends) < 2:  # the usual frame, made here: a call per frame costs
            own = widths[ends[0]] if ends else 0
            return _new_tuple(Rect, (name, depth, x, offset - x, own, 0.0, 0.0, 0.0)), children
        return self._frame(name, depth, x, offset - x, lo, hi, ends), children

    def _widest_first(self, children: list[_Visit], x: float) -> list[_Visit]:
        """The drawn children placed from the frame's left edge, widest first (ties by name); what is
        left (self weight, children too narrow to draw) ends up on the right."""
        widths, cum = self.widths, self.cum
        weighed = [((widths[c[2]] if c[2] >= 0 else 0.0) + (cum[c[1]] - cum[c[0]]), c) for c in children]
        weighed.sort(key=lambda item: (-item[0], item[1][5]))
        placed: list[_Visit] = []
        for weight, (start, end, exact, plen, depth, name, _) in weighed:
            placed.append((start, end, exact, plen, depth, name, x))
            x += weight
        return placed

    def _child(self, text: str, k: int, hi: int, sep: int) -> tuple[int, int, int, int]:
        """(stack ending in the child or -1, its run's start and end, where to go on) for texts[k]."""
        texts = self.texts
        if not self.ordered:
            prefix = text if sep < 0 else text[:sep]
            below = prefix + SEP
            end = k + 1
            while end < hi and (texts[end] == prefix or texts[end].startswith(below)):
                end += 1
            return -1, k, end, end
        if sep >= 0:  # "a;b;c;...": the run of "a;b;c;", nothing ends at "a;b;c"
            end = bisect_left(texts, text[:sep] + AFTER_SEP, k + 1, hi)
            return -1, k, end, end
        start = bisect_left(texts, text + SEP, k + 1, hi)  # texts[k] is "a;b;c" itself
        end = bisect_left(texts, text + AFTER_SEP, start, hi)
        return k, start, end, (end if start == k + 1 else k + 1)

    def _frame(self, name: str, depth: int, x: float, width: float, lo: int, hi: int, ends: list[int]) -> Rect:
        widths = self.widths
        self_width = (widths[ends[0]] if len(ends) == 1 else sum(widths[i] for i in ends)) if ends else 0
        if self.before is None or self.after is None:
            # tuple.__new__ in C: a NamedTuple's own __new__ is Python code, a tenth of the layout's time
            return _new_tuple(Rect, (name, depth, x, width, self_width, 0.0, 0.0, 0.0))
        before, after = self.before, self.after

        def column(cum: list[float], i: int) -> float:
            return cum[i + 1] - cum[i]

        apart = [i for i in ends if not lo <= i < hi]  # the stack "a;b" sits before the run "a;b;..."
        old = before[hi] - before[lo] + sum(column(before, i) for i in apart)
        new = after[hi] - after[lo] + sum(column(after, i) for i in apart)
        delta = sum(column(after, i) - column(before, i) for i in ends)
        return Rect(name, depth, x, width, self_width, old, new, delta)
