"""An on-CPU recording folded with its attribution report: the fold `record` and `make flamegraph` share.

    profile = fold_with_report(recording, window, status)   # notes the report; its figures go in the header
"""

from __future__ import annotations

import os

from ..analysis.report import HowRecorded, build_report, report_lines, report_metadata
from ..io.diagnostics import Diagnostics
from ..model import FoldedProfile
from ..naming.grouping import grouping_note, namer_for_recording
from ..naming.observer import FrameObserver
from ..record import Recording, Status, fold_recording
from ..record.command import python_interpreter
from ..record.golang import recorded_go
from ..window import Window
from .perf import FoldOptions, SampleHook


def fold_with_report(
    recording: Recording,
    window: Window | None,
    status: Status,
    threads: bool = False,
    group_unknown: bool = True,
    sample_hook: SampleHook | None = None,
    jit_unwound: bool = False,
) -> FoldedProfile:
    """Fold (kernel/JIT annotated, [unknown] grouped by function where the build-ids match), print the
    attribution report and put its figures after the capture facts in the profile's metadata (the SVG header).
    `sample_hook` adds frames per sample (--mxnet's operator and primitive frames); `jit_unwound`: the
    recording's JIT kernels were given unwind info (--jit)."""
    namer = namer_for_recording(str(recording.perf_data)) if group_unknown else None
    hook = FrameObserver(namer)
    options = FoldOptions.with_all(tid=threads, frame_hook=hook, sample_hook=sample_hook)
    profile = fold_recording(recording, options, window, Diagnostics(), status)
    note = grouping_note(namer)
    if note is not None:
        status.note(note)
    figures, fixes = build_report(profile, hook, how_recorded(recording, jit_unwound))
    for line in report_lines(figures, fixes):
        status.note(line)
    profile.metadata.update(report_metadata(figures, fixes))
    return profile


def how_recorded(recording: Recording, jit_unwound: bool) -> HowRecorded:
    """What the report's fixes need to know of a recording we made: its call graph, whether --jit gave its JIT
    code unwind info, whether --jit could work at all (a Python command, or --pid), whether it is Go's."""
    spec = recording.spec
    env = {**os.environ, **spec.env}
    python = bool(spec.command) and python_interpreter(spec.command[0], env, spec.cwd) is not None
    return HowRecorded(
        spec.options.call_graph, jit_unwound, jit_possible=python or spec.pid is not None, go=recorded_go(spec)
    )
