"""`flamegraph convert IN OUT`: any input we read -> any output we write, formats from the file names.

The typer command: its options and help. What it does is `convert_run.run_convert`, which the quick
path (cli/quick.py) also calls without typer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..export import FORMATS
from .app import app
from .convert_run import run_convert

FormatName = Annotated[
    str | None,
    typer.Option("--to", metavar="FORMAT", help=f"output format, instead of OUT's ending: {', '.join(FORMATS)}"),
]


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
        typer.Option(
            "--unit", metavar="UNIT", help="folded input: the counts' unit (samples, microseconds, nanoseconds, events)"
        ),
    ] = None,
    event: Annotated[
        str | None,
        typer.Option(
            "-e", "--event", metavar="EVENT",
            help="perf input: the event to fold (default: the first one, as fold); folded input: the sampled event",
        ),
    ] = None,
    meta: Annotated[
        list[str] | None, typer.Option("--meta", metavar="KEY=VALUE", help="a capture fact to carry (repeatable)")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="stop at the first malformed line (exit 3)")] = False,
) -> None:
    """Convert between formats: folded, svg, speedscope (.speedscope.json), pprof (.pb.gz), chrome-trace (.json).

    IN is sniffed from its content (folded stacks, `perf script` text, gzip, perf.data; the event
    folded is -e's or the first one, sched_switch paired into off-CPU waits); OUT's format comes
    from its ending, or --to; a .folded OUT gets its capture facts in OUT.json beside it.
    chrome-trace needs sample times, so it is made from perf script text or perf.data, not folded stacks.

    \b
    Examples:
      flamegraph convert out.folded out.speedscope.json
      flamegraph convert perf.data out.pb.gz
      flamegraph convert perf.data trace.json --to chrome-trace
    """
    run_convert(
        source=source, output=output, to=to, title=title, threads=threads, group_unknown=group_unknown,
        unit=unit, event=event, meta=meta, strict=strict,
    )  # fmt: skip


