"""`flamegraph fold`: perf script text / perf.data -> folded stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..io.diagnostics import BadOption
from .app import app
from .inputs import reading_stdin_note, refuse_wrong_input
from .numbers import parse_window_option


def _deprecated(old: str, new: str, why: str = "") -> None:
    typer.echo(f"note: fold {old} is deprecated{why}: use {new}", err=True)


@app.command(short_help="Collapse perf script output or perf.data into folded stacks.")
def fold(
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="INPUT",
            help="perf script text, a .gz of it, a perf.data file, or - for stdin",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="FILE", help="write here (and FILE.json beside it) instead of stdout"),
    ] = None,
    with_pid: Annotated[bool, typer.Option("--with-pid", help="root frames name the process: comm-PID")] = False,
    with_tid: Annotated[bool, typer.Option("--with-tid", help="root frames name the thread: comm-PID/TID")] = False,
    annotate_kernel: Annotated[
        bool, typer.Option("--annotate-kernel", help="suffix kernel functions with _[k]")
    ] = False,
    annotate_jit: Annotated[bool, typer.Option("--annotate-jit", help="suffix JIT functions with _[j]")] = False,
    annotate: Annotated[bool, typer.Option("--annotate", help="both: --annotate-kernel --annotate-jit")] = False,
    addrs: Annotated[bool, typer.Option("--addrs", help="include raw addresses where symbols are unknown")] = False,
    srcline: Annotated[
        bool,
        typer.Option("--srcline", help="append source lines (perf script -F +srcline) to frames: func:file.c:42"),
    ] = False,
    event: Annotated[
        str | None,
        typer.Option("-e", "--event", metavar="EVENT", help="fold this event (default: the first one seen)"),
    ] = None,
    window: Annotated[
        str | None,
        typer.Option(
            "--window",
            metavar="START,END",
            help="only the samples in this span (seconds of perf's clock; an end may be empty)",
        ),
    ] = None,
    per_event: Annotated[
        Path | None, typer.Option("--per-event", metavar="DIR", help="write one DIR/EVENT.folded per event")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "-j", "--jobs", metavar="N", min=1, show_default=False,
            help="processes for a large text file [default: one per core from 8 MB, else 1]",
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="stop at the first malformed line (exit 3)")] = False,
    compat: Annotated[
        bool,
        typer.Option("--compat", help="reproduce stackcollapse-perf.pl exactly, including the records it loses"),
    ] = False,
    offcpu: Annotated[
        bool,
        typer.Option("--offcpu", help="sched:sched_switch recordings: blocked time per stack, in µs"),
    ] = False,
    group_unknown: Annotated[
        bool | None,
        typer.Option(
            "--group-unknown/--no-group-unknown",
            help="name [unknown] frames per function from the DSOs here (libmxnet.so+0x62333d0); default: "
            "for perf.data where the build-ids match the recording, never for text (no build-ids to check)",
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option("--report", help="print the attribution report (thread roots, [unknown], JIT) to stderr"),
    ] = False,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="fold on a Dask cluster (an address, or local[:N]); the workers need the files at the same paths",
        ),
    ] = None,
    old_pid: Annotated[bool, typer.Option("--pid", hidden=True)] = False,
    old_tid: Annotated[bool, typer.Option("--tid", hidden=True)] = False,
    old_kernel: Annotated[bool, typer.Option("--kernel", hidden=True)] = False,
    old_jit: Annotated[bool, typer.Option("--jit", hidden=True)] = False,
    old_all: Annotated[bool, typer.Option("--all", hidden=True)] = False,
    old_event: Annotated[str | None, typer.Option("--event-filter", hidden=True)] = None,
) -> None:
    """Collapse `perf script` output (or a perf.data file) into folded stacks, sorted byte-wise.

    Output lines are `comm;frame;...;leaf count`, as stackcollapse-perf.pl writes them; with -o,
    the capture facts (event, unit, window) go to FILE.json beside FILE for `render`.
    stackcollapse-perf.pl's --pid, --tid, --kernel, --jit, --all and --event-filter still work.

    \b
    Examples:
      flamegraph fold perf.data -o out.folded
      perf script | flamegraph fold --annotate > out.folded
      flamegraph fold --offcpu --window 680.0,685.0 sched.perf.data -o waits.folded
    """
    if scheduler is not None and (offcpu or report or per_event is not None or strict):
        raise BadOption("--scheduler does not combine with --offcpu, --report, --per-event or --strict")
    if scheduler is not None and window is not None:
        raise BadOption("--scheduler does not combine with --window")
    if scheduler is not None and srcline:
        raise BadOption("--scheduler does not combine with --srcline")
    from ..folding.perf import FoldOptions
    from ..pipeline.perf_inputs import FoldRequest, fold_inputs

    for used, old, new, why in (
        (old_pid, "--pid", "--with-pid", " (record --pid and offcpu --pid take a process)"),
        (old_tid, "--tid", "--with-tid", ""),
        (old_kernel, "--kernel", "--annotate-kernel", " (offcpu --kernel keeps or drops kernel frames)"),
        (old_jit, "--jit", "--annotate-jit", " (record --jit names oneDNN's JIT kernels)"),
        (old_all, "--all", "--annotate", ""),
        (old_event is not None, "--event-filter", "-e/--event", ""),
    ):
        if used:
            _deprecated(old, new, why)
    options = FoldOptions(
        pid=with_pid or old_pid,
        tid=with_tid or old_tid,
        annotate_kernel=annotate_kernel or annotate or old_kernel or old_all,
        annotate_jit=annotate_jit or annotate or old_jit or old_all,
        addrs=addrs,
        event_filter=event if event is not None else old_event,
        per_event=per_event is not None,
        compat=compat,
        srcline=srcline,
    )
    span = parse_window_option(window)
    paths = inputs or ["-"]
    refuse_wrong_input(paths, "perf script output", "fold")
    reading_stdin_note(paths, "perf script output")
    cluster = None
    if scheduler is not None:
        from ..fleet.fold import on_scheduler  # Dask only when asked for

        cluster = on_scheduler(scheduler)
    request = FoldRequest(inputs or [], options, span, output, per_event, offcpu, group_unknown, report, strict, jobs,
                          cluster)  # fmt: skip
    fold_inputs(request, _note)


def _note(text: str) -> None:
    typer.echo(text, err=True)
