"""What the SVG says without JavaScript: capture facts, highlight-class shares, top self time (and its amounts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..color import Highlighter, strip_annotation
from ..model import FoldedProfile
from .page import LegendItem
from .text import (
    count_text,
    format_bytes,
    format_count,
    format_duration_us,
    format_percent,
    format_seconds,
    format_signed,
)

if TYPE_CHECKING:
    from ..analysis.views import Applied, Step
    from .options import RenderOptions

SEP = ";"


def profile_facts(profile: FoldedProfile, count_name: str, factor: float, by_thread: bool = True) -> str:
    """The summary line: 'cpu-clock · 12,345 samples · 321 stacks' (off-CPU: says so, with seconds,
    and the number of threads when `by_thread`, i.e. the roots are still the threads)."""
    drawn = profile.total * factor
    event = profile.event or "event not recorded"
    if profile.unit == "microseconds":
        threads = len({stack.partition(SEP)[0] for stack in profile.counts})
        plural = "s" if threads != 1 else ""
        parts = [
            f"off-CPU time ({event})",
            format_seconds(drawn) + (f" in {threads:,} thread{plural}" if by_thread else ""),
        ]
        if profile.window_us:
            parts.append(f"window {format_seconds(profile.window_us)}")
    elif profile.unit == "bytes" and factor == 1:
        parts = [event, format_bytes(drawn)]
    elif profile.unit == "nanoseconds" and factor == 1:  # perf script text weighed by a clock event's period
        parts = [event, f"{count_text(drawn, count_name)} ({format_seconds(drawn / 1000)} of samples' periods)"]
    else:
        parts = [event, count_text(drawn, count_name)]
    stacks = len(profile.counts)
    parts.append(f"{stacks:,} stack{'s' if stacks != 1 else ''}")
    return " · ".join(parts)


def views_line(applied: Applied, count_name: str, factor: float, unit: str = "samples") -> str:
    """What is filtered and what remains: 'focus /compute/ · hide /^_/ · 1,234 of 5,678 samples remain (21.7 %)'."""
    steps = " · ".join(_step_text(step) for step in applied.steps)
    before, after = applied.total_before * factor, applied.total_after * factor
    seconds = unit == "microseconds" and factor == 1
    if applied.total_after == applied.total_before:
        return f"{steps} · all {format_seconds(before) if seconds else count_text(before, count_name)} remain"
    shown = (
        f"{format_seconds(after)} of {format_seconds(before)}"
        if seconds
        else (f"{format_count(after)} of {count_text(before, count_name)}")
    )
    return f"{steps} · {shown} remain ({format_percent(applied.total_after, applied.total_before)} %)"


def _step_text(step: Step) -> str:
    if step.kind == "focus":
        return f"focus /{step.pattern}/" + (", re-rooted there" if step.rooted else "")
    if step.kind == "callers":
        return f"callers of /{step.pattern}/ (inverted: the function, then who called it)"
    if step.kind == "callees":
        return f"callees of /{step.pattern}/ (rooted at the function)"
    if step.pattern is not None:
        return f"{step.kind} /{step.pattern}/"
    return {"collapse-recursion": "recursion collapsed", "strip-root": "root frame stripped",
            "merge-pids": "PIDs merged"}.get(step.kind, step.kind)  # fmt: skip


# Facts the summary line already says, or that a table shows better.
SAID_ELSEWHERE = ("by thread",)


def metadata_lines(profile: FoldedProfile) -> list[str]:
    return [
        f"{key}: {value}"
        for key, value in profile.metadata.items()
        if not (key == "event" and value == profile.event)
        and not (key in SAID_ELSEWHERE and profile.unit == "microseconds")
    ]


def diff_metadata_lines(before: FoldedProfile, after: FoldedProfile) -> list[str]:
    """Capture facts of both sides; a value the two share is shown once."""
    lines = []
    for key in list(dict.fromkeys([*before.metadata, *after.metadata])):
        old, new = before.metadata.get(key), after.metadata.get(key)
        if old == new:
            lines.append(f"{key}: {new}")
        else:
            lines.append(f"{key}: before {old if old is not None else '-'} · after {new if new is not None else '-'}")
    return lines


def class_shares(stacks: Iterable[tuple[str, float]], highlighter: Highlighter) -> list[tuple[float, float]]:
    """(weight of stacks with any matching frame, weight of stacks whose leaf matches) per class.

    Each distinct name is matched once; a stack then costs one set test per class.
    """
    classes = range(len(highlighter.rules))
    seen: set[str] = set()
    matching: list[set[str]] = [set() for _ in classes]
    inclusive = [0.0 for _ in classes]
    own = [0.0 for _ in classes]
    for text, weight in stacks:
        frames = text.split(SEP)
        if not seen.issuperset(frames):
            for name in set(frames).difference(seen):
                seen.add(name)
                for index in classes:
                    if highlighter.matches(index, name):
                        matching[index].add(name)
        for index in classes:
            names = matching[index]
            if names and not names.isdisjoint(frames):
                inclusive[index] += weight
                if frames[-1] in names:
                    own[index] += weight
    return list(zip(inclusive, own, strict=True))


def legend_shares(
    highlighter: Highlighter | None, stacks: Iterable[tuple[str, float]], total: float
) -> list[LegendItem]:
    """Each class that matches something: its name and shares; its regular expression in the tooltip."""
    if highlighter is None:
        return []
    legend = []
    shares = class_shares(stacks, highlighter)
    for index, (rule, (inclusive, own)) in enumerate(zip(highlighter.rules, shares, strict=True)):
        if not inclusive:
            continue  # a class that matches nothing says nothing
        text = f"{rule.label} {format_percent(inclusive, total)} % (self {format_percent(own, total)} %)"
        tooltip = (
            f"{rule.label}: /{rule.pattern}/ · {format_percent(inclusive, total)} % of all (stacks through a "
            f"matching frame), {format_percent(own, total)} % self (stacks ending in one)"
        )
        legend.append(LegendItem(highlighter.swatch(index), text, tooltip))
    return legend


def self_weights(stacks: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Self weight per function (the leaf of each stack), annotations stripped."""
    leaves: dict[str, float] = {}
    for text, weight in stacks:
        leaf = text.rpartition(SEP)[2]
        leaves[leaf] = leaves.get(leaf, 0) + weight
    return by_function(leaves)


