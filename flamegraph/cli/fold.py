"""`flamegraph fold`: perf script text / perf.data -> folded stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .fold_run import run_fold


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
            help="processes for a large text file [default: one per core from 4 MB, else 1]",
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
    run_fold(
        inputs=inputs, output=output, with_pid=with_pid, with_tid=with_tid, annotate_kernel=annotate_kernel,
        annotate_jit=annotate_jit, annotate=annotate, addrs=addrs, srcline=srcline, event=event, window=window,
        per_event=per_event, jobs=jobs, strict=strict, compat=compat, offcpu=offcpu, group_unknown=group_unknown,
        report=report, scheduler=scheduler, old_pid=old_pid, old_tid=old_tid, old_kernel=old_kernel,
        old_jit=old_jit, old_all=old_all, old_event=old_event,
    )
