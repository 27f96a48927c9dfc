"""What a recording covers: perf falls back to user space only, without a word, where it may not sample
the kernel (kernel.perf_event_paranoid >= 2 without CAP_PERFMON): `-e cpu-clock` is recorded as
`cpu-clock:u` (exclude_kernel), and the time in system calls and page faults is missing from the graph.

`perf evlist -i perf.data` (~0.05 s, the header only) names the events as recorded:
    cpu-clock:u           <- the fallback
    cpu-clock             <- as asked
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..io import children
from .privileges import paranoid_level, who_am_i
from .spec import RecordSpec


def recorded_events(perf: str, perf_data: Path) -> list[str]:
    """The events' names as perf.data records them (-f: a root reader of another user's file)."""
    try:
        proc = children.run([perf, "evlist", "-f", "-i", str(perf_data)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []


def user_space_only(spec: RecordSpec, events: list[str]) -> str | None:
    """The capture fact when perf excluded the kernel unasked: EVENT recorded as EVENT:u (a user's own
    `cpu-clock:u` is recorded as it is)."""
    asked = spec.options.event
    if f"{asked}:u" not in events:
        return None
    return f"user space only ({asked}:u): perf_event_paranoid is {paranoid_level()}, {who_am_i()}"


def kernel_note(fact: str) -> str:
    return (
        f"perf recorded {fact}: the time spent in the kernel (system calls, page faults) is not in the graph; "
        "run as root or `sysctl kernel.perf_event_paranoid=1` to include it"
    )
