"""`flamegraph fold`: perf script text / perf.data -> folded stacks."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..io.diagnostics import BadOption
from .app import app
from .inputs import reading_stdin_note, refuse_wrong_input
from .numbers import parse_window_option

if TYPE_CHECKING:  # `flamegraph --help` imports no stage: the window reads perf script's grammar
    from ..window import Window

SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


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
    # Imported here, not at the top: `flamegraph --help` imports every command module and needs none of this.
    from ..folding.perf import FoldOptions
    from ..folding.stage import fold_perf
    from ..io.diagnostics import Diagnostics
    from ..io.folded import write_folded
    from ..io.sidecar import Context
    from ..io.writer import write_atomically, write_sidecar
    from ..naming.grouping import grouping_note, namer_for_inputs

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
    pid, tid = with_pid or old_pid, with_tid or old_tid
    kernel = annotate_kernel or annotate or old_kernel or old_all
    jit = annotate_jit or annotate or old_jit or old_all
    event_filter = event if event is not None else old_event
    span = parse_window_option(window)
    paths = inputs or ["-"]
    refuse_wrong_input(paths, "perf script output", "fold")
    reading_stdin_note(paths, "perf script output")
    if offcpu:
        _fold_offcpu(paths, output, kernel, strict, span, group_unknown)
        return
    namer = namer_for_inputs(inputs or [], group_unknown) if not (addrs or compat) else None
    hook = None
    if (namer is not None or report) and not compat:
        from ..naming.observer import FrameObserver  # only here: a plain fold of text starts without it

        hook = FrameObserver(namer)
    options = FoldOptions(
        pid=pid,
        tid=tid,
        annotate_kernel=kernel,
        annotate_jit=jit,
        addrs=addrs,
        event_filter=event_filter,
        per_event=per_event is not None,
        compat=compat,
        srcline=srcline,
        frame_hook=hook,
    )
    diagnostics = Diagnostics(strict=strict)
    if scheduler is not None:
        from ..fleet.fold import fold_on_scheduler  # Dask only when asked for

        result = fold_on_scheduler(scheduler, inputs or [], options, diagnostics)
    else:
        result = fold_perf(inputs or [], options, diagnostics, jobs=jobs, window=span)
    note = grouping_note(namer)
    if note is not None:
        diagnostics.note(note)
    if report:
        from ..analysis.report import build_report, report_lines

        for line in report_lines(*build_report(result.profile, hook)):
            typer.echo(line, err=True)
    if per_event is not None:
        names = per_event_file_names(list(result.per_event))
        for event_name, profile in result.per_event.items():
            target = per_event / names[event_name]
            write_atomically(target, lambda out, p=profile: write_folded(p, out))  # type: ignore[misc]
            write_sidecar(target, Context.of(profile), _note)
            renamed = "" if names[event_name] == f"{event_name}.folded" else f" (event {event_name})"
            typer.echo(
                f"{target}: {len(profile.counts):,} stacks, {profile.total:,} {profile.unit}{renamed}", err=True
            )
        if output is None:
            return
    write_atomically(output, lambda out: write_folded(result.profile, out))
    write_sidecar(output, Context.of(result.profile), _note)


def _note(text: str) -> None:
    typer.echo(text, err=True)


def _fold_offcpu(
    inputs: list[str],
    output: Path | None,
    annotate_kernel: bool,
    strict: bool,
    window: Window | None,
    group_unknown: bool | None,
) -> None:
    """`--offcpu`: pair switch-outs with switch-ins (flamegraph.folding.offcpu); the header totals go to stderr.
    [unknown] frames are grouped by function under fold's rule (perf.data, build-ids checked)."""
    from ..folding.offcpu import fold_offcpu_totals
    from ..folding.perf_sched import OffCpuOptions
    from ..io.diagnostics import Diagnostics
    from ..io.folded import write_folded
    from ..io.sidecar import Context
    from ..io.writer import write_atomically, write_sidecar
    from ..naming.grouping import grouping_note, namer_for_inputs
    from ..naming.observer import FrameObserver

    namer = namer_for_inputs(inputs, group_unknown)
    options = OffCpuOptions(
        annotate_kernel=annotate_kernel,
        window=window,
        frame_hook=FrameObserver(namer) if namer is not None else None,
    )
    fold = fold_offcpu_totals([] if inputs == ["-"] else inputs, options, Diagnostics(strict=strict))
    write_atomically(output, lambda out: write_folded(fold.profile, out))
    write_sidecar(output, Context.of(fold.profile), _note)
    note = grouping_note(namer)
    if note is not None:
        typer.echo(note, err=True)
    for key, value in fold.totals.metadata().items():
        typer.echo(f"{key}: {value}", err=True)


def per_event_file_names(events: list[str]) -> dict[str, str]:
    """EVENT.folded per event, its unsafe characters as '_'; names that would clash get a hash of the event.

    `cycles` -> cycles.folded, `sched:sched_switch` -> sched:sched_switch.folded; `a/b` and `a_b`
    -> a_b-c14cddc0.folded and a_b.folded (a name that needed no change keeps it).
    """
    safe = {event: SAFE_FILE_NAME.sub("_", event) or "_" for event in events}
    taken = Counter(safe.values())
    names = {}
    for event, name in safe.items():
        if taken[name] > 1 and name != event:
            import hashlib  # only for clashing event names

            name = f"{name}-{hashlib.sha256(event.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"
        names[event] = f"{name}.folded"
    if len(set(names.values())) < len(names):  # only an event literally named like another's hashed name
        names = {event: f"{index}-{name}" for index, (event, name) in enumerate(sorted(names.items()), 1)}
    return names
