"""From a recording to folded stacks: `perf script --no-inline` (windowed) streamed into the folder."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..collapse.perf import FoldOptions, PerfCollapser
from ..diagnostics import Diagnostics, NoSamples
from ..model import FoldedProfile
from ..perf import script_command, stream_script
from .spec import ONCPU_FIELDS, Recording
from .status import Status


def script_args(
    recording: Recording, window: tuple[float | None, float | None] | None = None, fields: str = ONCPU_FIELDS
) -> list[str]:
    """`perf script` options: the fields to print, the --time window, and what hooks asked for."""
    extra = ["-F", fields]
    if window is not None:
        start, end = ("" if bound is None else f"{bound:.6f}" for bound in window)
        extra += ["--time", f"{start},{end}"]
    return [*extra, *recording.script_extra]


def iter_progress(lines: Iterable[bytes], status: Status, label: str) -> Iterator[bytes]:
    """Passes lines through, showing how much text has gone by (every 64k lines)."""
    size = 0
    for n, line in enumerate(lines, 1):
        size += len(line)
        if not n & 0xFFFF:
            status.show(f"{label}: {size / 1e6:.0f} MB of perf script text")
        yield line
    status.clear()


def fold_recording(
    recording: Recording,
    options: FoldOptions | None = None,
    window: tuple[float | None, float | None] | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """`perf script --no-inline` streamed into the on-CPU folder; the capture metadata go along."""
    status = status or Status()
    diagnostics = diagnostics or Diagnostics()
    collapser = PerfCollapser(options or FoldOptions(), diagnostics)
    command = script_command(str(recording.perf_data), extra=script_args(recording, window))
    label = str(recording.perf_data)
    with stream_script(command, label) as lines:
        collapser.feed(iter_progress(lines, status, "folding"), label)
    diagnostics.finish()
    profile = collapser.profile()
    if not profile.counts:
        where = f" in the window {script_args(recording, window)[3]}" if window else ""
        raise NoSamples(f"{label}: no samples{where}")
    profile.metadata.update(recording.metadata)
    if window is not None:
        profile.metadata["window"] = ",".join("" if b is None else f"{b:.3f}" for b in window)
    return profile
