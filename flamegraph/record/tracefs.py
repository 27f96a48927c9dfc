"""Why a tracepoint (`-e sched:sched_switch`) cannot be recorded here: tracefs not mounted, not
readable, or its raw fields not ours to read (perf_event_paranoid, no CAP_PERFMON). perf says
"event syntax error" when it cannot read the tracepoint's format: this says what is wrong.

    tracepoint_problem("sched:sched_switch") -> NotPermitted | None
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..io.diagnostics import FlamegraphError, NotPermitted
from .privileges import CAP_PERFMON, CAP_SYS_ADMIN, has_capability, paranoid_level

TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
MOUNT_HINT = "mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)"
# `sched:sched_switch` (a tracepoint), not `cpu-clock:u` (an event with modifiers).
TRACEPOINT_EVENT = re.compile(r"^[A-Za-z_][\w-]*:(?![ukhIGHpPSDWeb]+$)[A-Za-z_*][\w*-]*$")


def is_tracepoint(event: str) -> bool:
    return TRACEPOINT_EVENT.match(event) is not None


def mounted_tracefs(mounts: str = "/proc/self/mounts") -> list[str]:
    """Directories where tracefs is mounted (directly, or inside a mounted debugfs)."""
    found = []
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return [d for d in TRACEFS_DIRS if os.path.isdir(os.path.join(d, "events"))]
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "tracefs":
            found.append(fields[1])
        elif len(fields) >= 3 and fields[2] == "debugfs":
            found.append(os.path.join(fields[1], "tracing"))
    return found


def may_trace_raw() -> bool:
    """The kernel hands raw tracepoint data to CAP_PERFMON / CAP_SYS_ADMIN, or to all at paranoid -1."""
    return has_capability(CAP_SYS_ADMIN) or has_capability(CAP_PERFMON) or paranoid_level() == "-1"


def tracepoint_problem(event: str) -> FlamegraphError | None:
    """Why `-e SYSTEM:NAME` (a tracepoint) cannot work here, in one line; None when nothing is visibly wrong."""
    tracepoint = "events/" + event.replace(":", "/", 1)
    where = [d for d in mounted_tracefs() if os.path.exists(d)]  # a mount hidden by another is no use
    if not where:
        return NotPermitted(f"tracefs is not mounted, so {event} cannot be recorded: {MOUNT_HINT}")
    denied = [d for d in where if not os.access(d, os.R_OK | os.X_OK)]
    for directory in where:
        found = os.path.join(directory, tracepoint)
        if directory not in denied and os.path.isdir(found):
            denied += [found] if not os.access(found, os.R_OK | os.X_OK) else []
            break
    else:
        if not denied:
            places = ", ".join(where)
            return NotPermitted(f"no {event} tracepoint under {places} (kernel without it?)")
    if denied:
        return NotPermitted(
            f"not permitted to read {denied[-1]} (not root): run as root, or "
            f"`mount -o remount,mode=755 {where[0]}` and `sysctl kernel.perf_event_paranoid=-1`"
        )
    if not may_trace_raw():
        return NotPermitted(
            f"not permitted to record {event} with its fields (perf_event_paranoid is {paranoid_level()}, "
            "no CAP_PERFMON): run as root or `sysctl kernel.perf_event_paranoid=-1`"
        )
    return None
