"""`flamegraph convert IN OUT`: any input we read -> any output we write, formats from the file names.

Also the writers behind `render --format` and the `--speedscope/--pprof/--chrome-trace` options of
`record` and `offcpu`. Each format's module (and json, protobuf) is imported only when it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..export import FORMATS, TIMED_FORMATS, format_of, known_endings
from ..export.files import render_profile_export, render_timeline_export, write, write_bytes

# The folding and export stages are imported where they run: `flamegraph --help` imports every command module.
from ..io.diagnostics import BadOption, Diagnostics, NoSamples
from ..model import FoldedProfile
from .app import app
from .describe import describe_profile
from .inputs import refuse_binary

if TYPE_CHECKING:
    from ..export.sources import Source
    from ..folding.perf import FoldOptions
    from ..io.folded import FoldedRead
    from ..naming.symbols import FunctionNamer

FormatName = Annotated[
    str | None,
    typer.Option("--to", metavar="FORMAT", help=f"output format, instead of OUT's ending: {', '.join(FORMATS)}"),
]


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


@app.command(short_help="Convert a profile to speedscope, pprof, Chrome trace or SVG.")
def convert(
    source: Annotated[
        str, typer.Argument(metavar="IN", help="folded stacks, perf script text (or .gz), perf.data, or - for stdin")
    ],
    output: Annotated[
        str, typer.Argument(metavar="OUT", help="the file to write (its ending names the format), or - with --to")
    ],
    to: FormatName = None,
    title: Annotated[
        str | None, typer.Option("--title", metavar="TEXT", help="title / profile name in the output")
    ] = None,
    threads: Annotated[
        bool, typer.Option("--threads/--no-threads", help="perf input: one root (profile, track) per thread")
    ] = True,
    group_unknown: Annotated[
        bool | None,
        typer.Option(
            "--group-unknown/--no-group-unknown",
            help="perf input: name [unknown] frames per function, as `fold` does (default: perf.data where the "
            "build-ids match, never text)",
            show_default=False,
        ),
    ] = None,
    unit: Annotated[
        str | None,
        typer.Option("--unit", metavar="UNIT", help="folded input: the counts' unit (samples, microseconds)"),
    ] = None,
    event: Annotated[
        str | None, typer.Option("-e", "--event", metavar="EVENT", help="folded input: the sampled event")
    ] = None,
    meta: Annotated[
        list[str] | None, typer.Option("--meta", metavar="KEY=VALUE", help="a capture fact to carry (repeatable)")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="stop at the first malformed line (exit 3)")] = False,
) -> None:
    """Convert between formats: folded, svg, speedscope (.speedscope.json), pprof (.pb.gz), chrome-trace (.json).

    IN is sniffed from its content (folded stacks, `perf script` text, gzip, perf.data; off-CPU
    sched_switch recordings are paired into waits); OUT's format comes from its ending, or --to.
    chrome-trace needs sample times, so it is made from perf script text or perf.data, not folded stacks.

    \b
    Examples:
      flamegraph convert out.folded out.speedscope.json
      flamegraph convert perf.data out.pb.gz
      flamegraph convert perf.data trace.json --to chrome-trace
    """
    from ..export.sources import read_source_timeline, sniff
    from ..folding.perf import FoldOptions
    from ..naming.grouping import grouping_note

    if output == "-" and to is None:
        raise BadOption("writing to stdout needs --to FORMAT")
    fmt = output_format(output, to)
    refuse_binary([source])
    found = sniff(source)
    diagnostics = Diagnostics(strict=strict)
    if fmt in TIMED_FORMATS and found.kind == "folded":
        render_profile_export(FoldedProfile(), fmt)  # raises the explanation
    namer = grouping_namer(found, group_unknown)
    hook = None
    if namer is not None:  # imported only then: text input makes no namer, and the symbol reader costs
        from ..naming.observer import FrameObserver

        hook = FrameObserver(namer)
    options = FoldOptions.with_all(tid=threads, frame_hook=hook)
    if fmt in TIMED_FORMATS:
        data = render_timeline_export(read_source_timeline(found, options, diagnostics), fmt, title)
    else:
        read = read_source(found, options, diagnostics)
        for side in (read.before, read.profile):
            if side is not None:
                describe_profile(side, event, unit, meta)
        data = render_profile_export(read.profile, fmt, title, read.before)
    note = grouping_note(namer)
    if note is not None:
        typer.echo(note, err=True)
    write_bytes(None if output == "-" else Path(output), data)


def grouping_namer(found: Source, group_unknown: bool | None) -> FunctionNamer | None:
    """`[unknown]` frames of perf input grouped by function under `fold`'s rule: perf.data where the
    build-ids match (by default), text only on request (then unverified, and the note says so)."""
    from ..naming.grouping import namer_for_inputs

    if found.kind == "folded":
        return None
    return namer_for_inputs([found.path], group_unknown)


def read_source(found: Source, options: FoldOptions, diagnostics: Diagnostics) -> FoldedRead:
    """The folded profile of any input: folded text read as every command reads it (plain or
    differential), perf input folded as `fold` does."""
    from ..io.folded import FoldedRead, read_folded_inputs

    if found.kind == "folded":
        from ..io.inputs import label

        read = read_folded_inputs([found.path], diagnostics)
        diagnostics.finish()
        if not read.profile.counts:
            raise NoSamples(f"{label(found.path)}: no stacks found (empty input, or not folded stacks)")
        return read
    if found.kind == "offcpu":
        from ..folding.offcpu import fold_offcpu
        from ..folding.perf_sched import OffCpuOptions

        offcpu = OffCpuOptions(annotate_kernel=options.annotate_kernel)
        return FoldedRead(fold_offcpu([found.path], offcpu, diagnostics))
    from ..folding.stage import fold_perf

    return FoldedRead(fold_perf([found.path], options, diagnostics).profile)
