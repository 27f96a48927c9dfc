"""Recording off-CPU: the sched_switch options, why the tracepoint cannot be recorded here, `perf record`.

offcpu_spec(pid=1234, duration=3.0) -> RecordSpec   # every sched_switch with stacks, plus switch-ins
offcpu_options(call_graph="fp") -> RecordOptions    # the same for a target given later
tracepoint_problem() -> NotPermitted | None         # tracefs not mounted, not readable, no CAP_PERFMON
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..diagnostics import NotPermitted, PerfFailed
from ..record import Recording, RecordOptions, RecordSpec, Status, record
from ..record.spec import OFFCPU_CALL_GRAPH
from ..record.spool import Spool
from ..record.tracefs import mounted_tracefs, tracepoint_problem

__all__ = ["EVENT", "mounted_tracefs", "offcpu_options", "offcpu_spec", "record_offcpu", "tracepoint_problem"]

EVENT = "sched:sched_switch"


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


def record_offcpu(
    spec: RecordSpec,
    output: Path,
    status: Status | None = None,
    on_recording: Callable[[], None] | None = None,
    spool: Spool | None = None,
) -> Recording:
    """`perf record` of sched_switch; perf's complaints about tracepoints become one clear line."""
    if os.geteuid() != 0:  # as root, perf mounts a missing tracefs itself: let it try first
        problem = tracepoint_problem(EVENT)
        if problem is not None:
            raise problem
    try:
        return record(spec, output, status=status, on_recording=on_recording, spool=spool)
    except (PerfFailed, NotPermitted) as err:
        problem = tracepoint_problem(EVENT)
        raise (problem or err) from None
