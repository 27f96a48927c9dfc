"""What `flamegraph convert` does once its arguments are read: IN -> the profile -> OUT's format.

Without typer, so that the quick path (cli/quick.py) runs it as the typer command (cli/convert.py)
does; the parameters are the command's, by the same names and with the same defaults. Also the
writer behind `render --format` (`export_profile`). Each format's module (and json, protobuf) is
imported only when it is written.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..export import FORMATS, TIMED_FORMATS, format_of, known_endings
from ..export.files import render_profile_export, render_timeline_export, write, write_bytes
from ..io.diagnostics import BadOption, Diagnostics, NoSamples, terminal_text
from ..model import FoldedProfile
from .describe import describe_profile
from .inputs import refuse_binary

if TYPE_CHECKING:
    from ..export.sources import Source
    from ..folding.perf import FoldOptions
    from ..io.folded import FoldedRead
    from ..naming.symbols import FunctionNamer


def run_convert(
    *,
    source: str,
    output: str,
    to: str | None = None,
    title: str | None = None,
    threads: bool = True,
    group_unknown: bool | None = None,
    unit: str | None = None,
    event: str | None = None,
    meta: list[str] | None = None,
    strict: bool = False,
) -> None:
    """Convert SOURCE to OUTPUT (the format from its name, or `to`)."""
    # Folding and drawing make millions of objects and free them by their reference counts: the cyclic
    # collector's passes find nothing to free and cost ~1.5 % of the command's instructions.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _convert(source, output, to, title, threads, group_unknown, unit, event, meta, strict)
    finally:
        if collecting:
            gc.enable()


def _convert(
    source: str,
    output: str,
    to: str | None,
    title: str | None,
    threads: bool,
    group_unknown: bool | None,
    unit: str | None,
    event: str | None,
    meta: list[str] | None,
    strict: bool,
) -> None:
    from ..export.sources import read_source_timeline, sniff
    from ..folding.perf import FoldOptions
    from ..io.writer import refuse_overwriting_input
    from ..naming.grouping import grouping_note
    from ..pipeline.draw import read_context

    if output == "-" and to is None:
        raise BadOption("writing to stdout needs --to FORMAT")
    fmt = output_format(output, to)
    refuse_binary([source])
    refuse_overwriting_input([source], [("OUTPUT", None if output == "-" else Path(output))])
    found = sniff(source, event)
    diagnostics = Diagnostics(strict=strict)
    if fmt in TIMED_FORMATS and found.kind == "folded":
        render_profile_export(FoldedProfile(), fmt)  # raises the explanation
    namer = grouping_namer(found, group_unknown)
    hook = None
    if namer is not None:  # imported only then: text input makes no namer, and the symbol reader costs
        from ..naming.observer import FrameObserver

        hook = FrameObserver(namer)
    # -e/--event: the event perf input is folded for (else the first one, as `fold` picks); folded input's fact
    options = FoldOptions.with_all(tid=threads, frame_hook=hook, event_filter=None if found.kind == "folded" else event)
    if fmt in TIMED_FORMATS:
        data = render_timeline_export(read_source_timeline(found, options, diagnostics), fmt, title)
    else:
        read = read_source(found, options, diagnostics, lambda: prepare_writer(fmt))
        context = read_context([found.path], _note) if found.kind == "folded" else None
        for side in (read.before, read.profile):
            if side is not None:
                if context is not None:  # the facts beside a folded input (FILE.json), as render reads them
                    context.apply(side)
                describe_profile(side, event, unit, meta)
        data = render_profile_export(read.profile, fmt, title, read.before)
    note = grouping_note(namer)
    if note is not None:
        _note(note)
    target = None if output == "-" else Path(output)
    write_bytes(target, data)
    if fmt == "folded":  # its capture facts beside it (the unit, the event), as `fold -o` writes them
        from ..io.sidecar import Context
        from ..io.writer import write_sidecar

        write_sidecar(target, Context.of(read.profile), _note)


def _note(text: str) -> None:
    print(terminal_text(text), file=sys.stderr)


def export_profile(read: FoldedRead, fmt: str, output: Path | None, title: str, png: Path | None) -> None:
    """`render --format FMT`: the export instead of the SVG (the same title; no PNG of it)."""
    if png is not None:
        raise BadOption("--png draws the SVG: it goes with --format svg")
    write(read.profile, fmt, output, None if title == "Flame Graph" else title, read.before)


def output_format(output: str, to: str | None) -> str:
    """--to, else the format OUT's name asks for; a name no format claims is a usage error."""
    if to is not None:
        if to not in FORMATS:
            raise BadOption(f"--to {to!r}: expected one of {', '.join(FORMATS)}")
        return to
    fmt = format_of(output)
    if fmt is None:
        raise BadOption(f"{output}: cannot tell the format from the name (endings: {known_endings()}); use --to")
    return fmt


def grouping_namer(found: Source, group_unknown: bool | None) -> FunctionNamer | None:
    """`[unknown]` frames of perf input grouped by function under `fold`'s rule: perf.data where the
    build-ids match (by default), text only on request (then unverified, and the note says so)."""
    from ..naming.grouping import namer_for_inputs

    if found.kind == "folded":
        return None
    return namer_for_inputs([found.path], group_unknown)


def prepare_writer(fmt: str) -> None:
    """Import what writing `fmt` needs (for svg the renderer, its template and assets): done while
    the fold's workers run, it costs the command no time (the first worker folds more meanwhile)."""
    import tempfile  # noqa: F401 - the writer's, imported when it writes

    from ..io import writer  # noqa: F401

    if fmt == "svg":
        from ..render.svg import prepare

        prepare()


def read_source(
    found: Source, options: FoldOptions, diagnostics: Diagnostics, meanwhile: Callable[[], object] | None = None
) -> FoldedRead:
    """The folded profile of any input: folded text read as every command reads it (plain or
    differential), perf input folded as `fold` does (`meanwhile`: see `fold_perf`)."""
    from ..io.folded import FoldedRead, read_folded_inputs

    if found.kind == "folded":
        from ..io.inputs import label

        read = read_folded_inputs([found.path], diagnostics)
        diagnostics.finish()
        if not read.profile.counts:
            raise NoSamples(f"{label(found.path)}: no stacks found (empty input, or not folded stacks)")
        return read
    if found.kind == "offcpu":
        from ..folding.offcpu import fold_offcpu_totals
        from ..folding.perf_sched import OffCpuOptions
        from ..folding.stage import explain_events

        offcpu = OffCpuOptions(annotate_kernel=options.annotate_kernel)
        fold = fold_offcpu_totals([found.path], offcpu, diagnostics)
        explain_events(fold.profile.event, fold.skipped_events, options.event_filter is not None, diagnostics)
        return FoldedRead(fold.profile)
    from ..folding.stage import fold_perf

    return FoldedRead(fold_perf([found.path], options, diagnostics, meanwhile=meanwhile, per_event_hint=False).profile)
