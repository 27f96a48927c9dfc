"""`record --wall`: on-CPU samples and off-CPU waits recorded together, each thread's wall time on one axis.

    spec = RecordSpec(command=cmd, options=wall_options(499, None, "dwarf,8192"))
    result = record_wall(OnCpuRequest(spec), Outputs(Path("wall.svg"), RenderOptions(title="wall")), Status())
    result.threads  # [ThreadWall(name, ran_us, waited_us)], the longest wall time first
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import FoldedProfile
    from ..record import Recording, Status
    from .oncpu import OnCpuRequest
    from .outputs import Outputs, Written


@dataclass(frozen=True)
class ThreadWall:
    """One thread's time in the window: running (sampled on-CPU) and waiting (sched_switch), in µs."""

    name: str
    ran_us: float
    waited_us: float


@dataclass
class WallResult:
    recording: Recording
    profile: FoldedProfile
    written: Written
    threads: list[ThreadWall]  # the longest wall time first

    @property
    def window_us(self) -> float:
        return self.profile.window_us or 0.0


def record_wall(request: OnCpuRequest, outputs: Outputs, status: Status) -> WallResult:
    """Record the request's spec (its options from `folding.wall_time.wall_options`), fold both halves, write."""
    from ..folding.options import FoldOptions
    from ..folding.perf_sched import OffCpuOptions
    from ..folding.python import fold_interpreter
    from ..folding.wall_time import fold_wall
    from ..frameworks.flamegraph_launcher import own_frames
    from ..io.diagnostics import Diagnostics
    from ..naming.grouping import grouping_note, namer_for_recording
    from ..naming.observer import FrameObserver
    from ..record.offcpu import record_offcpu
    from .oncpu import RecordHooks
    from .outputs import write_outputs
    from .scratch import ScratchRecording

    outputs.check(request.perf_data)
    with ScratchRecording("flamegraph-wall-", request.perf_data, status.note) as session, ExitStack() as stack:
        # Python 3.12+ frames as record and offcpu get them (their perf maps removed once everything is read)
        hooks = stack.enter_context(RecordHooks.of(replace(request, jit=False, mxnet=False), session.data_path,
                                                   status.note))  # fmt: skip
        recording = record_offcpu(request.spec, session.data_path, status, session.mark_recorded, hooks.hooks)
        recording.label = session.label  # the waits' messages; the samples' name the path (kept on an error)
        size = recording.perf_data.stat().st_size / 1e6
        status.note(f"recorded {recording.seconds:.1f} s ({size:,.1f} MB)")
        namer = namer_for_recording(str(recording.perf_data)) if request.group_unknown else None
        hook = FrameObserver(namer) if namer is not None else None
        waits = OffCpuOptions(window=request.window, frame_hook=hook)
        wall = fold_wall(recording, waits, Diagnostics(), status, FoldOptions(frame_hook=hook))
        fold_interpreter(wall.profile, own_frames(), request.keep_interpreter)
        if (note := grouping_note(namer)) is not None:
            status.note(note)
        written = write_outputs(wall.profile, outputs, status.note)
    off = {thread.decode("utf-8", "surrogateescape"): ns / 1e3 for thread, ns in wall.off.totals.by_thread.items()}
    on = wall.on_cpu_us
    threads = [ThreadWall(name, on.get(name, 0.0), off.get(name, 0.0)) for name in set(on) | set(off)]
    threads.sort(key=lambda t: -(t.ran_us + t.waited_us))
    return WallResult(recording, wall.profile, written, threads)