def by_function(leaves: Mapping[str, float]) -> dict[str, float]:
    """Weights per frame as written -> per function: annotations stripped once per frame (a regex)."""
    weights: dict[str, float] = {}
    for leaf, weight in leaves.items():
        if leaf.endswith("]"):
            leaf = strip_annotation(leaf)
        weights[leaf] = weights.get(leaf, 0) + weight
    return weights


def top_self(stacks: Iterable[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
    return rank_self(self_weights(stacks), limit)


def rank_self(weights: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The `limit` largest self weights, ties by name."""
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:limit]


def table_amount(value: float, profile: FoldedProfile, options: RenderOptions) -> str:
    """A table's amount: a duration for off-CPU microseconds and clock periods (ns), else the count."""
    if profile.unit == "microseconds" and options.count_name is None and options.factor == 1:
        return format_duration_us(value)
    if profile.unit == "nanoseconds" and options.count_name is None and options.factor == 1:
        return format_duration_us(value / 1000)
    if profile.unit == "bytes" and options.count_name is None and options.factor == 1:
        return format_bytes(value)
    return format_count(value)


def top_changes(
    before: Iterable[tuple[str, float]], after: Iterable[tuple[str, float]], scale: float, limit: int
) -> list[tuple[str, float, float]]:
    """Functions whose self weight changed most: (name, before scaled, after), largest |change| first."""
    old = self_weights(before)
    new = self_weights(after)
    rows = [(name, old.get(name, 0.0) * scale, new.get(name, 0.0)) for name in {*old, *new}]
    rows = [row for row in rows if row[2] != row[1]]
    rows.sort(key=lambda row: (-abs(row[2] - row[1]), row[0]))
    return rows[:limit]


def change_text(before: float, after: float, parens: bool = True) -> str:
    """'+25 (+125.0%)', '+5 (new)'; without parens '+25 / +125.0%' (frame titles keep '(' for the end)."""
    delta = after - before
    relative = "new" if before == 0 else f"{100 * delta / before:+.1f}%"
    return f"{format_signed(delta)} ({relative})" if parens else f"{format_signed(delta)} / {relative}"
