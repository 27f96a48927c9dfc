"""The off-CPU pipeline: record sched_switch (for a pid, every thread, or a command) -> pair each thread's
switch-out with its next switch-in -> write the folded waits (µs), the SVG, the PNG -> the exports.

    spec = offcpu_spec(pid=4242, duration=5.0)
    result = record_offcpu_graph(OffCpuRequest(spec, OffCpuOptions(min_us=100), pid=4242),
                                 Outputs(Path("waits.svg"), RenderOptions(title="waits")), Status())
    result.totals.terminal()   # {"off-CPU": "...", ...}: what `flamegraph offcpu` prints

`make offcpu` records with its own hooks and runs the pairing step, `pair_recorded` (with its MXNet
hook: each wait under the [op] frame running at the switch-out), then `write_outputs`.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..folding.offcpu import OffCpuFold
    from ..folding.perf_sched import OffCpuOptions
    from ..folding.sched_totals import OffCpuTotals
    from ..model import FoldedProfile
    from ..record import Recording, RecordSpec, Status
    from ..record.proc import Resolver
    from .oncpu import RecordHooks
    from .outputs import Outputs, Written
    from .scratch import ScratchRecording


@dataclass(frozen=True)
class OffCpuRequest:
    """What to record (`spec`, from `record.offcpu.offcpu_spec`) and how to pair and fold it."""

    spec: RecordSpec
    options: OffCpuOptions  # the states, waits shorter than min_us left out, the window, kernel frames kept
    pid: int | None = None  # the process recorded (its threads named for the whole window)
    group_unknown: bool = True
    keep_interpreter: bool = False
    python: bool | None = None  # Python 3.12+ frames: None = when the command runs one
    perf_data: Path | None = None
    max_spool: int | None = None  # bytes: paired while perf records, the raw data on disk bounded


@dataclass
class OffCpuResult:
    recording: Recording
    profile: FoldedProfile  # microseconds blocked per stack
    written: Written
    totals: OffCpuTotals  # the header's totals as facts


def record_offcpu_graph(request: OffCpuRequest, outputs: Outputs, status: Status) -> OffCpuResult:
    """Record, pair, write, export; perf.data is kept (its path said) when a later step fails."""
    from ..folding.python import fold_interpreter
    from ..frameworks.flamegraph_launcher import own_frames
    from ..naming.grouping import grouping_note
    from ..record.proc import snapshot_threads, whole_window_resolver
    from ..record.streaming import offcpu_blockers, whole_note
    from .oncpu import OnCpuRequest, RecordHooks
    from .outputs import write_exports, write_outputs
    from .scratch import ScratchRecording

    outputs.check(request.perf_data)
    cap, pid = request.max_spool, request.pid
    if cap is not None and (  # a caller's cap that `flamegraph offcpu` would not have set
        blockers := offcpu_blockers(request.spec, request.perf_data is not None, bool(outputs.exports), request.python)
    ):
        status.note(whole_note(blockers, asked=True))
        cap = None
    with ScratchRecording("flamegraph-offcpu-", request.perf_data, status.note) as session, ExitStack() as stack:
        resolve = whole_window_resolver(pid, snapshot_threads(pid)) if pid is not None else None
        if cap is not None:
            from .streamed import pair_spooled

            fold, recording, namer = pair_spooled(
                request.spec, request.options, request.group_unknown, status, cap, resolve
            )
            if (note := grouping_note(namer)) is not None:
                status.note(note)
        else:  # the same hooks as on-CPU (Python's frames, not oneDNN's), their perf maps removed after the exports
            hooked = OnCpuRequest(request.spec, python=request.python, perf_data=request.perf_data)
            hooks = stack.enter_context(RecordHooks.of(hooked, session.data_path, status.note))
            fold, recording = _record_and_pair(request, session, hooks, status, resolve)
        profile = fold_interpreter(fold.profile, own_frames(), request.keep_interpreter)
        written = write_outputs(profile, outputs, status.note)
        written.exports = write_exports(profile, outputs, recording, status.note, offcpu=request.options, pid=pid)
    return OffCpuResult(recording, profile, written, fold.totals)


def _record_and_pair(
    request: OffCpuRequest, session: ScratchRecording, hooks: RecordHooks, status: Status, resolve: Resolver | None
) -> tuple[OffCpuFold, Recording]:
    """The whole-file recording: perf.data, then paired."""
    from ..record.offcpu import record_offcpu

    recording = record_offcpu(request.spec, session.data_path, status, session.mark_recorded, hooks.hooks)
    recording.label = session.label
    status.note(_recorded_line(recording, request.pid))
    return pair_recorded(recording, request, status, hooks, resolve), recording


def pair_recorded(
    recording: Recording,
    request: OffCpuRequest,
    status: Status,
    hooks: RecordHooks | None = None,
    resolve: Resolver | None = None,
) -> OffCpuFold:
    """Pair a whole recording's switches ([unknown] frames grouped, the grouping noted); with an MXNet
    hook, each wait goes under the [op] frame of the operator running at its switch-out and the join is
    reported (printed, in the header). `make offcpu` runs this step on its own recording."""
    from dataclasses import replace

    from ..folding.offcpu import fold_offcpu_recording
    from ..io.diagnostics import Diagnostics
    from ..naming.grouping import grouping_note, namer_for_recording
    from ..naming.observer import FrameObserver

    namer = namer_for_recording(str(recording.perf_data)) if request.group_unknown else None
    mx = hooks.mxnet if hooks is not None else None
    joiner = mx.joiner(recording, request.options.window) if mx else None
    options = request.options
    if namer is not None:
        options = replace(options, frame_hook=FrameObserver(namer))
    if joiner is not None:
        options = replace(options, sample_hook=joiner)
    fold = fold_offcpu_recording(recording, options, Diagnostics(), status, resolve)
    if (note := grouping_note(namer)) is not None:
        status.note(note)
    if mx and joiner:
        mx.report_waits(joiner, fold.profile)
    return fold


def _recorded_line(recording: Recording, pid: int | None) -> str:
    from .scratch import command_ended, pid_exited

    size = recording.perf_data.stat().st_size / 1e6 if recording.perf_data.exists() else 0.0
    line = f"recorded {recording.seconds:.1f} s ({size:,.1f} MB)"
    if (exited := pid_exited(recording, pid)) is not None:
        line += f"; {exited}"
    elif recording.exit_status:
        line += f"; {command_ended(recording.exit_status)}"
    return line
