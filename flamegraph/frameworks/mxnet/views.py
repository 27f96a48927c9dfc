"""Operator views of a folded profile that has `[op]` frames (recorded with `--mxnet`).

    group_by_op(profile) -> FoldedProfile     stacks re-rooted at their [op] frame: "what is
                                              _backward_FullyConnected made of", all threads merged
    operator_samples(profile) -> {frame: n}   samples under each [op] frame
    compare_operators(before, after) -> rows  operator by operator (make diff: oneDNN vs OpenBLAS)
Pure functions on the folded text: they work on any saved .folded file, not only fresh recordings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...io.diagnostics import NoSamples
from ...model import FoldedProfile

OP_PREFIXES = ("[op] ", "[segment] ")
SEP = ";"


def op_index(frames: list[str]) -> int:
    """Position of the outermost [op]/[segment] frame, or -1."""
    for i, frame in enumerate(frames):
        if frame.startswith(OP_PREFIXES):
            return i
    return -1


def group_by_op(profile: FoldedProfile) -> FoldedProfile:
    """Stacks re-rooted at their [op] frame; stacks without one are left out (and counted)."""
    grouped = FoldedProfile(unit=profile.unit, event=profile.event, metadata=dict(profile.metadata))
    left_out = 0.0
    for stack, weight in profile.counts.items():
        frames = stack.split(SEP)
        at = op_index(frames)
        if at < 0:
            left_out += weight
            continue
        grouped.add(SEP.join(frames[at:]), weight)
    if not grouped.counts:
        raise NoSamples("no [op] frames in this profile: record it with `flamegraph record --mxnet`")
    total = profile.total or 1
    grouped.metadata["grouped by"] = (
        f"[op] frame: {grouped.total:,.0f} of {profile.total:,.0f} {profile.unit} "
        f"({100 * grouped.total / total:.1f} %); the rest ran outside any operator and is left out"
    )
    return grouped


def operator_samples(profile: FoldedProfile) -> dict[str, float]:
    """[op] frame -> weight of the stacks under it."""
    found: dict[str, float] = {}
    for stack, weight in profile.counts.items():
        frames = stack.split(SEP)
        at = op_index(frames)
        if at >= 0:
            found[frames[at]] = found.get(frames[at], 0.0) + weight
    return found


@dataclass(frozen=True)
class OperatorChange:
    frame: str
    before: float  # weight
    after: float
    before_share: float  # % of all [op] weight on that side
    after_share: float

    @property
    def change(self) -> float:
        return self.after_share - self.before_share


def compare_operators(before: FoldedProfile, after: FoldedProfile) -> list[OperatorChange]:
    """Each operator's share of operator time on both sides, largest change first."""
    old, new = operator_samples(before), operator_samples(after)
    old_total, new_total = sum(old.values()) or 1.0, sum(new.values()) or 1.0
    rows = [
        OperatorChange(frame, old.get(frame, 0.0), new.get(frame, 0.0),
                       100 * old.get(frame, 0.0) / old_total, 100 * new.get(frame, 0.0) / new_total)
        for frame in set(old) | set(new)
    ]  # fmt: skip
    rows.sort(key=lambda row: (-abs(row.change), row.frame))
    return rows


def comparison_lines(rows: list[OperatorChange], before: str, after: str, limit: int = 15) -> list[str]:
    lines = [f"  {before:>16} {after:>16} {'change':>8}  operator (share of samples under an [op] frame)"]
    for row in rows[:limit]:
        lines.append(
            f"  {row.before:>8,.0f} {row.before_share:>6.1f}% {row.after:>8,.0f} {row.after_share:>6.1f}% "
            f"{row.change:>+7.1f}  {row.frame}"
        )
    return lines
