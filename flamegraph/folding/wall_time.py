"""Wall time per thread (`flamegraph record --wall`): where each thread ran and where it waited, on one
time axis, in microseconds.

One recording holds both: `perf record -e cpu-clock/freq=499/ -e sched:sched_switch --switch-events`
(the frequency is the sampling event's own term: a global -F would sample the tracepoint too and
lose switches). On-CPU samples weigh their period (cpu-clock's period is the nanoseconds the thread
ran since its previous sample), waits their paired length; both fold under the same `comm-tid` root:
    python-3677;_start;main;train;gemm 2004.008                  <- on-CPU: ran 2.004 ms here
    python-3677;_start;main;train;WaitForVar;...;schedule;[S] 40511    <- off-CPU: ends with its state
A thread's tower is its wall time (ran + waited), the recording window when it lived all of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis.offcpu_threads import WALL_EVENT
from ..io.diagnostics import Diagnostics, NoSamples
from ..model import FoldedProfile
from ..record import Recording, RecordOptions, Status, show_progress
from ..record.offcpu import EVENT
from ..record.spec import OFFCPU_CALL_GRAPH
from .offcpu import OffCpuFold, fold_offcpu_recording
from .options import FoldOptions
from .perf import PerfCollapser
from .perf_sched import OffCpuOptions
from .sched_totals import format_ns
from .stage import fold_input

ONCPU_EVENT = "cpu-clock"
FIELDS = "comm,pid,tid,time,period,event,ip,sym,dso"
TID_ROOT = re.compile(rb"-\d{1,10}/(\d{1,10})$")  # comm-PID/TID (fold --tid) -> comm-TID, as off-CPU names them


def wall_options(freq: int, duration: float | None = None, call_graph: str = OFFCPU_CALL_GRAPH) -> RecordOptions:
    """cpu-clock at `freq` per second plus every sched_switch and the switch-ins, one recording."""
    return RecordOptions(
        event=f"{ONCPU_EVENT}/freq={freq}/",
        freq=None,  # the frequency is the sampling event's own term (above)
        call_graph=call_graph,
        extra_args=("-e", EVENT, "--switch-events"),
        duration=duration,
    )


@dataclass(frozen=True)
class WallFold:
    profile: FoldedProfile  # microseconds: on-CPU stacks, then off-CPU stacks ending with [STATE]
    on_cpu_us: dict[str, float]  # per thread (comm-tid)
    off: OffCpuFold


def fold_wall(
    recording: Recording,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
    fold: FoldOptions | None = None,
) -> WallFold:
    """Both halves of a `wall_options` recording folded into one profile in microseconds; `fold` names
    the on-CPU frames as `record` does (its frame hook), `options` the waits as `offcpu` does."""
    options = options or OffCpuOptions()
    diagnostics = diagnostics or Diagnostics()
    off = fold_offcpu_recording(recording, options, diagnostics, status)  # the samples are not its records
    event = recording.spec.options.event
    folding = (fold or FoldOptions())._replace(tid=True, event_filter=event, annotate_kernel=options.annotate_kernel)
    collapser = PerfCollapser(folding, diagnostics)
    args = ["-F", FIELDS, "--no-inline"]
    if options.window is not None:
        args += ["--time", options.window.perf_time()]
    progress = show_progress(status, "folding on-CPU") if status else None
    fold_input(collapser, str(recording.perf_data), script_args=args, progress=progress)
    if status:
        status.clear()
    on_cpu = collapser.profile()
    counts = dict(off.profile.counts)
    per_thread: dict[str, float] = {}
    for stack, ns in on_cpu.counts.items():
        root, sep, rest = stack.encode("utf-8", "surrogateescape").partition(b";")
        if not sep:  # a text input's side-band records (PERF_RECORD_SWITCH IN...) fold to a bare root
            continue
        thread = TID_ROOT.sub(rb"-\1", root).decode("utf-8", "surrogateescape")
        key = thread + (sep + rest).decode("utf-8", "surrogateescape")
        us = ns / 1000
        counts[key] = counts.get(key, 0.0) + us
        per_thread[thread] = per_thread.get(thread, 0.0) + us
    if not per_thread:
        raise NoSamples(f"{recording.perf_data}: no {ONCPU_EVENT} samples (record with --wall)")
    total = sum(per_thread.values())
    metadata = {
        "on-CPU": f"{format_ns(total * 1000)} in {len(per_thread)} threads ({event}: each sample weighs its period)",
        **off.profile.metadata,
    }
    wall = WALL_EVENT.format(oncpu=event)
    profile = FoldedProfile(counts, "microseconds", wall, metadata, window_us=off.profile.window_us)
    return WallFold(profile, per_thread, off)
