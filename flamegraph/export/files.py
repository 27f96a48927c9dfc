"""Writing a profile in any format we know: `export.write(profile, format, path)` for the Python API,
the commands (`convert`, `render --format`) and the files `record`/`offcpu` write beside the SVG.

    export.write(profile, "pprof", Path("out.pb.gz"))          # also speedscope, folded, svg
    export.write(profile, "folded", None, before=old)          # differential: BEFORE AFTER per line (stdout)

A format made from folded stacks is rendered from the profile; chrome-trace needs each sample's time
and is made from a recording (`write_recording_exports`) or `perf script` text (`flamegraph convert`).
Each file is written atomically (flamegraph.io.writer).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..io.diagnostics import BadOption
from ..model import FoldedProfile
from .formats import FORMATS, ONE_COUNT_FORMATS, TIMED_FORMATS, ExportError, ExportRequest

if TYPE_CHECKING:
    from ..folding.perf import FoldOptions
    from ..folding.perf_sched import OffCpuOptions
    from ..record import Recording
    from ..window import Window  # reads perf script's grammar: not imported by `--help`
    from .timeline import Timeline


def write(
    profile: FoldedProfile,
    fmt: str,
    path: Path | None,
    title: str | None = None,
    before: FoldedProfile | None = None,
) -> None:
    """`profile` in format `fmt` (svg, folded, speedscope, pprof) to `path` (stdout for None), atomically."""
    write_bytes(path, render_profile_export(profile, fmt, title, before))


def render_profile_export(
    profile: FoldedProfile, fmt: str, title: str | None = None, before: FoldedProfile | None = None
) -> bytes:
    """The bytes of `profile` in a format made from folded stacks. With `before` (a differential
    profile: `profile` is AFTER), svg draws the differential graph as `render` does, folded keeps both
    counts, and a format with one count per stack refuses it (exit 3) rather than drop a side."""
    if before is not None and fmt in ONE_COUNT_FORMATS:
        raise ExportError(
            f"{fmt} holds one count per stack and this profile is differential (two counts per line, "
            "BEFORE AFTER): draw it as svg, or convert each side's folded file on its own"
        )
    if fmt == "speedscope":
        from .speedscope import render_speedscope

        return render_speedscope(profile, title)
    if fmt == "pprof":
        from .pprof import render_pprof

        return render_pprof(profile, title)
    if fmt == "folded":
        from ..io.folded import iter_diff_folded_lines, iter_folded_lines

        lines = iter_folded_lines(profile) if before is None else iter_diff_folded_lines(before, profile)
        return b"".join(lines)
    if fmt == "svg":
        from ..render import RenderOptions, render_diff, render_svg

        options = RenderOptions(title=title or "Flame Graph")
        if before is None:
            return render_svg(profile, options)
        options.diff_width = "after"  # flamegraph.pl's geometry for difffolded input, as `render` draws it
        return render_diff(before, profile, options)
    if fmt in TIMED_FORMATS:
        raise BadOption(
            f"{fmt} needs each sample's time, which folded stacks do not have: "
            "convert the perf script text or perf.data instead (flamegraph convert perf.data OUT.json)"
        )
    raise BadOption(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")


def render_timeline_export(timeline: Timeline, fmt: str, title: str | None = None) -> bytes:
    from .chrome_trace import render_chrome_trace

    assert fmt == "chrome-trace", fmt
    return render_chrome_trace(timeline, title)


def write_recording_exports(
    request: ExportRequest,
    profile: FoldedProfile,
    recording: Recording,
    note: Callable[[str], None],
    timeline_options: FoldOptions | None = None,
    window: Window | None = None,
    offcpu: OffCpuOptions | None = None,
    pid: int | None = None,
) -> None:
    """`record` / `offcpu` --speedscope/--pprof/--chrome-trace: each file written atomically and announced.
    The Chrome trace re-reads the recording in time order with the options the fold used."""
    from ..folding.perf import FoldOptions
    from .sources import recording_timeline

    for fmt, path in request.files:
        if fmt in TIMED_FORMATS:
            options = timeline_options or FoldOptions.with_all(tid=True)
            timeline = recording_timeline(recording, options, window, offcpu, pid or 0)
            data = render_timeline_export(timeline, fmt, request.title)
        else:
            data = render_profile_export(profile, fmt, request.title)
        write_bytes(path, data)
        note(f"wrote {path} ({fmt})")


def write_bytes(path: Path | None, data: bytes) -> None:
    """`data` to `path` (stdout for None) through the one safe writer."""
    from ..io.writer import atomic_output  # here: the formats' tables are imported by every command

    with atomic_output(path) as out:
        out.write(data)
