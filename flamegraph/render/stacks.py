"""The stacks behind a graph, embedded once and compactly, so the page computes its views alone.

The drawn frames are pruned (frames under --minwidth are not drawn), so a function called from
many narrow places would be missing from a callers graph built from them. The page's views
(callers/sandwich, focus, ignore, order by weight, collapse recursion) are computed from every
stack instead, in the one file, with no server.

Format (a JSON object; names escaped for display, each once, with its fill):
    main;compute;gemm 40           {"names": ["main", "compute", "gemm", "relu", "io", "read"],
    main;compute;relu 10     ->     "fills": ["#e0...", ...],
    main;io;read 12                 "stacks": "0,0,1,2,40 2,3,10 1,4,5,12"}
A name the drawing shows is not written twice: its entry in "names" is the index of the first drawn
frame (the n-th <g> of #frames) that shows it, whose title gives the name and whose rect the fill.
Only names too narrow to draw anywhere are written out, and "fills" holds their fills alone, in
the same order: on C++ stacks with long template names this was most of the file.
`stacks` is one record per stack, separated by spaces: how many leading frames it shares with the
stack before it, then the indices (base 36) of its other frames, then its weight; the fields
separated by commas. Sorted stacks share long prefixes, so there is about one index per node of the
merged tree: 81,000 stacks of 1.3 M frames take 163,000 indices (1.2 MB).

Nothing at all is embedded when the drawing already holds every stack (`drawing_holds_stacks`):
no frame was pruned, so a frame's width less its children's is the weight of the stack ending
there, and the page reads the stacks back from the frames (its settings say `stacksDrawn`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import cast

from .layout import SEP, Layout
from .text import display_name, format_number


def encode_stacks(
    texts: Sequence[str], weights: Sequence[float], name_text: Callable[[str], str], fill: Callable[[str], str]
) -> dict[str, object]:
    """The stacks (as `layout.order_stacks` gives them) in the format above.

    `name_text` turns a frame into its shown name (annotations stripped), `fill` gives its colour.
    """
    return encode(texts, weights).data(name_text, fill)


@dataclass
class Encoded:
    """The stacks encoded, before their names are shown and coloured (after the drawing, which
    decides which colours a palette file keeps)."""

    frames: list[str]  # the frames as written, in index order
    stacks: str
    leaf_weights: dict[str, float]  # per frame as written: the weight of the stacks ending in it

    def data(
        self, name_text: Callable[[str], str], fill: Callable[[str], str], drawn: Mapping[str, int] | None = None
    ) -> dict[str, object]:
        """`drawn`: frame as written -> index of a drawn frame showing it (its name and fill)."""
        at = (drawn or {}).get
        names: list[str | int] = []
        fills: list[str | int] = []
        for frame in self.frames:
            index = at(frame)
            if index is None:
                names.append(display_name(name_text(frame)))
                fills.append(fill(frame))
            else:
                names.append(index)
        return {"names": names, "fills": fills, "stacks": self.stacks}


_self_width = attrgetter("self_width")


def drawing_holds_stacks(layout: Layout) -> bool:
    """No frame was pruned. A frame's width is its self width plus all its children's, drawn or not,
    so the drawn frames' self widths add up to the total less the pruned frames' widths: to the total
    exactly when none was pruned (integer weights, which the caller checks; one sum in C)."""
    return sum(map(_self_width, layout.frames)) == layout.total


def drawn_leaf_weights(layout: Layout) -> dict[str, float]:
    """What `encode` adds up as `leaf_weights` (per frame as written: the weight of the stacks ending in
    it), read from a drawing that holds every stack of positive weight (`drawing_holds_stacks`): a frame's
    self width is the weight of the stack ending there. One step per frame, none per stack."""
    leaves: dict[str, float] = {}
    weight_of = leaves.get
    for name, _, _, _, own, _, _, _ in layout.frames[1:]:  # the root ends no stack
        if own:
            leaves[name] = weight_of(name, 0) + own
    return leaves


def encode(texts: Sequence[str], weights: Sequence[float]) -> Encoded:
    """The loop is the render's only pass over every stack besides the layout's: it keeps the
    previous stack's prefixes ("a;", "a;b;") and pops them until the next stack starts with one,
    so the work is one step per stack and per node of the merged tree, never per frame. Each
    step costs: str methods parse their arguments slowly, so the loop calls as few as it can. It
    also adds up the leaves' weights, which the table of top self time needs (no second pass).
    """
    codes: dict[str, str] = {}  # frame -> its index, as text
    out: list[str] = []  # the fields, each followed by its separator
    # The previous stack's prefixes above "" (which every stack starts with), each ending in ';'
    # but the last, `top`, which is the previous stack itself (not copied to add the ';').
    prefixes: list[str] = [""]
    top = ""
    whole = False  # top is a whole stack: a stack that starts with it may still not go through it
    weight_texts: dict[float, str] = {}  # weights repeat: format each once
    pop, push, code_of, emit, join = prefixes.pop, prefixes.append, codes.get, out.append, ",".join
    depths = DEPTHS
    by_leaf: dict[str, float] = {}  # leaf's index -> weight
    leaf_weight = by_leaf.get
    for text, weight in zip(texts, weights, strict=True):
        if whole:
            end = len(top)
            if text.startswith(top) and text[end : end + 1] == SEP:  # a stack through the previous one
                top = prefixes[-1] = text[: end + 1]
            else:  # the usual case: a sibling, or a stack further on
                pop()
                top = prefixes[-1]
                while not text.startswith(top):
                    pop()
                    top = prefixes[-1]
        whole = True
        depth = len(prefixes) - 1
        emit(depths[depth] if depth < len(depths) else f"{depth},")
        end = len(top)
        tail = text[end:]  # a repeated stack (a flame chart) re-sends its last frame
        if SEP in tail:
            frames = tail.split(SEP)
            for frame in frames[:-1]:
                end += len(frame) + 1
                push(text[:end])
            found = list(map(code_of, frames))  # in C: the usual case, every name seen before
            indices = (
                cast(list[str], found)
                if None not in found
                else [code_of(frame) or _new_code(codes, frame) for frame in frames]
            )
            leaf = indices[-1]
            emit(join(indices))
        else:  # one new frame: a leaf beside its siblings, the most common record
            leaf = code_of(tail) or _new_code(codes, tail)
            emit(leaf)
        by_leaf[leaf] = leaf_weight(leaf, 0) + weight
        top = text
        push(top)
        shown = weight_texts.get(weight)
        if shown is None:
            shown = weight_texts[weight] = f",{format_number(weight)} "
        emit(shown)
    leaves = {frame: by_leaf[code] for frame, code in codes.items() if code in by_leaf}
    return Encoded(list(codes), "".join(out)[:-1], leaves)


def _new_code(codes: dict[str, str], frame: str) -> str:
    count = len(codes)
    code = codes[frame] = BASE36[count] if count < len(BASE36) else base36(count)
    return code


DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
# The codes of 0 .. 36**2 - 1 ("0".."z", "10".."zz"): joined in one comprehension at import, not made
# one division at a time (that cost 0.3 M instructions at each start).
BASE36 = [*DIGITS, *(high + low for high in DIGITS[1:] for low in DIGITS)]


def base36(value: int) -> str:
    if value < len(BASE36):
        return BASE36[value]
    high, digit = divmod(value, 36)
    return base36(high) + DIGITS[digit]


DEPTHS = [f"{depth}," for depth in range(256)]
