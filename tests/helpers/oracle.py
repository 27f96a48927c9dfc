"""The independent answer for drawing: the weight through every path from the root of a folded profile."""

from __future__ import annotations

from collections import defaultdict


def merged_weights(counts: dict[str, float]) -> dict[tuple[str, ...], float]:
    """Weight through every prefix of every stack ("a;b;c" counts for a, a;b and a;b;c)."""
    through: dict[tuple[str, ...], float] = defaultdict(float)
    for text, weight in counts.items():
        frames = tuple(text.split(";"))
        for depth in range(1, len(frames) + 1):
            through[frames[:depth]] += weight
    return dict(through)
