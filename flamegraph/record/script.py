"""From a recording to folded stacks: `perf script --no-inline` (windowed) folded as perf writes it."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..folding.options import FoldOptions
from ..folding.perf import PerfCollapser
from ..folding.stage import fold_input
from ..io.diagnostics import Diagnostics, NoSamples
from ..model import FoldedProfile
from ..window import Window
from .spec import ONCPU_FIELDS, Recording
from .status import Status


def script_args(recording: Recording, window: Window | None = None, fields: str = ONCPU_FIELDS) -> list[str]:
    """`perf script` options: the fields to print, the --time window, and what hooks asked for."""
    extra = ["-F", fields]
    if window is not None:
        extra += ["--time", window.perf_time()]
    return [*extra, *recording.script_extra]


def show_progress(status: Status, label: str) -> Callable[[int], None]:
    """A fold's progress callback: how much perf script text has been read. Off a terminal, only a fold
    still running after `status.every` seconds says so (a short one would print one line of nothing)."""
    started = time.monotonic()

    def show(done: int) -> None:
        if status.tty or time.monotonic() - started >= status.every:
            status.show(f"{label}: {done / 1e6:,.1f} MB of perf script text read")

    return show


def fold_recording(
    recording: Recording,
    options: FoldOptions | None = None,
    window: Window | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """`perf script --no-inline` folded through the one fold path; the capture metadata go along."""
    status = status or Status()
    diagnostics = diagnostics or Diagnostics()
    collapser = PerfCollapser(options or FoldOptions(), diagnostics)
    label = str(recording.perf_data)
    try:
        progress = show_progress(status, "folding")
        fold_input(collapser, label, script_args=script_args(recording, window), progress=progress)
    finally:
        status.clear()
    diagnostics.finish()
    return recorded_profile(collapser.profile(), recording, window, label)


def recorded_profile(profile: FoldedProfile, recording: Recording, window: Window | None, what: str) -> FoldedProfile:
    """`profile` with the recording's facts and its window; NoSamples (naming `what`) when it has none."""
    if not profile.counts:
        where = f" in the window {window.format()}" if window else ""
        raise NoSamples(f"{what}: no samples{where}")
    profile.metadata.update(recording.metadata)
    if window is not None:
        profile.metadata["window"] = window.format()
    return profile
