"""`flamegraph record --wall`: record on-CPU samples and off-CPU waits together, draw each thread's wall time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..record import RecordSpec
    from ..render import RenderOptions
    from ..window import Window


def record_wall(
    spec: RecordSpec,
    window: Window | None,
    options: RenderOptions | None,
    svg: Path,
    folded: Path | None,
    perf_data: Path | None,
    group_unknown: bool = True,
    png: Path | None = None,
    open_: bool = False,
) -> None:
    """Record `spec` (its options from `offcpu.wall.wall_options`), fold both halves, write the graph."""
    from dataclasses import replace

    from ..export import ExportRequest
    from ..folding.options import FoldOptions
    from ..folding.perf_sched import OffCpuOptions
    from ..folding.sched_totals import format_ns
    from ..folding.wall_time import fold_wall
    from ..io.diagnostics import Diagnostics
    from ..io.sidecar import Context
    from ..io.writer import write_results
    from ..naming.grouping import grouping_note, namer_for_recording
    from ..naming.observer import FrameObserver
    from ..record import Status
    from ..record.offcpu import record_offcpu
    from ..render import render_svg
    from .inputs import open_in_browser
    from .record_flags import check_outputs
    from ..pipeline.scratch import ScratchRecording, exit_like_the_command

    status = Status()
    drawn_svg = svg if options is not None else None
    check_outputs(drawn_svg, folded, ExportRequest(), perf_data, png if drawn_svg is not None else None)
    with ScratchRecording("flamegraph-wall-", perf_data, status.note) as session:
        recording = record_offcpu(spec, session.data_path, status, on_recording=session.mark_recorded)
        size = recording.perf_data.stat().st_size / 1e6
        status.note(f"recorded {recording.seconds:.1f} s ({size:,.1f} MB)")
        namer = namer_for_recording(str(recording.perf_data)) if group_unknown else None
        hook = FrameObserver(namer) if namer is not None else None
        waits = OffCpuOptions(window=window, frame_hook=hook)
        wall = fold_wall(recording, waits, Diagnostics(), status, replace(FoldOptions(), frame_hook=hook))
        if (note := grouping_note(namer)) is not None:
            status.note(note)
        profile = wall.profile
        context = Context.of(profile, **({"title": options.title} if options is not None else {}))
        draw = (lambda: render_svg(profile, options)) if options is not None else (lambda: b"")
        write_results(profile, folded, drawn_svg, draw, status.note, context, png)
        if open_ and drawn_svg is not None:
            open_in_browser(drawn_svg)
        window_us = profile.window_us or 0.0
        off = {thread.decode("utf-8", "surrogateescape"): ns / 1e3 for thread, ns in wall.off.totals.by_thread.items()}
        for thread in sorted(set(wall.on_cpu_us) | set(off), key=lambda t: -(wall.on_cpu_us.get(t, 0) + off.get(t, 0))):
            ran, waited = wall.on_cpu_us.get(thread, 0.0), off.get(thread, 0.0)
            status.note(
                f"{thread}: ran {format_ns(ran * 1e3)}, waited {format_ns(waited * 1e3)}, "
                f"wall {format_ns((ran + waited) * 1e3)} of the {format_ns(window_us * 1e3)} window"
            )
    exit_like_the_command(recording, status.note)
