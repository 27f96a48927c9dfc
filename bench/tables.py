"""The cost benchmarks' tables (memory_cost.py, offcpu_cost.py): a figure over the rounds' pairs as its median,
spread and count, a Markdown table's head, and the machine's load to print beside them."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence


def spread(values: list[float], form: Callable[[float], str]) -> str:
    """'median (min..max, n=N)' in `form`; '-' for no value."""
    if not values:
        return "-"
    return f"{form(statistics.median(values))} ({form(min(values))}..{form(max(values))}, n={len(values)})"


def table_head(head: Sequence[str]) -> list[str]:
    """A Markdown table's first two lines: the column names, then the rule."""
    return ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
