"""`flamegraph fold`: perf script text / perf.data -> folded stacks."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from .app import app

SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


@app.command()
def fold(
    inputs: Annotated[
        list[str] | None,
        typer.Argument(help="perf script text, a .gz of it, a perf.data file, or - for stdin", show_default=False),
    ] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="write here instead of stdout")] = None,
    pid: Annotated[bool, typer.Option("--pid", help="include PID with process names")] = False,
    tid: Annotated[bool, typer.Option("--tid", help="include PID and TID with process names")] = False,
    kernel: Annotated[bool, typer.Option("--kernel", help="annotate kernel functions with _[k]")] = False,
    jit: Annotated[bool, typer.Option("--jit", help="annotate JIT functions with _[j]")] = False,
    all_: Annotated[bool, typer.Option("--all", help="all annotations (--kernel --jit)")] = False,
    addrs: Annotated[bool, typer.Option("--addrs", help="include raw addresses where symbols are unknown")] = False,
    event_filter: Annotated[
        str | None, typer.Option("--event-filter", metavar="EVENT", help="fold this event (default: the first)")
    ] = None,
    per_event: Annotated[
        Path | None, typer.Option("--per-event", metavar="DIR", help="write one DIR/EVENT.folded per event")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "-j", "--jobs", min=1, show_default=False,
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
) -> None:
    """Collapse `perf script` output into folded stacks (`comm;frame;... count`), sorted byte-wise."""
    if scheduler is not None and (offcpu or report or per_event is not None or strict):
        raise typer.BadParameter("--scheduler does not combine with --offcpu, --report, --per-event or --strict")
    # Imported here, not at the top: `flamegraph --help` imports every command module and needs none of this.
    from ..collapse.perf import FoldOptions
    from ..diagnostics import Diagnostics
    from ..fold import fold_perf
    from ..folded import write_folded
    from ..grouping import grouping_note, namer_for_inputs
    from ..observer import FrameObserver
    from ..report import build_report, report_lines
    from ..writer import write_atomically

    if offcpu:
        _fold_offcpu(inputs or [], output, kernel or all_, strict)
        return
    namer = namer_for_inputs(inputs or [], group_unknown) if not (addrs or compat) else None
    hook = FrameObserver(namer) if (namer is not None or report) and not compat else None
    options = FoldOptions(
        pid=pid,
        tid=tid,
        kernel=kernel or all_,
        jit=jit or all_,
        addrs=addrs,
        event_filter=event_filter,
        per_event=per_event is not None,
        compat=compat,
        frame_hook=hook,
    )
    diagnostics = Diagnostics(strict=strict)
    if scheduler is not None:
        from ..fleet.fold import fold_on_scheduler  # Dask only when asked for

        result = fold_on_scheduler(scheduler, inputs or [], options, diagnostics)
    else:
        result = fold_perf(inputs or [], options, diagnostics, jobs=jobs)
    note = grouping_note(namer)
    if note is not None:
        diagnostics.note(note)
    if report:
        for line in report_lines(*build_report(result.profile, hook)):
            typer.echo(line, err=True)
    if per_event is not None:
        names = per_event_file_names(list(result.per_event))
        for event, profile in result.per_event.items():
            target = per_event / names[event]
            write_atomically(target, lambda out, p=profile: write_folded(p, out))  # type: ignore[misc]
            renamed = "" if names[event] == f"{event}.folded" else f" (event {event})"
            typer.echo(
                f"{target}: {len(profile.counts):,} stacks, {profile.total:,} {profile.unit}{renamed}", err=True
            )
        if output is None:
            return
    write_atomically(output, lambda out: write_folded(result.profile, out))


def _fold_offcpu(inputs: list[str], output: Path | None, annotate_kernel: bool, strict: bool) -> None:
    """`--offcpu`: pair switch-outs with switch-ins (flamegraph.offcpu); the header totals go to stderr."""
    from ..collapse.perf_sched import OffCpuOptions
    from ..diagnostics import Diagnostics
    from ..folded import write_folded
    from ..offcpu.fold import fold_offcpu_totals
    from ..writer import write_atomically

    fold = fold_offcpu_totals(inputs, OffCpuOptions(annotate_kernel=annotate_kernel), Diagnostics(strict=strict))
    write_atomically(output, lambda out: write_folded(fold.profile, out))
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
