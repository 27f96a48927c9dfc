"""Two profiles -> one ordered set of stacks with BEFORE, AFTER and the width to draw.

Every stack of either profile is kept, so frames that vanished in AFTER (or are new in it) still
get width: by default a stack is drawn as wide as max(BEFORE, AFTER). `--normalize` scales BEFORE
to AFTER's total first, so the colours show a change of share rather than of volume.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import FoldedProfile
from .layout import Columns, reverse_stack


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
