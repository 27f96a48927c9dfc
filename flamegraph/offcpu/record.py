"""Recording off-CPU: the sched_switch options, why the tracepoint cannot be recorded here, `perf record`.

    offcpu_spec(pid=1234, duration=3.0) -> RecordSpec   # every sched_switch with stacks, plus switch-ins
    offcpu_options(call_graph="fp") -> RecordOptions    # the same for a target given later
    tracepoint_problem() -> NotPermitted | None         # tracefs not mounted, not readable, no CAP_PERFMON
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..diagnostics import FlamegraphError, NotPermitted, PerfFailed
from ..record import Recording, RecordOptions, RecordSpec, Status, record
from ..record.spec import CAP_PERFMON, CAP_SYS_ADMIN, OFFCPU_CALL_GRAPH, has_capability, paranoid_level

EVENT = "sched:sched_switch"
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
TRACEPOINT = "events/sched/sched_switch"
MOUNT_HINT = "mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)"


def offcpu_options(duration: float | None = None, call_graph: str = OFFCPU_CALL_GRAPH) -> RecordOptions:
    """Every sched_switch, with stacks, plus the switch-in records (whatever the target)."""
    return RecordOptions(
        event=EVENT,
        freq=None,  # a tracepoint: every event, never sampled
        call_graph=call_graph,
        extra_args=("--switch-events",),
        duration=duration,
    )


def offcpu_spec(
    pid: int | None = None,
    command: Sequence[str] = (),
    duration: float | None = None,
    call_graph: str = OFFCPU_CALL_GRAPH,
) -> RecordSpec:
    """Every sched_switch of the target's threads, with stacks, plus the switch-in records."""
    return RecordSpec(command=tuple(command), pid=pid, options=offcpu_options(duration, call_graph))


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


def tracepoint_problem() -> FlamegraphError | None:
    """Why `-e sched:sched_switch` cannot work here, in one line; None when nothing is visibly wrong."""
    where = [d for d in mounted_tracefs() if os.path.exists(d)]  # a mount hidden by another is no use
    if not where:
        return NotPermitted(f"tracefs is not mounted, so {EVENT} cannot be recorded: {MOUNT_HINT}")
    denied = [d for d in where if not os.access(d, os.R_OK | os.X_OK)]
    for directory in where:
        event = os.path.join(directory, TRACEPOINT)
        if directory not in denied and os.path.isdir(event):
            denied += [event] if not os.access(event, os.R_OK | os.X_OK) else []
            break
    else:
        if not denied:
            places = ", ".join(where)
            return NotPermitted(f"no {EVENT} tracepoint under {places} (kernel without it?)")
    if denied:
        return NotPermitted(
            f"not permitted to read {denied[-1]} (not root): run as root, or "
            f"`mount -o remount,mode=755 {where[0]}` and `sysctl kernel.perf_event_paranoid=-1`"
        )
    if not may_trace_raw():
        return NotPermitted(
            f"not permitted to record {EVENT} with its fields (perf_event_paranoid is {paranoid_level()}, "
            "no CAP_PERFMON): run as root or `sysctl kernel.perf_event_paranoid=-1`"
        )
    return None


def record_offcpu(
    spec: RecordSpec, output: Path, status: Status | None = None, on_recording: Callable[[], None] | None = None
) -> Recording:
    """`perf record` of sched_switch; perf's complaints about tracepoints become one clear line."""
    if os.geteuid() != 0:  # as root, perf mounts a missing tracefs itself: let it try first
        problem = tracepoint_problem()
        if problem is not None:
            raise problem
    try:
        return record(spec, output, status=status, on_recording=on_recording)
    except (PerfFailed, NotPermitted) as err:
        problem = tracepoint_problem()
        raise (problem or err) from None
