"""What `flamegraph fold` does once its options are read: flags -> a request -> the pipeline.

Without typer, so that the quick path (cli/quick.py) runs it as the typer command (cli/fold.py) does;
the parameters are the command's, by the same names and with the same defaults."""

from __future__ import annotations

import sys
from pathlib import Path

from ..io.diagnostics import BadOption, terminal_text
from .inputs import reading_stdin_note, refuse_wrong_input
from .numbers import parse_window_option


def run_fold(
    *,
    inputs: list[str] | None = None,
    output: Path | None = None,
    with_pid: bool = False,
    with_tid: bool = False,
    annotate_kernel: bool = False,
    annotate_jit: bool = False,
    annotate: bool = False,
    addrs: bool = False,
    srcline: bool = False,
    event: str | None = None,
    window: str | None = None,
    per_event: Path | None = None,
    jobs: int | None = None,
    strict: bool = False,
    compat: bool = False,
    offcpu: bool = False,
    group_unknown: bool | None = None,
    report: bool = False,
    scheduler: str | None = None,
    old_pid: bool = False,
    old_tid: bool = False,
    old_kernel: bool = False,
    old_jit: bool = False,
    old_all: bool = False,
    old_event: str | None = None,
) -> None:
    """Fold as `flamegraph fold` with these options (see its help)."""
    if scheduler is not None and (offcpu or report or per_event is not None or strict):
        raise BadOption("--scheduler does not combine with --offcpu, --report, --per-event or --strict")
    if scheduler is not None and window is not None:
        raise BadOption("--scheduler does not combine with --window")
    if scheduler is not None and srcline:
        raise BadOption("--scheduler does not combine with --srcline")
    from ..folding.options import FoldOptions
    from ..io.writer import refuse_overwriting_input
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
            _note(f"note: fold {old} is deprecated{why}: use {new}")
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
    refuse_overwriting_input(paths, [("-o", output), ("--per-event", per_event)])
    reading_stdin_note(paths, "perf script output")
    cluster = None
    if scheduler is not None:
        from ..fleet.fold import on_scheduler  # Dask only when asked for

        cluster = on_scheduler(scheduler)
    request = FoldRequest(inputs or [], options, span, output, per_event, offcpu, group_unknown, report, strict, jobs,
                          cluster)  # fmt: skip
    fold_inputs(request, _note)


def _note(text: str) -> None:
    """A line to stderr, as typer.echo(err=True) prints it."""
    print(terminal_text(text), file=sys.stderr, flush=True)
