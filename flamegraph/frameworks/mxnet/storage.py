"""MXNet's own storage allocator under `record --memory --mxnet`: the probe on StorageImpl::Alloc in
libmxnet.so, and the table of bytes per operator checked against the profiler's storage counters.

Every NDArray's memory passes through `mxnet::StorageImpl::Alloc(Storage::Handle*)`, whatever storage
manager serves it (naive or pooled): the handle's `size` (after its `dptr`) is what the operator asked
for. The profiler (profile_memory=True) adds that same size to its `Memory: cpu/0` counter inside
the same call, so the bytes drawn under each `[op]` frame and the rises of the counter inside that
operator's spans should agree: measured with MXNet 1.9.1 on a 5-step Dense model, 87 calls and 291,600
bytes by both.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...model import FoldedProfile
from ...record.memory import Probe
from .join import op_frame
from .profile import ProfilerTrace

STORAGE_SYMBOL = "_ZN5mxnet11StorageImpl5AllocEPNS_7Storage6HandleE"  # StorageImpl::Alloc(Storage::Handle*)
STORAGE_FRAME = "mxnet::StorageImpl::Alloc"
STORAGE_ARGS = "size=+8(%si):u64"  # the Handle (the second argument, after `this`): dptr, then size
LIBRARY = "libmxnet.so"
FIND_SECONDS = 30.0
AGREE_WITHIN = 5.0  # % between the bytes drawn and the counters' rises, for operators above ABOVE % of them
ABOVE = 1.0
# The command's own interpreter says where its mxnet package is, without importing it.
FIND_MXNET = (
    "import importlib.util as u; s = u.find_spec('mxnet'); "
    "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')"
)


def storage_probe(library: str) -> Probe:
    return Probe("mxnet_alloc", STORAGE_ARGS, symbol=STORAGE_SYMBOL, library=library, frame=STORAGE_FRAME)


def find_libmxnet(command: Sequence[str], pid: int | None, env: Mapping[str, str]) -> tuple[str | None, str]:
    """The libmxnet.so the target loads (or has loaded), or None and why."""
    if pid is not None:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text(errors="replace")
        except OSError as err:
            return None, f"cannot read /proc/{pid}/maps: {err.strerror}"
        for line in maps.splitlines():
            path = line.split(maxsplit=5)[-1]
            if os.path.basename(path) == LIBRARY:
                return path, ""
        return None, f"pid {pid} has not loaded {LIBRARY}"
    try:
        found = subprocess.run(
            [command[0], "-c", FIND_MXNET], capture_output=True, text=True, timeout=FIND_SECONDS,
            env={**os.environ, **env},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"cannot ask {command[0]} where mxnet is: {err}"
    package = found.stdout.strip()
    if found.returncode != 0 or not package:
        return None, f"{command[0]} has no mxnet package"
    library = os.path.join(package, LIBRARY)
    return (library, "") if os.path.exists(library) else (None, f"no {LIBRARY} in {package}")


@dataclass(frozen=True)
class BytesRow:
    """One operator: bytes drawn under its frame (the probe) and the rises of the storage counters in its spans."""

    frame: str
    drawn: float
    counted: float
    calls: int  # counter rises inside its spans

    @property
    def gap(self) -> float:
        """The drawn bytes' difference from the counted, in % of the counted."""
        return 100.0 * (self.drawn - self.counted) / self.counted if self.counted else float("inf")


def drawn_by_operator(profile: FoldedProfile) -> defaultdict[str, float]:
    """[op]/[segment] frame -> bytes of the storage probe drawn under it (the innermost one of each stack).
    Only the probe's own stacks: with frame pointers the C library's calls inside it are not known as
    its own (the walk skips their caller) and are drawn a second time; the table is not misled."""
    drawn: defaultdict[str, float] = defaultdict(float)
    for stack, weight in profile.counts.items():
        frames = stack.split(";")
        if frames[-1] != STORAGE_FRAME:
            continue
        frame = next((f for f in reversed(frames) if f.startswith(("[op] ", "[segment] "))), None)
        if frame is not None:
            drawn[frame] += weight
    return drawn


