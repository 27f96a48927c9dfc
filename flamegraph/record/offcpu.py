"""Recording off-CPU: the sched_switch options, why the tracepoint cannot be recorded here, `perf record`.

offcpu_spec(pid=1234, duration=3.0) -> RecordSpec   # every sched_switch with stacks, plus switch-ins
offcpu_options(call_graph="fp") -> RecordOptions    # the same for a target given later
offcpu_options(wakers=True)                         # all CPUs, and who woke each thread (sched_waking)
tracepoint_problem() -> NotPermitted | None         # tracefs not mounted, not readable, no CAP_PERFMON
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..io.diagnostics import NotPermitted, PerfFailed
from . import RecordHook, Recording, RecordOptions, RecordSpec, Status, record
from .spec import OFFCPU_CALL_GRAPH
from .spool import Spool
from .tracefs import mounted_tracefs, tracepoint_problem

__all__ = ["EVENT", "mounted_tracefs", "offcpu_options", "offcpu_spec", "record_offcpu", "tracepoint_problem"]

EVENT = "sched:sched_switch"
# sched_waking fires in the waker's context (its stack is the waker's); sched_wakeup, older, may fire
# on the woken thread's CPU, from the interrupt that queued it there: recorded only without waking.
WAKING, WAKEUP = "sched:sched_waking", "sched:sched_wakeup"


def wake_event() -> str:
    """sched_waking where the kernel has it (4.3 and later), else sched_wakeup."""
    for directory in mounted_tracefs():
        if os.path.isdir(os.path.join(directory, "events", "sched", "sched_waking")):
            return WAKING
    return WAKEUP if mounted_tracefs() else WAKING


def offcpu_options(
    duration: float | None = None, call_graph: str = OFFCPU_CALL_GRAPH, wakers: bool = False
) -> RecordOptions:
    """Every sched_switch, with stacks, plus the switch-in records (whatever the target). With
    `wakers`, every wakeup too, on all CPUs: a timer or an interrupt wakes a thread from whatever
    runs on that CPU at the time (the idle task, another process), which a per-thread recording misses."""
    extra = ("-e", wake_event(), "-a") if wakers else ()
    return RecordOptions(
        event=EVENT,
        freq=None,  # a tracepoint: every event, never sampled
        call_graph=call_graph,
        extra_args=("--switch-events", *extra),
        duration=duration,
    )


def offcpu_spec(
    pid: int | None = None,
    command: Sequence[str] = (),
    duration: float | None = None,
    call_graph: str = OFFCPU_CALL_GRAPH,
    wakers: bool = False,
) -> RecordSpec:
    """Every sched_switch of the target's threads, with stacks, plus the switch-in records."""
    return RecordSpec(command=tuple(command), pid=pid, options=offcpu_options(duration, call_graph, wakers))


def recorded_target(recording: Recording) -> tuple[int, bool] | None:
    """The process tree a recording on all CPUs was made for (OffCpuOptions.target); None: per thread."""
    if "-a" not in recording.spec.options.extra_args:
        return None
    if recording.spec.pid is not None:
        return (recording.spec.pid, True)
    return (recording.perf_pid, False) if recording.perf_pid is not None else None


def record_offcpu(
    spec: RecordSpec,
    output: Path,
    status: Status | None = None,
    on_recording: Callable[[], None] | None = None,
    hooks: Sequence[RecordHook] = (),
    spool: Spool | None = None,
) -> Recording:
    """`perf record` of sched_switch; perf's complaints about tracepoints become one clear line."""
    events = [EVENT, *(arg for arg in spec.options.extra_args if arg in (WAKING, WAKEUP))]
    if os.geteuid() != 0:  # as root, perf mounts a missing tracefs itself: let it try first
        problem = next(filter(None, map(tracepoint_problem, events)), None)
        if problem is not None:
            raise problem
    try:
        return record(spec, output, hooks=hooks, status=status, on_recording=on_recording, spool=spool)
    except (PerfFailed, NotPermitted) as err:
        problem = next(filter(None, map(tracepoint_problem, events)), None)
        raise (problem or err) from None
