"""`flamegraph offcpu`: where threads wait. Record sched_switch for a pid or a command, pair, draw."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Only what the command's signature needs: `flamegraph --help` imports every command module, so the
# recording, pairing and rendering stages are imported where they run.
from ..export import ExportRequest
from ..io.diagnostics import BadOption
from ..record.defaults import OFFCPU_CALL_GRAPH
from .app import app
from .inputs import open_in_browser
from .numbers import finite, parse_window_option
from .record_flags import (
    Command,
    Duration,
    Highlight,
    KeepInterpreter,
    MaxSpool,
    NoSvg,
    Open,
    Output,
    PerfData,
    Png,
    Preset,
    PythonFrames,
    Title,
    Width,
    check_request,
    parse_call_graph_option,
    render_options,
    say_whole,
    stdout_taken,
)

STATES = frozenset("SDRTtXZPI?")  # sched_switch's prev_state letters, and ? for "unknown"


def parse_states(text: str | None) -> frozenset[str] | None:
    """'S,D,R' -> {'S', 'D', 'R'}; None keeps every state."""
    if text is None:
        return None
    states = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(s for s in states if s not in STATES)
    if not states or unknown:
        raise BadOption(f"--state: expected states among {','.join(sorted(STATES))}, got {text!r}")
    return states


@app.command(
    "offcpu",
    short_help="Record where the threads of a command or process wait, and draw it.",
    context_settings={"allow_interspersed_args": False},
)
def offcpu_cli(
    ctx: typer.Context,
    command: Command = None,
    pid: Annotated[
        int | None,
        typer.Option("--pid", "-p", metavar="PID", help="every thread of this process, new ones included"),
    ] = None,
    duration: Duration = None,
    output: Output = Path("offcpu.svg"),
    folded: Annotated[
        Path | None,
        typer.Option("--folded", metavar="FILE", help="also write the folded stacks (µs), and FILE.json beside it"),
    ] = None,
    min_us: Annotated[
        float,
        typer.Option(
            "--min-us",
            metavar="N",
            parser=finite("--min-us", 0),
            help="leave out waits shorter than N µs (they are counted)",
        ),
    ] = 0.0,
    state: Annotated[str | None, typer.Option("--state", metavar="S,D,R", help="keep only these thread states")] = None,
    kernel: Annotated[bool, typer.Option("--kernel/--no-kernel", help="keep the kernel frames")] = True,
    call_graph: Annotated[
        str,
        typer.Option("--call-graph", metavar="MODE", callback=parse_call_graph_option, help="fp or dwarf[,SIZE]"),
    ] = OFFCPU_CALL_GRAPH,
    wakers: Annotated[
        bool,
        typer.Option(
            "--wakers",
            help="also record who woke each thread (sched_waking, all CPUs) and draw it above the wait, after --",
        ),
    ] = False,
    window: Annotated[
        str | None,
        typer.Option("--window", metavar="START,END", help="keep off-CPU time in this CLOCK_MONOTONIC span (s)"),
    ] = None,
    perf_data: PerfData = None,
    max_spool: MaxSpool = None,
    title: Title = None,
    preset: Preset = None,
    highlight: Highlight = None,
    width: Width = 1200,
    top: Annotated[
        int, typer.Option("--top", metavar="N", help="rows of the table of functions that blocked (0: none)")
    ] = 10,
    show_idle: Annotated[
        bool,
        typer.Option("--show-idle", help="draw idle threads' idle stacks too (default: one line says whose)"),
    ] = False,
    group_unknown: Annotated[
        bool,
        typer.Option(
            "--group-unknown/--no-group-unknown",
            help="name [unknown] frames by function (.eh_frame) where the DSO's build-id matches the recording",
        ),
    ] = True,
    png: Png = None,
    open_: Open = False,
    no_svg: NoSvg = False,
    speedscope: Annotated[
        Path | None, typer.Option(
            "--speedscope",
            metavar="FILE",
            help="also write a speedscope file (µs; one profile per thread while every root is a thread, else one)",
        ),
    ] = None,
    pprof: Annotated[
        Path | None, typer.Option("--pprof", metavar="FILE", help="also write a pprof profile (off_cpu/microseconds)")
    ] = None,
    chrome_trace: Annotated[
        Path | None, typer.Option("--chrome-trace", metavar="FILE", help="also write a Chrome trace of the waits")
    ] = None,
    python: PythonFrames = None,
    keep_interpreter: KeepInterpreter = False,
) -> None:
    """Record where the threads of a command (`-- CMD`) or a process (`--pid PID`) wait, and draw it.

    Records `perf record -e sched:sched_switch --switch-events --call-graph dwarf,8192`, pairs each
    thread's switch-out with its next switch-in, and draws the blocked time in microseconds, each
    stack rooted at comm-tid (with its role: main, engine worker...) and ending with the state
    ([S] sleeping, [D] uninterruptible, [R] preempted). With --wakers, what ended each wait is drawn
    above it, after a `--` frame: the waking thread and its stack, or [timer], [irq], [signal]
    (perf records all CPUs then: see docs/offcpu.md for its cost). A thread off-CPU (nearly) all the window
    in one stack has that stack named in one line, not drawn (--show-idle); its other waits are drawn.
    Ctrl-C stops the recording and still draws the graph.

    \b
    Examples:
      flamegraph offcpu -o waits.svg -- python train.py --epochs 1
      flamegraph offcpu --pid 4242 --duration 5 --folded waits.folded -o waits.svg --open
      flamegraph offcpu --wakers --state S,D --min-us 100 -o wakers.svg -- ./server
    """
    from ..folding.perf_sched import OffCpuOptions
    from ..pipeline.offcpu import OffCpuRequest, record_offcpu_graph
    from ..pipeline.outputs import Outputs
    from ..pipeline.scratch import exit_like_the_command
    from ..record import Status
    from ..record.offcpu import offcpu_spec
    from .record import go_call_graph_note

    fp_note = go_call_graph_note(ctx, command, pid)  # a Go binary: frame pointers, as record does
    call_graph = "fp" if fp_note else call_graph
    exports = ExportRequest.of(title, speedscope=speedscope, pprof=pprof, chrome_trace=chrome_trace)
    check_request(command, pid, no_svg, folded, exports)
    span = parse_window_option(window)
    options = OffCpuOptions(keep_kernel=kernel, states=parse_states(state), min_us=min_us, window=span)
    spec = offcpu_spec(pid, command or (), duration, call_graph, wakers)
    spec = spec.replace(stdout_ours=stdout_taken(no_svg, output, folded, exports))
    status = Status()
    if fp_note is not None:
        status.note(fp_note)
    name = Path(spec.command[0]).name if spec.command else f"pid {pid}"
    subtitle = f"off-CPU time (µs), sched:sched_switch{' and who woke it' if wakers else ''}, call graph {call_graph}"
    render = render_options(name, title or f"Off-CPU: {name}", subtitle, preset, list(highlight or []), width, top,
                            palette="io", show_idle=show_idle or wakers)  # fmt: skip
    from ..record.streaming import offcpu_blockers, streaming_plan

    blockers = offcpu_blockers(spec, perf_data is not None, bool(exports), python)
    plan = streaming_plan(max_spool, None, blockers)  # paired while perf records unless one needs the whole file
    request = OffCpuRequest(spec, options, pid, group_unknown, keep_interpreter, python, perf_data, plan.cap)
    outputs = Outputs(None if no_svg else output, render, folded, png, ExportRequest(exports.files, render.title))
    say_whole(plan.note, outputs, perf_data, status)
    result = record_offcpu_graph(request, outputs, status)
    if open_ and result.written.svg is not None:
        open_in_browser(result.written.svg)
    for key, value in result.totals.terminal().items():
        status.note(f"{key}: {value}")
    exit_like_the_command(result.recording, status.note)