def counted_by_operator(trace: ProfilerTrace) -> tuple[defaultdict[str, float], Counter[str]]:
    """[op] frame -> bytes the storage counters rose by inside its spans, and -> how many rises."""
    counted: defaultdict[str, float] = defaultdict(float)
    rises: Counter[str] = Counter()
    for tid, increases in trace.storage.items():
        index = trace.threads.get(tid)
        for ts, rise in increases:
            span = index.at(ts) if index is not None else None
            if span is not None:
                counted[op_frame(span.name)] += rise
                rises[op_frame(span.name)] += 1
    return counted, rises


def bytes_rows(profile: FoldedProfile, trace: ProfilerTrace) -> list[BytesRow]:
    drawn = drawn_by_operator(profile)
    counted, rises = counted_by_operator(trace)
    frames = sorted(set(drawn) | set(counted), key=lambda f: (-max(drawn[f], counted[f]), f))
    return [BytesRow(f, drawn[f], counted[f], rises[f]) for f in frames]


def checked(rows: list[BytesRow]) -> list[BytesRow]:
    """The rows the 5 % check covers: operators above ABOVE % of all counted bytes."""
    total = sum(r.counted for r in rows)
    return [r for r in rows if total and r.counted >= ABOVE / 100 * total]


def bytes_lines(rows: list[BytesRow], metadata: Mapping[str, str] = {}, limit: int = 12) -> list[str]:
    """The table beside the time table, and the check's verdict (`metadata`: the capture facts)."""
    from ...render.text import format_bytes

    if not rows:
        return ["mxnet: bytes per operator: none (no storage counters: was the profiler's memory profiling on?)"]
    total_drawn, total_counted = sum(r.drawn for r in rows), sum(r.counted for r in rows)
    lines = [
        "mxnet: bytes per operator: drawn (the StorageImpl::Alloc probe) beside the profiler's storage counters",
        f"  {'drawn':>12} {'counters':>12} {'gap':>7} {'allocs':>7}  operator",
    ]
    for row in rows[:limit]:
        gap = f"{row.gap:+.1f}%" if row.counted else "-"
        lines.append(
            f"  {format_bytes(row.drawn):>12} {format_bytes(row.counted):>12} {gap:>7} {row.calls:>7,}  {row.frame}"
        )
    lines.append(f"  {format_bytes(total_drawn):>12} {format_bytes(total_counted):>12}  in all")
    lines.append(f"mxnet: bytes check: {check_text(rows, metadata)}")
    return lines


def incomplete(metadata: Mapping[str, str]) -> str | None:
    """Why the probe's bytes cannot match the counters call for call: records perf lost. (The probe sees
    every call: `--memory-sample` samples the C library's allocator in the process, never this one.)"""
    if "lost samples" in metadata:
        return f"perf lost {metadata['lost samples']}"
    return None


def check_text(rows: list[BytesRow], metadata: Mapping[str, str] = {}) -> str:
    """The check's verdict; not made when not every storage call was recorded (the drawn bytes are then an
    estimate, or too few)."""
    if (why := incomplete(metadata)) is not None:
        return f"not checked: {why} (the check needs every storage call: nothing lost)"
    covered = checked(rows)
    if not covered:
        return "no operator above 1 % of the counted bytes"
    worst = max(covered, key=lambda r: abs(r.gap))
    verdict = "within" if abs(worst.gap) <= AGREE_WITHIN else "NOT within"
    return (
        f"{len(covered)} operators above {ABOVE:g} % of the counted bytes {verdict} {AGREE_WITHIN:g} % "
        f"(worst {worst.frame}: {worst.gap:+.1f} %)"
    )
